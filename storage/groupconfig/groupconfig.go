// Package groupconfig holds Kafka 4's per-group configs (the GROUP config
// resource of DescribeConfigs and IncrementalAlterConfigs): the keys, their
// types, ranges and validation, and their store. With a data dir a group's
// overrides are a JSON file next to its offsets log,
// <data-dir>/__groups/<group dir>/configs.json ({"group": id, "configs":
// {name: value}}), replaced atomically, so they
// are on the shared volume wherever the group's coordinator or its
// share-partitions' leaders run, and are removed with the group's directory.
package groupconfig

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
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
	// Min and Max bound an int config: Kafka's defaults of the broker
	// configs MinConfig and MaxConfig when they are named (Store.Bounds
	// may replace them with this broker's), fixed otherwise.
	Min, Max             int64
	MinConfig, MaxConfig string
	// Values are the accepted values of a string config.
	Values []string
	Doc    string
}

// Keys are the group configs kaas serves, with Kafka 4's defaults and bounds.
var Keys = map[string]Key{
	"consumer.session.timeout.ms": {Type: topicconfig.TypeInt, Default: "45000", Min: 45000, Max: 60000,
		MinConfig: "group.consumer.min.session.timeout.ms", MaxConfig: "group.consumer.max.session.timeout.ms",
		Doc: "The timeout to detect consumer failures of a consumer group member (KIP-848)."},
	"consumer.heartbeat.interval.ms": {Type: topicconfig.TypeInt, Default: "5000", Min: 5000, Max: 15000,
		MinConfig: "group.consumer.min.heartbeat.interval.ms", MaxConfig: "group.consumer.max.heartbeat.interval.ms",
		Doc: "The heartbeat interval given to the members of a consumer group (KIP-848)."},
	"share.session.timeout.ms": {Type: topicconfig.TypeInt, Default: "45000", Min: 45000, Max: 60000,
		MinConfig: "group.share.min.session.timeout.ms", MaxConfig: "group.share.max.session.timeout.ms",
		Doc: "The timeout to detect client failures of a share group member."},
	"share.heartbeat.interval.ms": {Type: topicconfig.TypeInt, Default: "5000", Min: 5000, Max: 15000,
		MinConfig: "group.share.min.heartbeat.interval.ms", MaxConfig: "group.share.max.heartbeat.interval.ms",
		Doc: "The heartbeat interval given to the members of a share group."},
	"share.record.lock.duration.ms": {Type: topicconfig.TypeInt, Default: "30000", Min: 15000, Max: 60000,
		MinConfig: "group.share.min.record.lock.duration.ms", MaxConfig: "group.share.max.record.lock.duration.ms",
		Doc: "The record acquisition lock duration of a share group."},
	"share.delivery.count.limit": {Type: topicconfig.TypeInt, Default: "5", Min: 2, Max: 10,
		MinConfig: "group.share.min.delivery.count.limit", MaxConfig: "group.share.max.delivery.count.limit",
		Doc: "The most times a record of a share group is delivered before it is archived."},
	"share.partition.max.record.locks": {Type: topicconfig.TypeInt, Default: "2000", Min: 100, Max: 4000,
		MinConfig: "group.share.min.partition.max.record.locks", MaxConfig: "group.share.max.partition.max.record.locks",
		Doc: "The most records in flight in one share-partition of a share group."},
	"share.auto.offset.reset": {Type: topicconfig.TypeString, Default: "latest", Values: []string{"latest", "earliest"},
		Doc: "Where a share group starts reading a partition it has not read before: latest or earliest."},
	"streams.session.timeout.ms": {Type: topicconfig.TypeInt, Default: "45000", Min: 45000, Max: 60000,
		MinConfig: "group.streams.min.session.timeout.ms", MaxConfig: "group.streams.max.session.timeout.ms",
		Doc: "The timeout to detect client failures of a streams group member (KIP-1071)."},
	"streams.heartbeat.interval.ms": {Type: topicconfig.TypeInt, Default: "5000", Min: 5000, Max: 15000,
		MinConfig: "group.streams.min.heartbeat.interval.ms", MaxConfig: "group.streams.max.heartbeat.interval.ms",
		Doc: "The heartbeat interval given to the members of a streams group (KIP-1071)."},
	"streams.initial.rebalance.delay.ms": {Type: topicconfig.TypeInt, Default: "3000", Min: 0, Max: math.MaxInt32,
		Doc: "How long a new streams group waits for more members before its first task assignment (KIP-1071)."},
	"streams.num.standby.replicas": {Type: topicconfig.TypeInt, Default: "0", Min: 0, Max: 2,
		MaxConfig: "group.streams.max.standby.replicas",
		Doc:       "The number of standby replicas of each task of a streams group (KIP-1071)."},
	"errors.deadletterqueue.topic.name": {Type: topicconfig.TypeString, Default: "",
		Doc: "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group (KIP-1191). If blank (the default), the group does not have a DLQ topic."},
	"errors.deadletterqueue.copy.record.enable": {Type: topicconfig.TypeBoolean, Default: "false",
		Doc: "When writing onto the dead-letter queue topic, whether to copy the original record's key and value onto the DLQ topic, or just write a record containing the context information headers."},
	"share.renew.acknowledge.enable": {Type: topicconfig.TypeBoolean, Default: "true",
		Doc: "Whether the share group's consumers may renew the acquisition lock of records they hold (KIP-1222 RENEW acknowledgements)."},
	"share.isolation.level": {Type: topicconfig.TypeString, Default: "read_uncommitted", Values: []string{"read_uncommitted", "read_committed"},
		Doc: "How a share group reads transactional records: read_committed delivers records only up to the last stable offset and never those of aborted transactions."},
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

// Bound is the range an int config may be set to.
type Bound struct{ Min, Max int64 }

// Bound is name's range on this broker: Bounds' when set, else Keys'.
func (s *Store) Bound(name string) Bound {
	if b, ok := s.Bounds[name]; ok {
		return b
	}
	k := Keys[name]
	return Bound{k.Min, k.Max}
}

// Validate checks a group's whole set of overrides: each name known, each
// value of its type and in this broker's range, and each group kind's
// heartbeat interval below its session timeout (the default standing for
// the one not set), which a member needs to stay in its group and the
// ranges alone no longer guarantee once the broker's bounds are moved.
func (s *Store) Validate(cfg map[string]string) error {
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
			if b := s.Bound(name); n < b.Min || n > b.Max {
				return fmt.Errorf("%s: %d is outside [%d, %d]%s", name, n, b.Min, b.Max, boundConfigs(k))
			}
		case topicconfig.TypeBoolean:
			if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
				return fmt.Errorf("%s: %q is not a boolean", name, v)
			}
		default:
			if len(k.Values) > 0 && !contains(k.Values, v) {
				return fmt.Errorf("%s: %q is not one of %v", name, v, k.Values)
			}
		}
	}
	for _, kind := range []string{"consumer", "share", "streams"} {
		beat, session := kind+".heartbeat.interval.ms", kind+".session.timeout.ms"
		_, setBeat := cfg[beat]
		_, setSession := cfg[session]
		if !setBeat && !setSession {
			continue
		}
		b, _ := strconv.ParseInt(s.value(cfg, beat), 10, 64)
		t, _ := strconv.ParseInt(s.value(cfg, session), 10, 64)
		if b >= t {
			return fmt.Errorf("%s %d must be less than %s %d", beat, b, session, t)
		}
	}
	return nil
}

