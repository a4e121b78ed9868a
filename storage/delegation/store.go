package delegation

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/kaas-project/kaas/storage/atomicfile"
	"github.com/kaas-project/kaas/wire/sasl"
)

// FileName is the store's file in the cluster directory of the data dir:
// <data-dir>/__cluster/delegation-tokens.json.
const FileName = "delegation-tokens.json"

// Store keeps the cluster's tokens: one JSON file on the shared volume,
// replaced atomically, that every broker reads (a token created through
// one broker authenticates on every other), or memory (a broker without a
// data dir). Updates go through atomicfile.Update, whose lock file beside
// it serializes them, so two brokers creating tokens at once each keep the
// other's.
type Store struct {
	dir string // "" keeps the tokens in memory
	mu  sync.Mutex
	mem []Token
	// Sweep is delegation.token.expiry.check.interval.ms: how long an
	// expired token is kept before it is removed. Kept, it is described,
	// and renewing or expiring it answers DELEGATION_TOKEN_EXPIRED (Kafka
	// removes expired tokens on a timer of this period); it never
	// authenticates. Zero removes tokens as they expire.
	Sweep time.Duration
}

// NewMemory returns a store that keeps the tokens in memory.
func NewMemory() *Store { return &Store{} }

// NewFile returns a store in dir (the data dir's cluster directory).
func NewFile(dir string) *Store { return &Store{dir: dir} }

// Load returns the tokens not swept at now, expired ones included.
func (s *Store) Load(now time.Time) ([]Token, error) {
	if s.dir == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		return Kept(s.mem, now, s.Sweep), nil
	}
	tokens, err := s.read()
	return Kept(tokens, now, s.Sweep), err
}

func (s *Store) read() ([]Token, error) {
	path := filepath.Join(s.dir, FileName)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read delegation tokens %s: %w", path, err)
	}
	return decode(b, path)
}

// decode reads the file's content (nil: no file, no tokens).
func decode(b []byte, path string) ([]Token, error) {
	if b == nil {
		return nil, nil
	}
	var tokens []Token
	if err := json.Unmarshal(b, &tokens); err != nil {
		return nil, fmt.Errorf("delegation tokens %s: %w", path, err)
	}
	return tokens, nil
}

// Update replaces the kept tokens with change's result (swept tokens are
// dropped first). change's error is returned as is and stores
// nothing.
func (s *Store) Update(now time.Time, change func([]Token) ([]Token, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		next, err := change(Kept(s.mem, now, s.Sweep))
		if err != nil {
			return err
		}
		s.mem = slices.Clone(next)
		return nil
	}
	return atomicfile.Update(s.dir, FileName, atomicfile.Options{Mode: 0o600}, func(b []byte) ([]byte, error) {
		cur, err := decode(b, filepath.Join(s.dir, FileName))
		if err != nil {
			return nil, err
		}
		next, err := change(Kept(cur, now, s.Sweep))
		if err != nil {
			return nil, err
		}
		if next == nil {
			next = []Token{}
		}
		out, err := json.Marshal(next)
		if err != nil {
			return nil, fmt.Errorf("encode delegation tokens: %w", err)
		}
		return out, nil
	})
}

// Lookup finds a token not expired by id for authentication: its SCRAM
// credential for mech, its owner and its expiry.
func (s *Store) Lookup(id, mech string, now time.Time) (Token, bool) {
	tokens, err := s.Load(now)
	if err != nil {
		return Token{}, false
	}
	for _, t := range tokens {
		if t.ID == id && !t.Expired(now) {
			_, ok := t.Scram[mech]
			return t, ok
		}
	}
	return Token{}, false
}

// SASL adapts a store to SCRAM's token lookup (wire/sasl's
// DelegationTokens).
type SASL struct {
	Store *Store
	Now   func() time.Time
}

// LookupToken implements sasl.DelegationTokens.
func (a SASL) LookupToken(id, mech string) (sasl.ScramCredential, string, time.Time, bool) {
	t, ok := a.Store.Lookup(id, mech, a.Now())
	if !ok {
		return sasl.ScramCredential{}, "", time.Time{}, false
	}
	return t.Scram[mech], t.Owner, time.UnixMilli(t.ExpiryMs), true
}
