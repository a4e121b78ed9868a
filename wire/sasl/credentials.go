package sasl

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kaas-project/kaas/storage/atomicfile"
	"github.com/kaas-project/kaas/wire/reload"
)

// ScramCredential is one user's salted SCRAM credential (RFC 5802 section
// 3): the password itself is never stored.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// MinIterations and MaxIterations bound the iteration count accepted
// (Kafka's limits).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

func hashFor(mech string) (func() hash.Hash, error) {
	switch mech {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("not a SCRAM mechanism: %q", mech)
}

func hmacOf(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func hashOf(h func() hash.Hash, b []byte) []byte {
	d := h()
	d.Write(b)
	return d.Sum(nil)
}

// keysFor derives the stored and server keys of a password.
func keysFor(h func() hash.Hash, password string, salt []byte, iterations int) (stored, server []byte, err error) {
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return nil, nil, err
	}
	stored, server = keysOfSalted(h, salted)
	return stored, server, nil
}

// keysOfSalted derives the stored and server keys of a salted password
// (RFC 5802 section 3).
func keysOfSalted(h func() hash.Hash, salted []byte) (stored, server []byte) {
	return hashOf(h, hmacOf(h, salted, "Client Key")), hmacOf(h, salted, "Server Key")
}

// ScramCredentialFromSalted is the credential of a password the client
// salted itself (AlterUserScramCredentials sends SaltedPassword, never the
// password). Only the iterations are checked, as Kafka's controller checks
// them: a salted password or salt a client did not derive as RFC 5802 does
// is stored, and no login then proves it.
func ScramCredentialFromSalted(mech string, salted, salt []byte, iterations int) (ScramCredential, error) {
	h, err := hashFor(mech)
	if err != nil {
		return ScramCredential{}, err
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return ScramCredential{}, fmt.Errorf("%d iterations: want %d to %d", iterations, MinIterations, MaxIterations)
	}
	stored, server := keysOfSalted(h, salted)
	return ScramCredential{Salt: append([]byte(nil), salt...), Iterations: iterations, StoredKey: stored, ServerKey: server}, nil
}

// NewScramCredential salts password for mech with a fresh random salt.
func NewScramCredential(mech, password string, iterations int) (ScramCredential, error) {
	salt := make([]byte, 24)
	if _, err := rand.Read(salt); err != nil {
		return ScramCredential{}, err
	}
	return ScramCredentialWithSalt(mech, password, salt, iterations)
}

// ScramCredentialWithSalt salts password for mech with salt.
func ScramCredentialWithSalt(mech, password string, salt []byte, iterations int) (ScramCredential, error) {
	h, err := hashFor(mech)
	if err != nil {
		return ScramCredential{}, err
	}
	if iterations < MinIterations {
		return ScramCredential{}, fmt.Errorf("%d iterations: want at least %d", iterations, MinIterations)
	}
	stored, server, err := keysFor(h, password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return ScramCredential{Salt: salt, Iterations: iterations, StoredKey: stored, ServerKey: server}, nil
}

// CredentialStore looks up users' SCRAM credentials.
type CredentialStore interface {
	Lookup(user, mech string) (ScramCredential, bool)
}

// Credentials is the credentials file's content: user -> mechanism ->
// credential (salt and keys base64 in JSON).
type Credentials struct {
	Users map[string]map[string]ScramCredential `json:"users"`
}

// Lookup implements CredentialStore.
func (c *Credentials) Lookup(user, mech string) (ScramCredential, bool) {
	if c == nil {
		return ScramCredential{}, false
	}
	cred, ok := c.Users[user][mech]
	return cred, ok
}

// Validate checks every entry.
func (c *Credentials) Validate() error {
	var errs []error
	for user, mechs := range c.Users {
		for mech, cred := range mechs {
			h, err := hashFor(mech)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("user %q: %w", user, err))
			case cred.Iterations < MinIterations:
				errs = append(errs, fmt.Errorf("user %q %s: %d iterations, want at least %d", user, mech, cred.Iterations, MinIterations))
			case len(cred.Salt) == 0 || len(cred.StoredKey) != h().Size() || len(cred.ServerKey) != h().Size():
				errs = append(errs, fmt.Errorf("user %q %s: salt, stored_key and server_key must be set (keys %d bytes)", user, mech, h().Size()))
			}
		}
	}
	return errors.Join(errs...)
}

// FileStore is a credentials file (JSON, Credentials), re-read when it
// changes (checked at most once per reload.CheckEvery), so a mounted
// Secret's update reaches new logins without a restart. A file that fails
// to parse keeps the last good content.
type FileStore struct {
	// OnReload is told about every reload and failed reload.
	OnReload func(err error)

	file    *reload.Files[*Credentials]
	path    string
	writeMu sync.Mutex
}

// OpenFile loads path; a missing or invalid file is an error.
func OpenFile(path string, now func() time.Time) (*FileStore, error) {
	fs := &FileStore{path: path}
	parse := func() (*Credentials, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("credentials file: %w", err)
		}
		var c Credentials
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("credentials file %s: %w", path, err)
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("credentials file %s: %w", path, err)
		}
		return &c, nil
	}
	f, err := reload.Open([]string{path}, nil, parse, now)
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	f.OnReload = func(err error) {
		if fs.OnReload != nil {
			fs.OnReload(err)
		}
	}
	fs.file = f
	return fs, nil
}

// Lookup implements CredentialStore.
func (f *FileStore) Lookup(user, mech string) (ScramCredential, bool) {
	return f.file.Get().Lookup(user, mech)
}

// Content implements UserStore.
func (f *FileStore) Content() *Credentials { return f.file.Get() }

// Alter implements UserStore: the file is rewritten atomically
// (atomicfile: a temporary file fsynced and renamed over it, the directory
// fsynced) and read back; a failed write changes nothing and is returned.
func (f *FileStore) Alter(_ context.Context, alts []Alteration) error {
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	next := Apply(f.file.Refresh(), alts)
	b, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return err
	}
	// A unique temporary name: the file's watcher (wire/reload) tells it
	// from the file itself.
	if _, err := atomicfile.WriteWith(filepath.Dir(f.path), filepath.Base(f.path), b, atomicfile.Options{Mode: 0o600, UniqueTmp: true}); err != nil {
		return fmt.Errorf("credentials file %s: %w", f.path, err)
	}
	f.file.Refresh()
	return nil
}
