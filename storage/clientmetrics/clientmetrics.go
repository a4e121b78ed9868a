// Package clientmetrics holds KIP-714's client-metrics subscriptions (the
// CLIENT_METRICS config resources kafka-client-metrics.sh manages): which
// metrics the clients that match a subscription are asked to push, and how
// often. The rules are Kafka's ClientMetricsConfigs; the store keeps every
// subscription in one file on the shared volume, so every broker asks a
// client the same.
package clientmetrics

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kaas-project/kaas/storage/atomicfile"
)

// The configs of a subscription.
const (
	// Metrics is the list of metric-name prefixes the matching clients
	// push; "*" (or an empty prefix) is every metric, none is no metric.
	Metrics = "metrics"
	// IntervalMs is how often the matching clients push, in milliseconds.
	IntervalMs = "interval.ms"
	// Match is the list of key=regex selectors a client must all match
	// (none: every client).
	Match = "match"
)

// Names are the configs of a subscription, sorted.
var Names = []string{IntervalMs, Match, Metrics}

// DefaultInterval is interval.ms's default, and the interval of a client
// no subscription matches.
const DefaultInterval = 5 * time.Minute

// Bounds of interval.ms.
const (
	MinInterval = 100 * time.Millisecond
	MaxInterval = time.Hour
)

// The keys a match selector may name.
const (
	KeyInstanceID      = "client_instance_id"
	KeyClientID        = "client_id"
	KeySoftwareName    = "client_software_name"
	KeySoftwareVersion = "client_software_version"
	KeySourceAddress   = "client_source_address"
	KeySourcePort      = "client_source_port"
)

var matchKeys = []string{KeyInstanceID, KeyClientID, KeySoftwareName, KeySoftwareVersion, KeySourceAddress, KeySourcePort}

// Subscription is one CLIENT_METRICS resource, parsed.
type Subscription struct {
	Name     string
	Metrics  []string
	Interval time.Duration
	Match    map[string]*regexp.Regexp
}

// InvalidError is a refused subscription (Kafka's INVALID_CONFIG).
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// List splits a list config's value as Kafka does: comma-separated,
// trimmed, empty items dropped.
func List(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Parse checks a subscription's configs (every name known, interval.ms an
// integer within its bounds, each match selector a known key with a
// regular expression that compiles, no key twice) and returns it.
func Parse(name string, cfg map[string]string) (Subscription, error) {
	if name == "" {
		return Subscription{}, invalid("Subscription name can't be empty")
	}
	s := Subscription{Name: name, Interval: DefaultInterval, Match: map[string]*regexp.Regexp{}}
	for k, v := range cfg {
		switch k {
		case Metrics:
			s.Metrics = List(v)
		case IntervalMs:
			ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil {
				return Subscription{}, invalid("Invalid value %s for configuration %s: Not a number of type INT", v, IntervalMs)
			}
			d := time.Duration(ms) * time.Millisecond
			if d < MinInterval || d > MaxInterval {
				return Subscription{}, invalid("Invalid value %s for configuration %s: Value must be between %d and %d", v, IntervalMs,
					MinInterval.Milliseconds(), MaxInterval.Milliseconds())
			}
			s.Interval = d
		case Match:
			for _, sel := range List(v) {
				key, pattern, ok := strings.Cut(sel, "=")
				key = strings.TrimSpace(key)
				switch {
				case !ok || pattern == "":
					return Subscription{}, invalid("Illegal client matching pattern: %s", sel)
				case !slices.Contains(matchKeys, key):
					return Subscription{}, invalid("Invalid client matching key: %s (valid keys: %s)", key, strings.Join(matchKeys, ", "))
				case s.Match[key] != nil:
					return Subscription{}, invalid("Duplicate client matching key: %s", key)
				}
				re, err := regexp.Compile("^(?:" + pattern + ")$")
				if err != nil {
					return Subscription{}, invalid("Illegal regex pattern for %s: %v", key, err)
				}
				s.Match[key] = re
			}
		default:
			return Subscription{}, invalid("Unknown client metrics configuration: %s", k)
		}
	}
	return s, nil
}

// Client is what a subscription's selectors match.
type Client struct {
	InstanceID      [16]byte
	ClientID        string
	SoftwareName    string
	SoftwareVersion string
	SourceAddress   string
	SourcePort      string
}

func (c Client) value(key string) string {
	switch key {
	case KeyInstanceID:
		return UUIDString(c.InstanceID)
	case KeyClientID:
		return c.ClientID
	case KeySoftwareName:
		return c.SoftwareName
	case KeySoftwareVersion:
		return c.SoftwareVersion
	case KeySourceAddress:
		return c.SourceAddress
	}
	return c.SourcePort
}

// Matches reports whether every selector of s matches c.
func (s Subscription) Matches(c Client) bool {
	for key, re := range s.Match {
		if !re.MatchString(c.value(key)) {
			return false
		}
	}
	return true
}

// Plan is what a client is asked to push: the metric prefixes ([""] is
// every metric, none is nothing), how often, and the id that names this
// plan (a push under another id is refused, so the client asks again).
type Plan struct {
	Metrics        []string
	Interval       time.Duration
	SubscriptionID int32
}

// Select is c's plan under subs: the union of the matching subscriptions'
// metrics at the shortest of their intervals.
func Select(subs []Subscription, c Client) Plan {
	p := Plan{Interval: DefaultInterval}
	all, matched := false, false
	for _, s := range subs {
		if !s.Matches(c) {
			continue
		}
		if !matched || s.Interval < p.Interval {
			p.Interval = s.Interval
		}
		matched = true
		for _, m := range s.Metrics {
			if m == "*" {
				all = true
			} else if !slices.Contains(p.Metrics, m) {
				p.Metrics = append(p.Metrics, m)
			}
		}
	}
	slices.Sort(p.Metrics)
	if all {
		p.Metrics = []string{""}
	}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	for _, m := range p.Metrics { // each ended, so "every metric" ([""]) is not "none"
		h.Write(append([]byte(m), 0))
	}
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(p.Interval.Milliseconds())))
	h.Write(c.InstanceID[:])
	p.SubscriptionID = int32(h.Sum32())
	return p
}

