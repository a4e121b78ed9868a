// Package supervisor is the per-broker supervisor actor. In local-dev mode
// (no Kubernetes) it is the always-leader shim: it owns the topic registry,
// leads every partition itself, and publishes the routing view. The cluster
// runtime replaces the registry with assignment.json but keeps the same
// children (partition actors) and the same published view.
package supervisor

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/heal"
	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/topicname"
)

// TopicRecord is one topic as the local registry persists it.
type TopicRecord struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Partitions int32             `json:"partitions"`
	Config     map[string]string `json:"config,omitempty"`
}

// Registry persists the local topic registry (single-node --data-dir mode).
// Save is called from a goroutine, never from Receive.
type Registry interface {
	Save(version int64, topics []TopicRecord) error
}

// LocalConfig configures the local-dev supervisor.
type LocalConfig struct {
	ClusterID         string
	Self              routing.Broker
	Store             *routing.Store
	Opener            storage.Opener
	Partition         partition.Config
	DefaultPartitions int32
	// TopicDefaults returns the broker defaults of topic configs in force
	// (dynamic broker configs), put under every topic config a partition
	// is given; nil: none.
	TopicDefaults func() map[string]string
	MaxPartitions int32
	// Initial is the registry loaded at start (nil for an empty broker).
	Initial  []TopicRecord
	Registry Registry // nil = nothing persisted
	// Clock runs the restart backoff (nil: the wall clock).
	Clock clock.Clock
	Log   zerolog.Logger
}

type topicState struct {
	rec    TopicRecord
	id     [16]byte
	actors []actorsys.Ref
}

// Local is the local-dev supervisor actor.
type Local struct {
	cfg     LocalConfig
	topics  map[string]*topicState
	version int64
	// Supervision (local_heal.go): panics of children not yet Terminated,
	// whether the supervisor itself stops, restart histories, and the
	// respawns made (unique names).
	failed       map[string]any
	stopping     bool
	heal         *heal.Tracker
	clock        clock.Clock
	incarnations uint64
}

// NewLocal returns a producer for the local supervisor actor.
func NewLocal(cfg LocalConfig) func() actor.Actor {
	if cfg.DefaultPartitions <= 0 {
		cfg.DefaultPartitions = 1
	}
	if cfg.MaxPartitions <= 0 {
		cfg.MaxPartitions = 10000
	}
	return func() actor.Actor {
		return &Local{cfg: cfg, topics: map[string]*topicState{}, failed: map[string]any{},
			heal: heal.NewTracker(heal.Partitions), clock: clock.OrReal(cfg.Clock)}
	}
}

