package sasl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/kaas-project/kaas/wire/reload"
)

// krb5OID is the DER encoding of the Kerberos V5 GSS-API mechanism,
// 1.2.840.113554.1.2.2 (RFC 1964), tag and length included.
var krb5OID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// Token ids of the Kerberos mechanism's context tokens (RFC 4121 §4.1).
var (
	tokAPReq = []byte{0x01, 0x00}
	tokAPRep = []byte{0x02, 0x00}
)

// Flags of the authenticator checksum (RFC 4121 §4.1.1.1) and of Wrap
// tokens (RFC 4121 §4.2.2).
const (
	gssFlagMutual        = 2
	wrapSentByAcceptor   = 0x01
	wrapSealed           = 0x02
	wrapAcceptorSubkey   = 0x04
	layerNone            = 0x01 // RFC 4752 §3.3: no security layer
	authenticatorCksumLn = 24   // Lgth, Bnd, Flags
)

// Keytab is the service keys GSSAPI checks tickets with, with the
// service name and the principal-to-local rules. The keytab file is
// re-read when it changes (a mounted Secret).
type Keytab struct {
	// ServiceName is the first component tickets must name (Kafka's
	// sasl.kerberos.service.name); the host component may be any with a
	// key in the keytab.
	ServiceName string
	// Rules map a client principal to its short name; nil is DEFAULT.
	Rules *KerberosRules
	// OnReload is told about every reload and failed reload of the file.
	OnReload func(err error)
	keys     func() loadedKeytab
}

// loadedKeytab is a parsed keytab and its default realm (its first
// entry's), the realm DEFAULT rules strip.
type loadedKeytab struct {
	kt    *keytab.Keytab
	realm string
}

func loadKeytab(kt *keytab.Keytab, src string) (loadedKeytab, error) {
	if len(kt.Entries) == 0 {
		return loadedKeytab{}, fmt.Errorf("keytab %s holds no key", src)
	}
	return loadedKeytab{kt: kt, realm: kt.Entries[0].Principal.Realm}, nil
}

// OpenKeytab loads the keytab at path; it is re-read when it changes, and
// a broken file keeps the last good keys.
func OpenKeytab(path, serviceName string, rules *KerberosRules, now func() time.Time) (*Keytab, error) {
	parse := func() (loadedKeytab, error) {
		kt, err := keytab.Load(path)
		if err != nil {
			return loadedKeytab{}, fmt.Errorf("keytab %s: %w", path, err)
		}
		return loadKeytab(kt, path)
	}
	f, err := reload.Open([]string{path}, nil, parse, now)
	if err != nil {
		return nil, err
	}
	k := &Keytab{ServiceName: serviceName, Rules: rules, keys: f.Get}
	f.OnReload = func(err error) {
		if k.OnReload != nil {
			k.OnReload(err)
		}
	}
	return k, nil
}

// NewKeytab serves the keys of kt (tests, or a keytab built in memory).
func NewKeytab(kt *keytab.Keytab, serviceName string, rules *KerberosRules) (*Keytab, error) {
	l, err := loadKeytab(kt, "in memory")
	if err != nil {
		return nil, err
	}
	return &Keytab{ServiceName: serviceName, Rules: rules, keys: func() loadedKeytab { return l }}, nil
}

// gssapiExchange is the acceptor side of one GSSAPI authentication, as
// Kafka's broker (the JDK's GSSAPI SaslServer) runs it with QOP auth:
//
//	client: AP-REQ              server: AP-REP if mutual, else the offer
//	client: empty (mutual only) server: the offer, wrap(no layer, size 0)
//	client: wrap(no layer, size, [authzid])
type gssapiExchange struct {
	kt    *Keytab
	state int
	// Established context: the key of Wrap tokens, the acceptor's
	// sequence number, the client's Kerberos name and its short name.
	key       types.EncryptionKey
	seq       uint64
	client    string
	principal string
}

const (
	gssAwaitAPReq = iota
	gssAwaitEmpty
	gssAwaitAnswer
	gssDone
)

func (g *gssapiExchange) Principal() string { return g.principal }

// Expires is zero: as in Kafka, the ticket's end time does not bound the
// session; only --connections-max-reauth does.
func (g *gssapiExchange) Expires() time.Time { return time.Time{} }

func gssFail(format string, args ...any) error {
	return fmt.Errorf("%w: GSSAPI: %s", ErrAuthentication, fmt.Sprintf(format, args...))
}

