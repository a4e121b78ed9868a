package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFailedAuthenticationDelay: the answer to a failed SASL
// authentication, and the close after it, wait
// --connection-failed-authentication-delay (Kafka's
// connection.failed.authentication.delay.ms); a request sent after the
// failed one is not served. Logins that succeed go on. The delay is
// described as Kafka's config; bad values stop the start.
func TestFailedAuthenticationDelay(t *testing.T) {
	const delay = time.Second
	addr, plain := freeAddr(t), freeAddr(t)
	startBrokerArgs(t, "--http-addr", "", "--log-level", "warn",
		"--listeners", "PLAINTEXT://"+plain+",SASL_PLAINTEXT://"+addr,
		"--sasl-enabled-mechanisms", "OAUTHBEARER", "--sasl-oauthbearer-unsecured",
		"--connection-failed-authentication-delay", delay.String())
	handshake := func(mechanism string) *kmsg.SASLHandshakeRequest {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = mechanism
		return hs
	}

	// A mechanism not enabled, then ApiVersions on the same connection.
	c := rawConn(t, addr)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	if _, err := c.Write(append(frame(17, 1, 1, handshake("PLAIN").AppendTo(nil)), frame(18, 0, 2, kmsg.NewPtrApiVersionsRequest().AppendTo(nil))...)); err != nil {
		t.Fatal(err)
	}
	f, err := readFrame(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("the refusal came after %v, want at least the delay, %v", took, delay)
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SetVersion(1)
	if err := resp.ReadFrom(f[4:]); err != nil || resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code {
		t.Fatalf("SaslHandshake for PLAIN: error %v (%v), want UNSUPPORTED_SASL_MECHANISM", kerr.ErrorForCode(resp.ErrorCode), err)
	}
	assertClosed(t, c, "after the refusal (the ApiVersions sent after it)")

	// A refused token: its error challenge comes at once, the failure
	// that ends the exchange after the delay.
	c = rawConn(t, addr)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if r := rawExchange(t, c, handshake("OAUTHBEARER"), 1, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + unsignedToken("svc", time.Now().Add(-time.Hour), "") + "\x01\x01")
	if r := rawExchange(t, c, au, 1, 2).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 || !strings.Contains(string(r.SASLAuthBytes), "invalid_token") {
		t.Fatalf("expired token: error %v, bytes %q; want the error challenge", kerr.ErrorForCode(r.ErrorCode), r.SASLAuthBytes)
	}
	start = time.Now()
	ack := kmsg.NewPtrSASLAuthenticateRequest()
	ack.SASLAuthBytes = []byte{1}
	if r := rawExchange(t, c, ack, 1, 3).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("%%x01 after the challenge: error %v, want SASL_AUTHENTICATION_FAILED", kerr.ErrorForCode(r.ErrorCode))
	}
	if took := time.Since(start); took < delay {
		t.Errorf("the failure came after %v, want at least the delay, %v", took, delay)
	}
	assertClosed(t, c, "after the failure")

	// A good token logs in.
	c = rawConn(t, addr)
	if r := rawExchange(t, c, handshake("OAUTHBEARER"), 1, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	au.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + unsignedToken("svc", time.Now().Add(time.Hour), "") + "\x01\x01")
	if r := rawExchange(t, c, au, 1, 2).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
		t.Fatalf("good token: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// Kafka's name and value for it.
	if v := brokerConfigValue(t, newAdmin(t, plain), "connection.failed.authentication.delay.ms"); v != "1000" {
		t.Errorf("connection.failed.authentication.delay.ms described as %q, want 1000", v)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--connection-failed-authentication-delay", "-1ms"}, "--connection-failed-authentication-delay must not be negative"},
		{[]string{"--connection-failed-authentication-delay", "2s", "--connections-max-idle", "2s"}, "--connection-failed-authentication-delay 2s: want less than --connections-max-idle (2s)"},
	} {
		_, err := parseServe(c.args, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