// boundConfigs names the broker configs that set k's range, for errors.
func boundConfigs(k Key) string {
	switch {
	case k.MinConfig != "" && k.MaxConfig != "":
		return " (" + k.MinConfig + ", " + k.MaxConfig + ")"
	case k.MaxConfig != "":
		return " (" + k.MaxConfig + ")"
	}
	return ""
}

// value is name's value in cfg, or its default.
func (s *Store) value(cfg map[string]string, name string) string {
	if v, ok := cfg[name]; ok {
		return v
	}
	return s.Default(name)
}

// Bounded is set with each int value moved into this broker's range: what
// a group uses of overrides stored under other bounds (a broker restarted
// with narrower ones, or another broker's), as Kafka uses a stored group
// config within the broker's bounds in force.
func (s *Store) Bounded(set map[string]string) map[string]string {
	out := maps.Clone(set)
	for name, v := range set {
		if Keys[name].Type != topicconfig.TypeInt {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		b := s.Bound(name)
		out[name] = strconv.FormatInt(min(max(n, b.Min), b.Max), 10)
	}
	return out
}

// Bool is name's boolean value in cfg (Kafka reads booleans in any case);
// ok is false when it is not set.
func Bool(cfg map[string]string, name string) (b, ok bool) {
	v, set := cfg[name]
	return strings.EqualFold(v, "true"), set
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
// memory. Updates of a group are serialized, one broker's by a mutex and
// the brokers' (clients send GROUP config changes to any broker) by
// atomicfile.Update's lock file beside the group's file: two brokers
// changing one group's configs at once both see their change stored.
type Store struct {
	// Defaults replace Keys' defaults with this broker's settings (the
	// group flags).
	Defaults map[string]string
	// Bounds replace Keys' ranges with this broker's (Kafka's
	// group.*.min/max.* broker configs).
	Bounds map[string]Bound

	root     string // <data-dir>/__groups; "" keeps overrides in memory
	mu       sync.Mutex
	mem      map[string]map[string]string
	onChange []func(group string) // under mu
}

// OnChange adds fn to what is told the group whose overrides this store
// changed (its coordinator and the share-partitions' keeper apply them);
// fn runs under the store's lock and must not block.
func (s *Store) OnChange(fn func(group string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = append(s.onChange, fn)
}

// NewMemory returns a store that keeps overrides in memory.
func NewMemory(defaults map[string]string) *Store {
	return &Store{Defaults: defaults, mem: map[string]map[string]string{}}
}

// NewFile returns a store under dataDir/__groups.
func NewFile(dataDir string, defaults map[string]string) *Store {
	return &Store{Defaults: defaults, root: filepath.Join(dataDir, groupstore.Dir), mem: map[string]map[string]string{}}
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
	f, err := readFile(filepath.Join(s.root, groupstore.DirName(group)))
	return f.Configs, err
}

// file is configs.json. The group id is stored because a long id's
// directory name is its hash; a file holding a bare {name: value} object
// is read as the overrides of the group its directory names.
type file struct {
	Group   string            `json:"group"`
	Configs map[string]string `json:"configs"`
}

// readFile reads dir's configs.json; a missing file is no overrides.
func readFile(dir string) (file, error) {
	path := filepath.Join(dir, fileName)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return file{}, fmt.Errorf("read group configs %s: %w", path, err)
	}
	return decodeFile(b, path)
}

// decodeFile reads configs.json's content (nil: no file, no overrides).
func decodeFile(b []byte, path string) (file, error) {
	if b == nil {
		return file{}, nil
	}
	var f file
	if err := json.Unmarshal(b, &f); err == nil && f.Configs != nil {
		return f, nil
	}
	var bare map[string]string
	if err := json.Unmarshal(b, &bare); err != nil {
		return file{}, fmt.Errorf("group configs %s: %w", path, err)
	}
	return file{Configs: bare}, nil
}

// Groups lists the groups that have overrides, sorted (Kafka's
// ListConfigResources lists these as GROUP resources). A file that does
// not read is an error; a bare file in a hashed directory names no group
// and is left out.
func (s *Store) Groups() ([]string, error) {
	if s.root == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		var out []string
		for g, cfg := range s.mem {
			if len(cfg) > 0 {
				out = append(out, g)
			}
		}
		sort.Strings(out)
		return out, nil
	}
	ents, err := os.ReadDir(s.root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list group configs: %w", err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		f, err := readFile(filepath.Join(s.root, e.Name()))
		if err != nil {
			return nil, err
		}
		if len(f.Configs) == 0 {
			continue
		}
		if f.Group == "" {
			enc, ok := strings.CutPrefix(e.Name(), "g-")
			id, err := base64.RawURLEncoding.DecodeString(enc)
			if !ok || err != nil {
				continue
			}
			f.Group = string(id)
		}
		out = append(out, f.Group)
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// Update applies change to group's overrides, validates the result and,
// unless validateOnly, stores it. change's error is returned as is;
// a validation error is a *InvalidError.
func (s *Store) Update(group string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == "" {
		next, err := s.apply(maps.Clone(s.mem[group]), change)
		if err != nil || validateOnly {
			return err
		}
		s.mem[group] = next
		s.changed(group)
		return nil
	}
	dir := filepath.Join(s.root, groupstore.DirName(group))
	if _, err := os.Stat(dir); validateOnly || errors.Is(err, os.ErrNotExist) {
		// Checked without the lock first: a validate-only or refused
		// change creates neither the group's directory nor its lock file.
		cur, err := readFile(dir)
		if err != nil {
			return err
		}
		if _, err := s.apply(cur.Configs, change); err != nil || validateOnly {
			return err
		}
	}
	var stored bool
	var refused error // change's error or the validation's, returned as is
	err := atomicfile.Update(dir, fileName, atomicfile.Options{Mode: 0o644}, func(b []byte) ([]byte, error) {
		cur, err := decodeFile(b, filepath.Join(dir, fileName))
		if err != nil {
			return nil, err
		}
		next, err := s.apply(cur.Configs, change)
		if err != nil || validateOnly {
			refused = err
			return nil, err
		}
		if next == nil {
			next = map[string]string{}
		}
		out, err := json.Marshal(file{Group: group, Configs: next})
		if err != nil {
			return nil, fmt.Errorf("encode group configs: %w", err)
		}
		stored = true
		return out, nil
	})
	if err != nil {
		if err == refused {
			return err
		}
		return fmt.Errorf("group %q configs: %w", group, err)
	}
	if stored {
		s.changed(group)
	}
	return nil
}

// apply applies change to a group's overrides (nil: none) and validates
// the result.
func (s *Store) apply(cur map[string]string, change func(map[string]string) (map[string]string, error)) (map[string]string, error) {
	if cur == nil {
		cur = map[string]string{}
	}
	next, err := change(cur)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(next); err != nil {
		return nil, &InvalidError{err}
	}
	return next, nil
}

// changed tells the listeners; the caller holds mu.
func (s *Store) changed(group string) {
	for _, fn := range s.onChange {
		fn(group)
	}
}

// InvalidError is a refused config value (Kafka's INVALID_CONFIG).
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }
