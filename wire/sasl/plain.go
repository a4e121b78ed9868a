package sasl

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"time"
)

// plainExchange is SASL PLAIN (RFC 4616): one message
// "authzid NUL user NUL password", checked against the user's SCRAM
// credential (SHA-512 first, then SHA-256).
type plainExchange struct {
	creds     CredentialStore
	principal string
}

func (p *plainExchange) Step(in []byte) ([]byte, bool, error) {
	parts := bytes.Split(in, []byte{0})
	if len(parts) != 3 {
		return nil, false, fmt.Errorf("%w: malformed PLAIN message", ErrAuthentication)
	}
	authz, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	if user == "" || (authz != "" && authz != user) {
		return nil, false, fmt.Errorf("%w: authorization id must be empty or the user", ErrAuthentication)
	}
	if !checkPassword(p.creds, user, pass) {
		return nil, false, ErrAuthentication
	}
	p.principal = "User:" + user
	return nil, true, nil
}

func (p *plainExchange) Principal() string  { return p.principal }
func (p *plainExchange) Expires() time.Time { return time.Time{} }

// checkPassword derives the stored key of pass with the user's salt and
// compares it in constant time.
func checkPassword(store CredentialStore, user, pass string) bool {
	if store == nil {
		return false
	}
	for _, mech := range []string{ScramSHA512, ScramSHA256} {
		cred, ok := store.Lookup(user, mech)
		if !ok {
			continue
		}
		h, _ := hashFor(mech)
		stored, _, err := keysFor(h, pass, cred.Salt, cred.Iterations)
		return err == nil && subtle.ConstantTimeCompare(stored, cred.StoredKey) == 1
	}
	return false
}
