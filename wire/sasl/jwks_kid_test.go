package sasl

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// idp is an identity provider's JWKS endpoint over TLS: the keys it
// serves by key id (the test rotates them), its answer's status, the
// requests it got, and an optional gate each request waits on.
type idp struct {
	t    *testing.T
	srv  *httptest.Server
	hits atomic.Int64

	mu     sync.Mutex
	keys   map[string]*ecdsa.PrivateKey
	status int
	gate   chan struct{} // nil: answer at once
}

func newIDP(t *testing.T) *idp {
	p := &idp{t: t, keys: map[string]*ecdsa.PrivateKey{}, status: http.StatusOK}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		p.hits.Add(1)
		p.mu.Lock()
		gate := p.gate
		p.mu.Unlock()
		if gate != nil {
			<-gate
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.status != http.StatusOK {
			w.WriteHeader(p.status)
			return
		}
		var set jose.JSONWebKeySet
		for kid, k := range p.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"})
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// publish makes the endpoint serve a new key under kid (as well as the
// others) and returns it.
func (p *idp) publish(kid string) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.keys[kid] = k
	p.mu.Unlock()
	return k
}

func (p *idp) setStatus(code int) {
	p.mu.Lock()
	p.status = code
	p.mu.Unlock()
}

// sign mints a token for sub, valid for an hour from now, signed by k
// and naming kid.
func sign(t *testing.T, k *ecdsa.PrivateKey, kid string, now time.Time) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(jwt.Claims{Subject: "svc", Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now)}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// virtualClock is a time the test moves.
type virtualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *virtualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newKidValidator is a URL validator of p on clock with the given
// backoffs; it made the endpoint's first request.
func newKidValidator(t *testing.T, p *idp, clock *virtualClock, backoff, backoffMax time.Duration) *TokenValidator {
	t.Helper()
	v, err := NewURLTokenValidator(context.Background(), p.srv.URL+"/jwks", p.srv.Client(), "", nil, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	v.RetryBackoff, v.RetryBackoffMax = backoff, backoffMax
	return v
}

func wantHits(t *testing.T, p *idp, want int64, when string) {
	t.Helper()
	if got := p.hits.Load(); got != want {
		t.Fatalf("%s: the JWKS endpoint got %d requests, want %d", when, got, want)
	}
}

// TestJWKSUnknownKidFetches: the identity provider rotates to a key the
// broker has not fetched; the first token naming it validates after one
// fetch of the endpoint, and later ones without any.
func TestJWKSUnknownKidFetches(t *testing.T) {
	p := newIDP(t)
	k1 := p.publish("k1")
	clock := &virtualClock{t: time.Now()}
	v := newKidValidator(t, p, clock, time.Second, 4*time.Second)
	wantHits(t, p, 1, "start")
	if _, _, err := v.Validate(sign(t, k1, "k1", clock.Now())); err != nil {
		t.Fatalf("token of the fetched key: %v", err)
	}
	wantHits(t, p, 1, "a known key id")
	k2 := p.publish("k2")
	if sub, _, err := v.Validate(sign(t, k2, "k2", clock.Now())); err != nil || sub != "svc" {
		t.Fatalf("token of the rotated key: %q %v", sub, err)
	}
	wantHits(t, p, 2, "the rotated key's first token")
	if _, _, err := v.Validate(sign(t, k2, "k2", clock.Now())); err != nil {
		t.Fatalf("token of the rotated key, again: %v", err)
	}
	wantHits(t, p, 2, "the rotated key's second token")
}

// TestJWKSUnknownKidSingleFlight: many logins at once with a key id the
// broker has not fetched wait for one fetch of the endpoint, and all
// validate once it answers.
func TestJWKSUnknownKidSingleFlight(t *testing.T) {
	p := newIDP(t)
	p.publish("k1")
	clock := &virtualClock{t: time.Now()}
	v := newKidValidator(t, p, clock, time.Second, 4*time.Second)
	k2 := p.publish("k2")
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release) // before the server closes, which waits for its handlers
	p.mu.Lock()
	p.gate = gate
	p.mu.Unlock()
	const n = 32
	tok := sign(t, k2, "k2", clock.Now())
	errs := make(chan error, n)
	for range n {
		go func() {
			_, _, err := v.Validate(tok)
			errs <- err
		}()
	}
	// Every validation waits on the one fetch, held by the gate.
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		v.mu.Lock()
		joined := 0
		if v.kidFetch != nil {
			joined = v.kidFetch.joined
		}
		v.mu.Unlock()
		if joined == n {
			break
		}
		if h := p.hits.Load(); h > 2 {
			t.Fatalf("%d requests to the JWKS endpoint while the fetch is in flight", h-1)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d validations wait on the fetch (endpoint requests: %d)", joined, n, p.hits.Load())
		}
	}
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("a concurrent validation: %v", err)
		}
	}
	wantHits(t, p, 2, "concurrent validations")
}

