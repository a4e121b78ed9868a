package sasl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/kaas-project/kaas/wire/reload"
)

// BearerValidator checks the token of an OAUTHBEARER exchange:
// *TokenValidator (JWTs signed by a key of a JWKS) or *UnsecuredValidator
// (unsigned tokens, Kafka's development default). The exchange around it
// (the client's message, the error challenge, the session's end) is one.
type BearerValidator interface {
	// check validates token and returns its principal name (the principal
	// is "User:" and it) and expiry; a refused token is a *TokenError.
	// When its key is not at hand and fetch is set, it may instead return
	// wait: the I/O that may bring it (the caller waits where it may
	// block, then checks again without fetch).
	check(token string, fetch bool) (name string, exp time.Time, wait func(), err error)
}

// TokenError is a refused OAUTHBEARER token. Kafka's OAuthBearerSaslServer
// answers it with the RFC 7628 error challenge (Challenge) and fails the
// authentication once the client acknowledges that with %x01; the client
// sees SASL_AUTHENTICATION_FAILED with the challenge as its message.
// Reason says why, for the broker's log.
type TokenError struct {
	Status string // "invalid_token", or "insufficient_scope"
	Scope  string // the scope required, with insufficient_scope
	Reason string
}

func (e *TokenError) Error() string { return ErrAuthentication.Error() + ": " + e.Reason }
func (e *TokenError) Unwrap() error { return ErrAuthentication }

// Challenge is the error challenge as Kafka's OAuthBearerSaslServer
// writes it.
func (e *TokenError) Challenge() string {
	if e.Scope == "" {
		return fmt.Sprintf(`{"status":"%s"}`, e.Status)
	}
	return fmt.Sprintf(`{"status":"%s", "scope":"%s"}`, e.Status, e.Scope)
}

// invalidToken is a TokenError of status invalid_token.
func invalidToken(format string, args ...any) *TokenError {
	return &TokenError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// ClientMessage is the error message the client of a failed exchange
// gets: the error challenge of a refused OAUTHBEARER token, as Kafka's,
// else err's text.
func ClientMessage(err error) string {
	var te *TokenError
	if errors.As(err, &te) {
		return te.Challenge()
	}
	return err.Error()
}

// TokenValidator checks OAUTHBEARER tokens as Kafka's broker JWT validator
// does: JWTs signed by a key of a JWKS (a file re-read when it changes, or
// an https URL fetched again by Refresh and when a token names a key id
// the set lacks), with exp and iat, optionally a required issuer and one of
// the expected audiences, times checked with ClockSkew to spare. The
// principal is "User:" and the token's PrincipalClaim, a non-empty string.
type TokenValidator struct {
	Issuer    string   // required iss, empty: any
	Audiences []string // aud must hold one of them; empty: any
	// PrincipalClaim names the claim holding the principal name (Kafka's
	// sasl.oauthbearer.sub.claim.name, DefaultPrincipalClaim).
	PrincipalClaim string
	// ClockSkew is how far exp may lie in the past and nbf and iat in the
	// future (Kafka's sasl.oauthbearer.clock.skew.seconds,
	// DefaultJWKSClockSkew).
	ClockSkew time.Duration
	// RetryBackoff and RetryBackoffMax space the fetches of the JWKS URL
	// that tokens naming an unknown key id cause (Kafka's
	// sasl.oauthbearer.jwks.endpoint.retry.backoff.ms and .max.ms): after
	// such a fetch the next one waits RetryBackoff; each that does not
	// find the key id it was for doubles that wait, up to RetryBackoffMax,
	// and one that finds it sets it back to RetryBackoff. Set them before
	// the validator is used.
	RetryBackoff, RetryBackoffMax time.Duration
	// OnKeyFetch, when set, is told the end of each fetch for an unknown
	// key id (err nil: the fetch succeeded, found or not).
	OnKeyFetch func(kid string, found bool, err error)
	now        func() time.Time

	keys func() *jose.JSONWebKeySet
	// url, client and fetched serve a JWKS from a URL.
	url     string
	client  *http.Client
	mu      sync.Mutex
	fetched *jose.JSONWebKeySet
	// kidFetch is the fetch for an unknown key id in flight (nil: none),
	// nextKidFetch when the next may start and kidBackoff the wait after
	// it when it misses.
	kidFetch     *kidFetch
	nextKidFetch time.Time
	kidBackoff   time.Duration
}

// Defaults of TokenValidator.RetryBackoff, RetryBackoffMax and
// ClockSkew: Kafka's.
const (
	DefaultJWKSRetryBackoff    = 100 * time.Millisecond
	DefaultJWKSRetryBackoffMax = 10 * time.Second
	DefaultJWKSClockSkew       = 30 * time.Second
)

// maxKidLen: a longer key id never causes a fetch (Kafka's
// RefreshingHttpsJwks takes such a token for malformed).
const maxKidLen = 1000

// kidFetchTimeout bounds a fetch for an unknown key id, which a client's
// login waits for.
const kidFetchTimeout = 10 * time.Second

// kidFetch is a fetch of the JWKS URL for an unknown key id; done closes
// when it ended. joined counts the validations waiting for it.
type kidFetch struct {
	done   chan struct{}
	joined int
}

// signatureAlgorithms accepted in tokens.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// parseJWKS reads a JWKS document; src names it in errors.
func parseJWKS(b []byte, src string) (*jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("jwks %s: %w", src, err)
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("jwks %s holds no key", src)
	}
	return &set, nil
}