func (g *gssapiExchange) Step(in []byte) ([]byte, bool, error) {
	if g.kt == nil {
		return nil, false, gssFail("no keytab configured")
	}
	switch g.state {
	case gssAwaitAPReq:
		return g.acceptAPReq(in)
	case gssAwaitEmpty:
		// The client answers the AP-REP with an empty token.
		if len(in) != 0 {
			return nil, false, gssFail("expected an empty token after the AP-REP, got %d bytes", len(in))
		}
		return g.offer()
	case gssAwaitAnswer:
		if err := g.checkAnswer(in); err != nil {
			return nil, false, err
		}
		g.state = gssDone
		return nil, true, nil
	}
	return nil, false, gssFail("exchange already complete")
}

// acceptAPReq verifies the initial context token and establishes the
// context.
func (g *gssapiExchange) acceptAPReq(in []byte) ([]byte, bool, error) {
	inner, err := unframeGSS(in, tokAPReq)
	if err != nil {
		return nil, false, gssFail("initial token: %v", err)
	}
	var req messages.APReq
	if err := req.Unmarshal(inner); err != nil {
		return nil, false, gssFail("malformed AP-REQ: %v", err)
	}
	sname := req.Ticket.SName.NameString
	if len(sname) != 2 || sname[0] != g.kt.ServiceName {
		return nil, false, gssFail("ticket is for %s@%s, want %s/<host>", req.Ticket.SName.PrincipalNameString(), req.Ticket.Realm, g.kt.ServiceName)
	}
	keys := g.kt.keys()
	// VerifyAPREQ decrypts the ticket with the keytab's key of its
	// service principal, realm, kvno and enctype, checks its times and the
	// authenticator's (5 minutes of clock skew) and the replay cache.
	ok, _, err := service.VerifyAPREQ(&req, service.NewSettings(keys.kt, service.DecodePAC(false)))
	if err != nil || !ok {
		return nil, false, gssFail("AP-REQ for %s@%s does not verify: %v", req.Ticket.SName.PrincipalNameString(), req.Ticket.Realm, krbErrText(err))
	}
	auth := req.Authenticator
	ck := auth.Cksum
	if ck.CksumType != chksumtype.GSSAPI || len(ck.Checksum) < authenticatorCksumLn || binary.LittleEndian.Uint32(ck.Checksum) != 16 {
		return nil, false, gssFail("authenticator has no GSS-API checksum (RFC 4121 §4.1.1)")
	}
	flags := binary.LittleEndian.Uint32(ck.Checksum[20:24])
	// Wrap tokens use the initiator's subkey when it sent one (RFC 4121
	// §2); the acceptor asserts no subkey of its own.
	g.key = req.Ticket.DecryptedEncPart.Key
	if auth.SubKey.KeyType != 0 {
		g.key = auth.SubKey
	}
	switch g.key.KeyType {
	case etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96, etypeID.AES128_CTS_HMAC_SHA256_128, etypeID.AES256_CTS_HMAC_SHA384_192:
	default:
		// DES3 and RC4 use RFC 1964's older per-message tokens.
		return nil, false, gssFail("enctype %d is not supported (use an AES enctype)", g.key.KeyType)
	}
	g.client = auth.CName.PrincipalNameString() + "@" + auth.CRealm
	short, err := g.kt.Rules.ShortName(g.client, keys.realm)
	if err != nil {
		return nil, false, gssFail("%v", err)
	}
	g.principal = "User:" + short
	// The acceptor starts its sequence at the initiator's (RFC 4121 §4.1;
	// the AP-REP states it when mutual).
	g.seq = uint64(uint32(auth.SeqNumber))
	if flags&gssFlagMutual == 0 {
		return g.offer()
	}
	rep, err := apRep(auth, req.Ticket.DecryptedEncPart.Key)
	if err != nil {
		return nil, false, gssFail("AP-REP: %v", err)
	}
	g.state = gssAwaitEmpty
	return frameGSS(tokAPRep, rep), false, nil
}

// offer is the server's RFC 4752 challenge: no security layer, maximum
// message size 0, in a Wrap token without confidentiality.
func (g *gssapiExchange) offer() ([]byte, bool, error) {
	et, err := crypto.GetEtype(g.key.KeyType)
	if err != nil {
		return nil, false, gssFail("%v", err)
	}
	tok := gssapi.WrapToken{Flags: wrapSentByAcceptor, EC: uint16(et.GetHMACBitLength() / 8), SndSeqNum: g.seq, Payload: []byte{layerNone, 0, 0, 0}}
	if err := tok.SetCheckSum(g.key, keyusage.GSSAPI_ACCEPTOR_SEAL); err != nil {
		return nil, false, gssFail("wrap: %v", err)
	}
	out, err := tok.Marshal()
	if err != nil {
		return nil, false, gssFail("wrap: %v", err)
	}
	g.seq++
	g.state = gssAwaitAnswer
	return out, false, nil
}

