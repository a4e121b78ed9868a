package sasl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/kaas-project/kaas/wire/reload"
)

// TokenValidator checks OAUTHBEARER tokens: JWTs signed by a key of a JWKS
// file (re-read when it changes), optionally with a required issuer and
// audience. The principal is "User:" and the token's sub claim.
type TokenValidator struct {
	path     string
	Issuer   string // required iss, empty: any
	Audience string // required in aud, empty: any
	now      func() time.Time

	keys *reload.Files[*jose.JSONWebKeySet]
}

// signatureAlgorithms accepted in tokens.
var signatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// NewTokenValidator loads the JWKS at path; it is re-read when it changes,
// and a broken file keeps the last good keys.
func NewTokenValidator(path, issuer, audience string, now func() time.Time) (*TokenValidator, error) {
	parse := func() (*jose.JSONWebKeySet, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("jwks file: %w", err)
		}
		var set jose.JSONWebKeySet
		if err := json.Unmarshal(b, &set); err != nil {
			return nil, fmt.Errorf("jwks file %s: %w", path, err)
		}
		if len(set.Keys) == 0 {
			return nil, fmt.Errorf("jwks file %s holds no key", path)
		}
		return &set, nil
	}
	keys, err := reload.Open([]string{path}, nil, parse, now)
	if err != nil {
		return nil, fmt.Errorf("jwks file: %w", err)
	}
	return &TokenValidator{path: path, Issuer: issuer, Audience: audience, now: now, keys: keys}, nil
}

func (v *TokenValidator) keySet() *jose.JSONWebKeySet { return v.keys.Get() }

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
