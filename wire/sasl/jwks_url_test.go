package sasl

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestJWKSFromURL: keys served by an https server on loopback validate
// tokens; a rotated key is used after Refresh; a failed refresh keeps the
// last good keys; http:// and a first fetch that fails are refused.
func TestJWKSFromURL(t *testing.T) {
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var mu sync.Mutex
	serving, status := k1, http.StatusOK
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if status != http.StatusOK {
			w.WriteHeader(status)
			return
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &serving.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	}))
	t.Cleanup(srv.Close)
	token := func(k *ecdsa.PrivateKey) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(s).Claims(jwt.Claims{Subject: "svc", Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), IssuedAt: jwt.NewNumericDate(time.Now())}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ctx := context.Background()
	v, err := NewURLTokenValidator(ctx, srv.URL+"/jwks", srv.Client(), "", nil, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if sub, _, err := v.Validate(token(k1)); err != nil || sub != "svc" {
		t.Fatalf("token of the served key: %q %v", sub, err)
	}
	if _, _, err := v.Validate(token(k2)); err == nil {
		t.Fatal("token of a key not served yet accepted")
	}
	mu.Lock()
	serving = k2
	mu.Unlock()
	if err := v.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := v.Validate(token(k2)); err != nil {
		t.Fatalf("rotated key after Refresh: %v", err)
	}
	mu.Lock()
	status = http.StatusInternalServerError
	mu.Unlock()
	if err := v.Refresh(ctx); err == nil {
		t.Fatal("a failing endpoint refreshed")
	}
	if _, _, err := v.Validate(token(k2)); err != nil {
		t.Fatalf("last good keys dropped after a failed refresh: %v", err)
	}
	if _, err := NewURLTokenValidator(ctx, srv.URL+"/jwks", srv.Client(), "", nil, time.Now); err == nil {
		t.Fatal("first fetch failing: accepted")
	}
	if _, err := NewURLTokenValidator(ctx, "http://127.0.0.1:1/jwks", http.DefaultClient, "", nil, time.Now); err == nil {
		t.Fatal("http:// accepted")
	}
	// A client not trusting the server's certificate cannot fetch.
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	if _, err := NewURLTokenValidator(ctx, srv.URL+"/jwks", &http.Client{}, "", nil, time.Now); err == nil {
		t.Fatal("untrusted server certificate accepted")
	}
}