// TestJWKSUnknownKidBackoff: fetches for unknown key ids are spaced in
// virtual time: a second unknown key id within the backoff makes no
// fetch and is refused; once the backoff passed it fetches; each fetch
// that misses doubles the backoff up to the maximum, and one that finds
// its key sets it back.
func TestJWKSUnknownKidBackoff(t *testing.T) {
	p := newIDP(t)
	p.publish("k1")
	clock := &virtualClock{t: time.Now()}
	v := newKidValidator(t, p, clock, time.Second, 4*time.Second)
	k2 := p.publish("k2")
	if _, _, err := v.Validate(sign(t, k2, "k2", clock.Now())); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	wantHits(t, p, 2, "rotated key")
	k3, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader) // not published yet
	k3tok := sign(t, k3, "k3", clock.Now())
	refused := func(when string, hits int64) {
		t.Helper()
		if _, _, err := v.Validate(k3tok); !errors.Is(err, ErrAuthentication) {
			t.Fatalf("%s: unpublished key id: %v", when, err)
		}
		wantHits(t, p, hits, when)
	}
	refused("within the backoff", 2)
	clock.Add(time.Second - time.Millisecond)
	refused("just before the backoff's end", 2)
	clock.Add(time.Millisecond)
	refused("at the backoff's end", 3) // fetched, still not served: a miss
	clock.Add(time.Second - time.Millisecond)
	refused("just before 1s after the first miss", 3)
	clock.Add(time.Millisecond)
	refused("1s after the first miss", 4)
	clock.Add(time.Second)
	refused("1s after the second miss (the backoff doubled to 2s)", 4)
	clock.Add(time.Second)
	refused("2s after the second miss", 5)
	clock.Add(4*time.Second - time.Millisecond)
	refused("just before 4s after the third miss", 5)
	clock.Add(time.Millisecond)
	refused("4s after the third miss", 6)
	clock.Add(4 * time.Second)
	refused("4s after the fourth miss (capped at 4s)", 7)
	k3 = p.publish("k3")
	clock.Add(4 * time.Second)
	if _, _, err := v.Validate(sign(t, k3, "k3", clock.Now())); err != nil {
		t.Fatalf("published key after the backoff: %v", err)
	}
	wantHits(t, p, 8, "published key")
	// The fetch that found its key set the backoff back to 1s.
	k4 := p.publish("k4")
	clock.Add(time.Second)
	if _, _, err := v.Validate(sign(t, k4, "k4", clock.Now())); err != nil {
		t.Fatalf("next rotation 1s after a found key: %v", err)
	}
	wantHits(t, p, 9, "next rotation")
}