// checkAnswer verifies the client's Wrap token: it must choose no
// security layer, and an authorization id must be its own name.
func (g *gssapiExchange) checkAnswer(in []byte) error {
	if len(in) < gssapi.HdrLen {
		return gssFail("answer of %d bytes is no Wrap token", len(in))
	}
	// Undo the right rotation of the token's data (RFC 4121 §4.2.5).
	b := append([]byte(nil), in...)
	if rrc := int(binary.BigEndian.Uint16(b[6:8])); rrc != 0 && len(b) > gssapi.HdrLen {
		data := b[gssapi.HdrLen:]
		rrc %= len(data)
		rotated := append(append([]byte(nil), data[rrc:]...), data[:rrc]...)
		copy(data, rotated)
		b[6], b[7] = 0, 0
	}
	var tok gssapi.WrapToken
	if err := tok.Unmarshal(b, false); err != nil {
		return gssFail("answer: %v", err)
	}
	if tok.Flags&(wrapSealed|wrapAcceptorSubkey) != 0 {
		return gssFail("answer flags %#x: sealed tokens and acceptor subkeys are not negotiated", tok.Flags)
	}
	if ok, err := tok.Verify(g.key, keyusage.GSSAPI_INITIATOR_SEAL); !ok {
		return gssFail("answer checksum does not verify: %v", err)
	}
	p := tok.Payload
	if len(p) < 4 {
		return gssFail("answer payload of %d bytes, want at least 4", len(p))
	}
	if p[0] != layerNone {
		return gssFail("client chose security layer %#x; only none (0x01) is offered", p[0])
	}
	if authz := string(p[4:]); authz != "" && authz != g.client {
		return gssFail("authorization id %q is not the authenticated principal %q", authz, g.client)
	}
	return nil
}

// encAPRepPart is RFC 4120's EncAPRepPart; gokrb5 only unmarshals it.
type encAPRepPart struct {
	CTime  time.Time `asn1:"generalized,explicit,tag:0"`
	Cusec  int       `asn1:"explicit,tag:1"`
	SeqNum int64     `asn1:"optional,explicit,tag:3"`
}

// apRep is the mutual-authentication answer: the authenticator's time,
// and its sequence number as the acceptor's, under the session key.
func apRep(auth types.Authenticator, sessionKey types.EncryptionKey) ([]byte, error) {
	part, err := asn1.Marshal(encAPRepPart{CTime: auth.CTime.UTC(), Cusec: auth.Cusec, SeqNum: auth.SeqNumber})
	if err != nil {
		return nil, err
	}
	part = asn1tools.AddASNAppTag(part, asnAppTag.EncAPRepPart)
	enc, err := crypto.GetEncryptedData(part, sessionKey, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, err
	}
	b, err := asn1.Marshal(messages.APRep{PVNO: iana.PVNO, MsgType: msgtype.KRB_AP_REP, EncPart: enc})
	if err != nil {
		return nil, err
	}
	return asn1tools.AddASNAppTag(b, asnAppTag.APREP), nil
}

// frameGSS wraps a Kerberos context token in RFC 2743 §3.1 framing.
func frameGSS(tokID, inner []byte) []byte {
	n := len(krb5OID) + len(tokID) + len(inner)
	out := append([]byte{0x60}, asn1tools.MarshalLengthBytes(n)...)
	out = append(out, krb5OID...)
	out = append(out, tokID...)
	return append(out, inner...)
}

// unframeGSS checks RFC 2743 §3.1 framing around a Kerberos context token
// with tokID and returns the token.
func unframeGSS(b, tokID []byte) ([]byte, error) {
	if len(b) < 2 || b[0] != 0x60 {
		return nil, errors.New("not a GSS-API token (no 0x60 tag)")
	}
	n, hdr := int(b[1]), 2
	if n&0x80 != 0 {
		octets := n & 0x7f
		if octets == 0 || octets > 4 || len(b) < 2+octets {
			return nil, errors.New("bad token length")
		}
		n = 0
		for _, c := range b[2 : 2+octets] {
			n = n<<8 | int(c)
		}
		hdr += octets
	}
	body := b[hdr:]
	if n != len(body) {
		return nil, fmt.Errorf("token length %d, %d bytes follow", n, len(body))
	}
	if !bytes.HasPrefix(body, krb5OID) {
		return nil, errors.New("mechanism is not Kerberos V5 (1.2.840.113554.1.2.2)")
	}
	body = body[len(krb5OID):]
	if !bytes.HasPrefix(body, tokID) {
		return nil, fmt.Errorf("token id %x, want %x", body[:min(2, len(body))], tokID)
	}
	return body[len(tokID):], nil
}

// krbErrText is why gokrb5 refused an AP-REQ.
func krbErrText(err error) string {
	if err == nil {
		return "not valid"
	}
	return err.Error()
}
