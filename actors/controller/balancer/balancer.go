// Package balancer computes the next assignment.json from the previous one,
// the registered brokers and the topic specs. It is pure and deterministic:
// plain data in, plain data out, no maps iterated in an order that matters.
//
// # Rules
//
// The balancer decides as little as possible (design note "How partitions get
// placed"; DESIGN.md invariants 5 and 6):
//
//  1. Keep every partition whose previous leader is alive (same topic id: a
//     topic whose id changed is a new topic).
//  2. Place the rest, in (topic name, partition) order, each on the alive
//     broker holding the fewest partitions of that topic; ties go to the
//     broker with the fewest partitions in total, then the lowest id.
//  3. Even out the brokers cluster-wide to a spread (max - min partitions
//     led) of at most one: while the spread is two or more, move one
//     partition from a broker leading the most to one leading the fewest.
//     Each such move brings the cluster one move closer to even, so the
//     number of moves is the minimum. Among all such moves it takes the
//     cheapest: a partition that is moving anyway (just placed) before an
//     inherited one; then the one that best evens out its topic.
//  4. Even out every topic to a per-topic spread of at most one by trades
//     that keep the cluster-wide spread: a swap (one partition each way
//     between the topic's most and least loaded brokers, totals untouched)
//     or, when the giving broker leads one more partition than the taking
//     one in total, the single move alone (it only hands the cluster's "+1"
//     to the other broker, and costs one takeover instead of two). Trades
//     prefer partitions that are moving anyway, then partner topics they
//     even out.
//
// Moves are counted against the previous assignment: a partition placed in
// step 2 and moved again in step 3 or 4 costs nothing more, and one moved
// back to its previous leader costs nothing at all.
//
// # When per-topic balance is achievable
//
// Always. Whenever the cluster-wide spread is at most one (which step 3
// guarantees), every topic can be brought to a per-topic spread of at most
// one by swaps alone, so step 4 always reaches it. Proof: let topic t have
// brokers A, B
// with c_t(A) - c_t(B) >= 2. The totals satisfy T(A) - T(B) <= 1, and
// T(A) - T(B) = sum over topics u of c_u(A) - c_u(B), so the other topics sum
// to at most 1 - 2 = -1: some topic u != t has c_u(B) > c_u(A). Swapping one
// t partition A->B with one u partition B->A changes the potential
// sum_u sum_b c_u(b)^2 by 2(c_t(B) - c_t(A)) + 2(c_u(A) - c_u(B)) + 4 <= -2,
// so the swaps terminate, and they stop only when no topic has spread >= 2.
// Such a swap never worsens u: it exchanges u's counts on A and B when they
// differ by one, and narrows them when they differ by more, so a topic once
// even stays even and one pass over the topics suffices. A single move
// (when T(A) = T(B) + 1) lowers the potential by at least 2 as well and
// leaves the other topics alone. The claim is checked on every output of
// the property tests and exhaustively on every cluster-balanced layout of
// a few small shapes (TestPerTopicAlwaysAchievable).
//
// # How many partitions move
//
// Against an exhaustive search over all assignments with both spreads at
// most one (property tests, small clusters): after a broker departs (dead,
// draining or gone), exactly the partitions it led move plus the minimum
// the spreads require; from any cluster-balanced layout, step 4 uses the
// minimum; a new topic moves no existing partition. For brokers joining,
// step 3 is greedy (it always moves from a most- to a least-loaded
// broker): in a few random small joins it moves one partition more than
// the minimum (TestPropertyJoinNearMinimum bounds them at 1 %). When more
// than a few moves are needed (a broker joins a large cluster), step 3
// first moves in bulk, topic by topic (bulkEven), which keeps it fast; the
// count of step-3 moves stays the minimum, and step 4 may then add a few
// swaps.
//
// # Other guarantees
//
// Pinned partitions (TopicSpec.Pins) are the exception to rules 1-4: each
// goes to its pinned broker when that broker is alive and stays there; they
// count in the brokers' totals, so the other partitions even out around
// them, but the spreads above are then only as even as the pins allow.
//
// A cordoned broker (KIP-1066's cordoned.log.dirs, BrokerInfo.Cordoned) keeps
// the partitions it leads, as if pinned, and receives none in steps 2-4; the
// spreads of steps 3 and 4 are taken over the uncordoned alive brokers. While
// every alive broker is cordoned they all take partitions that need a leader
// (still keeping their own): a partition with no leader is unavailable, and
// availability comes first.
//
// Only alive brokers lead; the controller always counts itself alive, so an
// assignment with topics is never empty. leader_epoch rises by exactly one
// when a partition's leader changes and stays otherwise; a new partition
// starts at 0. assignment_version is previous+1 when anything changed
// (including the controller epoch), else unchanged with no moves. Broker rows
// are the registered set: the input brokers plus every previous row absent
// from the input (kept as dead) unless Unregistered names it;
// consumer_groups.slots lists their names in
// id order. A topic's partition count never decreases for the same topic id
// (Kafka cannot shrink a topic; the data would become unreachable).
package balancer

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/topicname"
)

