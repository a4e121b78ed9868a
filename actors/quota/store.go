package quota

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

// Spec is one entity's quotas in the text form the KafkaQuota objects and
// the local quota file share: user and clientId, or ip, name the entity's
// components (absent: not part of it; "<default>": the default entity),
// quotas holds Kafka's keys.
type Spec struct {
	User     string             `json:"user,omitempty"`
	ClientID string             `json:"clientId,omitempty"`
	IP       string             `json:"ip,omitempty"`
	Quotas   map[string]float64 `json:"quotas"`
}

func partOf(s string) Part {
	switch s {
	case "":
		return Part{}
	case DefaultName:
		return Default()
	default:
		return Named(s)
	}
}

func specName(p Part) string {
	if !p.Set {
		return ""
	}
	if p.Default {
		return DefaultName
	}
	return p.Name
}

// FromSpec validates a spec and returns its entity and values.
func FromSpec(s Spec) (Entity, Values, error) {
	e := Entity{User: partOf(s.User), ClientID: partOf(s.ClientID), IP: partOf(s.IP)}
	if e.IP.Set && !e.IP.Default {
		e.IP.Name = canonicalIP(e.IP.Name)
	}
	if !e.User.Set && !e.ClientID.Set && !e.IP.Set {
		return e, nil, fmt.Errorf("%w: none of user, clientId and ip is set", ErrInvalid)
	}
	if err := e.check(); err != nil {
		return e, nil, err
	}
	vs := Values{}
	for k, v := range s.Quotas {
		if err := ValidateValue(e, k, v); err != nil {
			return e, nil, err
		}
		vs[k] = v
	}
	return e, vs, nil
}

// ToSpec is the spec of an entity's values.
func ToSpec(e Entity, vs Values) Spec {
	q := map[string]float64{}
	for k, v := range vs {
		q[k] = v
	}
	return Spec{User: specName(e.User), ClientID: specName(e.ClientID), IP: specName(e.IP), Quotas: q}
}

// Change is one entity's alteration (AlterClientQuotas).
type Change struct {
	Entity Entity
	Ops    []Op
}

// Store keeps the configuration where every broker reads it: KafkaQuota
// objects in cluster mode (actors/cluster), LocalStore in local-dev mode.
// Brokers enforce from the Quotas the store's watcher keeps current.
type Store interface {
	// Alter applies each change to its entity's stored values (an entity
	// left without values is removed); one error per change, nil when
	// applied (ErrInvalid: refused as Kafka would).
	Alter(ctx context.Context, cs []Change) []error
}

// LocalFileName is the local-dev quota file, in the data dir.
const LocalFileName = "quotas.json"

// LocalStore keeps the configuration in memory, and in dir/quotas.json
// when dir is set, and applies every change to its Quotas at once.
type LocalStore struct {
	mu  sync.Mutex
	dir string
	q   *Quotas
	cfg Config
}

// OpenLocal loads dir/quotas.json (dir empty: memory only) into q.
func OpenLocal(dir string, q *Quotas) (*LocalStore, error) {
	s := &LocalStore{dir: dir, q: q, cfg: Config{}}
	if dir != "" {
		path := filepath.Join(dir, LocalFileName)
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("read quota file: %w", err)
		default:
			var specs []Spec
			if err := json.Unmarshal(b, &specs); err != nil {
				return nil, fmt.Errorf("quota file %s: %w", path, err)
			}
			for i, sp := range specs {
				e, vs, err := FromSpec(sp)
				if err != nil {
					return nil, fmt.Errorf("quota file %s entry %d: %w", path, i, err)
				}
				s.cfg[e] = vs
			}
		}
	}
	q.Set(s.cfg)
	return s, nil
}

// Alter implements Store. The changes are applied together: one file
// write, and every change fails if it fails.
func (s *LocalStore) Alter(_ context.Context, cs []Change) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := make([]error, len(cs))
	next := Config{}
	for e, vs := range s.cfg {
		next[e] = vs
	}
	applied := false
	for i, c := range cs {
		vs, err := Apply(c.Entity, next[c.Entity], c.Ops)
		if err != nil {
			errs[i] = err
			continue
		}
		next[c.Entity] = vs
		if len(vs) == 0 {
			delete(next, c.Entity)
		}
		applied = true
	}
	if !applied {
		return errs
	}
	if s.dir != "" {
		specs := make([]Spec, 0, len(next))
		for _, e := range next.sorted() {
			specs = append(specs, ToSpec(e, next[e]))
		}
		data, _ := json.MarshalIndent(specs, "", "  ")
		if err := atomicfile.Write(s.dir, LocalFileName, append(data, '\n'), 0o644); err != nil {
			err = fmt.Errorf("write quota file: %w", err)
			for i := range errs {
				if errs[i] == nil {
					errs[i] = err
				}
			}
			return errs
		}
	}
	s.cfg = next
	s.q.Set(next)
	return errs
}
