// Package delegation keeps Kafka's delegation tokens (KIP-48, KIP-373):
// the rules of creating, renewing, expiring and describing them, as Apache
// Kafka's DelegationTokenManager applies them, and their store.
//
// A token is a token id and its HMAC-SHA512 under the cluster's secret key
// (delegation.token.secret.key). A client authenticates with SCRAM and the
// tokenauth extension, as user = the token id and password = the HMAC in
// base64, and acts as the token's owner. Only the token's metadata and its
// salted SCRAM credentials are stored; the HMAC is recomputed from the
// secret key, so the store holds nothing a client could log in with.
package delegation

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/wire/sasl"
)

// Config is the broker's token settings (Kafka's names in comments).
type Config struct {
	// SecretKey is delegation.token.secret.key, the same on every broker;
	// empty disables tokens (DELEGATION_TOKEN_AUTH_DISABLED).
	SecretKey []byte
	// MaxLifetime is delegation.token.max.lifetime.ms (7 days): no renewal
	// takes a token past issue + MaxLifetime.
	MaxLifetime time.Duration
	// RenewTime is delegation.token.expiry.time.ms (24 h): a token's life
	// from its creation or a renewal that names no period.
	RenewTime time.Duration
}

// Defaults fills zero durations with Kafka's defaults.
func (c *Config) Defaults() {
	if c.MaxLifetime <= 0 {
		c.MaxLifetime = 7 * 24 * time.Hour
	}
	if c.RenewTime <= 0 {
		c.RenewTime = 24 * time.Hour
	}
}

// Enabled reports whether tokens are served.
func (c Config) Enabled() bool { return len(c.SecretKey) > 0 }

// HMAC is the token id's HMAC-SHA512 under the secret key.
func (c Config) HMAC(id string) []byte {
	m := hmac.New(sha512.New, c.SecretKey)
	m.Write([]byte(id))
	return m.Sum(nil)
}

// Password is what a client gives as its SCRAM password: the HMAC in
// base64.
func Password(mac []byte) string { return base64.StdEncoding.EncodeToString(mac) }

// Token is one delegation token as stored. Times are Unix milliseconds.
type Token struct {
	ID        string   `json:"id"`
	Owner     string   `json:"owner"`     // "User:alice"
	Requester string   `json:"requester"` // who created it (KIP-373: may differ from the owner)
	Renewers  []string `json:"renewers,omitempty"`
	IssueMs   int64    `json:"issueMs"`
	ExpiryMs  int64    `json:"expiryMs"`
	MaxMs     int64    `json:"maxMs"`
	// Scram holds the token's salted SCRAM credentials by mechanism.
	Scram map[string]sasl.ScramCredential `json:"scram"`
}

// OwnerOrRenewer reports whether principal may renew or expire t (Kafka:
// its owner, its requester or one of its renewers).
func (t Token) OwnerOrRenewer(principal string) bool {
	return principal == t.Owner || principal == t.Requester || slices.Contains(t.Renewers, principal)
}

// Expired reports whether t no longer authenticates at now.
func (t Token) Expired(now time.Time) bool { return t.ExpiryMs < now.UnixMilli() }

// Error is a refused token operation: a Kafka error code.
type Error struct{ Code int16 }

func (e *Error) Error() string { return kerr.ErrorForCode(e.Code).Error() }

func refused(code int16) error { return &Error{Code: code} }

// Create makes a token for owner, asked by requester, with renewers.
// maxLifetimeMs <= 0 takes the broker's maximum; a larger one is capped by
// it. The expiry is the renew time from now, capped by the maximum.
func Create(c Config, now time.Time, owner, requester string, renewers []string, maxLifetimeMs int64) (Token, error) {
	if !c.Enabled() {
		return Token{}, refused(kerr.DelegationTokenAuthDisabled.Code)
	}
	life := c.MaxLifetime
	if maxLifetimeMs > 0 {
		life = min(life, time.Duration(maxLifetimeMs)*time.Millisecond)
	}
	issue := now.UnixMilli()
	t := Token{ID: newID(), Owner: owner, Requester: requester, Renewers: slices.Clone(renewers),
		IssueMs: issue, MaxMs: issue + life.Milliseconds()}
	t.ExpiryMs = min(t.MaxMs, issue+c.RenewTime.Milliseconds())
	t.Scram = map[string]sasl.ScramCredential{}
	pass := Password(c.HMAC(t.ID))
	for _, mech := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
		cred, err := sasl.NewScramCredential(mech, pass, sasl.MinIterations)
		if err != nil {
			return Token{}, fmt.Errorf("delegation: token credential: %w", err)
		}
		t.Scram[mech] = cred
	}
	return t, nil
}

// newID is a random token id: 16 bytes, URL-safe base64 (Kafka's Uuid
// string form).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Find returns the index of the token whose HMAC is mac, or -1.
func Find(c Config, tokens []Token, mac []byte) int {
	for i, t := range tokens {
		if hmac.Equal(c.HMAC(t.ID), mac) {
			return i
		}
	}
	return -1
}

// checkChange is what renewing and expiring share: tokens enabled, the
// token found, principal its owner or renewer, neither expired nor past its
// maximum (Kafka answers DELEGATION_TOKEN_EXPIRED until it sweeps it).
func checkChange(c Config, tokens []Token, mac []byte, principal string, now time.Time) (int, error) {
	if !c.Enabled() {
		return -1, refused(kerr.DelegationTokenAuthDisabled.Code)
	}
	i := Find(c, tokens, mac)
	switch {
	case i < 0:
		return -1, refused(kerr.DelegationTokenNotFound.Code)
	case !tokens[i].OwnerOrRenewer(principal):
		return -1, refused(kerr.DelegationTokenOwnerMismatch.Code)
	case tokens[i].MaxMs < now.UnixMilli() || tokens[i].Expired(now):
		return -1, refused(kerr.DelegationTokenExpired.Code)
	}
	return i, nil
}

// Renew extends the token whose HMAC is mac by periodMs from now (the
// broker's renew time when negative), capped by its maximum, and returns
// the tokens and the new expiry.
func Renew(c Config, tokens []Token, mac []byte, principal string, periodMs int64, now time.Time) ([]Token, int64, error) {
	i, err := checkChange(c, tokens, mac, principal, now)
	if err != nil {
		return tokens, 0, err
	}
	period := c.RenewTime.Milliseconds()
	if periodMs >= 0 {
		period = periodMs
	}
	tokens = slices.Clone(tokens)
	tokens[i].ExpiryMs = min(tokens[i].MaxMs, now.UnixMilli()+period)
	return tokens, tokens[i].ExpiryMs, nil
}

// Expire sets the token whose HMAC is mac to expire periodMs from now
// (capped by its maximum); a negative period removes it at once. It
// returns the tokens and the expiry.
func Expire(c Config, tokens []Token, mac []byte, principal string, periodMs int64, now time.Time) ([]Token, int64, error) {
	i, err := checkChange(c, tokens, mac, principal, now)
	if err != nil {
		return tokens, 0, err
	}
	if periodMs < 0 {
		return slices.Delete(slices.Clone(tokens), i, i+1), now.UnixMilli(), nil
	}
	tokens = slices.Clone(tokens)
	tokens[i].ExpiryMs = min(tokens[i].MaxMs, now.UnixMilli()+periodMs)
	return tokens, tokens[i].ExpiryMs, nil
}

// Kept drops the tokens expired for longer than sweep at now.
func Kept(tokens []Token, now time.Time, sweep time.Duration) []Token {
	return slices.DeleteFunc(slices.Clone(tokens), func(t Token) bool { return t.Expired(now.Add(-sweep)) })
}
