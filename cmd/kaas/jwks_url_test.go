package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// TestOAuthBearerJWKSFromURL: a broker reads its OAUTHBEARER keys from an
// https JWKS endpoint (an httptest TLS server on loopback, trusted through
// --sasl-oauthbearer-jwks-ca-file); a token signed by the served key logs
// in, a token of another key is refused.
func TestOAuthBearerJWKSFromURL(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	}))
	t.Cleanup(srv.Close)
	caFile := filepath.Join(t.TempDir(), "jwks-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfg, err := parseServe([]string{"--http-addr", "", "--listeners", "SASL_PLAINTEXT://" + addr, "--advertised-listeners", "SASL_PLAINTEXT://" + addr,
		"--sasl-enabled-mechanisms", "OAUTHBEARER", "--sasl-oauthbearer-jwks-url", srv.URL + "/jwks", "--sasl-oauthbearer-jwks-ca-file", caFile,
		"--sasl-oauthbearer-audience", "kaas"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, err := startBroker(ctx, cfg, io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); b.shutdown() })
	e := &secureEnv{jwksKey: key}
	good := secureClient(t, addr, kgo.SASL(oauth.Auth{Token: e.token(t, "svc", time.Now().Add(time.Hour))}.AsMechanism()))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), good); err != nil {
		t.Fatalf("token of the served key: %v", err)
	}
	bad := secureClient(t, addr, kgo.SASL(oauth.Auth{Token: foreignToken(t)}.AsMechanism()), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), bad); kafkaCode(err) != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("token of another key: %v", err)
	}
}