// NewTokenValidator loads the JWKS at path; it is re-read when it changes,
// and a broken file keeps the last good keys.
func NewTokenValidator(path, issuer string, audiences []string, now func() time.Time) (*TokenValidator, error) {
	parse := func() (*jose.JSONWebKeySet, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("jwks file: %w", err)
		}
		return parseJWKS(b, "file "+path)
	}
	keys, err := reload.Open([]string{path}, nil, parse, now)
	if err != nil {
		return nil, fmt.Errorf("jwks file: %w", err)
	}
	return &TokenValidator{Issuer: issuer, Audiences: audiences, PrincipalClaim: DefaultPrincipalClaim, ClockSkew: DefaultJWKSClockSkew,
		now: now, keys: keys.Get}, nil
}

// NewURLTokenValidator fetches the JWKS at url (https) with client; the
// first fetch must succeed. Refresh fetches it again, and so does a token
// naming a key id the set lacks (spaced by RetryBackoff).
func NewURLTokenValidator(ctx context.Context, url string, client *http.Client, issuer string, audiences []string, now func() time.Time) (*TokenValidator, error) {
	if !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("jwks url %q: want https://", url)
	}
	v := &TokenValidator{Issuer: issuer, Audiences: audiences, PrincipalClaim: DefaultPrincipalClaim, ClockSkew: DefaultJWKSClockSkew,
		now: now, url: url, client: client, RetryBackoff: DefaultJWKSRetryBackoff, RetryBackoffMax: DefaultJWKSRetryBackoffMax}
	v.keys = func() *jose.JSONWebKeySet {
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.fetched
	}
	if err := v.Refresh(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// Refresh fetches the JWKS from its URL again; on an error the last good
// keys stay in use.
func (v *TokenValidator) Refresh(ctx context.Context) error {
	if v.url == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.url, nil)
	if err != nil {
		return fmt.Errorf("jwks url: %w", err)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return fmt.Errorf("jwks url: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("jwks url %s: HTTP %s", v.url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("jwks url %s: %w", v.url, err)
	}
	set, err := parseJWKS(b, "url "+v.url)
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.fetched = set
	v.mu.Unlock()
	return nil
}

func (v *TokenValidator) keySet() *jose.JSONWebKeySet { return v.keys() }

// Validate checks a compact JWT and returns its subject and expiry. A
// token naming a key id the set lacks (JWKS URL only) first waits for a
// fetch of the URL, when one is in flight or may start (RetryBackoff);
// that wait is bounded (kidFetchTimeout). Callers that must not block use
// check, as the OAUTHBEARER exchange does.
func (v *TokenValidator) Validate(token string) (sub string, exp time.Time, err error) {
	sub, exp, wait, err := v.check(token, true)
	if wait != nil {
		wait()
		sub, exp, _, err = v.check(token, false)
	}
	return sub, exp, err
}

// check validates token against the keys at hand. When its key id is not
// among them and fetch is set, it may instead return wait: the fetch of
// the JWKS URL that may bring the key, started or joined (the caller
// waits for it where it may block, then checks again without fetch).
func (v *TokenValidator) check(token string, fetch bool) (sub string, exp time.Time, wait func(), err error) {
	tok, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		return "", time.Time{}, nil, invalidToken("malformed token")
	}
	set := v.keySet()
	var claims jwt.Claims
	var all map[string]any
	verified := false
	unknown := ""
	for _, h := range tok.Headers {
		keys := set.Keys
		if h.KeyID != "" {
			keys = set.Key(h.KeyID)
			if len(keys) == 0 {
				unknown = h.KeyID
			}
		}
		for _, k := range keys {
			if tok.Claims(k.Public().Key, &claims, &all) == nil {
				verified = true
				break
			}
		}
	}
	if !verified && unknown != "" && fetch {
		if wait := v.fetchKid(unknown); wait != nil {
			return "", time.Time{}, wait, nil
		}
	}
	if !verified {
		return "", time.Time{}, nil, invalidToken("token signature does not verify")
	}
	if claims.Expiry == nil {
		return "", time.Time{}, nil, invalidToken("token has no exp")
	}
	if claims.IssuedAt == nil { // required, as by Kafka's broker validator
		return "", time.Time{}, nil, invalidToken("token has no iat")
	}
	want := jwt.Expected{Issuer: v.Issuer, AnyAudience: v.Audiences, Time: v.now()}
	if err := claims.ValidateWithLeeway(want, v.ClockSkew); err != nil {
		return "", time.Time{}, nil, invalidToken("token %v", err)
	}
	name, _ := all[v.PrincipalClaim].(string)
	if name = strings.TrimSpace(name); name == "" { // trimmed, as Kafka's ClaimValidationUtils
		return "", time.Time{}, nil, invalidToken("token has no %s claim holding a name", v.PrincipalClaim)
	}
	return name, claims.Expiry.Time(), nil, nil
}

