package sasl_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/kaas-project/kaas/wire/sasl"
)

// unsecured is a compact unsecured JWS of a header and claims (JSON).
func unsecured(header, claims string) string {
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims)) + "."
}

const noneHeader = `{"alg":"none","typ":"JWT"}`

// TestUnsecuredValidator: the tokens Kafka's
// OAuthBearerUnsecuredValidatorCallbackHandler accepts and those it
// refuses, with the status of its error challenge.
func TestUnsecuredValidator(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	sec := func(d time.Duration) int64 { return now.Add(d).Unix() }
	hour := sec(time.Hour)
	rsKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: rsKey}, nil)
	signed, err := jwt.Signed(signer).Claims(jwt.Claims{Subject: "admin", Expiry: jwt.NewNumericDate(now.Add(time.Hour))}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	std := base64.StdEncoding // the standard alphabet, padded, as Kafka's decoder takes it
	stdToken := std.EncodeToString([]byte(noneHeader)) + "." + std.EncodeToString([]byte(fmt.Sprintf(`{"sub":"std","exp":%d}`, hour))) + "."

	type opts struct {
		principal, scope string
		required         []string
		skew             time.Duration
	}
	for _, c := range []struct {
		name   string
		opts   opts
		token  string
		want   string // principal name; empty: refused
		status string // the challenge's status when refused
		scope  string // the challenge's scope
	}{
		{name: "good", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","iat":%d,"exp":%d,"iss":"kafka","aud":["users"]}`, sec(-time.Minute), hour)), want: "admin"},
		{name: "fractional times", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","iat":%d.5,"exp":%d.25}`, sec(-time.Minute), hour)), want: "admin"},
		{name: "standard Base64, padded", token: stdToken, want: "std"},
		{name: "principal claim name", opts: opts{principal: "client_id"}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"x","client_id":"svc","exp":%d}`, hour)), want: "svc"},
		{name: "missing sub", token: unsecured(noneHeader, fmt.Sprintf(`{"exp":%d}`, hour)), status: "invalid_token"},
		{name: "blank sub", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"  ","exp":%d}`, hour)), status: "invalid_token"},
		{name: "sub a number", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":7,"exp":%d}`, hour)), status: "invalid_token"},
		{name: "principal claim missing", opts: opts{principal: "client_id"}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"x","exp":%d}`, hour)), status: "invalid_token"},
		{name: "no exp", token: unsecured(noneHeader, `{"sub":"admin"}`), status: "invalid_token"},
		{name: "exp a string", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":"%d"}`, hour)), status: "invalid_token"},
		{name: "expired", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d}`, sec(-time.Second))), status: "invalid_token"},
		{name: "exp now", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d}`, sec(0))), status: "invalid_token"},
		{name: "expired within the skew", opts: opts{skew: 30 * time.Second}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d}`, sec(-20*time.Second))), want: "admin"},
		{name: "expired beyond the skew", opts: opts{skew: 30 * time.Second}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d}`, sec(-40*time.Second))), status: "invalid_token"},
		{name: "issued in the future", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","iat":%d,"exp":%d}`, sec(time.Second), hour)), status: "invalid_token"},
		{name: "issued in the future within the skew", opts: opts{skew: 30 * time.Second}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","iat":%d,"exp":%d}`, sec(20*time.Second), hour)), want: "admin"},
		{name: "exp not after iat", opts: opts{skew: time.Hour}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","iat":%d,"exp":%d}`, sec(time.Minute), sec(time.Minute))), status: "invalid_token"},
		{name: "required scope, a string", opts: opts{required: []string{"test"}}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d,"scope":"test"}`, hour)), want: "admin"},
		{name: "required scope, a list", opts: opts{required: []string{"test", "read"}}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d,"scope":["read"," test "]}`, hour)), want: "admin"},
		{name: "scope claim name", opts: opts{scope: "scp", required: []string{"test"}}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d,"scp":["test"]}`, hour)), want: "admin"},
		{name: "wrong scope", opts: opts{required: []string{"test", "other"}}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d,"scope":["test","read"]}`, hour)), status: "insufficient_scope", scope: "[test, other]"},
		{name: "no scope", opts: opts{required: []string{"test"}}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d}`, hour)), status: "insufficient_scope", scope: "[test]"},
		// Kafka takes a string scope claim as one item, not a space-separated list.
		{name: "scope string of two items", opts: opts{required: []string{"test"}}, token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d,"scope":"read test"}`, hour)), status: "insufficient_scope", scope: "[test]"},
		{name: "scope a number", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d,"scope":3}`, hour)), status: "invalid_token"},
		{name: "signed, alg RS256", token: signed, status: "invalid_token"},
		{name: "alg RS256 without a signature", token: unsecured(`{"alg":"RS256"}`, fmt.Sprintf(`{"sub":"admin","exp":%d}`, hour)), status: "invalid_token"},
		{name: "no alg", token: unsecured(`{"typ":"JWT"}`, fmt.Sprintf(`{"sub":"admin","exp":%d}`, hour)), status: "invalid_token"},
		{name: "alg none with a signature", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d}`, hour)) + "c2ln", status: "invalid_token"},
		{name: "malformed: no dots", token: "token", status: "invalid_token"},
		{name: "malformed: two parts", token: "eyJhbGciOiJub25lIn0.e30", status: "invalid_token"},
		{name: "malformed: four parts", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d}`, hour)) + "c2ln.", status: "invalid_token"},
		{name: "malformed: a part empty", token: unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d}`, hour)) + ".", status: "invalid_token"},
		{name: "malformed: empty part", token: "eyJhbGciOiJub25lIn0..", status: "invalid_token"},
		{name: "malformed: not Base64", token: "e!!.e30.", status: "invalid_token"},
		{name: "malformed: claims not JSON", token: base64.RawURLEncoding.EncodeToString([]byte(noneHeader)) + "." + base64.RawURLEncoding.EncodeToString([]byte("sub=admin")) + ".", status: "invalid_token"},
		{name: "malformed: claims a JSON array", token: unsecured(noneHeader, `["sub"]`), status: "invalid_token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := sasl.NewUnsecuredValidator(c.opts.principal, c.opts.scope, c.opts.required, c.opts.skew, clock)
			if err != nil {
				t.Fatal(err)
			}
			name, exp, err := v.Validate(c.token)
			if c.want != "" {
				if err != nil || name != c.want || !exp.After(now.Add(-time.Minute)) {
					t.Fatalf("Validate: %q, exp %v, %v; want %q", name, exp, err, c.want)
				}
				return
			}
			var te *sasl.TokenError
			if !errors.As(err, &te) || !errors.Is(err, sasl.ErrAuthentication) || name != "" {
				t.Fatalf("Validate: %q, %v; want a *TokenError", name, err)
			}
			if te.Status != c.status || te.Scope != c.scope || te.Reason == "" {
				t.Fatalf("refused with %+v, want status %q scope %q and a reason", te, c.status, c.scope)
			}
		})
	}
}

