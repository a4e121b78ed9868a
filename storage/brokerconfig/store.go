package brokerconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/kaas-project/kaas/storage/atomicfile"
)

// FileName is the store's file in the cluster directory of the data dir:
// <data-dir>/__cluster/broker-configs.json.
const FileName = "broker-configs.json"

// Store keeps the cluster's dynamic broker configs: one JSON file on the
// shared volume, replaced atomically, that every broker reads; or memory
// (a broker without a data dir). Updates are serialized, one broker's by
// a mutex and the brokers' by atomicfile.Update's lock file beside it,
// held from the read to the write: two brokers changing
// configs at the same instant (a client altering each broker's own
// config at once) both see their change stored, as Kafka's controller
// applies both.
type Store struct {
	// Static reports a config this broker has as a flag (read-only unless
	// dynamic in Kafka); nil: none. Set before use.
	Static func(name string) bool
	// LogDir is the broker's log dir (its data dir): the one path
	// cordoned.log.dirs may name besides "*". Set before use.
	LogDir string
	// OnChange, when set, is called after every stored change; set before
	// use, must not block.
	OnChange func()

	dir string // "" keeps the set in memory
	mu  sync.Mutex
	mem Set
}

// NewMemory returns a store that keeps the configs in memory.
func NewMemory() *Store { return &Store{} }

// NewFile returns a store in dir (the data dir's cluster directory).
func NewFile(dir string) *Store { return &Store{dir: dir} }

// Load returns every dynamic broker config stored.
func (s *Store) Load() (Set, error) {
	if s.dir == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cloneSet(s.mem), nil
	}
	path := filepath.Join(s.dir, FileName)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Set{}, fmt.Errorf("read broker configs %s: %w", path, err)
	}
	return decode(b, path)
}

// decode reads the file's content (nil: no file, no configs).
func decode(b []byte, path string) (Set, error) {
	if b == nil {
		return Set{}, nil
	}
	var set Set
	if err := json.Unmarshal(b, &set); err != nil {
		return Set{}, fmt.Errorf("broker configs %s: %w", path, err)
	}
	return set, nil
}

// Update applies change to the configs of resource ("" the cluster
// default, else a broker id), validates the result and, unless
// validateOnly, stores it. change's error is returned as is; a refused
// result is an *InvalidError.
func (s *Store) Update(resource string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	changed, err := s.update(resource, validateOnly, change)
	if changed && s.OnChange != nil {
		s.OnChange() // outside s.mu: it may Load
	}
	return err
}

func (s *Store) update(resource string, validateOnly bool, change func(map[string]string) (map[string]string, error)) (changed bool, _ error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		set := cloneSet(s.mem)
		if err := s.apply(&set, resource, validateOnly, change); err != nil || validateOnly {
			return false, err
		}
		s.mem = set
		return true, nil
	}
	err := atomicfile.Update(s.dir, FileName, atomicfile.Options{Mode: 0o644, UniqueTmp: true}, func(cur []byte) ([]byte, error) {
		set, err := decode(cur, filepath.Join(s.dir, FileName))
		if err != nil {
			return nil, err
		}
		if err := s.apply(&set, resource, validateOnly, change); err != nil || validateOnly {
			return nil, err
		}
		b, err := json.MarshalIndent(set, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode broker configs: %w", err)
		}
		changed = true
		return b, nil
	})
	if err != nil {
		return false, err
	}
	return changed, nil
}

// apply applies change to resource's configs in set and validates the
// result.
func (s *Store) apply(set *Set, resource string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	cur := maps.Clone(set.Resource(resource))
	if cur == nil {
		cur = map[string]string{}
	}
	next, err := change(cur)
	if err != nil {
		return err
	}
	if err := Validate(next, resource != "", s.Static); err != nil {
		return err
	}
	if err := cordonedDirs(next[CordonedLogDirs], s.LogDir); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	if resource == "" {
		set.Default = next
	} else {
		if set.Brokers == nil {
			set.Brokers = map[string]map[string]string{}
		}
		set.Brokers[resource] = next
	}
	for id, cfg := range set.Brokers {
		if len(cfg) == 0 {
			delete(set.Brokers, id)
		}
	}
	return nil
}

func cloneSet(s Set) Set {
	out := Set{Default: maps.Clone(s.Default)}
	if s.Brokers != nil {
		out.Brokers = make(map[string]map[string]string, len(s.Brokers))
		for id, cfg := range s.Brokers {
			out.Brokers[id] = maps.Clone(cfg)
		}
	}
	return out
}
