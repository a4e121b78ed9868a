package sasl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

const testRealm = "EXAMPLE.COM"

// serviceKeytab holds the keys of kafka/broker-0.test and
// kafka/broker-1.test (one keytab for two pods) and of HTTP/broker-0.test,
// from password pass at kvno 1.
func serviceKeytab(t testing.TB, pass string) *keytab.Keytab {
	t.Helper()
	kt := keytab.New()
	for _, p := range []string{"kafka/broker-0.test", "kafka/broker-1.test", "HTTP/broker-0.test"} {
		if err := kt.AddEntry(p, testRealm, pass, time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
			t.Fatal(err)
		}
	}
	return kt
}

// ticketSpec describes the AP-REQ a test client sends.
type ticketSpec struct {
	client, crealm string
	service        string // sname, "kafka/broker-0.test" by default
	keys           *keytab.Keytab
	kvno           int
	end            time.Time
	mutual         bool
	subkey         bool
}

// krbClient is the initiator's side of a context.
type krbClient struct {
	token      []byte // the framed AP-REQ
	sessionKey types.EncryptionKey
	auth       types.Authenticator
}

// wrapKey is the key of the context's Wrap tokens.
func (c *krbClient) wrapKey() types.EncryptionKey {
	if c.auth.SubKey.KeyType != 0 {
		return c.auth.SubKey
	}
	return c.sessionKey
}

func newKrbClient(t testing.TB, s ticketSpec) *krbClient {
	t.Helper()
	if s.client == "" {
		s.client = "alice"
	}
	if s.crealm == "" {
		s.crealm = testRealm
	}
	if s.service == "" {
		s.service = "kafka/broker-0.test"
	}
	if s.kvno == 0 {
		s.kvno = 1
	}
	now := time.Now().UTC()
	if s.end.IsZero() {
		s.end = now.Add(time.Hour)
	}
	cname := types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, s.client)
	sname := types.NewPrincipalName(nametype.KRB_NT_SRV_INST, s.service)
	tkt, key, err := messages.NewTicket(cname, s.crealm, sname, testRealm, types.NewKrbFlags(), s.keys, etypeID.AES256_CTS_HMAC_SHA1_96, s.kvno, now.Add(-2*time.Hour), now.Add(-2*time.Hour), s.end, s.end)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := types.NewAuthenticator(s.crealm, cname)
	if err != nil {
		t.Fatal(err)
	}
	ck := make([]byte, 24)
	binary.LittleEndian.PutUint32(ck, 16)
	flags := uint32(gssapi.ContextFlagInteg | gssapi.ContextFlagConf)
	if s.mutual {
		flags |= gssapi.ContextFlagMutual
	}
	binary.LittleEndian.PutUint32(ck[20:], flags)
	auth.Cksum = types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: ck}
	if s.subkey {
		if err := auth.GenerateSeqNumberAndSubKey(etypeID.AES256_CTS_HMAC_SHA1_96, 32); err != nil {
			t.Fatal(err)
		}
	}
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		t.Fatal(err)
	}
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return &krbClient{token: frameGSS(tokAPReq, b), sessionKey: key, auth: auth}
}

