package main

import (
	"crypto/x509/pkix"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// TestSSLPrincipalMappingRules: with --ssl-principal-mapping-rules the
// principal of a client certificate is the rule's result (a probe
// handler echoes the session), and a certificate no rule applies to is
// refused at the handshake while others keep being served.
func TestSSLPrincipalMappingRules(t *testing.T) {
	e := newSecureEnv(t, "--ssl-principal-mapping-rules", "RULE:^CN=(.*?),O=Example$/$1/U")
	e.broker.srv.Register(conn.API{Key: kmsg.DescribeACLs.Int16(), MinVersion: 0, MaxVersion: 3, Handle: func(r *conn.Request) conn.Pending {
		resp := r.Body.ResponseKind().(*kmsg.DescribeACLsResponse)
		p := r.Session.Principal
		resp.ErrorMessage = &p
		return conn.Ready(resp)
	}})
	cl := secureClient(t, e.ssl, kgo.DialTLSConfig(e.tlsClient(&e.client)))
	resp, err := kmsg.NewPtrDescribeACLsRequest().RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil || resp.ErrorMessage == nil || *resp.ErrorMessage != "User:ALICE" {
		t.Fatalf("principal of CN=alice,O=Example: %v %v, want User:ALICE", err, resp)
	}
	other := e.ca.Issue(t, pkix.Name{CommonName: "bob", Organization: []string{"Elsewhere"}}, time.Time{}).TLS(t)
	unmapped := secureClient(t, e.ssl, kgo.DialTLSConfig(e.tlsClient(&other)), kgo.RetryTimeout(time.Second), kgo.RequestRetries(1))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 5*time.Second), unmapped); err == nil {
		t.Fatal("a certificate no rule applies to was served")
	}
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 5*time.Second), cl); err != nil {
		t.Fatalf("mapped client after the refusal: %v", err)
	}
}