// fetchKid returns the wait for a fetch of the JWKS URL that may bring
// kid, a key id the key set lacked, as Kafka's RefreshingHttpsJwks
// expedites a refresh: it joins the fetch in flight (one at a time), or
// starts one unless the backoff since the last has not passed. Nil: no
// fetch (a JWKS file, a key id longer than maxKidLen, the backoff).
func (v *TokenValidator) fetchKid(kid string) func() {
	if v.url == "" || len(kid) > maxKidLen {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.fetched.Key(kid)) > 0 {
		return func() {} // a fetch brought it since the check
	}
	if f := v.kidFetch; f != nil {
		f.joined++
		return func() { <-f.done }
	}
	if v.now().Before(v.nextKidFetch) {
		return nil
	}
	f := &kidFetch{done: make(chan struct{}), joined: 1}
	v.kidFetch = f
	go v.runKidFetch(f, kid)
	return func() { <-f.done }
}

// runKidFetch fetches the JWKS URL for kid (a failure keeps the last good
// keys) and sets when the next such fetch may start.
func (v *TokenValidator) runKidFetch(f *kidFetch, kid string) {
	ctx, cancel := context.WithTimeout(context.Background(), kidFetchTimeout)
	err := v.Refresh(ctx)
	cancel()
	v.mu.Lock()
	found := err == nil && len(v.fetched.Key(kid)) > 0
	if found || v.kidBackoff <= 0 {
		v.kidBackoff = v.RetryBackoff
	}
	v.nextKidFetch = v.now().Add(v.kidBackoff)
	if !found {
		v.kidBackoff = min(2*v.kidBackoff, max(v.RetryBackoffMax, v.RetryBackoff))
	}
	v.kidFetch = nil
	v.mu.Unlock()
	if v.OnKeyFetch != nil {
		v.OnKeyFetch(kid, found, err)
	}
	close(f.done)
}

// bearerExchange is OAUTHBEARER (RFC 7628): one client message
// "gs2-header \x01 auth=Bearer <token> \x01 [kvpairs] \x01". A refused
// token is answered as Kafka's OAuthBearerSaslServer answers it: with the
// error challenge, and the client's %x01 after it ends the exchange with
// the *TokenError.
type bearerExchange struct {
	tokens    BearerValidator
	principal string
	expires   time.Time
	// deferred: Step returned a Deferred (a fetch of the JWKS for the
	// token's key id); the next Step checks the token without fetching.
	deferred bool
	// refused: the token the error challenge answered.
	refused *TokenError
}

func (b *bearerExchange) Principal() string  { return b.principal }
func (b *bearerExchange) Expires() time.Time { return b.expires }

// Refused is the token refusal the last answer challenged, if any (a
// client that sends another request instead of %x01 never sees it).
func (b *bearerExchange) Refused() error {
	if b.refused == nil {
		return nil
	}
	return b.refused
}

