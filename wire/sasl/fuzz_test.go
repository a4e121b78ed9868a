package sasl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// FuzzExchange feeds arbitrary client messages to every mechanism's
// server side. The input's first byte picks the mechanism; the rest is up
// to four messages, each behind a two-byte length. The credentials (a
// random password, a JWKS of a random key, a keytab of a random password)
// cannot be guessed, so no input may authenticate, and none may panic or
// fail without saying why: a client's bytes never take the broker down.
func FuzzExchange(f *testing.F) {
	rnd := make([]byte, 16)
	_, _ = rand.Read(rnd)
	secret := hex.EncodeToString(rnd)

	creds := &Credentials{Users: map[string]map[string]ScramCredential{"alice": {}}}
	for _, mech := range []string{ScramSHA256, ScramSHA512} {
		c, err := NewScramCredential(mech, secret, 4096)
		if err != nil {
			f.Fatal(err)
		}
		creds.Users["alice"][mech] = c
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(f.TempDir(), "jwks.json")
	if err := os.WriteFile(path, jwks, 0o600); err != nil {
		f.Fatal(err)
	}
	tokens, err := NewTokenValidator(path, "", nil, time.Now)
	if err != nil {
		f.Fatal(err)
	}
	kt := serviceKeytab(f, secret)
	srv := gssServer(f, kt, nil)
	srv.Mechanisms = Supported()
	srv.Credentials, srv.Tokens = creds, tokens

	mechs := Supported()
	msgs := func(ms ...[]byte) []byte {
		var b []byte
		for _, m := range ms {
			b = binary.BigEndian.AppendUint16(b, uint16(len(m)))
			b = append(b, m...)
		}
		return b
	}
	for i, mech := range mechs {
		seed := func(ms ...[]byte) { f.Add(append([]byte{byte(i)}, msgs(ms...)...)) }
		switch mech {
		case Plain:
			seed([]byte("\x00alice\x00wrong"))
			seed([]byte("admin\x00alice\x00wrong"))
		case ScramSHA256, ScramSHA512:
			seed([]byte("n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL"), []byte("c=biws,r=fyko+d2lbbFgONRv9qkxdawLserver,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
			seed([]byte("n,,n=alice,r=x,tokenauth=true"))
		case OAuthBearer:
			seed([]byte("n,,\x01auth=Bearer eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.e30.c2ln\x01\x01"))
		case GSSAPI:
			// A well-formed AP-REQ under another key, and one under the
			// broker's key (the fuzzer mutates both).
			seed(newKrbClient(f, ticketSpec{keys: serviceKeytab(f, "other")}).token)
			seed(newKrbClient(f, ticketSpec{keys: kt, mutual: true}).token, nil, []byte{5, 4, 0, 0})
		}
	}

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		mech := mechs[int(in[0])%len(mechs)]
		ex, err := srv.Start(mech)
		if err != nil {
			t.Fatalf("Start(%s): %v", mech, err)
		}
		rest := in[1:]
		for i := 0; i < 4 && len(rest) >= 2; i++ {
			n := min(int(binary.BigEndian.Uint16(rest)), len(rest)-2)
			msg := rest[2 : 2+n]
			rest = rest[2+n:]
			_, done, err := ex.Step(msg)
			if done {
				t.Fatalf("%s authenticated %q from fuzzed input %x", mech, ex.Principal(), in)
			}
			if err != nil {
				if err.Error() == "" {
					t.Fatalf("%s failed without a reason", mech)
				}
				return
			}
		}
	})
}