// Receive implements actor.Actor.
func (s *Local) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		for _, rec := range s.cfg.Initial {
			if routing.IsInternal(rec.Name) {
				s.cfg.Log.Error().Str("topic", rec.Name).Msg("skipping a topic with an internal topic's name")
				continue
			}
			id, err := ParseUUID(rec.ID)
			if err != nil {
				s.cfg.Log.Error().Err(err).Str("topic", rec.Name).Msg("skipping topic with a bad id")
				continue
			}
			s.addTopic(ctx, rec, id)
		}
		// The one broker serves every group-coordinator slot, so it leads
		// every partition of __consumer_offsets.
		offsets, _ := (&routing.View{}).Internal(assignment.OffsetsTopic)
		s.addTopic(ctx, TopicRecord{Name: offsets.Name, ID: assignment.OffsetsTopicID, Partitions: int32(len(offsets.Partitions)), Config: offsets.Config}, offsets.ID)
		s.publish(ctx)
	case *messages.CreateTopics:
		s.createTopics(ctx, m)
	case *messages.DeleteTopics:
		s.deleteTopics(ctx, m)
	case *messages.CreatePartitions:
		s.createPartitions(ctx, m)
	case *messages.AlterTopicConfig:
		s.alterConfig(ctx, m)
	case *messages.BrokerDefaultsChanged:
		for _, t := range s.topics {
			cfg := withDefaults(s.cfg.TopicDefaults, t.rec.Config)
			for _, ref := range t.actors {
				ref.Send(&messages.UpdateConfig{Config: cfg})
			}
		}
	case *messages.SetPins:
		// The one broker leads everything: a pin to it (the only broker
		// the caller accepts) is already in force, and nothing is kept.
		m.Reply(messages.TopicResult{Name: m.Topic})
	case *messages.DescribeQuorum:
		// The one broker is its own controller and has no file to follow.
		now := s.clock.Now().UnixMilli()
		self := s.cfg.Self
		m.Reply(messages.Quorum{ControllerID: self.ID, Members: []messages.QuorumMember{
			{ID: self.ID, Host: self.Host, Port: self.Port, LastPing: now, CaughtUp: now}}}, 0, "")
	case *messages.UnregisterBroker:
		// The one broker is alive, and no other is registered.
		if m.ID == s.cfg.Self.ID {
			m.Reply(kerr.InvalidRequest.Code, fmt.Sprintf("broker %d is alive: only a dead broker can be unregistered", m.ID))
		} else {
			m.Reply(kerr.BrokerIDNotRegistered.Code, fmt.Sprintf("broker %d is not registered", m.ID))
		}
	case *Ping:
		m.Reply()
	case *actor.Terminated:
		s.terminated(ctx, m.Who)
	case *respawnLocal:
		s.respawn(ctx, m)
	case *actor.Stopping:
		s.stopping = true
	}
}

// Ping checks that the supervisor's mailbox is served (/readyz).
type Ping struct{ Reply func() }

func (s *Local) addTopic(ctx actor.Context, rec TopicRecord, id [16]byte) {
	ts := &topicState{rec: rec, id: id}
	s.topics[rec.Name] = ts
	s.growTopic(ctx, ts, rec.Partitions)
}

func (s *Local) growTopic(ctx actor.Context, ts *topicState, count int32) {
	for p := int32(len(ts.actors)); p < count; p++ {
		pid := storage.PartitionID{Topic: ts.rec.Name, TopicID: FormatUUID(ts.id), Partition: p}
		name := fmt.Sprintf("partition/%s/%s/%d", ts.rec.Name, FormatUUID(ts.id), p)
		ref, err := actorsys.SpawnChildOn(ctx, name, partition.New(pid, s.cfg.Partition), actorsys.PartitionPool())
		if err != nil {
			s.cfg.Log.Error().Err(err).Str("topic", ts.rec.Name).Int32("partition", p).Msg("spawn partition actor")
			continue
		}
		ref.Send(&messages.TakeLeadership{TopicID: pid.TopicID, LeaderEpoch: 0, Config: withDefaults(s.cfg.TopicDefaults, ts.rec.Config)})
		ts.actors = append(ts.actors, ref)
	}
	ts.rec.Partitions = int32(len(ts.actors))
}

func (s *Local) createTopics(ctx actor.Context, m *messages.CreateTopics) {
	results := make([]messages.TopicResult, len(m.Topics))
	changed := false
	seen := map[string]bool{}
	known := knownNames(slices.Collect(maps.Keys(s.topics)))
	for i, spec := range m.Topics {
		r := &results[i]
		r.Name = spec.Name
		if seen[spec.Name] {
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, "topic named twice in one request"
			continue
		}
		seen[spec.Name] = true
		if code, msg := s.validateSpec(spec, known); code != 0 {
			r.ErrorCode, r.ErrorMessage = code, msg
			continue
		}
		known = append(known, spec.Name)
		n := spec.Partitions
		if spec.ManualAssignment {
			n = int32(len(spec.Assignment)) // every replica is this broker: nothing to pin
		} else if n == -1 {
			n = s.cfg.DefaultPartitions
		}
		if !admit(m.Quota, n, r) {
			continue
		}
		r.Partitions = n
		r.Config = spec.Config
		if m.ValidateOnly {
			continue
		}
		id := NewUUID()
		r.ID = id
		cfg := maps.Clone(spec.Config)
		if cfg == nil {
			cfg = map[string]string{}
		}
		s.addTopic(ctx, TopicRecord{Name: spec.Name, ID: FormatUUID(id), Partitions: n, Config: cfg}, id)
		s.cfg.Log.Info().Str("topic", spec.Name).Int32("partitions", n).Msg("topic created")
		changed = true
	}
	s.commit(ctx, changed, func() { m.Reply(results) })
}

