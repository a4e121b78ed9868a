// Package assignment is the cluster's single source of truth for partition
// leadership and group-coordinator placement: the schema-v1 document
// <data>/__cluster/assignment.json that only the controller writes and every
// broker follows.
//
// It holds the file format (Encode, Decode, Validate), the atomic writer
// (WriteFile), the reader (ReadFile), the follower a broker runs to track the
// file (Follower), the pure diff a broker applies on every accepted change
// (Diff) and the group-coordinator mapping (CoordinatorFor).
package assignment

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/kaas-project/kaas/storage/topicname"
)

// FormatV1 is the only schema version this package reads and writes.
const FormatV1 = 1

// NoLeader is the leader of a partition that no broker leads (used during
// two-phase moves: the old leader has been told to let go, the new one has not
// been told to take yet).
const NoLeader int32 = -1

// BrokerState is a registered broker's health as the controller sees it.
type BrokerState string

// The three broker states. Only alive brokers lead partitions or coordinate
// groups; draining brokers have announced shutdown; dead ones stopped
// heartbeating (their rows and slots stay, so only their own groups move).
const (
	Alive    BrokerState = "alive"
	Draining BrokerState = "draining"
	Dead     BrokerState = "dead"
)

// Valid reports whether s is one of the three states.
func (s BrokerState) Valid() bool {
	return s == Alive || s == Draining || s == Dead
}

// Assignment is the whole schema-v1 document.
type Assignment struct {
	Format              int              `json:"format"`
	ControllerEpoch     int64            `json:"controller_epoch"`
	AssignmentVersion   int64            `json:"assignment_version"`
	Controller          string           `json:"controller"`
	ControllerHeartbeat string           `json:"controller_heartbeat"`
	Brokers             []Broker         `json:"brokers"`
	Topics              map[string]Topic `json:"topics"`
	ConsumerGroups      ConsumerGroups   `json:"consumer_groups"`
}

// Broker is one registered broker row. ID is the StatefulSet ordinal.
type Broker struct {
	ID   int32  `json:"id"`
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	// Rack is the broker's broker.rack ("": none), shown to clients in
	// Metadata and DescribeCluster.
	Rack string `json:"rack,omitempty"`
	// Listeners are the advertised addresses of the broker's listeners
	// other than the primary one (Host and Port), in Kafka's
	// advertised.listeners form (NAME://host:port,...; "": none), given to
	// the clients of those listeners.
	Listeners string      `json:"listeners,omitempty"`
	State     BrokerState `json:"state"`
}

// Topic is one topic: its incarnation id (KafkaTopic metadata.uid), its config
// and the leader of each partition (index = partition number).
type Topic struct {
	ID         string            `json:"id"`
	Config     map[string]string `json:"config"`
	Partitions []Partition       `json:"partitions"`
	// Pins are the partitions an operator or client placed by hand
	// (CreateTopics with a replica assignment, AlterPartitionReassignments,
	// or the KafkaTopic's spec.pins), sorted by partition. Absent in files
	// without any.
	Pins []Pin `json:"pins,omitempty"`
}

// Pin asks that Broker lead Partition whenever Broker is alive: the
// balancer places the partition there (a planned two-phase move like any
// other) and never moves it away to even out the cluster.
type Pin struct {
	Partition int32 `json:"partition"`
	Broker    int32 `json:"broker"`
}

// PinOf returns the broker partition p is pinned to, or false.
func (t Topic) PinOf(p int32) (int32, bool) {
	for _, pin := range t.Pins {
		if pin.Partition == p {
			return pin.Broker, true
		}
	}
	return 0, false
}

// Partition is the leader of one partition and its leader epoch. Leader is
// NoLeader (-1) when no broker leads it.
type Partition struct {
	Leader      int32 `json:"leader"`
	LeaderEpoch int32 `json:"leader_epoch"`
}

// ConsumerGroups holds the group-coordinator ring: the registered broker
// serving each of the GroupSlotCount slots, dead rows included (see
// PlaceSlots and CoordinatorFor).
type ConsumerGroups struct {
	Slots []string `json:"slots"`
	// Held lists slot indexes whose groups are between coordinators (a
	// two-phase move: the old one is closing them). CoordinatorFor answers
	// no coordinator for their groups until the controller releases them.
	Held []int `json:"held,omitempty"`
	// Epochs is the leader epoch of each slot's partition of
	// __consumer_offsets (OffsetsTopic), raised by the controller whenever
	// the broker shown leading it changes (SlotLeaders); empty in a file
	// that leads none of them.
	Epochs []int32 `json:"epochs,omitempty"`
}

