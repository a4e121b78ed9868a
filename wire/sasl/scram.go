package sasl

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// scramExchange is the server side of SCRAM (RFC 5802) without channel
// binding: client-first -> server-first, client-final -> server-final.
type scramExchange struct {
	mech   string
	h      func() hash.Hash
	creds  CredentialStore
	tokens DelegationTokens

	step        int
	user        string
	cred        ScramCredential
	known       bool // false: the user has no credential (answered alike, fails at the end)
	gs2         string
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string
	principal   string
	// token is set by the tokenauth extension: the user is a delegation
	// token id, and a success authenticates as the token's owner.
	token   bool
	owner   string
	expires time.Time
}

func newScramExchange(mech string, creds CredentialStore) *scramExchange {
	h, _ := hashFor(mech)
	return &scramExchange{mech: mech, h: h, creds: creds}
}

func (s *scramExchange) Principal() string        { return s.principal }
func (s *scramExchange) Expires() time.Time       { return s.expires }
func (s *scramExchange) TokenAuthenticated() bool { return s.token && s.principal != "" }

func (s *scramExchange) Step(in []byte) ([]byte, bool, error) {
	s.step++
	switch s.step {
	case 1:
		out, err := s.first(string(in))
		return out, false, err
	case 2:
		return s.final(string(in))
	}
	return nil, false, fmt.Errorf("%w: SCRAM exchange already finished", ErrAuthentication)
}

// first parses "n,,n=user,r=nonce[,ext...]" and answers
// "r=nonce+server,s=salt,i=iterations".
func (s *scramExchange) first(msg string) ([]byte, error) {
	var bare string
	switch {
	case strings.HasPrefix(msg, "n,,"), strings.HasPrefix(msg, "y,,"):
		s.gs2, bare = msg[:3], msg[3:]
	case strings.HasPrefix(msg, "p="):
		return nil, fmt.Errorf("%w: SCRAM channel binding is not supported", ErrAuthentication)
	default:
		// An authzid (n,a=user,) is allowed when it names the user.
		i := strings.Index(msg, ",")
		j := strings.Index(msg[i+1:], ",")
		if i < 0 || j < 0 || !strings.HasPrefix(msg[i+1:], "a=") {
			return nil, fmt.Errorf("%w: malformed SCRAM client-first message", ErrAuthentication)
		}
		s.gs2, bare = msg[:i+1+j+1], msg[i+1+j+1:]
	}
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) < 3 {
		return nil, fmt.Errorf("%w: malformed SCRAM client-first message", ErrAuthentication)
	}
	user, err := unescapeUser(attrs[0][2:])
	if err != nil {
		return nil, err
	}
	if a := strings.TrimPrefix(s.gs2, "n,"); strings.HasPrefix(a, "a=") {
		if authz, _ := unescapeUser(strings.TrimSuffix(a[2:], ",")); authz != user {
			return nil, fmt.Errorf("%w: authorization id must be the user", ErrAuthentication)
		}
	}
	s.user, s.clientFirst = user, bare
	for _, ext := range attrs[2:] {
		if ext == "tokenauth=true" {
			s.token = true
		}
	}
	switch {
	case s.token && s.tokens != nil:
		s.cred, s.owner, s.expires, s.known = s.tokens.LookupToken(user, s.mech)
	case s.token:
	case s.creds != nil:
		s.cred, s.known = s.creds.Lookup(user, s.mech)
	}
	if !s.known {
		// Unknown users get a well-formed challenge so that the answer
		// does not reveal which users exist.
		s.cred = ScramCredential{Salt: randomBytes(24), Iterations: MinIterations}
	}
	s.nonce = attrs[1][2:] + base64.RawStdEncoding.EncodeToString(randomBytes(18))
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) + ",i=" + strconv.Itoa(s.cred.Iterations)
	return []byte(s.serverFirst), nil
}

// final checks "c=gs2,r=nonce,p=proof" and answers "v=signature".
func (s *scramExchange) final(msg string) ([]byte, bool, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return nil, false, fmt.Errorf("%w: malformed SCRAM client-final message", ErrAuthentication)
	}
	withoutProof, proofB64 := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	// The nonce must end with the one sent (as Kafka checks it):
	// librdkafka repeats the client's part in front. The proof covers the
	// message as sent, so this loses nothing.
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2)) ||
		!strings.HasPrefix(attrs[1], "r=") || !strings.HasSuffix(attrs[1], s.nonce) {
		return nil, false, fmt.Errorf("%w: SCRAM channel binding or nonce mismatch", ErrAuthentication)
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != s.h().Size() {
		return nil, false, fmt.Errorf("%w: malformed SCRAM proof", ErrAuthentication)
	}
	authMessage := s.clientFirst + "," + s.serverFirst + "," + withoutProof
	if !s.known {
		return nil, false, ErrAuthentication
	}
	sig := hmacOf(s.h, s.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ sig[i]
	}
	if !hmac.Equal(hashOf(s.h, clientKey), s.cred.StoredKey) {
		return nil, false, ErrAuthentication
	}
	s.principal = "User:" + s.user
	if s.token {
		s.principal = s.owner
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(hmacOf(s.h, s.cred.ServerKey, authMessage))), true, nil
}

// unescapeUser decodes a SCRAM saslname (=2C is ',', =3D is '=').
func unescapeUser(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", fmt.Errorf("%w: malformed SCRAM user name", ErrAuthentication)
		}
		i += 2
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("%w: empty SCRAM user name", ErrAuthentication)
	}
	return b.String(), nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