func (s *Local) validateSpec(spec messages.TopicSpec, known []string) (int16, string) {
	_, exists := s.topics[spec.Name]
	return topicError(topicRequest{Create: &spec, Exists: exists, Collides: topicname.Collision(spec.Name, known),
		Registered: s.registered}, s.cfg.MaxPartitions)
}

// registered reports whether id is a registered broker: in local-dev mode,
// this one.
func (s *Local) registered(id int32) bool { return id == s.cfg.Self.ID }

func (s *Local) lookup(name string, id [16]byte) (*topicState, bool) {
	if id != ([16]byte{}) {
		for _, t := range s.topics {
			if t.id == id {
				return t, true
			}
		}
		return nil, false
	}
	t, ok := s.topics[name]
	return t, ok
}

func (s *Local) deleteTopics(ctx actor.Context, m *messages.DeleteTopics) {
	n := max(len(m.Names), len(m.IDs))
	results := make([]messages.TopicResult, n)
	changed := false
	for i := 0; i < n; i++ {
		var name string
		var id [16]byte
		if i < len(m.Names) {
			name = m.Names[i]
		}
		if i < len(m.IDs) {
			id = m.IDs[i]
		}
		r := &results[i]
		r.Name, r.ID = name, id
		t, ok := s.lookup(name, id)
		if !ok {
			if id != ([16]byte{}) {
				r.ErrorCode = kerr.UnknownTopicID.Code
			} else {
				r.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			continue
		}
		r.Name, r.ID = t.rec.Name, t.id
		if !admit(m.Quota, t.rec.Partitions, r) {
			continue
		}
		for _, ref := range t.actors {
			ref := ref
			ref.Send(&messages.RelinquishLeadership{Delete: true, Done: func(error) { ref.Poison() }})
		}
		delete(s.topics, t.rec.Name)
		s.cfg.Log.Info().Str("topic", t.rec.Name).Msg("topic deleted")
		changed = true
	}
	s.commit(ctx, changed, func() { m.Reply(results) })
}

func (s *Local) createPartitions(ctx actor.Context, m *messages.CreatePartitions) {
	results := make([]messages.TopicResult, len(m.Topics))
	changed := false
	for i, pc := range m.Topics {
		r := &results[i]
		r.Name = pc.Topic
		t, ok := s.topics[pc.Topic]
		current := int32(0)
		if ok {
			current = t.rec.Partitions
		}
		r.ErrorCode, r.ErrorMessage = topicError(topicRequest{Grow: &pc, Exists: ok, Current: current, Registered: s.registered}, s.cfg.MaxPartitions)
		switch {
		case r.ErrorCode != 0:
		case !admit(m.Quota, pc.Count-current, r):
		case m.ValidateOnly:
		default:
			s.growTopic(ctx, t, pc.Count)
			changed = true
		}
	}
	s.commit(ctx, changed, func() { m.Reply(results) })
}

func (s *Local) alterConfig(ctx actor.Context, m *messages.AlterTopicConfig) {
	t, ok := s.topics[m.Topic]
	if code, msg := topicError(topicRequest{Alter: m.Config, Exists: ok}, s.cfg.MaxPartitions); code != 0 {
		m.Reply(messages.TopicResult{Name: m.Topic, ErrorCode: code, ErrorMessage: msg})
		return
	}
	if m.ValidateOnly {
		m.Reply(messages.TopicResult{Name: m.Topic})
		return
	}
	t.rec.Config = maps.Clone(m.Config)
	for _, ref := range t.actors {
		ref.Send(&messages.UpdateConfig{Config: withDefaults(s.cfg.TopicDefaults, t.rec.Config)})
	}
	s.commit(ctx, true, func() { m.Reply(messages.TopicResult{Name: m.Topic, ID: t.id}) })
}

// commit publishes the new view at once and persists the registry on a
// goroutine; the client's answer waits for the registry to be durable.
func (s *Local) commit(ctx actor.Context, changed bool, reply func()) {
	if !changed {
		reply()
		return
	}
	s.version++
	s.publish(ctx)
	if s.cfg.Registry == nil {
		reply()
		return
	}
	recs := s.records()
	version, reg, log := s.version, s.cfg.Registry, s.cfg.Log
	go func() {
		if err := reg.Save(version, recs); err != nil {
			log.Error().Err(err).Int64("version", version).Msg("persist topic registry")
		}
		reply()
	}()
}

func (s *Local) records() []TopicRecord {
	out := make([]TopicRecord, 0, len(s.topics))
	for _, t := range s.topics {
		if routing.IsInternal(t.rec.Name) {
			continue
		}
		out = append(out, TopicRecord{Name: t.rec.Name, ID: t.rec.ID, Partitions: t.rec.Partitions, Config: maps.Clone(t.rec.Config)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Local) publish(ctx actor.Context) {
	self := s.cfg.Self
	self.Alive = true
	v := &routing.View{
		ClusterID:    s.cfg.ClusterID,
		Self:         self.ID,
		ControllerID: self.ID,
		Version:      s.version,
		Role:         "local",
		Brokers:      []routing.Broker{self},
		Topics:       make(map[string]*routing.Topic, len(s.topics)),
		TopicIDs:     make(map[[16]byte]*routing.Topic, len(s.topics)),
		Local:        map[routing.TP]actorsys.Ref{},
	}
	for name, t := range s.topics {
		rt := &routing.Topic{Name: name, ID: t.id, Config: t.rec.Config, Partitions: make([]routing.Partition, len(t.actors))}
		for p, ref := range t.actors {
			rt.Partitions[p] = routing.Partition{Leader: self.ID, LeaderEpoch: 0}
			v.Local[routing.TP{Topic: name, Partition: int32(p)}] = ref
		}
		if routing.IsInternal(name) {
			continue // shown by v.Internal
		}
		v.Topics[name] = rt
		v.TopicIDs[t.id] = rt
	}
	s.cfg.Store.Publish(v)
}

// NewUUID returns a random (v4) UUID.
func NewUUID() [16]byte {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// FormatUUID renders a UUID in its canonical text form.
func FormatUUID(u [16]byte) string {
	const hexd = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexd[b>>4], hexd[b&0xf])
	}
	return string(out)
}

// ParseUUID parses the canonical text form.
func ParseUUID(s string) ([16]byte, error) {
	var u [16]byte
	if len(s) != 36 {
		return u, fmt.Errorf("uuid %q: want 36 characters", s)
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return u, fmt.Errorf("uuid %q: want '-' at %d", s, i)
			}
			i++
			continue
		}
		b, err := strconv.ParseUint(s[i:i+2], 16, 8)
		if err != nil {
			return u, fmt.Errorf("uuid %q: %w", s, err)
		}
		u[j] = byte(b)
		j++
		i += 2
	}
	return u, nil
}

// uuidFromString derives a stable 16-byte id from a non-UUID topic id.
func uuidFromString(s string) [16]byte {
	var u [16]byte
	h := sha256.Sum256([]byte(s))
	copy(u[:], h[:16])
	return u
}

func sortBrokers(bs []routing.Broker) {
	sort.Slice(bs, func(i, j int) bool { return bs[i].ID < bs[j].ID })
}