func (b *bearerExchange) Step(in []byte) ([]byte, bool, error) {
	if b.tokens == nil {
		return nil, false, fmt.Errorf("%w: no OAUTHBEARER validator configured", ErrAuthentication)
	}
	if refused := b.refused; refused != nil {
		b.refused = nil
		if bytes.Equal(in, []byte{1}) {
			return nil, false, refused
		}
		// Another client message: Kafka's server takes it afresh.
	}
	authzid, token, err := parseBearerMessage(in)
	if err != nil {
		return nil, false, fmt.Errorf("%w: malformed OAUTHBEARER message: %w", ErrAuthentication, err)
	}
	name, exp, wait, err := b.tokens.check(token, !b.deferred)
	if wait != nil {
		b.deferred = true
		return nil, false, &Deferred{wait: wait}
	}
	var te *TokenError
	if errors.As(err, &te) {
		b.refused = te
		return []byte(te.Challenge()), false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if authzid != "" && authzid != name {
		return nil, false, fmt.Errorf("%w: the authorization id %q is not the token's principal name %q", ErrAuthentication, authzid, name)
	}
	b.principal, b.expires = "User:"+name, exp
	return nil, true, nil
}

// parseBearerMessage reads the client's first message with the grammar of
// Kafka's OAuthBearerClientInitialResponse (RFC 7628 section 3.1):
// "n," ["a=" saslname] "," %x01 *(key "=" value %x01) %x01, with keys
// [A-Za-z]+, values [\x21-\x7E \t\r\n]+, a key named twice keeping its
// last value, and auth = scheme 1*" " token, the scheme Bearer in any case
// and the token [-_.a-zA-Z0-9]+. The other keys are extensions, which no
// validator here reads. The authorization id is kept as sent, as Kafka
// keeps it.
func parseBearerMessage(in []byte) (authzid, token string, err error) {
	s, ok := strings.CutPrefix(string(in), "n,")
	if !ok {
		return "", "", errors.New(`the GS2 header does not start with "n,"`)
	}
	if rest, ok := strings.CutPrefix(s, "a="); ok {
		authzid, s, ok = strings.Cut(rest, ",")
		if !ok || !saslName(authzid) {
			return "", "", errors.New("malformed authorization id")
		}
	} else if s, ok = strings.CutPrefix(s, ","); !ok {
		return "", "", errors.New("malformed GS2 header")
	}
	s, ok = strings.CutPrefix(s, "\x01")
	if !ok {
		return "", "", errors.New("no %x01 after the GS2 header")
	}
	pairs, ok := strings.CutSuffix(s, "\x01")
	if !ok {
		return "", "", errors.New("no %x01 at the end")
	}
	auth := ""
	for len(pairs) > 0 {
		var kv string
		kv, pairs, ok = strings.Cut(pairs, "\x01")
		if !ok {
			return "", "", errors.New("a key-value pair without its %x01")
		}
		key, value, _ := strings.Cut(kv, "=")
		if !allBytes(key, func(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }) ||
			!allBytes(value, func(c byte) bool { return c >= 0x21 && c <= 0x7e || c == ' ' || c == '\t' || c == '\r' || c == '\n' }) {
			return "", "", errors.New("malformed key-value pair")
		}
		if key == "auth" {
			auth = value
		}
	}
	if auth == "" {
		return "", "", errors.New("no auth")
	}
	scheme, tok, _ := strings.Cut(auth, " ")
	tok = strings.TrimLeft(tok, " ")
	if !allBytes(scheme, func(c byte) bool { return wordByte(c) }) ||
		!allBytes(tok, func(c byte) bool { return wordByte(c) || c == '-' || c == '.' }) {
		return "", "", errors.New("auth is not a scheme and a token")
	}
	if !strings.EqualFold(scheme, "Bearer") {
		return "", "", errors.New("auth is not a Bearer token")
	}
	return authzid, tok, nil
}

// saslName: RFC 5801's saslname, as Kafka matches it: characters
// \x01-\x7F but "," and "=", which appear only as =2C and =3D.
func saslName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '=':
			if !strings.HasPrefix(s[i:], "=2C") && !strings.HasPrefix(s[i:], "=3D") {
				return false
			}
			i += 2
		case c == ',' || c == 0 || c > 0x7f:
			return false
		}
	}
	return true
}

// allBytes: s is not empty and f holds for each of its bytes.
func allBytes(s string, f func(byte) bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !f(s[i]) {
			return false
		}
	}
	return true
}

// wordByte: Java's \w, [a-zA-Z_0-9].
func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
