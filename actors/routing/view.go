// Package routing holds the broker's one view of the cluster: brokers,
// topics, who leads what, and the local actors serving what this broker
// leads. The supervisor builds a new immutable View on every change and
// publishes it; connection actors read the current one without locks.
// Metadata, Produce/Fetch routing, FindCoordinator and /healthz all answer
// from this one view.
package routing

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/kaas-project/kaas/actors/actorsys"
)

// Broker is one registered broker.
type Broker struct {
	ID     int32
	Name   string
	Host   string
	Port   int32
	Rack   *string
	Fenced bool // draining or dead: DescribeCluster v2 reports it fenced
	Alive  bool
	// Listeners are the advertised addresses of the broker's listeners
	// other than the primary one (Host and Port), in Kafka's
	// advertised.listeners form ("NAME://host:port,..."; "": none published).
	Listeners string
}

// ListenerAddr is b's advertised address on the listener called name,
// when b published one (Listeners).
func (b Broker) ListenerAddr(name string) (Endpoint, bool) {
	eps, err := ParseEndpoints(b.Listeners)
	if err != nil {
		return Endpoint{}, false
	}
	for _, e := range eps {
		if e.Name == name {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Partition is one partition's leadership.
type Partition struct {
	Leader      int32 // -1 while moving
	LeaderEpoch int32
	// HeldFrom is, while a two-phase move holds the partition leaderless,
	// the leadership the move started from: the leader and epoch of the
	// last file this broker applied that named one. Nil when unknown (no
	// such file since this broker started) and whenever Leader >= 0.
	HeldFrom *Partition
}

// Topic is one topic.
type Topic struct {
	Name       string
	ID         [16]byte
	Config     map[string]string
	Partitions []Partition
	// Pins maps a partition placed by hand to the broker that should lead
	// it (assignment pins; nil when none).
	Pins map[int32]int32
}

// TP names a partition.
type TP struct {
	Topic     string
	Partition int32
}

// View is an immutable snapshot. Never mutate a published View.
type View struct {
	ClusterID    string
	Self         int32
	ControllerID int32
	Epoch        int64 // controller epoch (0 in local-dev mode)
	Version      int64 // assignment version
	Role         string
	Brokers      []Broker // sorted by ID
	Topics       map[string]*Topic
	TopicIDs     map[[16]byte]*Topic
	// Local maps each partition this broker leads to its actor.
	Local map[TP]actorsys.Ref
	// Coordinator returns the broker coordinating a consumer group, and
	// whether it is this broker's job; nil means this broker coordinates
	// every group (local-dev mode).
	Coordinator func(group string) (Broker, bool)
	// NextCoordinator is Coordinator, except that a slot held between
	// coordinators answers the broker it goes to once granted (nil:
	// Coordinator).
	NextCoordinator func(group string) (Broker, bool)
	// GroupSlots is the broker id serving each group-coordinator slot (-1
	// while held between coordinators or when no broker is alive); nil
	// means this broker coordinates every group (local-dev mode).
	GroupSlots []int32
	// GroupSlotEpochs is the leader epoch of each slot's partition of
	// __consumer_offsets (nil in local-dev mode: 0).
	GroupSlotEpochs []int32
}

// Broker returns the broker with id.
func (v *View) Broker(id int32) (Broker, bool) {
	i := sort.Search(len(v.Brokers), func(i int) bool { return v.Brokers[i].ID >= id })
	if i < len(v.Brokers) && v.Brokers[i].ID == id {
		return v.Brokers[i], true
	}
	return Broker{}, false
}

// SelfBroker returns this broker's own row.
func (v *View) SelfBroker() Broker {
	b, _ := v.Broker(v.Self)
	return b
}

// CoordinatorFor returns the coordinator of a group.
func (v *View) CoordinatorFor(group string) (Broker, bool) {
	if v.Coordinator == nil {
		return v.SelfBroker(), true
	}
	return v.Coordinator(group)
}

// NextCoordinatorFor returns the coordinator of a group, or the broker it
// goes to while its slot is held between coordinators.
func (v *View) NextCoordinatorFor(group string) (Broker, bool) {
	if v.NextCoordinator == nil {
		return v.CoordinatorFor(group)
	}
	return v.NextCoordinator(group)
}

// HeldFromBroker counts the partitions held leaderless on their way from
// broker id (a two-phase move waiting for the file that grants them).
func (v *View) HeldFromBroker(id int32) int {
	n := 0
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			if p.Leader < 0 && p.HeldFrom != nil && p.HeldFrom.Leader == id {
				n++
			}
		}
	}
	return n
}

// KnowsTopics reports whether the view knows which topics exist: it comes
// from an applied assignment (cluster mode) or the local registry, so a
// topic missing from it was deleted. A broker without an assignment yet
// cannot tell.
func (v *View) KnowsTopics() bool { return v != nil && (v.Role == "local" || v.Version > 0) }

// TopicNames returns topic names, sorted.
func (v *View) TopicNames() []string {
	out := make([]string, 0, len(v.Topics))
	for n := range v.Topics {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Store publishes Views.
type Store struct {
	p         atomic.Pointer[View]
	mu        sync.Mutex
	listeners []func()
}

// Load returns the current View (never nil after the first Publish).
func (s *Store) Load() *View { return s.p.Load() }

// Publish replaces the current View and tells the listeners.
func (s *Store) Publish(v *View) {
	s.p.Store(v)
	s.mu.Lock()
	ls := s.listeners
	s.mu.Unlock()
	for _, l := range ls {
		l()
	}
}

// OnPublish registers fn to be called after every Publish (from the
// publisher's goroutine: fn must be cheap and must not block, e.g. send an
// actor message).
func (s *Store) OnPublish(fn func()) {
	s.mu.Lock()
	s.listeners = append(s.listeners, fn)
	s.mu.Unlock()
}
