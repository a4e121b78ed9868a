package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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
	startBrokerArgs(t, "--http-addr", "", "--listeners", "SASL_PLAINTEXT://"+addr, "--advertised-listeners", "SASL_PLAINTEXT://"+addr,
		"--sasl-enabled-mechanisms", "OAUTHBEARER", "--sasl-oauthbearer-jwks-url", srv.URL+"/jwks", "--sasl-oauthbearer-jwks-ca-file", caFile,
		"--sasl-oauthbearer-audience", "kaas")
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

// rotatingJWKS is an identity provider's JWKS endpoint over TLS whose
// signing key the test rotates; it counts its requests and can hold them
// until the test releases them.
type rotatingJWKS struct {
	srv  *httptest.Server
	hits atomic.Int64

	mu   sync.Mutex
	kid  string
	key  *ecdsa.PrivateKey
	gate chan struct{} // nil: answer at once
}

func newRotatingJWKS(t *testing.T) *rotatingJWKS {
	j := &rotatingJWKS{}
	j.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		j.hits.Add(1)
		j.mu.Lock()
		gate := j.gate
		j.mu.Unlock()
		if gate != nil {
			<-gate
		}
		j.mu.Lock()
		defer j.mu.Unlock()
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &j.key.PublicKey, KeyID: j.kid, Algorithm: "ES256", Use: "sig"}}})
	}))
	t.Cleanup(j.srv.Close)
	return j
}

// rotate makes the endpoint serve a new key under kid (only it) and
// returns it.
func (j *rotatingJWKS) rotate(kid string) *ecdsa.PrivateKey {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	j.mu.Lock()
	j.kid, j.key = kid, k
	j.mu.Unlock()
	return k
}

// hold makes the endpoint's requests wait until the returned release is
// called (at the latest when the test ends, before the server closes).
func (j *rotatingJWKS) hold(t *testing.T) (release func()) {
	gate := make(chan struct{})
	var once sync.Once
	release = func() {
		once.Do(func() {
			j.mu.Lock()
			j.gate = nil
			j.mu.Unlock()
			close(gate)
		})
	}
	t.Cleanup(release)
	j.mu.Lock()
	j.gate = gate
	j.mu.Unlock()
	return release
}

// TestOAuthBearerJWKSKeyRotation: a broker fetching its OAUTHBEARER keys
// from an https JWKS endpoint every hour. The identity provider rotates
// its signing key: a franz-go client with a token of the new key id
// authenticates and produces at once, the broker having fetched the
// endpoint once more for it. A connection that pipelines a Metadata
// request behind its SaslAuthenticate while that fetch is held gets both
// answered once the fetch ends (the connection waits for the fetch off
// its actor, holding the Metadata until the authentication is answered).
// A token naming a key id the endpoint does not serve is refused.
func TestOAuthBearerJWKSKeyRotation(t *testing.T) {
	idp := newRotatingJWKS(t)
	k1 := idp.rotate("k1")
	caFile := filepath.Join(t.TempDir(), "jwks-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: idp.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	// The backoff between fetches for unknown key ids (wire/sasl's tests
	// cover it) is 1ns here: each rotation below fetches at once.
	startBrokerArgs(t, "--http-addr", "", "--listeners", "SASL_PLAINTEXT://"+addr, "--advertised-listeners", "SASL_PLAINTEXT://"+addr,
		"--sasl-enabled-mechanisms", "OAUTHBEARER", "--sasl-oauthbearer-jwks-url", idp.srv.URL+"/jwks", "--sasl-oauthbearer-jwks-ca-file", caFile,
		"--sasl-oauthbearer-jwks-refresh", "1h", "--sasl-oauthbearer-jwks-retry-backoff", "1ns", "--sasl-oauthbearer-jwks-retry-backoff-max", "1ns",
		"--sasl-oauthbearer-audience", "kaas")
	exp := time.Now().Add(time.Hour)
	before := secureClient(t, addr, kgo.SASL(oauth.Auth{Token: signedToken(t, k1, "k1", "svc", exp)}.AsMechanism()))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), before); err != nil {
		t.Fatalf("token of the first key: %v", err)
	}
	if n := idp.hits.Load(); n != 1 {
		t.Fatalf("JWKS endpoint requests before the rotation: %d, want 1", n)
	}

	k2 := idp.rotate("k2")
	start := time.Now()
	after := secureClient(t, addr, kgo.SASL(oauth.Auth{Token: signedToken(t, k2, "k2", "svc", exp)}.AsMechanism()))
	if err := after.ProduceSync(ctxT(t, 15*time.Second), &kgo.Record{Topic: "jwks-rotation", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce with a token of the rotated key: %v", err)
	}
	if n := idp.hits.Load(); n != 2 {
		t.Fatalf("JWKS endpoint requests after the rotation: %d, want 2", n)
	}
	t.Logf("rotated key: authenticated and produced in %v", time.Since(start))

	// Pipelined behind a SaslAuthenticate whose fetch is held.
	k3 := idp.rotate("k3")
	release := idp.hold(t)
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "OAUTHBEARER"
	if r := rawExchange(t, c, hs, 1, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(1)
	au.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + signedToken(t, k3, "k3", "svc", exp) + "\x01\x01")
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))
	// One write, two frames (AppendRequest sizes its frame from the start
	// of dst, so each gets its own).
	if _, err := c.Write(append(f.AppendRequest(nil, au, 2), f.AppendRequest(nil, md, 3)...)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); idp.hits.Load() < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the broker did not fetch the JWKS for the pipelined SaslAuthenticate")
		}
	}
	release()
	for _, want := range []kmsg.Request{au, md} {
		frame, err := readFrame(t, c)
		if err != nil {
			t.Fatalf("%s pipelined behind a held fetch: %v", kmsg.NameForKey(want.Key()), err)
		}
		resp := want.ResponseKind()
		resp.SetVersion(want.GetVersion())
		if err := resp.ReadFrom(frame[4:]); err != nil {
			t.Fatal(err)
		}
		switch r := resp.(type) {
		case *kmsg.SASLAuthenticateResponse:
			if r.ErrorCode != 0 {
				t.Fatalf("pipelined SaslAuthenticate: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
			}
		case *kmsg.MetadataResponse:
			if len(r.Brokers) != 1 {
				t.Fatalf("pipelined Metadata: brokers %v", r.Brokers)
			}
		}
	}
	if n := idp.hits.Load(); n != 3 {
		t.Fatalf("JWKS endpoint requests after the pipelined login: %d, want 3", n)
	}

	unknown, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	bad := secureClient(t, addr, kgo.SASL(oauth.Auth{Token: signedToken(t, unknown, "k9", "svc", exp)}.AsMechanism()), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), bad); kafkaCode(err) != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("token of a key id the endpoint does not serve: %v", err)
	}
}
