// Package groupconfig holds Kafka 4's per-group configs (the GROUP config
// resource of DescribeConfigs and IncrementalAlterConfigs): the keys, their
// types, ranges and validation, and their store. With a data dir a group's
// overrides are a JSON file next to its offsets log,
// <data-dir>/__groups/<group dir>/configs.json, replaced atomically, so they
// are on the shared volume wherever the group's coordinator or its
// share-partitions' leaders run, and are removed with the group's directory.
package groupconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/kaas-project/kaas/storage/atomicfile"
	"github.com/kaas-project/kaas/storage/groupstore"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// Key is one group config.
type Key struct {
	Type topicconfig.Type
	// Default is the value without an override (Kafka's broker default;
	// Store.Defaults may replace it with this broker's flag).
	Default string
	// Min and Max bound an int config (Kafka's group.*.min/max bounds).
	Min, Max int64
	// Values are the accepted values of a string config.
	Values []string
	Doc    string
}

// Keys are the group configs kaas serves, with Kafka 4's defaults and bounds.
var Keys = map[string]Key{
	"consumer.session.timeout.ms": {Type: topicconfig.TypeInt, Default: "45000", Min: 45000, Max: 60000,
		Doc: "The timeout to detect consumer failures of a consumer group member (KIP-848)."},
	"consumer.heartbeat.interval.ms": {Type: topicconfig.TypeInt, Default: "5000", Min: 5000, Max: 15000,
		Doc: "The heartbeat interval given to the members of a consumer group (KIP-848)."},
	"share.session.timeout.ms": {Type: topicconfig.TypeInt, Default: "45000", Min: 45000, Max: 60000,
		Doc: "The timeout to detect client failures of a share group member."},
	"share.heartbeat.interval.ms": {Type: topicconfig.TypeInt, Default: "5000", Min: 5000, Max: 15000,
		Doc: "The heartbeat interval given to the members of a share group."},
	"share.record.lock.duration.ms": {Type: topicconfig.TypeInt, Default: "30000", Min: 15000, Max: 60000,
		Doc: "The record acquisition lock duration of a share group."},
	"share.delivery.count.limit": {Type: topicconfig.TypeInt, Default: "5", Min: 2, Max: 10,
		Doc: "The most times a record of a share group is delivered before it is archived."},
	"share.partition.max.record.locks": {Type: topicconfig.TypeInt, Default: "2000", Min: 100, Max: 10000,
		Doc: "The most records in flight in one share-partition of a share group."},
	"share.auto.offset.reset": {Type: topicconfig.TypeString, Default: "latest", Values: []string{"latest", "earliest"},
		Doc: "Where a share group starts reading a partition it has not read before: latest or earliest."},
	"share.isolation.level": {Type: topicconfig.TypeString, Default: "read_uncommitted", Values: []string{"read_uncommitted"},
		Doc: "How a share group reads transactional records; kaas share groups read uncommitted."},
}

// Names are the keys, sorted.
func Names() []string {
	out := make([]string, 0, len(Keys))
	for k := range Keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Validate checks a group's whole set of overrides: each name known, each
// value of its type and in its range. (The ranges keep every heartbeat
// interval below every session timeout, which Kafka also requires.)
func Validate(cfg map[string]string) error {
	for _, name := range sortedKeys(cfg) {
		k, ok := Keys[name]
		if !ok {
			return fmt.Errorf("unknown group config %s", name)
		}
		v := cfg[name]
		switch k.Type {
		case topicconfig.TypeInt:
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return fmt.Errorf("%s: %q is not an int", name, v)
			}
			if n < k.Min || n > k.Max {
				return fmt.Errorf("%s: %d is outside [%d, %d]", name, n, k.Min, k.Max)
			}
		default:
			if !contains(k.Values, v) {
				return fmt.Errorf("%s: %q is not one of %v", name, v, k.Values)
			}
		}
	}
	return nil
}

// Int is name's int value in cfg; ok is false when it is not set (or not
// an int: Validate keeps such values out).
func Int(cfg map[string]string, name string) (n int64, ok bool) {
	v, set := cfg[name]
	if !set {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Store keeps each group's overrides: in files under a data dir, or in
// memory. One broker's updates of a group are serialized; two brokers
// updating the same group at once (clients send GROUP config changes to
// any broker) each replace the whole file, the last one winning.
type Store struct {
	// Defaults replace Keys' defaults with this broker's settings (the
	// share-group flags).
	Defaults map[string]string
	// OnChange, when set, is told the group whose overrides this store
	// changed (its coordinator applies them); set before use, must not
	// block.
	OnChange func(group string)

	root string // <data-dir>/__groups; "" keeps overrides in memory
	mu   sync.Mutex
	mem  map[string]map[string]string
}

// NewMemory returns a store that keeps overrides in memory.
func NewMemory(defaults map[string]string) *Store {
	return &Store{Defaults: defaults, mem: map[string]map[string]string{}}
}

// NewFile returns a store under dataDir/__groups.
func NewFile(dataDir string, defaults map[string]string) *Store {
	return &Store{Defaults: defaults, root: filepath.Join(dataDir, "__groups"), mem: map[string]map[string]string{}}
}

const fileName = "configs.json"

// Default is name's value without an override.
func (s *Store) Default(name string) string {
	if v, ok := s.Defaults[name]; ok {
		return v
	}
	return Keys[name].Default
}

// Load returns group's overrides (empty when none were set).
func (s *Store) Load(group string) (map[string]string, error) {
	if s.root == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		return maps.Clone(s.mem[group]), nil
	}
	path := filepath.Join(s.root, groupstore.DirName(group), fileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read group configs %s: %w", path, err)
	}
	var cfg map[string]string
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("group configs %s: %w", path, err)
	}
	return cfg, nil
}

// Update applies change to group's overrides, validates the result and,
// unless validateOnly, stores it. change's error is returned as is;
// a validation error is a *InvalidError.
func (s *Store) Update(group string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur map[string]string
	if s.root == "" {
		cur = maps.Clone(s.mem[group])
	} else {
		// s.mu is not held by Load (files need no lock to read).
		c, err := s.Load(group)
		if err != nil {
			return err
		}
		cur = c
	}
	if cur == nil {
		cur = map[string]string{}
	}
	next, err := change(cur)
	if err != nil {
		return err
	}
	if err := Validate(next); err != nil {
		return &InvalidError{err}
	}
	if validateOnly {
		return nil
	}
	if s.root == "" {
		s.mem[group] = next
		s.changed(group)
		return nil
	}
	dir := filepath.Join(s.root, groupstore.DirName(group))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("group configs dir: %w", err)
	}
	b, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("encode group configs: %w", err)
	}
	if err := atomicfile.Write(dir, fileName, b, 0o644); err != nil {
		return fmt.Errorf("write group configs %s: %w", dir, err)
	}
	s.changed(group)
	return nil
}

func (s *Store) changed(group string) {
	if s.OnChange != nil {
		s.OnChange(group)
	}
}

// InvalidError is a refused config value (Kafka's INVALID_CONFIG).
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }
