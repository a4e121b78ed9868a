// Package sasl is the server side of the SASL mechanisms kaas serves:
// PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) against
// salted credentials, OAUTHBEARER (RFC 7628) with JWTs checked against
// a JWKS (or, for development, unsigned tokens), and GSSAPI (RFC 4752) with Kerberos tickets checked against a
// keytab. It is logic over bytes: the connection actor feeds it the
// client's SaslAuthenticate payloads and answers with what it returns. Its
// one network I/O is fetching a JWKS URL; an exchange step that needs a
// fetch returns a *Deferred rather than waiting.
package sasl

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Mechanism names as clients send them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
	GSSAPI      = "GSSAPI"
)

// ErrAuthentication is every failed authentication; its text goes to the
// client, so it names no secret and does not say whether the user exists.
var ErrAuthentication = errors.New("authentication failed: invalid credentials")

// Exchange is one authentication in progress.
type Exchange interface {
	// Step consumes the client's next message and returns the server's
	// answer; done is true once the client is authenticated. An error
	// ends the exchange (wrapping ErrAuthentication for bad credentials),
	// except a *Deferred: the answer waits on I/O first.
	Step(in []byte) (out []byte, done bool, err error)
	// Principal is the authenticated principal ("User:alice") once done.
	Principal() string
	// Expires is when the credential stops being valid (a token's exp);
	// zero when it does not expire.
	Expires() time.Time
}

// Deferred is the error Step returns when its answer waits on I/O: an
// OAUTHBEARER token names a key id the JWKS lacks, and a fetch of the JWKS
// URL may bring it. The caller runs Wait where it may block (it returns
// once the fetch ended, within its timeout), then calls Step again with
// the same message, which answers without waiting.
type Deferred struct{ wait func() }

func (d *Deferred) Error() string { return "sasl: the answer waits for a fetch of the JWKS" }

// Wait blocks until the I/O the step waits on ended.
func (d *Deferred) Wait() { d.wait() }

// DelegationTokens looks up a delegation token by id for SCRAM's
// tokenauth extension: its credential for mech, the principal it
// authenticates as (its owner) and when it expires.
type DelegationTokens interface {
	LookupToken(id, mech string) (cred ScramCredential, owner string, expires time.Time, ok bool)
}

// TokenAuthenticated is implemented by an exchange that can authenticate
// with a delegation token: true once it did.
type TokenAuthenticated interface {
	TokenAuthenticated() bool
}

// Server holds what every mechanism needs.
type Server struct {
	// Mechanisms enabled, in the order SaslHandshake lists them.
	Mechanisms []string
	// Credentials back PLAIN and SCRAM.
	Credentials CredentialStore
	// Tokens validates OAUTHBEARER tokens.
	Tokens BearerValidator
	// Keytab verifies GSSAPI tickets.
	Keytab *Keytab
	// DelegationTokens backs SCRAM with the tokenauth extension (nil: no
	// token authenticates).
	DelegationTokens DelegationTokens
	// Now is the clock (token expiry).
	Now func() time.Time
}

// Enabled reports whether mech is served.
func (s *Server) Enabled(mech string) bool {
	for _, m := range s.Mechanisms {
		if m == mech {
			return true
		}
	}
	return false
}

// Start begins an exchange for mech.
func (s *Server) Start(mech string) (Exchange, error) {
	if !s.Enabled(mech) {
		return nil, fmt.Errorf("mechanism %q is not enabled (enabled: %v)", mech, s.Mechanisms)
	}
	switch mech {
	case Plain:
		return &plainExchange{creds: s.Credentials}, nil
	case ScramSHA256, ScramSHA512:
		ex := newScramExchange(mech, s.Credentials)
		ex.tokens = s.DelegationTokens
		return ex, nil
	case OAuthBearer:
		return &bearerExchange{tokens: s.Tokens}, nil
	case GSSAPI:
		return &gssapiExchange{kt: s.Keytab}, nil
	}
	return nil, fmt.Errorf("mechanism %q is not implemented", mech)
}

// Supported lists the mechanisms this package implements.
func Supported() []string {
	out := []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer, GSSAPI}
	sort.Strings(out)
	return out
}