// ErrInvalid is wrapped by every validation error (errors.Is(err, ErrInvalid)).
var ErrInvalid = errors.New("invalid assignment")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Validate checks the document's semantic rules. The error wraps ErrInvalid
// and names the offending field:
//   - format must be FormatV1; epochs and versions must not be negative;
//   - broker ids must be non-negative and unique, names non-empty and unique,
//     states one of alive/draining/dead, ports within 0..65535;
//   - the controller must be a registered, alive broker (invariant 6);
//   - topic names follow Kafka's rules, topic ids are non-empty and unique,
//     every topic has at least one partition;
//   - a partition leader is NoLeader or an alive or draining broker, leader
//     epochs are not negative;
//   - group slots name registered brokers, each at most once.
func (a *Assignment) Validate() error {
	if a == nil {
		return invalid("no document")
	}
	if a.Format != FormatV1 {
		return invalid("unknown format %d (this broker reads format %d)", a.Format, FormatV1)
	}
	if a.ControllerEpoch < 0 {
		return invalid("negative controller_epoch %d", a.ControllerEpoch)
	}
	if a.AssignmentVersion < 0 {
		return invalid("negative assignment_version %d", a.AssignmentVersion)
	}
	ids := make(map[int32]*Broker, len(a.Brokers))
	names := make(map[string]*Broker, len(a.Brokers))
	for i := range a.Brokers {
		b := &a.Brokers[i]
		switch {
		case b.ID < 0:
			return invalid("broker %q: negative id %d", b.Name, b.ID)
		case b.Name == "":
			return invalid("broker %d: empty name", b.ID)
		case !b.State.Valid():
			return invalid("broker %q: unknown state %q (want alive, draining or dead)", b.Name, b.State)
		case b.Port < 0 || b.Port > 65535:
			return invalid("broker %q: port %d out of range", b.Name, b.Port)
		}
		if o, dup := ids[b.ID]; dup {
			return invalid("duplicate broker id %d (%q and %q)", b.ID, o.Name, b.Name)
		}
		if _, dup := names[b.Name]; dup {
			return invalid("duplicate broker name %q", b.Name)
		}
		ids[b.ID] = b
		names[b.Name] = b
	}
	if a.Controller == "" {
		return invalid("empty controller")
	}
	if c, ok := names[a.Controller]; !ok {
		return invalid("controller %q is not a registered broker", a.Controller)
	} else if c.State != Alive {
		return invalid("controller %q is %s, a controller always counts itself alive", a.Controller, c.State)
	}

	topicNames := make([]string, 0, len(a.Topics))
	for name := range a.Topics {
		topicNames = append(topicNames, name)
	}
	sort.Strings(topicNames) // report the first error deterministically
	topicIDs := make(map[string]string, len(a.Topics))
	for _, name := range topicNames {
		t := a.Topics[name]
		if err := topicname.Validate(name); err != nil {
			return invalid("%v", err)
		}
		if t.ID == "" {
			return invalid("topic %q: empty id", name)
		}
		if other, dup := topicIDs[t.ID]; dup {
			return invalid("topics %q and %q share id %q", other, name, t.ID)
		}
		topicIDs[t.ID] = name
		if len(t.Partitions) == 0 {
			return invalid("topic %q: no partitions", name)
		}
		for p, part := range t.Partitions {
			if part.LeaderEpoch < 0 {
				return invalid("topic %q partition %d: negative leader_epoch %d", name, p, part.LeaderEpoch)
			}
			if part.Leader == NoLeader {
				continue
			}
			b, ok := ids[part.Leader]
			if !ok {
				return invalid("topic %q partition %d: leader %d is not a registered broker", name, p, part.Leader)
			}
			if b.State == Dead {
				// A draining broker leads what it has not handed on yet
				// (moves run in waves: --concurrent-moves).
				return invalid("topic %q partition %d: leader %d (%s) is dead, only alive or draining brokers lead", name, p, part.Leader, b.Name)
			}
		}
	}

	for _, name := range topicNames {
		t := a.Topics[name]
		for i, pin := range t.Pins {
			switch {
			case pin.Partition < 0 || int(pin.Partition) >= len(t.Partitions):
				return invalid("topic %q: pin of partition %d, which does not exist", name, pin.Partition)
			case i > 0 && pin.Partition <= t.Pins[i-1].Partition:
				return invalid("topic %q: pins are not sorted by partition without repeats", name)
			case pin.Broker < 0:
				return invalid("topic %q partition %d: pinned to negative broker id %d", name, pin.Partition, pin.Broker)
			}
		}
	}

	for i, s := range a.ConsumerGroups.Slots {
		if _, ok := names[s]; !ok {
			return invalid("consumer_groups slot %d: %q is not a registered broker", i, s)
		}
	}
	if n := len(a.ConsumerGroups.Epochs); n != 0 && n != len(a.ConsumerGroups.Slots) {
		return invalid("consumer_groups: %d epochs for %d slots", n, len(a.ConsumerGroups.Slots))
	}
	for i, e := range a.ConsumerGroups.Epochs {
		if e < 0 {
			return invalid("consumer_groups slot %d: negative epoch %d", i, e)
		}
	}
	for i, h := range a.ConsumerGroups.Held {
		if h < 0 || h >= len(a.ConsumerGroups.Slots) {
			return invalid("consumer_groups held slot %d is out of range", h)
		}
		if i > 0 && h <= a.ConsumerGroups.Held[i-1] {
			return invalid("consumer_groups held slots are not strictly increasing")
		}
	}
	return nil
}

