package main

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListenerSASLMechanisms: --listener-sasl-enabled-mechanisms gives one
// listener its own mechanisms: SCRAM-SHA-256 is refused there
// (UNSUPPORTED_SASL_MECHANISM) and served on the listener that keeps
// --sasl-enabled-mechanisms.
func TestListenerSASLMechanisms(t *testing.T) {
	e := newSecureEnv(t, "--listener-sasl-enabled-mechanisms", "SASL_PLAINTEXT=SCRAM-SHA-512")
	metadata := func(addr string, opts ...kgo.Opt) error {
		cl := secureClient(t, addr, append(opts, kgo.RetryTimeout(time.Second), kgo.RequestRetries(0))...)
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), cl)
		return err
	}
	if err := metadata(e.saslPlaintext, kgo.SASL(scramMech("alice", "alice-secret", true))); err != nil {
		t.Fatalf("SCRAM-SHA-512 on SASL_PLAINTEXT: %v", err)
	}
	if err := metadata(e.saslPlaintext, kgo.SASL(scramMech("alice", "alice-secret", false))); kafkaCode(err) != kerr.UnsupportedSaslMechanism.Code {
		t.Fatalf("SCRAM-SHA-256 on SASL_PLAINTEXT: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
	if err := metadata(e.saslSSL, kgo.DialTLSConfig(e.tlsClient(nil)), kgo.SASL(scramMech("alice", "alice-secret", false))); err != nil {
		t.Fatalf("SCRAM-SHA-256 on SASL_SSL: %v", err)
	}
}
