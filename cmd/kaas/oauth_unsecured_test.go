package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// unsignedToken is an unsecured JWS (alg none) for sub, expiring at exp,
// with scope (none when empty).
func unsignedToken(sub string, exp time.Time, scope string) string {
	claims := fmt.Sprintf(`{"sub":%q,"iat":%d,"exp":%d,"iss":"kafka","aud":["users"]`, sub, time.Now().Add(-time.Minute).Unix(), exp.Unix())
	if scope != "" {
		claims += fmt.Sprintf(`,"scope":%q`, scope)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc.EncodeToString([]byte(claims+"}")) + "."
}

// TestOAuthBearerUnsecured: with --sasl-oauthbearer-unsecured a broker
// takes unsigned tokens as Kafka's development default validator does.
// franz-go's OAUTHBEARER with an alg-none token logs in as User:<sub>,
// which the ACLs then govern (alice writes her topic, not another; bob
// is refused hers); the session ends at the token's exp (KIP-368); a
// token expired, without the required scope, signed, or malformed is
// refused with SASL_AUTHENTICATION_FAILED carrying Kafka's error
// challenge; a request sent after that challenge instead of %x01 is
// answered ILLEGAL_SASL_STATE and the connection closed, as Kafka does,
// the refusal logged; the broker warns at start; and the flag with a
// JWKS flag stops start.
func TestOAuthBearerUnsecured(t *testing.T) {
	plain, saslAddr := freeAddr(t), freeAddr(t)
	listeners := fmt.Sprintf("PLAINTEXT://%s,SASL_PLAINTEXT://%s", plain, saslAddr)
	_, logs, _ := startLoggedBroker(t, []string{"--http-addr", "", "--log-level", "info", "--log-format", "json", "--data-dir", t.TempDir(),
		"--listeners", listeners, "--advertised-listeners", listeners,
		"--sasl-enabled-mechanisms", "OAUTHBEARER", "--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-unsecured-required-scope", "kafka",
		"--authorizer", "acl", "--super-users", anon})
	if l := logs.String(); !strings.Contains(l, `"level":"warn"`) || !strings.Contains(l, `"validator":"unsecured"`) || !strings.Contains(l, "any client can claim any principal") {
		t.Fatalf("no startup warning about unsecured tokens in the log:\n%s", l)
	}

	adm := newAdmin(t, plain)
	if _, err := adm.CreateTopics(ctxT(t, 10*time.Second), 1, 1, nil, "unsecured-alice", "unsecured-other"); err != nil {
		t.Fatal(err)
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("unsecured-alice").Allow("User:alice").Operations(kadm.OpWrite, kadm.OpDescribe))
	hour := time.Now().Add(time.Hour)
	client := func(tok string, opts ...kgo.Opt) *kgo.Client {
		return secureClient(t, saslAddr, append([]kgo.Opt{kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()), kgo.DisableIdempotentWrite(),
			kgo.RecordRetries(0), kgo.UnknownTopicRetries(0)}, opts...)...)
	}
	produce := func(cl *kgo.Client, topic string) error {
		return cl.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}
	alice := client(unsignedToken("alice", hour, "kafka"))
	if err := produce(alice, "unsecured-alice"); err != nil {
		t.Fatalf("alice to her topic: %v", err)
	}
	if err := produce(alice, "unsecured-other"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice to another topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produce(client(unsignedToken("bob", hour, "kafka")), "unsecured-alice"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob to alice's topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if !strings.Contains(logs.String(), `"principal":"User:alice"`) {
		t.Fatal("alice's authentication not logged")
	}

	// The session lasts until exp.
	c := rawConn(t, saslAddr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "OAUTHBEARER"
	if r := rawExchange(t, c, hs, 1, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + unsignedToken("alice", time.Now().Add(30*time.Second), "kafka") + "\x01\x01")
	r := rawExchange(t, c, au, 1, 2).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != 0 || r.SessionLifetimeMillis <= 20_000 || r.SessionLifetimeMillis > 30_000 {
		t.Fatalf("SaslAuthenticate with a token expiring in 30s: error %v, session lifetime %d ms", kerr.ErrorForCode(r.ErrorCode), r.SessionLifetimeMillis)
	}

	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for name, c := range map[string]struct{ token, message string }{
		"expired":           {unsignedToken("alice", time.Now().Add(-time.Minute), "kafka"), `{"status":"invalid_token"}`},
		"without the scope": {unsignedToken("alice", hour, "other"), `{"status":"insufficient_scope", "scope":"[kafka]"}`},
		"signed":            {signedToken(t, key, "k1", "alice", hour), `{"status":"invalid_token"}`},
		"malformed":         {"token", `{"status":"invalid_token"}`},
	} {
		cl := client(c.token, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 5*time.Second), cl)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), c.message) {
			t.Fatalf("%s token: %v, want SASL_AUTHENTICATION_FAILED with %s", name, err, c.message)
		}
	}

	// A client that takes the error challenge for success and sends
	// Metadata is answered, then the connection closes.
	c = rawConn(t, saslAddr)
	if r := rawExchange(t, c, hs, 1, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	au.SASLAuthBytes = []byte("n,,\x01auth=Bearer token\x01\x01")
	if r := rawExchange(t, c, au, 1, 2).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 || string(r.SASLAuthBytes) != `{"status":"invalid_token"}` {
		t.Fatalf("SaslAuthenticate with a malformed token: error %v, bytes %q; want the error challenge", kerr.ErrorForCode(r.ErrorCode), r.SASLAuthBytes)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("unsecured-alice")}}
	mr := rawExchange(t, c, md, 12, 3).(*kmsg.MetadataResponse)
	if len(mr.Brokers) != 0 || len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("Metadata during the exchange: %+v, want only ILLEGAL_SASL_STATE for the topic", mr)
	}
	assertClosed(t, c, "the connection after the Metadata request during the exchange")
	if l := logs.String(); !strings.Contains(l, "request during SASL authentication") || !strings.Contains(l, "3 dot-separated") {
		t.Fatal("the Metadata request during the exchange is not logged with the token's refusal")
	}

	_, err := parseServe([]string{"--listeners", "SASL_PLAINTEXT://" + freeAddr(t), "--sasl-enabled-mechanisms", "OAUTHBEARER",
		"--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-jwks-file", "/etc/kaas/jwks.json"}, func(string) string { return "" }, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--sasl-oauthbearer-unsecured and --sasl-oauthbearer-jwks-file: give one") {
		t.Fatalf("start with unsecured tokens and a JWKS file: %v", err)
	}
}

