package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
)

// UnsecuredValidator accepts unsigned OAUTHBEARER tokens (a JWS with "alg":
// "none" and no signature), as Kafka's OAuthBearerUnsecuredValidatorCallbackHandler,
// its default when no validator is configured, does: any client can claim
// any principal, so it serves development and tests only. It checks what
// Kafka's does (OAuthBearerUnsecuredJws, OAuthBearerValidationUtils): an
// exp claim, the principal claim a non-blank string, iat (when present)
// not after now, exp not before now, each give or take ClockSkew, exp
// after iat, and every required scope item in the token's scope claim.
type UnsecuredValidator struct {
	PrincipalClaim string        // Kafka's unsecuredValidatorPrincipalClaimName
	ScopeClaim     string        // unsecuredValidatorScopeClaimName
	RequiredScope  []string      // unsecuredValidatorRequiredScope, parsed by ParseScope
	ClockSkew      time.Duration // unsecuredValidatorAllowableClockSkewMs
	now            func() time.Time
}

// Defaults of Kafka's unsecured validator options.
const (
	DefaultPrincipalClaim = "sub"
	DefaultScopeClaim     = "scope"
)

// NewUnsecuredValidator is an UnsecuredValidator with the given options
// (empty claim names: Kafka's defaults) and clock.
func NewUnsecuredValidator(principalClaim, scopeClaim string, requiredScope []string, skew time.Duration, now func() time.Time) (*UnsecuredValidator, error) {
	if skew < 0 {
		return nil, fmt.Errorf("allowable clock skew %v is negative", skew)
	}
	v := &UnsecuredValidator{PrincipalClaim: strings.TrimSpace(principalClaim), ScopeClaim: strings.TrimSpace(scopeClaim),
		RequiredScope: requiredScope, ClockSkew: skew, now: now}
	if v.PrincipalClaim == "" {
		v.PrincipalClaim = DefaultPrincipalClaim
	}
	if v.ScopeClaim == "" {
		v.ScopeClaim = DefaultScopeClaim
	}
	return v, nil
}