// UUIDString is Kafka's text form of a UUID (URL-safe base64, no padding).
func UUIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// FileName is the store's file in the cluster directory of the data dir.
const FileName = "client-metrics.json"

// Store keeps every subscription's configs: one JSON file replaced whole,
// or memory. Two changes through two brokers at once each rewrite the
// file, and the last wins (as the dynamic broker configs).
type Store struct {
	dir string // "" keeps them in memory
	mu  sync.Mutex
	mem map[string]map[string]string
}

// NewMemory returns a store in memory.
func NewMemory() *Store { return &Store{mem: map[string]map[string]string{}} }

// NewFile returns a store in dir (the data dir's cluster directory).
func NewFile(dir string) *Store { return &Store{dir: dir} }

// Load returns every subscription's configs by name.
func (s *Store) Load() (map[string]map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load()
}

func (s *Store) load() (map[string]map[string]string, error) {
	if s.dir == "" {
		out := make(map[string]map[string]string, len(s.mem))
		for k, v := range s.mem {
			out[k] = v
		}
		return out, nil
	}
	path := filepath.Join(s.dir, FileName)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read client metrics %s: %w", path, err)
	}
	return decode(b, path)
}

// decode reads the file's content (nil: no file, no subscriptions).
func decode(b []byte, path string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	if b == nil {
		return out, nil
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("client metrics %s: %w", path, err)
	}
	return out, nil
}

// Subscriptions parses every stored subscription; one that no longer
// parses is left out.
func (s *Store) Subscriptions() ([]Subscription, error) {
	all, err := s.Load()
	if err != nil {
		return nil, err
	}
	out := make([]Subscription, 0, len(all))
	for name, cfg := range all {
		if sub, err := Parse(name, cfg); err == nil {
			out = append(out, sub)
		}
	}
	slices.SortFunc(out, func(a, b Subscription) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Update applies change to the configs of the subscription called name
// (empty when it has none), checks the result with Parse and, unless
// validateOnly, stores it; configs left empty remove the subscription.
// change's error is returned as is and stores nothing.
func (s *Store) Update(name string, validateOnly bool, change func(map[string]string) (map[string]string, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		all, err := s.load()
		if err != nil {
			return err
		}
		if err := apply(all, name, change); err != nil || validateOnly {
			return err
		}
		s.mem = all
		return nil
	}
	return atomicfile.Update(s.dir, FileName, atomicfile.Options{Mode: 0o644}, func(b []byte) ([]byte, error) {
		all, err := decode(b, filepath.Join(s.dir, FileName))
		if err != nil {
			return nil, err
		}
		if err := apply(all, name, change); err != nil || validateOnly {
			return nil, err
		}
		out, err := json.Marshal(all)
		if err != nil {
			return nil, fmt.Errorf("encode client metrics: %w", err)
		}
		return out, nil
	})
}

// apply applies change to the configs of name's subscription in all and
// checks the result with Parse; configs left empty remove it.
func apply(all map[string]map[string]string, name string, change func(map[string]string) (map[string]string, error)) error {
	cur := map[string]string{}
	maps.Copy(cur, all[name])
	next, err := change(cur)
	if err != nil {
		return err
	}
	if _, err := Parse(name, next); err != nil {
		return err
	}
	if len(next) == 0 {
		delete(all, name)
	} else {
		all[name] = next
	}
	return nil
}