// TestOAuthBearerRefusalsCount: a refused token counts against
// --sasl-max-failures when the error challenge answers it, so a client
// that hangs up instead of sending %x01 is limited as one that sends it;
// the %x01 that ends a counted refusal gets the challenge's message, not
// the limiter's; past the limit the address's valid token is refused,
// another address's is not.
func TestOAuthBearerRefusalsCount(t *testing.T) {
	addr := freeAddr(t)
	startBrokerArgs(t, "--http-addr", "", "--log-level", "warn", "--listeners", "SASL_PLAINTEXT://"+addr, "--advertised-listeners", "SASL_PLAINTEXT://"+addr,
		"--sasl-enabled-mechanisms", "OAUTHBEARER", "--sasl-oauthbearer-unsecured", "--sasl-max-failures", "2", "--sasl-failure-window", "1h")
	dial := func(ip net.IP) net.Conn {
		d := &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: ip}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = "OAUTHBEARER"
		if r := rawExchange(t, c, hs, 1, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
			t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		return c
	}
	authenticate := func(c net.Conn, msg []byte, corr int32) *kmsg.SASLAuthenticateResponse {
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.SASLAuthBytes = msg
		return rawExchange(t, c, au, 1, corr).(*kmsg.SASLAuthenticateResponse)
	}
	bearer := func(tok string) []byte { return []byte("n,,\x01auth=Bearer " + tok + "\x01\x01") }
	expired, valid := unsignedToken("alice", time.Now().Add(-time.Minute), ""), unsignedToken("alice", time.Now().Add(time.Hour), "")
	const challenge = `{"status":"invalid_token"}`
	flooding := net.IPv4(127, 0, 0, 3)

	// A refusal whose client hangs up after the challenge.
	c := dial(flooding)
	if r := authenticate(c, bearer(expired), 2); r.ErrorCode != 0 || string(r.SASLAuthBytes) != challenge {
		t.Fatalf("expired token: error %v, bytes %q; want the error challenge", kerr.ErrorForCode(r.ErrorCode), r.SASLAuthBytes)
	}
	_ = c.Close()
	// The second, acknowledged: the limit is reached, and the %x01 still
	// gets the challenge as its message.
	c = dial(flooding)
	if r := authenticate(c, bearer(expired), 2); r.ErrorCode != 0 || string(r.SASLAuthBytes) != challenge {
		t.Fatalf("second expired token: error %v, bytes %q; want the error challenge", kerr.ErrorForCode(r.ErrorCode), r.SASLAuthBytes)
	}
	if r := authenticate(c, []byte{1}, 3); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || *r.ErrorMessage != challenge {
		t.Fatalf("%%x01 after the challenge: error %v, message %v; want SASL_AUTHENTICATION_FAILED with %s", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage, challenge)
	}
	// Two failures in the window: the address's valid token is refused.
	if r := authenticate(dial(flooding), bearer(valid), 2); r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "too many") {
		t.Fatalf("valid token from the limited address: error %v, message %v; want the limiter's refusal", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	if r := authenticate(dial(net.IPv4(127, 0, 0, 1)), bearer(valid), 2); r.ErrorCode != 0 {
		t.Fatalf("valid token from another address: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