// TestJWKSUnknownKidFetchFails: a fetch for an unknown key id that fails
// refuses the token and keeps the last good keys; after the backoff a
// fetch that works brings the key.
func TestJWKSUnknownKidFetchFails(t *testing.T) {
	p := newIDP(t)
	k1 := p.publish("k1")
	clock := &virtualClock{t: time.Now()}
	v := newKidValidator(t, p, clock, time.Second, 4*time.Second)
	var fetches []string
	v.OnKeyFetch = func(kid string, found bool, err error) {
		fetches = append(fetches, kid+" "+map[bool]string{true: "found", false: "missing"}[found]+" "+map[bool]string{true: "failed", false: "ok"}[err != nil])
	}
	k2 := p.publish("k2")
	p.setStatus(http.StatusInternalServerError)
	if _, _, err := v.Validate(sign(t, k2, "k2", clock.Now())); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("rotated key with the endpoint failing: %v", err)
	}
	wantHits(t, p, 2, "failing fetch")
	if _, _, err := v.Validate(sign(t, k1, "k1", clock.Now())); err != nil {
		t.Fatalf("last good key after a failed fetch: %v", err)
	}
	p.setStatus(http.StatusOK)
	clock.Add(time.Second)
	if _, _, err := v.Validate(sign(t, k2, "k2", clock.Now())); err != nil {
		t.Fatalf("rotated key once the endpoint works: %v", err)
	}
	wantHits(t, p, 3, "working fetch")
	if got, want := strings.Join(fetches, ", "), "k2 missing failed, k2 found ok"; got != want {
		t.Fatalf("OnKeyFetch saw %q, want %q", got, want)
	}
}

// TestJWKSUnknownKidExchange: the OAUTHBEARER exchange does not wait
// itself: its step returns a *Deferred for a token naming an unknown key
// id, and the step after the wait answers (authenticated, or refused
// without a second wait when the key is still unknown).
func TestJWKSUnknownKidExchange(t *testing.T) {
	p := newIDP(t)
	p.publish("k1")
	clock := &virtualClock{t: time.Now()}
	v := newKidValidator(t, p, clock, time.Second, 4*time.Second)
	srv := &Server{Mechanisms: []string{OAuthBearer}, Tokens: v, Now: clock.Now}
	msg := func(tok string) []byte { return []byte("n,,\x01auth=Bearer " + tok + "\x01\x01") }
	k2 := p.publish("k2")
	ex, _ := srv.Start(OAuthBearer)
	m := msg(sign(t, k2, "k2", clock.Now()))
	_, done, err := ex.Step(m)
	var d *Deferred
	if !errors.As(err, &d) || done {
		t.Fatalf("first step of a token naming an unknown key id: done %v err %v, want a *Deferred", done, err)
	}
	d.Wait()
	if _, done, err := ex.Step(m); err != nil || !done || ex.Principal() != "User:svc" {
		t.Fatalf("step after the wait: done %v err %v principal %q", done, err, ex.Principal())
	}
	wantHits(t, p, 2, "exchange")

	// Still unknown after the fetch: the same refusal as any bad signature.
	clock.Add(time.Second)
	k3, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ex, _ = srv.Start(OAuthBearer)
	m = msg(sign(t, k3, "k3", clock.Now()))
	if _, _, err := ex.Step(m); !errors.As(err, &d) {
		t.Fatalf("first step, unpublished key id: %v, want a *Deferred", err)
	}
	d.Wait()
	if out, done, err := ex.Step(m); err != nil || done || string(out) != `{"status":"invalid_token"}` {
		t.Fatalf("step after the wait, unpublished key id: %q, %v, %v; want the error challenge", out, done, err)
	}
	if _, _, err := ex.Step([]byte{1}); !errors.Is(err, ErrAuthentication) || errors.As(err, &d) {
		t.Fatalf("%%x01 after the challenge: %v", err)
	}
	wantHits(t, p, 3, "exchange, unpublished key id")
}

// TestJWKSUnknownKidNoFetch: what never fetches: a known key id with a
// signature of another key, a token naming no key id, a key id longer
// than 1000 bytes.
func TestJWKSUnknownKidNoFetch(t *testing.T) {
	p := newIDP(t)
	p.publish("k1")
	clock := &virtualClock{t: time.Now()}
	v := newKidValidator(t, p, clock, time.Second, 4*time.Second)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for name, tok := range map[string]string{
		"known key id, other key": sign(t, other, "k1", clock.Now()),
		"no key id":               sign(t, other, "", clock.Now()),
		"key id of 1001 bytes":    sign(t, other, strings.Repeat("k", maxKidLen+1), clock.Now()),
	} {
		if _, _, err := v.Validate(tok); !errors.Is(err, ErrAuthentication) {
			t.Fatalf("%s: %v", name, err)
		}
		wantHits(t, p, 1, name)
	}
}
