package sasl_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	kplain "github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kaas-project/kaas/wire/sasl"
)

func store(t *testing.T) *sasl.Credentials {
	t.Helper()
	c := &sasl.Credentials{Users: map[string]map[string]sasl.ScramCredential{}}
	for _, mech := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		cred, err := sasl.NewScramCredential(mech, "alice-secret", 4096)
		if err != nil {
			t.Fatal(err)
		}
		if c.Users["alice"] == nil {
			c.Users["alice"] = map[string]sasl.ScramCredential{}
		}
		c.Users["alice"][mech] = cred
	}
	return c
}

func exchange(t *testing.T, srv *sasl.Server, name string, client func() (step func([]byte) (bool, []byte, error), first []byte)) (string, error) {
	t.Helper()
	ex, err := srv.Start(name)
	if err != nil {
		return "", err
	}
	step, msg := client()
	for i := 0; i < 4; i++ {
		out, done, err := ex.Step(msg)
		if err != nil {
			return "", err
		}
		if step == nil {
			if done {
				return ex.Principal(), nil
			}
			t.Fatal("exchange not done after the client's last message")
		}
		clientDone, next, err := step(out)
		if err != nil {
			t.Fatalf("client rejected the server: %v", err)
		}
		if done {
			if !clientDone {
				t.Fatal("server done, client not")
			}
			return ex.Principal(), nil
		}
		msg = next
	}
	t.Fatal("exchange does not end")
	return "", nil
}

func scramClient(t *testing.T, name, user, pass string) func() (func([]byte) (bool, []byte, error), []byte) {
	return scramAuthClient(t, name, kscram.Auth{User: user, Pass: pass})
}

func scramAuthClient(t *testing.T, name string, a kscram.Auth) func() (func([]byte) (bool, []byte, error), []byte) {
	return func() (func([]byte) (bool, []byte, error), []byte) {
		m := a.AsSha256Mechanism()
		if name == sasl.ScramSHA512 {
			m = a.AsSha512Mechanism()
		}
		sess, first, err := m.Authenticate(context.Background(), "host")
		if err != nil {
			t.Fatal(err)
		}
		return sess.Challenge, first
	}
}

func TestScram(t *testing.T) {
	srv := &sasl.Server{Mechanisms: []string{sasl.ScramSHA256, sasl.ScramSHA512, sasl.Plain}, Credentials: store(t)}
	for _, mech := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		p, err := exchange(t, srv, mech, scramClient(t, mech, "alice", "alice-secret"))
		if err != nil || p != "User:alice" {
			t.Fatalf("%s: principal %q, %v", mech, p, err)
		}
		if _, err := exchange(t, srv, mech, scramClient(t, mech, "alice", "wrong")); !errors.Is(err, sasl.ErrAuthentication) {
			t.Fatalf("%s wrong password: %v", mech, err)
		}
		if _, err := exchange(t, srv, mech, scramClient(t, mech, "bob", "x")); !errors.Is(err, sasl.ErrAuthentication) {
			t.Fatalf("%s unknown user: %v", mech, err)
		}
	}
	if _, err := srv.Start(sasl.OAuthBearer); err == nil {
		t.Fatal("a mechanism not enabled started")
	}
}

func TestPlain(t *testing.T) {
	srv := &sasl.Server{Mechanisms: []string{sasl.Plain}, Credentials: store(t)}
	plain := func(user, pass string) func() (func([]byte) (bool, []byte, error), []byte) {
		return func() (func([]byte) (bool, []byte, error), []byte) {
			_, first, err := kplain.Auth{User: user, Pass: pass}.AsMechanism().Authenticate(context.Background(), "h")
			if err != nil {
				t.Fatal(err)
			}
			return nil, first
		}
	}
	if p, err := exchange(t, srv, sasl.Plain, plain("alice", "alice-secret")); err != nil || p != "User:alice" {
		t.Fatalf("plain: %q %v", p, err)
	}
	for _, bad := range [][2]string{{"alice", "nope"}, {"bob", "alice-secret"}} {
		if _, err := exchange(t, srv, sasl.Plain, plain(bad[0], bad[1])); !errors.Is(err, sasl.ErrAuthentication) {
			t.Fatalf("plain %v: %v", bad, err)
		}
	}
	ex, _ := srv.Start(sasl.Plain)
	if _, _, err := ex.Step([]byte("garbage")); !errors.Is(err, sasl.ErrAuthentication) {
		t.Fatalf("malformed: %v", err)
	}
}

func TestLimiter(t *testing.T) {
	l := sasl.NewLimiter(3, time.Minute)
	now := time.Unix(0, 0)
	for i := 0; i < 3; i++ {
		if !l.Allow("10.0.0.1", now) {
			t.Fatalf("refused after %d failures", i)
		}
		l.Fail("10.0.0.1", now)
	}
	if l.Allow("10.0.0.1", now) {
		t.Fatal("allowed after 3 failures in the window")
	}
	if !l.Allow("10.0.0.2", now) {
		t.Fatal("another address refused")
	}
	if !l.Allow("10.0.0.1", now.Add(time.Minute)) {
		t.Fatal("still refused once the failures left the window")
	}
}

func TestFileStoreReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.json")
	write := func(c *sasl.Credentials) {
		b, _ := json.Marshal(c)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(store(t))
	now := time.Unix(100, 0)
	f, err := sasl.OpenFile(path, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Lookup("alice", sasl.ScramSHA256); !ok {
		t.Fatal("alice missing")
	}
	c := store(t)
	c.Users["bob"] = c.Users["alice"]
	write(c)
	later := time.Now().Add(time.Hour)
	_ = os.Chtimes(path, later, later)
	now = now.Add(time.Second)
	if _, ok := f.Lookup("bob", sasl.ScramSHA256); !ok {
		t.Fatal("bob missing after the file changed")
	}
	if err := os.WriteFile(path, []byte(`{"users":{"x":{"SCRAM-SHA-256":{"iterations":1}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(path, later.Add(time.Hour), later.Add(time.Hour))
	now = now.Add(time.Second)
	if _, ok := f.Lookup("bob", sasl.ScramSHA256); !ok {
		t.Fatal("an invalid file replaced the last good one")
	}
	if _, err := sasl.OpenFile(path, time.Now); err == nil {
		t.Fatal("invalid credentials file opened")
	}
}

func TestOAuthBearer(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwks := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}}
	path := filepath.Join(t.TempDir(), "jwks.json")
	b, _ := json.Marshal(jwks)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	v, err := sasl.NewTokenValidator(path, "https://issuer", []string{"kaas"}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	sign := func(k *ecdsa.PrivateKey, c jwt.Claims, more ...map[string]any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
		if err != nil {
			t.Fatal(err)
		}
		b := jwt.Signed(s).Claims(c)
		for _, m := range more {
			b = b.Claims(m)
		}
		tok, err := b.Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := jwt.Claims{Subject: "svc", Issuer: "https://issuer", Audience: jwt.Audience{"kaas"}, Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute))}
	srv := &sasl.Server{Mechanisms: []string{sasl.OAuthBearer}, Tokens: v, Now: func() time.Time { return now }}
	msg := func(tok string) []byte { return []byte("n,,\x01auth=Bearer " + tok + "\x01\x01") }
	ex, _ := srv.Start(sasl.OAuthBearer)
	if _, done, err := ex.Step(msg(sign(key, good))); err != nil || !done || ex.Principal() != "User:svc" || !ex.Expires().Equal(good.Expiry.Time()) {
		t.Fatalf("good token: done %v err %v principal %q", done, err, ex.Principal())
	}
	expired := good
	expired.Expiry = jwt.NewNumericDate(now.Add(-time.Minute))
	wrongAud := good
	wrongAud.Audience = jwt.Audience{"other"}
	noIat := good
	noIat.IssuedAt = nil
	for name, tok := range map[string]string{
		"expired": sign(key, expired), "wrong key": sign(other, good), "wrong audience": sign(key, wrongAud), "garbage": "a.b.c",
		"no iat": sign(key, noIat),
	} {
		ex, _ := srv.Start(sasl.OAuthBearer)
		if err := refusedToken(ex, msg(tok)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}

	// Kafka's options: times checked with the clock skew (30 s by
	// default), one of the expected audiences, the principal from another
	// claim (a non-blank string, trimmed).
	at := func(c jwt.Claims, exp, nbf time.Duration) jwt.Claims {
		c.Expiry = jwt.NewNumericDate(now.Add(exp))
		if nbf != 0 {
			c.NotBefore = jwt.NewNumericDate(now.Add(nbf))
		}
		return c
	}
	twoAuds := good
	twoAuds.Audience = jwt.Audience{"other", "kafka"}
	for _, c := range []struct {
		name      string
		skew      time.Duration // -1: the default
		audiences []string
		claim     string
		token     string
		want      string // principal; empty: refused
	}{
		{name: "expired within the default skew", skew: -1, token: sign(key, at(good, -20*time.Second, 0)), want: "User:svc"},
		{name: "expired beyond the default skew", skew: -1, token: sign(key, at(good, -40*time.Second, 0))},
		{name: "expired, no skew", skew: 0, token: sign(key, at(good, -time.Second, 0))},
		{name: "not yet valid within the skew", skew: -1, token: sign(key, at(good, time.Hour, 20*time.Second)), want: "User:svc"},
		{name: "not yet valid beyond the skew", skew: -1, token: sign(key, at(good, time.Hour, 40*time.Second))},
		{name: "one of the audiences", skew: -1, audiences: []string{"kaas", "kafka"}, token: sign(key, twoAuds), want: "User:svc"},
		{name: "none of the audiences", skew: -1, audiences: []string{"kaas", "brokers"}, token: sign(key, twoAuds)},
		{name: "principal claim", skew: -1, claim: "azp", token: sign(key, good, map[string]any{"azp": " client-7 "}), want: "User:client-7"},
		{name: "principal claim absent", skew: -1, claim: "azp", token: sign(key, good)},
		{name: "principal claim blank", skew: -1, claim: "azp", token: sign(key, good, map[string]any{"azp": "  "})},
		{name: "principal claim not a string", skew: -1, claim: "azp", token: sign(key, good, map[string]any{"azp": 7})},
		{name: "sub blank", skew: -1, token: sign(key, jwt.Claims{Subject: " ", Issuer: "https://issuer", Audience: jwt.Audience{"kaas"}, Expiry: good.Expiry, IssuedAt: good.IssuedAt})},
	} {
		v, err := sasl.NewTokenValidator(path, "https://issuer", []string{"kaas"}, func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		if c.skew >= 0 {
			v.ClockSkew = c.skew
		}
		if c.audiences != nil {
			v.Audiences = c.audiences
		}
		if c.claim != "" {
			v.PrincipalClaim = c.claim
		}
		srv := &sasl.Server{Mechanisms: []string{sasl.OAuthBearer}, Tokens: v, Now: func() time.Time { return now }}
		ex, _ := srv.Start(sasl.OAuthBearer)
		if c.want == "" {
			if err := refusedToken(ex, msg(c.token)); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if _, done, err := ex.Step(msg(c.token)); err != nil || !done || ex.Principal() != c.want {
			t.Errorf("%s: done %v err %v principal %q, want %s", c.name, done, err, ex.Principal(), c.want)
		}
	}
}

// refusedToken steps ex with m and checks Kafka's answer to a refused
// token: the error challenge {"status":"invalid_token"}, then on the
// client's %x01 a failure whose client message is that challenge.
func refusedToken(ex sasl.Exchange, m []byte) error {
	const challenge = `{"status":"invalid_token"}`
	if out, done, err := ex.Step(m); err != nil || done || string(out) != challenge {
		return fmt.Errorf("answered %q, done %v, err %v; want the challenge %s", out, done, err, challenge)
	}
	if _, done, err := ex.Step([]byte{1}); !errors.Is(err, sasl.ErrAuthentication) || done || sasl.ClientMessage(err) != challenge {
		return fmt.Errorf("after %%x01: done %v, err %v; want a failure with the message %s", done, err, challenge)
	}
	return nil
}

// tokens is a DelegationTokens over a map: token id -> password.
type tokens map[string]string

func (tk tokens) LookupToken(id, mech string) (sasl.ScramCredential, string, time.Time, bool) {
	pass, ok := tk[id]
	if !ok {
		return sasl.ScramCredential{}, "", time.Time{}, false
	}
	cred, err := sasl.NewScramCredential(mech, pass, 4096)
	return cred, "User:owner-of-" + id, time.Unix(2_000_000_000, 0), err == nil
}

// TestScramDelegationToken: with the tokenauth extension the user is a
// token id, the password its HMAC, and the principal the token's owner,
// until the token's expiry; without the extension the same name is an
// ordinary (here unknown) user, and a token never logs in as a user.
func TestScramDelegationToken(t *testing.T) {
	srv := &sasl.Server{Mechanisms: []string{sasl.ScramSHA256, sasl.ScramSHA512}, Credentials: store(t),
		DelegationTokens: tokens{"tok1": "hmac-b64"}}
	for _, mech := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		ex, err := srv.Start(mech)
		if err != nil {
			t.Fatal(err)
		}
		a := kscram.Auth{User: "tok1", Pass: "hmac-b64", IsToken: true}
		m := a.AsSha256Mechanism()
		if mech == sasl.ScramSHA512 {
			m = a.AsSha512Mechanism()
		}
		sess, first, err := m.Authenticate(context.Background(), "host")
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := ex.Step(first)
		if err != nil {
			t.Fatal(err)
		}
		_, final, _ := sess.Challenge(out)
		if _, done, err := ex.Step(final); err != nil || !done {
			t.Fatalf("%s token login: %v", mech, err)
		}
		if ex.Principal() != "User:owner-of-tok1" || !ex.(sasl.TokenAuthenticated).TokenAuthenticated() || !ex.Expires().Equal(time.Unix(2_000_000_000, 0)) {
			t.Fatalf("%s: principal %q, expires %v", mech, ex.Principal(), ex.Expires())
		}
		for name, bad := range map[string]kscram.Auth{
			"wrong hmac":          {User: "tok1", Pass: "other", IsToken: true},
			"unknown token":       {User: "tok2", Pass: "hmac-b64", IsToken: true},
			"token without ext":   {User: "tok1", Pass: "hmac-b64"},
			"user with token ext": {User: "alice", Pass: "alice-secret", IsToken: true},
		} {
			if _, err := exchange(t, srv, mech, scramAuthClient(t, mech, bad)); !errors.Is(err, sasl.ErrAuthentication) {
				t.Errorf("%s %s: %v, want an authentication failure", mech, name, err)
			}
		}
	}
	noTokens := &sasl.Server{Mechanisms: []string{sasl.ScramSHA256}, Credentials: store(t)}
	if _, err := exchange(t, noTokens, sasl.ScramSHA256, scramAuthClient(t, sasl.ScramSHA256, kscram.Auth{User: "tok1", Pass: "hmac-b64", IsToken: true})); !errors.Is(err, sasl.ErrAuthentication) {
		t.Fatalf("token login without a token store: %v", err)
	}
}
