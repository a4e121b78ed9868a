package sasl

import (
	"context"
	"fmt"
	"maps"
)

// Kafka's SCRAM mechanism codes in the credential APIs (keys 50, 51).
const (
	mechCodeSHA256 int8 = 1
	mechCodeSHA512 int8 = 2
)

// MechanismOfCode is the SCRAM mechanism of a credential API code.
func MechanismOfCode(code int8) (string, bool) {
	switch code {
	case mechCodeSHA256:
		return ScramSHA256, true
	case mechCodeSHA512:
		return ScramSHA512, true
	}
	return "", false
}

// CodeOfMechanism is the credential API code of a SCRAM mechanism (0 for
// another).
func CodeOfMechanism(mech string) int8 {
	switch mech {
	case ScramSHA256:
		return mechCodeSHA256
	case ScramSHA512:
		return mechCodeSHA512
	}
	return 0
}

// Alteration sets (or, with Delete, removes) one user's credential for one
// mechanism.
type Alteration struct {
	User, Mech string
	Delete     bool
	Cred       ScramCredential
}

// UserStore is where SCRAM credentials live and the credential APIs write:
// the credentials file in local mode, KafkaUser objects in cluster mode.
type UserStore interface {
	CredentialStore
	// Content is every user's credentials; callers do not modify it.
	Content() *Credentials
	// Alter applies alts, and returns once Lookup sees them.
	Alter(ctx context.Context, alts []Alteration) error
}

// Apply returns a copy of c with alts applied; a user left without
// credentials is removed.
func Apply(c *Credentials, alts []Alteration) *Credentials {
	out := &Credentials{Users: map[string]map[string]ScramCredential{}}
	if c != nil {
		for u, m := range c.Users {
			out.Users[u] = maps.Clone(m)
		}
	}
	for _, a := range alts {
		if a.Delete {
			delete(out.Users[a.User], a.Mech)
			if len(out.Users[a.User]) == 0 {
				delete(out.Users, a.User)
			}
			continue
		}
		if out.Users[a.User] == nil {
			out.Users[a.User] = map[string]ScramCredential{}
		}
		out.Users[a.User][a.Mech] = a.Cred
	}
	return out
}

// Overlay is a UserStore (KafkaUser objects) over read-only credentials (a
// credentials file): a user's credentials come from Store when it has
// any, else from Base. Changes go to Store.
type Overlay struct {
	Store UserStore
	Base  CredentialStore
	// BaseContent lists Base's users.
	BaseContent func() *Credentials
}

// Lookup implements CredentialStore.
func (o *Overlay) Lookup(user, mech string) (ScramCredential, bool) {
	if c := o.Store.Content(); c != nil && len(c.Users[user]) > 0 {
		return c.Lookup(user, mech)
	}
	return o.Base.Lookup(user, mech)
}

// Content implements UserStore.
func (o *Overlay) Content() *Credentials {
	out := &Credentials{Users: map[string]map[string]ScramCredential{}}
	if b := o.BaseContent(); b != nil {
		maps.Copy(out.Users, b.Users)
	}
	if s := o.Store.Content(); s != nil {
		maps.Copy(out.Users, s.Users)
	}
	return out
}

// Alter implements UserStore. A user of Base altered here gets its
// credentials from Store from then on; deleting a credential that only
// Base holds is refused (it is not the API's to delete).
func (o *Overlay) Alter(ctx context.Context, alts []Alteration) error {
	s := o.Store.Content()
	for _, a := range alts {
		if a.Delete {
			if _, ok := s.Lookup(a.User, a.Mech); !ok {
				return fmt.Errorf("the %s credential of user %s is in the credentials file: remove it there", a.Mech, a.User)
			}
		}
	}
	return o.Store.Alter(ctx, alts)
}