// BrokerInfo is one registered broker as the controller sees it.
type BrokerInfo struct {
	Name  string                 `json:"name"`
	Host  string                 `json:"host"`
	Port  int32                  `json:"port"`
	Rack  string                 `json:"rack,omitempty"`
	State assignment.BrokerState `json:"state"`
	// Listeners: the broker's listeners besides the primary one
	// (assignment.Broker.Listeners).
	Listeners string `json:"listeners,omitempty"`
	// Cordoned: the broker takes no partitions it does not lead already.
	Cordoned bool `json:"cordoned,omitempty"`
}

// TopicSpec is the desired shape of one topic (from its KafkaTopic object).
type TopicSpec struct {
	ID         string            `json:"id"`
	Partitions int               `json:"partitions"`
	Config     map[string]string `json:"config"`
	// Pins place partitions by hand (sorted by partition): a pinned
	// partition is led by its broker whenever that broker is alive, and
	// steps 3 and 4 never move it; while the broker is not alive the
	// partition is placed like any other. Pins of partitions the topic
	// does not have are ignored.
	Pins []assignment.Pin `json:"pins,omitempty"`
}

// Input is everything the balancer looks at.
type Input struct {
	// Previous is the assignment in force (nil the first time).
	Previous *assignment.Assignment
	// Controller is the controller's broker name; it always counts as alive.
	Controller          string
	ControllerEpoch     int64
	ControllerHeartbeat string
	// Brokers is the registered set with each broker's current state. Broker
	// ids are the StatefulSet ordinals parsed from the names' "-N" suffix.
	Brokers []BrokerInfo
	// Topics maps topic name to spec.
	Topics map[string]TopicSpec
	// Unregistered names brokers removed from the registered set
	// (UnregisterBroker): their previous rows are not kept as dead. A name
	// also in Brokers (it pinged again) is registered anew.
	Unregistered []string
}

// Move is one partition whose leader changes. From is assignment.NoLeader
// for a partition that had no leader (new, or leaderless before).
type Move struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int32  `json:"from"`
	To        int32  `json:"to"`
}

// Moves lists every leadership change of one recompute, sorted by topic and
// partition.
type Moves []Move

// MaxPartitionsPerTopic bounds TopicSpec.Partitions, so that a typo cannot
// make the controller allocate without limit.
const MaxPartitionsPerTopic = 1 << 20

// BrokerID parses the StatefulSet ordinal from the trailing "-N" of name.
func BrokerID(name string) (int32, error) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return 0, fmt.Errorf("broker name %q has no -N ordinal suffix", name)
	}
	digits := name[i+1:]
	if len(digits) > 1 && digits[0] == '0' {
		return 0, fmt.Errorf("broker name %q: ordinal %q has a leading zero", name, digits)
	}
	id, err := strconv.ParseInt(digits, 10, 32)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("broker name %q: ordinal %q is not a non-negative 32-bit number", name, digits)
	}
	return int32(id), nil
}

// ErrInput is wrapped by every error about invalid input.
var ErrInput = errors.New("invalid balancer input")

func inputErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInput, fmt.Sprintf(format, args...))
}