// checkAPRep decrypts the server's AP-REP as an initiator does and
// returns the acceptor's sequence number.
func (c *krbClient) checkAPRep(t *testing.T, out []byte) uint64 {
	t.Helper()
	inner, err := unframeGSS(out, tokAPRep)
	if err != nil {
		t.Fatalf("AP-REP framing: %v", err)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(inner); err != nil {
		t.Fatalf("AP-REP: %v", err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, c.sessionKey, keyusage.AP_REP_ENCPART)
	if err != nil {
		t.Fatalf("AP-REP does not decrypt with the session key: %v", err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		t.Fatalf("EncAPRepPart: %v", err)
	}
	if !part.CTime.Equal(c.auth.CTime.Truncate(time.Second)) || part.Cusec != c.auth.Cusec {
		t.Fatalf("AP-REP time %v/%d, want the authenticator's %v/%d", part.CTime, part.Cusec, c.auth.CTime, c.auth.Cusec)
	}
	return uint64(part.SequenceNumber)
}

// answer checks the server's offer and returns the client's answer with
// payload (nil: echo the offer) and authzid.
func (c *krbClient) answer(t *testing.T, offer []byte, wantSeq uint64, payload []byte, authzid string) []byte {
	t.Helper()
	var tok gssapi.WrapToken
	if err := tok.Unmarshal(offer, true); err != nil {
		t.Fatalf("offer: %v", err)
	}
	if ok, err := tok.Verify(c.wrapKey(), keyusage.GSSAPI_ACCEPTOR_SEAL); !ok {
		t.Fatalf("offer checksum: %v", err)
	}
	if !bytes.Equal(tok.Payload, []byte{1, 0, 0, 0}) || tok.SndSeqNum != wantSeq {
		t.Fatalf("offer payload %x seq %d, want 01000000 seq %d", tok.Payload, tok.SndSeqNum, wantSeq)
	}
	if payload == nil {
		payload = tok.Payload
	}
	ans, err := gssapi.NewInitiatorWrapToken(append(append([]byte(nil), payload...), authzid...), c.wrapKey())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ans.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gssServer(t testing.TB, kt *keytab.Keytab, rules *KerberosRules) *Server {
	t.Helper()
	k, err := NewKeytab(kt, "kafka", rules)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{Mechanisms: []string{GSSAPI}, Keytab: k, Now: time.Now}
}

// runGSSAPI runs a whole exchange; answer may change the client's last
// message. It returns the principal or the server's error.
func runGSSAPI(t *testing.T, srv *Server, c *krbClient, mutual bool, answer func(offer []byte, seq uint64) []byte) (string, error) {
	t.Helper()
	ex, err := srv.Start(GSSAPI)
	if err != nil {
		t.Fatal(err)
	}
	out, done, err := ex.Step(c.token)
	if err != nil {
		return "", err
	}
	if done {
		t.Fatal("done after the AP-REQ")
	}
	seq := uint64(uint32(c.auth.SeqNumber))
	if mutual {
		if got := c.checkAPRep(t, out); got != seq {
			t.Fatalf("AP-REP sequence number %d, want the authenticator's %d", got, seq)
		}
		if out, done, err = ex.Step(nil); err != nil || done {
			t.Fatalf("empty token after the AP-REP: done %v err %v", done, err)
		}
	}
	out, done, err = ex.Step(answer(out, seq))
	if err != nil {
		return "", err
	}
	if !done || out != nil {
		t.Fatalf("after the answer: done %v out %x", done, out)
	}
	return ex.Principal(), nil
}

func TestGSSAPIExchange(t *testing.T) {
	keys := serviceKeytab(t, "service-secret")
	otherKeys := serviceKeytab(t, "another-secret")
	rules, err := ParseKerberosRules("RULE:[1:$1@$0](.*@PARTNER\\.ORG)s/@.*//,DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	echo := func(c *krbClient) func([]byte, uint64) []byte {
		return func(offer []byte, seq uint64) []byte { return c.answer(t, offer, seq, nil, "") }
	}
	tests := []struct {
		name   string
		spec   ticketSpec
		rules  *KerberosRules
		answer func(c *krbClient) func([]byte, uint64) []byte
		want   string // principal, or a piece of the error
		fails  bool
	}{
		{name: "non-mutual without subkey (franz-go, sarama)", spec: ticketSpec{}, want: "User:alice"},
		{name: "mutual with subkey (MIT)", spec: ticketSpec{mutual: true, subkey: true}, want: "User:alice"},
		{name: "mutual without subkey", spec: ticketSpec{mutual: true}, want: "User:alice"},
		{name: "second pod's host in the same keytab", spec: ticketSpec{service: "kafka/broker-1.test"}, want: "User:alice"},
		{name: "service principal maps to its first component", spec: ticketSpec{client: "kafka/broker-1.test"}, want: "User:kafka"},
		{name: "authzid equal to the principal", spec: ticketSpec{subkey: true}, want: "User:alice",
			answer: func(c *krbClient) func([]byte, uint64) []byte {
				return func(o []byte, s uint64) []byte { return c.answer(t, o, s, nil, "alice@EXAMPLE.COM") }
			}},
		{name: "authzid of another principal", spec: ticketSpec{}, fails: true, want: "authorization id",
			answer: func(c *krbClient) func([]byte, uint64) []byte {
				return func(o []byte, s uint64) []byte { return c.answer(t, o, s, nil, "bob@EXAMPLE.COM") }
			}},
		{name: "client chooses an integrity layer", spec: ticketSpec{}, fails: true, want: "security layer",
			answer: func(c *krbClient) func([]byte, uint64) []byte {
				return func(o []byte, s uint64) []byte { return c.answer(t, o, s, []byte{2, 0, 0x10, 0}, "") }
			}},
		{name: "answer with a bad checksum", spec: ticketSpec{subkey: true}, fails: true, want: "checksum",
			answer: func(c *krbClient) func([]byte, uint64) []byte {
				return func(o []byte, s uint64) []byte {
					b := c.answer(t, o, s, nil, "")
					b[len(b)-1] ^= 0xff
					return b
				}
			}},
		{name: "answer under the session key when a subkey was sent", spec: ticketSpec{subkey: true}, fails: true, want: "checksum",
			answer: func(c *krbClient) func([]byte, uint64) []byte {
				return func(o []byte, s uint64) []byte {
					tok, err := gssapi.NewInitiatorWrapToken([]byte{1, 0, 0, 0}, c.sessionKey)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := tok.Marshal()
					return b
				}
			}},
		{name: "answer flagged as sent by the acceptor", spec: ticketSpec{}, fails: true, want: "acceptor",
			answer: func(c *krbClient) func([]byte, uint64) []byte {
				return func(o []byte, s uint64) []byte { return o }
			}},
		{name: "sealed answer", spec: ticketSpec{}, fails: true, want: "sealed",
			answer: func(c *krbClient) func([]byte, uint64) []byte {
				return func(o []byte, s uint64) []byte {
					b := c.answer(t, o, s, nil, "")
					b[2] |= wrapSealed
					return b
				}
			}},
		{name: "answer too short", spec: ticketSpec{}, fails: true, want: "no Wrap token",
			answer: func(c *krbClient) func([]byte, uint64) []byte {
				return func(o []byte, s uint64) []byte { return []byte{5, 4, 0} }
			}},
		{name: "rotated answer (RRC)", spec: ticketSpec{subkey: true}, want: "User:alice",
			answer: func(c *krbClient) func([]byte, uint64) []byte {
				return func(o []byte, s uint64) []byte {
					b := c.answer(t, o, s, nil, "")
					data := append([]byte(nil), b[16:]...)
					const rrc = 5
					copy(b[16:], append(data[len(data)-rrc:], data[:len(data)-rrc]...))
					binary.BigEndian.PutUint16(b[6:8], rrc)
					return b
				}
			}},
		{name: "ticket under another key", spec: ticketSpec{keys: otherKeys}, fails: true, want: "does not verify"},
		{name: "ticket of another kvno", spec: ticketSpec{kvno: 2, keys: keytabKVNO2(t)}, fails: true, want: "does not verify"},
		{name: "expired ticket", spec: ticketSpec{end: time.Now().Add(-time.Hour)}, fails: true, want: "expired"},
		{name: "ticket for another service", spec: ticketSpec{service: "HTTP/broker-0.test"}, fails: true, want: "want kafka/<host>"},
		{name: "ticket for an unknown host", spec: ticketSpec{service: "kafka/broker-9.test", keys: serviceKeytabWith(t, "kafka/broker-9.test")}, fails: true, want: "does not verify"},
		{name: "principal of another realm under DEFAULT", spec: ticketSpec{crealm: "PARTNER.ORG"}, fails: true, want: "no principal-to-local rule"},
		{name: "principal of another realm mapped by a rule", spec: ticketSpec{crealm: "PARTNER.ORG"}, rules: rules, want: "User:alice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.spec.keys == nil {
				tc.spec.keys = keys
			}
			c := newKrbClient(t, tc.spec)
			ans := echo(c)
			if tc.answer != nil {
				ans = tc.answer(c)
			}
			got, err := runGSSAPI(t, gssServer(t, keys, tc.rules), c, tc.spec.mutual, ans)
			if tc.fails {
				if !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want ErrAuthentication mentioning %q", err, tc.want)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("principal %q, err %v; want %q", got, err, tc.want)
			}
		})
	}
}

func keytabKVNO2(t *testing.T) *keytab.Keytab {
	t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry("kafka/broker-0.test", testRealm, "service-secret", time.Now(), 2, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	return kt
}

func serviceKeytabWith(t *testing.T, principal string) *keytab.Keytab {
	t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry(principal, testRealm, "service-secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	return kt
}

func TestGSSAPIReplayRefused(t *testing.T) {
	keys := serviceKeytab(t, "service-secret")
	srv := gssServer(t, keys, nil)
	c := newKrbClient(t, ticketSpec{keys: keys, subkey: true})
	first, err := srv.Start(GSSAPI)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := first.Step(c.token); err != nil {
		t.Fatalf("first AP-REQ: %v", err)
	}
	second, _ := srv.Start(GSSAPI)
	if _, _, err := second.Step(c.token); !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), "replay") {
		t.Fatalf("replayed AP-REQ: err = %v, want a replay refused", err)
	}
}

func TestGSSAPIMalformedTokens(t *testing.T) {
	keys := serviceKeytab(t, "service-secret")
	c := newKrbClient(t, ticketSpec{keys: keys})
	inner, err := unframeGSS(c.token, tokAPReq)
	if err != nil {
		t.Fatal(err)
	}
	longLen := append([]byte{0x60, 0x84, 0xff, 0xff, 0xff, 0xff}, c.token[2:]...)
	wrongOID := bytes.Clone(c.token)
	wrongOID[len(wrongOID)-len(inner)-3] ^= 1 // last OID byte
	for name, tok := range map[string][]byte{
		"empty":              nil,
		"one byte":           {0x60},
		"no 0x60 tag":        append([]byte{0x61}, c.token[1:]...),
		"truncated":          c.token[:len(c.token)/2],
		"trailing bytes":     append(bytes.Clone(c.token), 0),
		"huge length":        longLen,
		"length octets only": {0x60, 0x82, 0x01},
		"wrong mechanism":    wrongOID,
		"AP-REP token id":    frameGSS(tokAPRep, inner),
		"garbage AP-REQ":     frameGSS(tokAPReq, []byte{0x6e, 0x03, 1, 2, 3}),
		"raw AP-REQ":         inner,
	} {
		t.Run(name, func(t *testing.T) {
			ex, _ := gssServer(t, keys, nil).Start(GSSAPI)
			out, done, err := ex.Step(tok)
			if !errors.Is(err, ErrAuthentication) || done || out != nil {
				t.Fatalf("out %x done %v err %v; want ErrAuthentication", out, done, err)
			}
		})
	}
	t.Run("token instead of the empty one after the AP-REP", func(t *testing.T) {
		c := newKrbClient(t, ticketSpec{keys: keys, mutual: true})
		ex, _ := gssServer(t, keys, nil).Start(GSSAPI)
		if _, _, err := ex.Step(c.token); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ex.Step([]byte{5, 4}); !errors.Is(err, ErrAuthentication) {
			t.Fatalf("err = %v, want ErrAuthentication", err)
		}
	})
	t.Run("no keytab", func(t *testing.T) {
		ex, _ := (&Server{Mechanisms: []string{GSSAPI}}).Start(GSSAPI)
		if _, _, err := ex.Step(c.token); !errors.Is(err, ErrAuthentication) {
			t.Fatalf("err = %v, want ErrAuthentication", err)
		}
	})
}

// TestKeytabFileReloads: a keytab file rewritten with a new key version
// is read again (the clock past reload.CheckEvery), so tickets under the
// new key verify; a broken rewrite keeps the last good keys.
func TestKeytabFileReloads(t *testing.T) {
	path := t.TempDir() + "/kafka.keytab"
	write := func(kt *keytab.Keytab, mtime time.Time) {
		t.Helper()
		b, err := kt.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Now()
	old := serviceKeytab(t, "service-secret")
	write(old, base)
	now := base
	k, err := OpenKeytab(path, "kafka", nil, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	var reloads []error
	k.OnReload = func(err error) { reloads = append(reloads, err) }
	srv := &Server{Mechanisms: []string{GSSAPI}, Keytab: k}
	login := func(keys *keytab.Keytab, kvno int) error {
		t.Helper()
		c := newKrbClient(t, ticketSpec{keys: keys, kvno: kvno})
		_, err := runGSSAPI(t, srv, c, false, func(o []byte, s uint64) []byte { return c.answer(t, o, s, nil, "") })
		return err
	}
	if err := login(old, 1); err != nil {
		t.Fatalf("kvno 1: %v", err)
	}
	rekeyed := keytabKVNO2(t)
	if err := login(rekeyed, 2); err == nil {
		t.Fatal("kvno 2 verified before the keytab held it")
	}
	write(rekeyed, base.Add(time.Minute))
	now = now.Add(2 * time.Second)
	if err := login(rekeyed, 2); err != nil {
		t.Fatalf("kvno 2 after the reload: %v", err)
	}
	if len(reloads) != 1 || reloads[0] != nil {
		t.Fatalf("reloads reported: %v", reloads)
	}
	if err := os.WriteFile(path, []byte("not a keytab"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	if err := login(rekeyed, 2); err != nil {
		t.Fatalf("after a broken rewrite: %v", err)
	}
	if len(reloads) != 2 || reloads[1] == nil {
		t.Fatalf("broken rewrite not reported: %v", reloads)
	}
	if _, err := OpenKeytab(path, "kafka", nil, time.Now); err == nil {
		t.Fatal("OpenKeytab accepted a broken file")
	}
}
