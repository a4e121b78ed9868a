package sasl

import (
	"bytes"
	"context"
	"encoding/json"
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

// TokenValidator checks OAUTHBEARER tokens: JWTs signed by a key of a JWKS
// (a file re-read when it changes, or an https URL fetched again by
// Refresh), optionally with a required issuer and audience. The principal
// is "User:" and the token's sub claim.
type TokenValidator struct {
	Issuer   string // required iss, empty: any
	Audience string // required in aud, empty: any
	now      func() time.Time

	keys func() *jose.JSONWebKeySet
	// url, client and fetched serve a JWKS from a URL.
	url     string
	client  *http.Client
	mu      sync.Mutex
	fetched *jose.JSONWebKeySet
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
func NewTokenValidator(path, issuer, audience string, now func() time.Time) (*TokenValidator, error) {
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
	return &TokenValidator{Issuer: issuer, Audience: audience, now: now, keys: keys.Get}, nil
}

// NewURLTokenValidator fetches the JWKS at url (https) with client; the
// first fetch must succeed. Refresh fetches it again.
func NewURLTokenValidator(ctx context.Context, url string, client *http.Client, issuer, audience string, now func() time.Time) (*TokenValidator, error) {
	if !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("jwks url %q: want https://", url)
	}
	v := &TokenValidator{Issuer: issuer, Audience: audience, now: now, url: url, client: client}
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

// Validate checks a compact JWT and returns its subject and expiry.
func (v *TokenValidator) Validate(token string) (sub string, exp time.Time, err error) {
	tok, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: malformed token", ErrAuthentication)
	}
	set := v.keySet()
	var claims jwt.Claims
	verified := false
	for _, h := range tok.Headers {
		keys := set.Keys
		if h.KeyID != "" {
			keys = set.Key(h.KeyID)
		}
		for _, k := range keys {
			if tok.Claims(k.Public().Key, &claims) == nil {
				verified = true
				break
			}
		}
	}
	if !verified {
		return "", time.Time{}, fmt.Errorf("%w: token signature does not verify", ErrAuthentication)
	}
	if claims.Expiry == nil {
		return "", time.Time{}, fmt.Errorf("%w: token has no exp", ErrAuthentication)
	}
	want := jwt.Expected{Issuer: v.Issuer, Time: v.now()}
	if v.Audience != "" {
		want.AnyAudience = jwt.Audience{v.Audience}
	}
	if err := claims.ValidateWithLeeway(want, 0); err != nil {
		return "", time.Time{}, fmt.Errorf("%w: token %v", ErrAuthentication, err)
	}
	if claims.Subject == "" {
		return "", time.Time{}, fmt.Errorf("%w: token has no sub", ErrAuthentication)
	}
	return claims.Subject, claims.Expiry.Time(), nil
}

// bearerExchange is OAUTHBEARER (RFC 7628): one client message
// "gs2-header \x01 auth=Bearer <token> \x01 [kvpairs] \x01".
type bearerExchange struct {
	tokens    *TokenValidator
	now       func() time.Time
	principal string
	expires   time.Time
}

func (b *bearerExchange) Principal() string  { return b.principal }
func (b *bearerExchange) Expires() time.Time { return b.expires }

func (b *bearerExchange) Step(in []byte) ([]byte, bool, error) {
	if b.tokens == nil {
		return nil, false, fmt.Errorf("%w: no JWKS configured", ErrAuthentication)
	}
	parts := bytes.Split(in, []byte{1})
	if len(parts) < 3 || !bytes.HasPrefix(parts[0], []byte("n,")) {
		return nil, false, fmt.Errorf("%w: malformed OAUTHBEARER message", ErrAuthentication)
	}
	var token string
	for _, kv := range parts[1:] {
		if v, ok := strings.CutPrefix(string(kv), "auth="); ok {
			scheme, tok, found := strings.Cut(v, " ")
			if !found || !strings.EqualFold(scheme, "Bearer") {
				return nil, false, fmt.Errorf("%w: auth is not a Bearer token", ErrAuthentication)
			}
			token = strings.TrimSpace(tok)
		}
	}
	if token == "" {
		return nil, false, fmt.Errorf("%w: no token", ErrAuthentication)
	}
	sub, exp, err := b.tokens.Validate(token)
	if err != nil {
		return nil, false, err
	}
	b.principal, b.expires = "User:"+sub, exp
	return nil, true, nil
}