// Compute returns the next assignment and the leadership moves it implies.
// It fails only on invalid input (bad broker names or states, bad topic
// names, ids or partition counts, or a controller epoch below the previous
// one); the error wraps ErrInput.
func Compute(in Input) (*assignment.Assignment, Moves, error) {
	prev := in.Previous
	if prev != nil && in.ControllerEpoch < prev.ControllerEpoch {
		return nil, nil, inputErr("controller epoch %d is below the previous assignment's %d", in.ControllerEpoch, prev.ControllerEpoch)
	}
	if in.ControllerEpoch < 0 {
		return nil, nil, inputErr("negative controller epoch %d", in.ControllerEpoch)
	}
	rows, err := brokerRows(in)
	if err != nil {
		return nil, nil, err
	}
	topics, err := topicList(in)
	if err != nil {
		return nil, nil, err
	}

	cordoned := map[int32]bool{}
	for _, b := range in.Brokers {
		if b.Cordoned {
			id, _ := BrokerID(b.Name) // checked by brokerRows
			cordoned[id] = true
		}
	}
	s := newState(rows, topics, prev, cordoned)
	s.keep()        // step 1
	s.place()       // step 2
	s.evenCluster() // step 3
	s.evenTopics()  // step 4
	out, moves := s.output(in, rows)
	return out, moves, nil
}

// brokerRows returns the registered set sorted by id, with states resolved.
func brokerRows(in Input) ([]assignment.Broker, error) {
	cid, err := BrokerID(in.Controller)
	if err != nil {
		return nil, inputErr("controller: %v", err)
	}
	byID := make(map[int32]int, len(in.Brokers)+1)
	var rows []assignment.Broker
	for _, b := range in.Brokers {
		id, err := BrokerID(b.Name)
		if err != nil {
			return nil, inputErr("%v", err)
		}
		if !b.State.Valid() {
			return nil, inputErr("broker %q: unknown state %q (want alive, draining or dead)", b.Name, b.State)
		}
		if b.Port < 0 || b.Port > 65535 {
			return nil, inputErr("broker %q: port %d out of range", b.Name, b.Port)
		}
		if j, dup := byID[id]; dup {
			return nil, inputErr("brokers %q and %q have the same ordinal %d", rows[j].Name, b.Name, id)
		}
		byID[id] = len(rows)
		rows = append(rows, assignment.Broker{ID: id, Name: b.Name, Host: b.Host, Port: b.Port, Rack: b.Rack, Listeners: b.Listeners, State: b.State})
	}
	if in.Previous != nil {
		names := make(map[string]bool, len(rows))
		for _, r := range rows {
			names[r.Name] = true
		}
		for _, b := range in.Previous.Brokers {
			if _, taken := byID[b.ID]; taken || names[b.Name] || b.ID < 0 || b.Name == "" || slices.Contains(in.Unregistered, b.Name) {
				continue
			}
			b.State = assignment.Dead
			byID[b.ID] = len(rows)
			names[b.Name] = true
			rows = append(rows, b)
		}
	}
	if j, ok := byID[cid]; ok {
		if rows[j].Name != in.Controller {
			return nil, inputErr("controller %q and broker %q have the same ordinal %d", in.Controller, rows[j].Name, cid)
		}
		rows[j].State = assignment.Alive // invariant 6
	} else {
		rows = append(rows, assignment.Broker{ID: cid, Name: in.Controller, State: assignment.Alive})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows, nil
}

type topicIn struct {
	name string
	spec TopicSpec
}

// topicList validates the specs and returns them sorted by name.
func topicList(in Input) ([]topicIn, error) {
	list := make([]topicIn, 0, len(in.Topics))
	for name, spec := range in.Topics {
		list = append(list, topicIn{name, spec})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	ids := make(map[string]string, len(list))
	for _, t := range list {
		if err := topicname.Validate(t.name); err != nil {
			return nil, inputErr("%v", err)
		}
		if t.spec.ID == "" {
			return nil, inputErr("topic %q: empty id", t.name)
		}
		if other, dup := ids[t.spec.ID]; dup {
			return nil, inputErr("topics %q and %q share id %q", other, t.name, t.spec.ID)
		}
		ids[t.spec.ID] = t.name
		if t.spec.Partitions < 1 || t.spec.Partitions > MaxPartitionsPerTopic {
			return nil, inputErr("topic %q: %d partitions (want 1..%d)", t.name, t.spec.Partitions, MaxPartitionsPerTopic)
		}
	}
	return list, nil
}
