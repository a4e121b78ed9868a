package acl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/kaas-project/kaas/storage/atomicfile"
)

// Store keeps bindings where every broker reads them: KafkaAcl objects in
// cluster mode (actors/cluster), LocalStore in local-dev mode. The broker
// authorizes from the Authorizer that the store's watcher keeps current;
// Create and Delete only write.
type Store interface {
	// Create stores each binding (already validated); one error per
	// binding, nil when stored or already present.
	Create(ctx context.Context, bs []Binding) []error
	// Delete removes each binding; one error per binding, nil when removed
	// or already gone.
	Delete(ctx context.Context, bs []Binding) []error
}

// LocalFileName is the local-dev ACL file, in the data dir.
const LocalFileName = "acls.json"

// LocalStore keeps bindings in memory, and in dir/acls.json when dir is
// set, and applies every change to its Authorizer at once (local-dev mode:
// one broker, no Kubernetes).
type LocalStore struct {
	mu   sync.Mutex
	dir  string
	auth *Authorizer
	set  []Binding
}

// OpenLocal loads dir/acls.json (dir empty: memory only) into auth.
func OpenLocal(dir string, auth *Authorizer) (*LocalStore, error) {
	s := &LocalStore{dir: dir, auth: auth}
	if dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, LocalFileName))
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("read ACL file: %w", err)
		default:
			var specs []Spec
			if err := json.Unmarshal(b, &specs); err != nil {
				return nil, fmt.Errorf("ACL file %s: %w", filepath.Join(dir, LocalFileName), err)
			}
			for i, sp := range specs {
				bd, err := FromSpec(sp)
				if err != nil {
					return nil, fmt.Errorf("ACL file %s entry %d: %w", filepath.Join(dir, LocalFileName), i, err)
				}
				s.set = append(s.set, bd)
			}
		}
	}
	s.set = Dedup(s.set)
	auth.Set(s.set)
	return s, nil
}

// Create implements Store.
func (s *LocalStore) Create(_ context.Context, bs []Binding) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commit(Dedup(append(append([]Binding(nil), s.set...), bs...)), len(bs))
}

// Delete implements Store.
func (s *LocalStore) Delete(_ context.Context, bs []Binding) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := map[Binding]bool{}
	for _, b := range bs {
		gone[b] = true
	}
	var keep []Binding
	for _, b := range s.set {
		if !gone[b] {
			keep = append(keep, b)
		}
	}
	return s.commit(keep, len(bs))
}

// commit writes next (when persistent) and makes it current; n errors,
// all the write's error or all nil.
func (s *LocalStore) commit(next []Binding, n int) []error {
	errs := make([]error, n)
	if s.dir != "" {
		specs := make([]Spec, 0, len(next))
		for _, b := range next {
			specs = append(specs, ToSpec(b))
		}
		data, _ := json.MarshalIndent(specs, "", "  ")
		if err := atomicfile.Write(s.dir, LocalFileName, append(data, '\n'), 0o644); err != nil {
			err = fmt.Errorf("write ACL file: %w", err)
			for i := range errs {
				errs[i] = err
			}
			return errs
		}
	}
	s.set = next
	s.auth.Set(next)
	return errs
}