// scopeItem is one scope item as RFC 6749 (and Kafka's OAuthBearerScopeUtils) allows.
var scopeItem = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]+$`)

// ParseScope reads a space-separated scope list (Kafka's
// unsecuredValidatorRequiredScope); an item with a character outside
// RFC 6749's is an error.
func ParseScope(s string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(strings.TrimSpace(s), " ") {
		if item == "" {
			continue
		}
		if !scopeItem.MatchString(item) {
			return nil, fmt.Errorf("invalid scope item %q", item)
		}
		out = append(out, item)
	}
	return out, nil
}

// Validate checks an unsecured token and returns its principal name and
// expiry; a refused token is a *TokenError.
func (v *UnsecuredValidator) Validate(token string) (name string, exp time.Time, err error) {
	name, exp, _, err = v.check(token, false)
	return name, exp, err
}

// check never waits: an unsecured token needs no key.
func (v *UnsecuredValidator) check(token string, _ bool) (string, time.Time, func(), error) {
	name, exp, err := v.validate(token)
	if err != nil {
		return "", time.Time{}, nil, err
	}
	return name, exp, nil, nil
}

// validate mirrors Kafka's checks, in Kafka's order.
func (v *UnsecuredValidator) validate(token string) (string, time.Time, error) {
	parts := strings.Split(token, ".")
	if strings.Contains(token, "..") || len(parts) != 3 {
		return "", time.Time{}, invalidToken("an unsecured JWS has 3 dot-separated Base64URL values")
	}
	header, err := jwsPart(parts[0])
	if err != nil {
		return "", time.Time{}, invalidToken("JWS header: %v", err)
	}
	claims, err := jwsPart(parts[1])
	if err != nil {
		return "", time.Time{}, invalidToken("JWS claims: %v", err)
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return "", time.Time{}, invalidToken(`an unsecured JWS has "alg": "none", not %v`, header["alg"])
	}
	if parts[2] != "" {
		return "", time.Time{}, invalidToken("an unsecured JWS has no signature")
	}
	scope, err := tokenScope(claims[v.ScopeClaim], v.ScopeClaim)
	if err != nil {
		return "", time.Time{}, err
	}
	expSec, ok, err := numberClaim(claims, "exp")
	switch {
	case err != nil:
		return "", time.Time{}, err
	case !ok:
		return "", time.Time{}, invalidToken("no exp claim")
	}
	name, isString := claims[v.PrincipalClaim].(string)
	if _, present := claims[v.PrincipalClaim]; present && !isString {
		return "", time.Time{}, invalidToken("the %s claim is not a string", v.PrincipalClaim)
	}
	if strings.TrimSpace(name) == "" {
		return "", time.Time{}, invalidToken("no principal name in the %s claim", v.PrincipalClaim)
	}
	iatSec, hasIat, err := numberClaim(claims, "iat")
	if err != nil {
		return "", time.Time{}, err
	}
	now, skew := v.now().UnixMilli(), v.ClockSkew.Milliseconds()
	if hasIat && 1000*iatSec > float64(now+skew) {
		return "", time.Time{}, invalidToken("iat %v is after now plus the allowable clock skew (%d ms)", iatSec, skew)
	}
	if float64(now-skew) >= 1000*expSec {
		return "", time.Time{}, invalidToken("exp %v is not after now minus the allowable clock skew (%d ms)", expSec, skew)
	}
	if hasIat && expSec <= iatSec {
		return "", time.Time{}, invalidToken("exp %v is not after iat %v", expSec, iatSec)
	}
	for _, item := range v.RequiredScope {
		if !slices.Contains(scope, item) {
			// Kafka names the scope required as Java prints its list.
			return "", time.Time{}, &TokenError{Status: "insufficient_scope", Scope: "[" + strings.Join(v.RequiredScope, ", ") + "]",
				Reason: fmt.Sprintf("the token's scope %q lacks %q", scope, item)}
		}
	}
	// Far-future exps are clamped rather than overflowing.
	return name, time.UnixMilli(int64(min(math.Round(expSec*1000), 1<<62))), nil
}

// jwsPart decodes one part of a compact JWS: Base64URL, or the standard
// alphabet that Kafka's decoder takes, padded or not, holding a JSON
// object. Values are converted as Kafka's OAuthBearerUnsecuredJws
// converts them: numbers stay numbers, arrays become lists of their
// elements' text, anything else its text (true is "true", null "null").
func jwsPart(s string) (map[string]any, error) {
	s = strings.TrimRight(s, "=")
	enc := base64.RawURLEncoding
	if strings.ContainsAny(s, "+/") {
		enc = base64.RawStdEncoding
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("malformed Base64: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var raw map[string]any
	if err := d.Decode(&raw); err != nil || raw == nil {
		return nil, errors.New("not a JSON object")
	}
	out := make(map[string]any, len(raw))
	for k, val := range raw {
		switch val := val.(type) {
		case json.Number:
			out[k] = val
		case []any:
			list := make([]string, len(val))
			for i, e := range val {
				list[i] = jsonText(e)
			}
			out[k] = list
		default:
			out[k] = jsonText(val)
		}
	}
	return out, nil
}

// jsonText is a decoded JSON value's text as Jackson's asText gives it:
// objects and arrays have none.
func jsonText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return fmt.Sprint(v)
	case nil:
		return "null"
	}
	return ""
}

// numberClaim is a numeric claim's value; ok is false when it is absent,
// and a claim of another type is refused.
func numberClaim(claims map[string]any, name string) (float64, bool, error) {
	v, present := claims[name]
	if !present {
		return 0, false, nil
	}
	n, isNumber := v.(json.Number)
	if !isNumber {
		return 0, false, invalidToken("the %s claim is not a number", name)
	}
	f, err := n.Float64()
	if err != nil {
		return 0, false, invalidToken("the %s claim %v: %v", name, n, err)
	}
	return f, true, nil
}

// tokenScope is a token's scope claim as Kafka reads it: a string is one
// item (trimmed; blank is none), a list its non-blank items trimmed.
func tokenScope(v any, claim string) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		if s := strings.TrimSpace(v); s != "" {
			return []string{s}, nil
		}
		return nil, nil
	case []string:
		var out []string
		for _, s := range v {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	}
	return nil, invalidToken("the %s claim is neither a string nor a list", claim)
}