// BrokerByID returns the row with the given id.
func (a *Assignment) BrokerByID(id int32) (Broker, bool) {
	for _, b := range a.Brokers {
		if b.ID == id {
			return b, true
		}
	}
	return Broker{}, false
}

// BrokerByName returns the row with the given name.
func (a *Assignment) BrokerByName(name string) (Broker, bool) {
	for _, b := range a.Brokers {
		if b.Name == name {
			return b, true
		}
	}
	return Broker{}, false
}

// TopicNames returns the topic names in sorted order.
func (a *Assignment) TopicNames() []string {
	names := make([]string, 0, len(a.Topics))
	for n := range a.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Equal reports whether a and b describe the same document, field by field
// (nil and empty maps and slices are equal).
func Equal(a, b *Assignment) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.AssignmentVersion == b.AssignmentVersion && SameContent(a, b)
}

// SameContent is Equal without comparing AssignmentVersion: it tells whether a
// recompute changed anything worth a new version.
func SameContent(a, b *Assignment) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Format != b.Format || a.ControllerEpoch != b.ControllerEpoch ||
		a.Controller != b.Controller || a.ControllerHeartbeat != b.ControllerHeartbeat ||
		len(a.Brokers) != len(b.Brokers) || len(a.Topics) != len(b.Topics) ||
		len(a.ConsumerGroups.Slots) != len(b.ConsumerGroups.Slots) {
		return false
	}
	for i := range a.Brokers {
		if a.Brokers[i] != b.Brokers[i] {
			return false
		}
	}
	for i := range a.ConsumerGroups.Slots {
		if a.ConsumerGroups.Slots[i] != b.ConsumerGroups.Slots[i] {
			return false
		}
	}
	if !slices.Equal(a.ConsumerGroups.Held, b.ConsumerGroups.Held) || !slices.Equal(a.ConsumerGroups.Epochs, b.ConsumerGroups.Epochs) {
		return false
	}
	for name, ta := range a.Topics {
		tb, ok := b.Topics[name]
		if !ok || ta.ID != tb.ID || len(ta.Partitions) != len(tb.Partitions) || len(ta.Config) != len(tb.Config) ||
			!slices.Equal(ta.Pins, tb.Pins) {
			return false
		}
		for k, v := range ta.Config {
			if w, ok := tb.Config[k]; !ok || v != w {
				return false
			}
		}
		for i := range ta.Partitions {
			if ta.Partitions[i] != tb.Partitions[i] {
				return false
			}
		}
	}
	return true
}
