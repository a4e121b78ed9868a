package main

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSaslAuthenticateOutsideAnExchange: a SaslAuthenticate with no
// authentication under way or due (on a listener without SASL, or after
// a login, with no SaslHandshake before it) is answered ILLEGAL_SASL_STATE
// with Kafka's message and the connection serves on, as Kafka's KafkaApis
// answers it; before a login it is a failed authentication, which closes
// the connection.
func TestSaslAuthenticateOutsideAnExchange(t *testing.T) {
	plain, saslAddr := freeAddr(t), freeAddr(t)
	startBrokerArgs(t, "--http-addr", "", "--log-level", "warn",
		"--listeners", "PLAINTEXT://"+plain+",SASL_PLAINTEXT://"+saslAddr,
		"--sasl-enabled-mechanisms", "OAUTHBEARER", "--sasl-oauthbearer-unsecured",
		"--connection-failed-authentication-delay", "0s")
	authenticate := func(c net.Conn, token string, corr int32) *kmsg.SASLAuthenticateResponse {
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + token + "\x01\x01")
		return rawExchange(t, c, au, 2, corr).(*kmsg.SASLAuthenticateResponse)
	}
	token := unsignedToken("svc", time.Now().Add(time.Hour), "")
	servesOn := func(c net.Conn, what string) {
		t.Helper()
		if r := rawExchange(t, c, kmsg.NewPtrApiVersionsRequest(), 3, 9).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
			t.Fatalf("%s: ApiVersions: %v", what, kerr.ErrorForCode(r.ErrorCode))
		}
		md := kmsg.NewPtrMetadataRequest()
		if r := rawExchange(t, c, md, 12, 10).(*kmsg.MetadataResponse); len(r.Brokers) == 0 {
			t.Fatalf("%s: Metadata lists no broker", what)
		}
	}
	illegal := func(r *kmsg.SASLAuthenticateResponse, what string) {
		t.Helper()
		if r.ErrorCode != kerr.IllegalSaslState.Code || r.ErrorMessage == nil || *r.ErrorMessage != "SaslAuthenticate request received after successful authentication" {
			t.Fatalf("%s: error %v, message %v; want ILLEGAL_SASL_STATE with Kafka's message", what, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}

	c := rawConn(t, plain)
	illegal(authenticate(c, token, 1), "on PLAINTEXT")
	servesOn(c, "on PLAINTEXT")

	c = rawConn(t, saslAddr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "OAUTHBEARER"
	if r := rawExchange(t, c, hs, 1, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := authenticate(c, token, 2); r.ErrorCode != 0 {
		t.Fatalf("login: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	illegal(authenticate(c, token, 3), "after a login")
	servesOn(c, "after a login")

	c = rawConn(t, saslAddr)
	if r := authenticate(c, token, 1); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("before a login: error %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(r.ErrorCode))
	}
	assertClosed(t, c, "after a SaslAuthenticate before a login")
}
