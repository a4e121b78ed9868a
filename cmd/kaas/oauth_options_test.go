package main

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOAuthBearerValidatorOptions: Kafka's options of its broker JWT
// validator, as flags: the principal from another claim
// (--sasl-oauthbearer-sub-claim-name), a list of expected audiences of
// which a token must hold one, and the clock skew (here none: a token
// expired two seconds ago is refused). Bad values stop the start, and so
// do these flags beside --sasl-oauthbearer-unsecured.
func TestOAuthBearerValidatorOptions(t *testing.T) {
	e := newSecureEnv(t, "--sasl-oauthbearer-sub-claim-name", "azp", "--sasl-oauthbearer-audience", "brokers, kaas",
		"--sasl-oauthbearer-clock-skew", "0s")
	sign := func(claims map[string]any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: e.jwksKey}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(s).Claims(claims).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	login := func(c net.Conn, tok string) *kmsg.SASLAuthenticateResponse {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "OAUTHBEARER"
		if r := rawExchange(t, c, hs, 1, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
			t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + tok + "\x01\x01")
		return rawExchange(t, c, au, 1, 2).(*kmsg.SASLAuthenticateResponse)
	}
	exp, iat := time.Now().Add(time.Hour).Unix(), time.Now().Unix()
	for _, aud := range []string{"kaas", "brokers"} {
		if r := login(rawConn(t, e.saslPlaintext), sign(map[string]any{"sub": "ignored", "azp": "client-7", "aud": aud, "exp": exp, "iat": iat})); r.ErrorCode != 0 {
			t.Fatalf("token for %s with azp: %v", aud, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if l := e.logs.String(); !strings.Contains(l, `"principal":"User:client-7"`) || strings.Contains(l, `"principal":"User:ignored"`) {
		t.Fatalf("the principal is not the azp claim's:\n%s", l)
	}
	for name, claims := range map[string]map[string]any{
		"no azp":            {"sub": "svc", "aud": "kaas", "exp": exp, "iat": iat},
		"another audience":  {"azp": "client-7", "aud": "other", "exp": exp, "iat": iat},
		"expired 2 seconds": {"azp": "client-7", "aud": "kaas", "exp": time.Now().Add(-2 * time.Second).Unix(), "iat": iat},
		"no iat":            {"azp": "client-7", "aud": "kaas", "exp": exp},
	} {
		if r := login(rawConn(t, e.saslPlaintext), sign(claims)); r.ErrorCode != 0 || string(r.SASLAuthBytes) != `{"status":"invalid_token"}` {
			t.Errorf("%s: error %v, bytes %q; want the error challenge", name, kerr.ErrorForCode(r.ErrorCode), r.SASLAuthBytes)
		}
	}

	base := []string{"--listeners", "SASL_PLAINTEXT://" + freeAddr(t), "--sasl-enabled-mechanisms", "OAUTHBEARER"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sasl-oauthbearer-jwks-file", e.jwks, "--sasl-oauthbearer-sub-claim-name", " "}, "--sasl-oauthbearer-sub-claim-name must not be empty"},
		{[]string{"--sasl-oauthbearer-jwks-file", e.jwks, "--sasl-oauthbearer-clock-skew", "-1s"}, "--sasl-oauthbearer-clock-skew must not be negative"},
		{[]string{"--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-sub-claim-name", "azp"}, "--sasl-oauthbearer-unsecured and --sasl-oauthbearer-sub-claim-name: give one"},
		{[]string{"--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-clock-skew", "1m"}, "--sasl-oauthbearer-unsecured and --sasl-oauthbearer-clock-skew: give one"},
	} {
		_, err := parseServe(append(base, c.args...), func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