func TestUnsecuredValidatorOptions(t *testing.T) {
	if _, err := sasl.NewUnsecuredValidator("", "", nil, -time.Millisecond, time.Now); err == nil {
		t.Fatal("a negative clock skew was accepted")
	}
	v, err := sasl.NewUnsecuredValidator(" ", "", nil, 0, time.Now)
	if err != nil || v.PrincipalClaim != "sub" || v.ScopeClaim != "scope" {
		t.Fatalf("blank claim names: %+v, %v; want Kafka's defaults sub and scope", v, err)
	}
	if s, err := sasl.ParseScope("  test  read:x "); err != nil || len(s) != 2 || s[0] != "test" || s[1] != "read:x" {
		t.Fatalf("ParseScope: %q, %v", s, err)
	}
	for _, bad := range []string{`a"b`, `back\slash`, "é"} {
		if _, err := sasl.ParseScope("ok " + bad); err == nil {
			t.Fatalf("ParseScope accepted %q", bad)
		}
	}
}

// TestUnsecuredExchange: the OAUTHBEARER exchange with unsecured tokens:
// a good one authenticates until its exp; a refused one is answered with
// Kafka's error challenge and fails once the client sends %x01 (or is
// taken afresh when it sends another message); an authorization id
// other than the token's principal name is refused.
func TestUnsecuredExchange(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	v, err := sasl.NewUnsecuredValidator("", "", []string{"test"}, 0, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	srv := &sasl.Server{Mechanisms: []string{sasl.OAuthBearer}, Tokens: v}
	exp := now.Add(time.Hour).Unix()
	good := unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d,"scope":"test"}`, exp))
	msg := func(gs2, tok string) []byte { return []byte(gs2 + "\x01auth=Bearer " + tok + "\x01aaa=bbb\x01\x01") }

	ex, _ := srv.Start(sasl.OAuthBearer)
	if out, done, err := ex.Step(msg("n,,", good)); err != nil || !done || len(out) != 0 || ex.Principal() != "User:admin" || !ex.Expires().Equal(time.Unix(exp, 0)) {
		t.Fatalf("good token: out %q done %v err %v principal %q expires %v", out, done, err, ex.Principal(), ex.Expires())
	}
	ex, _ = srv.Start(sasl.OAuthBearer)
	if _, done, err := ex.Step(msg("n,a=admin,", good)); err != nil || !done {
		t.Fatalf("authorization id of the principal: done %v err %v", done, err)
	}
	ex, _ = srv.Start(sasl.OAuthBearer)
	if _, done, err := ex.Step(msg("n,a=root,", good)); !errors.Is(err, sasl.ErrAuthentication) || done {
		t.Fatalf("authorization id of another principal: done %v err %v", done, err)
	}

	for _, c := range []struct{ token, challenge string }{
		{"token", `{"status":"invalid_token"}`},
		{unsecured(noneHeader, fmt.Sprintf(`{"sub":"admin","exp":%d}`, exp)), `{"status":"insufficient_scope", "scope":"[test]"}`},
	} {
		ex, _ := srv.Start(sasl.OAuthBearer)
		out, done, err := ex.Step(msg("n,,", c.token))
		if err != nil || done || string(out) != c.challenge {
			t.Fatalf("%s: out %q done %v err %v, want the challenge %s", c.token, out, done, err, c.challenge)
		}
		_, done, err = ex.Step([]byte{1})
		if !errors.Is(err, sasl.ErrAuthentication) || done || sasl.ClientMessage(err) != c.challenge {
			t.Fatalf("%%x01 after the challenge: done %v err %v, want a failure with the message %s", done, err, c.challenge)
		}
	}
	ex, _ = srv.Start(sasl.OAuthBearer)
	if out, _, _ := ex.Step(msg("n,,", "token")); len(out) == 0 {
		t.Fatal("no challenge")
	}
	if _, done, err := ex.Step(msg("n,,", good)); err != nil || !done || ex.Principal() != "User:admin" {
		t.Fatalf("a good token after the challenge: done %v err %v", done, err)
	}
}
