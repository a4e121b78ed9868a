package controller

import (
	"slices"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

func doc(leaders ...int32) *assignment.Assignment {
	a := &assignment.Assignment{Format: 1, Brokers: []assignment.Broker{
		{ID: 0, Name: "kaas-0", State: assignment.Alive}, {ID: 1, Name: "kaas-1", State: assignment.Alive}, {ID: 2, Name: "kaas-2", State: assignment.Alive},
	}, Topics: map[string]assignment.Topic{"t": {ID: "id"}}}
	a.ConsumerGroups.Slots = assignment.PlaceSlots(nil, nil, []string{"kaas-0", "kaas-1", "kaas-2"})
	t := a.Topics["t"]
	for _, l := range leaders {
		t.Partitions = append(t.Partitions, assignment.Partition{Leader: l, LeaderEpoch: 1})
	}
	a.Topics["t"] = t
	return a
}

func leadersOf(a *assignment.Assignment) []int32 {
	var out []int32
	for _, p := range a.Topics["t"].Partitions {
		out = append(out, p.Leader)
	}
	return out
}

func TestHoldKeepsTheEpochWhileWaiting(t *testing.T) {
	prev := doc(0, -1)
	prev.Topics["t"].Partitions[1] = assignment.Partition{Leader: -1, LeaderEpoch: 4}
	next := doc(0, 2)
	next.Topics["t"].Partitions[1] = assignment.Partition{Leader: 2, LeaderEpoch: 5}
	states := map[string]assignment.BrokerState{"kaas-0": assignment.Alive, "kaas-1": assignment.Alive, "kaas-2": assignment.Alive}
	HoldUnreleased(prev, next, states, map[string]map[TP]bool{"kaas-1": {{"t", 1}: true}}, Reports{})
	if p := next.Topics["t"].Partitions[1]; p.Leader != -1 || p.LeaderEpoch != 4 {
		t.Fatalf("held partition %+v, want leader -1 epoch 4", p)
	}
}

func TestHoldUnreleased(t *testing.T) {
	alive := map[string]assignment.BrokerState{"kaas-0": assignment.Alive, "kaas-1": assignment.Alive, "kaas-2": assignment.Alive}
	withDead := map[string]assignment.BrokerState{"kaas-0": assignment.Alive, "kaas-1": assignment.Dead, "kaas-2": assignment.Alive}
	draining := map[string]assignment.BrokerState{"kaas-0": assignment.Alive, "kaas-1": assignment.Draining, "kaas-2": assignment.Alive}
	lists := func(name string, parts ...int32) map[string]map[TP]bool {
		m := map[TP]bool{}
		for _, p := range parts {
			m[TP{"t", p}] = true
		}
		return map[string]map[TP]bool{name: m}
	}
	cases := []struct {
		name   string
		prev   *assignment.Assignment
		next   *assignment.Assignment
		states map[string]assignment.BrokerState
		listed map[string]map[TP]bool
		want   []int32
		held   int
	}{
		{"no move", doc(0, 1), doc(0, 1), alive, lists("kaas-1", 1), []int32{0, 1}, 0},
		{"move from a live broker is held", doc(0, 1), doc(0, 2), alive, lists("kaas-1", 1), []int32{0, -1}, 1},
		{"move from a draining broker is held", doc(0, 1), doc(0, 2), draining, nil, []int32{0, -1}, 1},
		{"move from a dead broker goes through", doc(0, 1), doc(0, 2), withDead, lists("kaas-1", 1), []int32{0, 2}, 0},
		{"leaderless but not yet released", doc(0, -1), doc(0, 2), alive, lists("kaas-1", 1), []int32{0, -1}, 1},
		{"released: phase two", doc(0, -1), doc(0, 2), alive, map[string]map[TP]bool{"kaas-0": {}, "kaas-1": {}, "kaas-2": {}}, []int32{0, 2}, 0},
		{"new partition", nil, doc(0, 2), alive, nil, []int32{0, 2}, 0},
		{"the target listing it is fine", doc(0, -1), doc(0, 2), alive, map[string]map[TP]bool{"kaas-0": {}, "kaas-1": {}, "kaas-2": {{"t", 1}: true}}, []int32{0, 2}, 0},
		{"leaderless and a running broker not heard from", doc(0, -1), doc(0, 2), alive, map[string]map[TP]bool{"kaas-0": {}, "kaas-2": {}}, []int32{0, -1}, 1},
		{"leaderless and the silent broker is dead", doc(0, -1), doc(0, 2), withDead, map[string]map[TP]bool{"kaas-0": {}, "kaas-2": {}}, []int32{0, 2}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			held := HoldUnreleased(tc.prev, tc.next, tc.states, tc.listed, Reports{})
			got := leadersOf(tc.next)
			if held != tc.held || len(got) != len(tc.want) {
				t.Fatalf("held %d leaders %v, want %d %v", held, got, tc.held, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("leaders %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func slotDoc(states ...assignment.BrokerState) *assignment.Assignment {
	a := &assignment.Assignment{Format: 1, Topics: map[string]assignment.Topic{}}
	for i, st := range states {
		name := "kaas-" + string(rune('0'+i))
		a.Brokers = append(a.Brokers, assignment.Broker{ID: int32(i), Name: name, State: st})
		a.ConsumerGroups.Slots = append(a.ConsumerGroups.Slots, name)
	}
	return a
}

// groupIn returns a group name whose home slot is i of n.
func groupIn(i, n int) string {
	for k := 0; ; k++ {
		g := "g" + string(rune('a'+k%26)) + string(rune('a'+k/26))
		if assignment.SlotFor(g, n) == i {
			return g
		}
	}
}

func TestHoldSlots(t *testing.T) {
	A, D := assignment.Alive, assignment.Draining
	states := func(s ...assignment.BrokerState) map[string]assignment.BrokerState {
		m := map[string]assignment.BrokerState{}
		for i, st := range s {
			m["kaas-"+string(rune('0'+i))] = st
		}
		return m
	}
	g1 := groupIn(1, 3)
	cases := []struct {
		name   string
		prev   *assignment.Assignment
		next   *assignment.Assignment
		states map[string]assignment.BrokerState
		groups map[string][]string
		want   []int
	}{
		{"steady", slotDoc(A, A, A), slotDoc(A, A, A), states(A, A, A), map[string][]string{"kaas-1": {g1}}, nil},
		{"owner starts draining: held", slotDoc(A, A, A), slotDoc(A, D, A), states(A, D, A), map[string][]string{"kaas-1": {g1}}, []int{1}},
		{"old owner still reports the group", func() *assignment.Assignment { a := slotDoc(A, D, A); a.ConsumerGroups.Held = []int{1}; return a }(),
			slotDoc(A, D, A), states(A, D, A), map[string][]string{"kaas-0": {}, "kaas-1": {g1}, "kaas-2": {}}, []int{1}},
		{"released: moves", func() *assignment.Assignment { a := slotDoc(A, D, A); a.ConsumerGroups.Held = []int{1}; return a }(),
			slotDoc(A, D, A), states(A, D, A), map[string][]string{"kaas-0": {}, "kaas-1": {}, "kaas-2": {}}, nil},
		{"held and a running broker not heard from", func() *assignment.Assignment { a := slotDoc(A, D, A); a.ConsumerGroups.Held = []int{1}; return a }(),
			slotDoc(A, D, A), states(A, D, A), map[string][]string{"kaas-0": {}, "kaas-2": {}}, []int{1}},
		{"dead owner: one step", slotDoc(A, A, A), slotDoc(A, assignment.Dead, A), states(A, assignment.Dead, A), map[string][]string{"kaas-1": {g1}}, nil},
		{"a broker registers: every slot held", slotDoc(A, A, A), slotDoc(A, A, A, A), states(A, A, A, A), map[string][]string{"kaas-0": {}, "kaas-1": {}, "kaas-2": {}}, []int{0, 1, 2, 3}},
		{"a broker unregistered: every slot held", slotDoc(A, A, assignment.Dead), slotDoc(A, A), states(A, A), map[string][]string{"kaas-0": {}, "kaas-1": {}}, []int{0, 1}},
		{"released once every other broker applied the changed list", func() *assignment.Assignment { a := slotDoc(A, A); a.ConsumerGroups.Held = []int{0, 1}; return a }(),
			slotDoc(A, A), states(A, A), map[string][]string{"kaas-0": {}, "kaas-1": {}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			HoldSlots(tc.prev, tc.next, tc.states, tc.groups, nil, Reports{})
			if got := tc.next.ConsumerGroups.Held; !slices.Equal(got, tc.want) {
				t.Fatalf("held %v, want %v", got, tc.want)
			}
		})
	}
	// The old owner has no group of the slot left, but still lists the
	// slot's partition of __consumer_offsets: its close is not finished.
	heldOne := func() *assignment.Assignment { a := slotDoc(A, D, A); a.ConsumerGroups.Held = []int{1}; return a }
	newOwner := assignment.SlotOwners(slotDoc(A, D, A))[1]
	for _, tc := range []struct {
		name   string
		listed map[string]map[TP]bool
		want   []int
	}{
		{"old owner still lists the offsets partition", map[string]map[TP]bool{"kaas-1": {{assignment.OffsetsTopic, 1}: true}}, []int{1}},
		{"only the new owner lists it", map[string]map[TP]bool{newOwner: {{assignment.OffsetsTopic, 1}: true}}, nil},
		{"old owner lists a user topic's partition 1", map[string]map[TP]bool{"kaas-1": {{"t", 1}: true}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := slotDoc(A, D, A)
			HoldSlots(heldOne(), next, states(A, D, A), map[string][]string{"kaas-0": {}, "kaas-1": {}, "kaas-2": {}}, tc.listed, Reports{})
			if got := next.ConsumerGroups.Held; !slices.Equal(got, tc.want) {
				t.Fatalf("held %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHoldWaitsForReportsOnTheGrantingFile(t *testing.T) {
	alive := map[string]assignment.BrokerState{"kaas-0": assignment.Alive, "kaas-1": assignment.Alive, "kaas-2": assignment.Alive}
	listed := map[string]map[TP]bool{"kaas-0": {}, "kaas-1": {}, "kaas-2": {}}
	since := map[TP]Position{{"t", 1}: {Epoch: 3, Version: 7}}
	cases := []struct {
		name    string
		applied map[string]Position
		want    int32
	}{
		{"a broker behind the file that last granted it", map[string]Position{"kaas-0": {Epoch: 3, Version: 7}, "kaas-1": {Epoch: 3, Version: 6}, "kaas-2": {Epoch: 3, Version: 7}}, -1},
		{"a broker of an older epoch", map[string]Position{"kaas-0": {Epoch: 3, Version: 9}, "kaas-1": {Epoch: 2, Version: 40}, "kaas-2": {Epoch: 3, Version: 7}}, -1},
		{"the target may be behind", map[string]Position{"kaas-0": {Epoch: 3, Version: 7}, "kaas-1": {Epoch: 3, Version: 8}, "kaas-2": {Epoch: 3, Version: 1}}, 2},
		{"every other broker on it or later", map[string]Position{"kaas-0": {Epoch: 3, Version: 7}, "kaas-1": {Epoch: 4, Version: 1}, "kaas-2": {Epoch: 3, Version: 7}}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := doc(0, 2)
			HoldUnreleased(doc(0, -1), next, alive, listed, Reports{Applied: tc.applied, GrantedAt: since})
			if got := leadersOf(next)[1]; got != tc.want {
				t.Fatalf("partition 1 leader %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLimitMoves(t *testing.T) {
	alive := map[string]assignment.BrokerState{"kaas-0": assignment.Alive, "kaas-1": assignment.Alive, "kaas-2": assignment.Alive}
	draining := map[string]assignment.BrokerState{"kaas-0": assignment.Alive, "kaas-1": assignment.Draining, "kaas-2": assignment.Alive}
	withDead := map[string]assignment.BrokerState{"kaas-0": assignment.Alive, "kaas-1": assignment.Dead, "kaas-2": assignment.Alive}
	at := func(v int64) Position { return Position{Epoch: 1, Version: v} }
	cases := []struct {
		name     string
		prev     *assignment.Assignment
		next     *assignment.Assignment
		states   map[string]assignment.BrokerState
		opening  map[string]map[TP]bool
		reports  Reports
		budget   int
		want     []int32
		deferred int
		moving   int
	}{
		{name: "no budget: every move starts", prev: doc(1, 1, 1, 1), next: doc(0, 2, 0, 2), states: draining,
			budget: 0, want: []int32{0, 2, 0, 2}},
		{name: "a drain beyond the budget runs in waves, round robin over the receivers", prev: doc(1, 1, 1, 1, 1, 1), next: doc(0, 0, 0, 2, 2, 2),
			states: draining, budget: 4, want: []int32{0, 0, 1, 2, 2, 1}, deferred: 2, moving: 4},
		{name: "a partition still held counts", prev: doc(-1, 1, 1), next: doc(0, 0, 2), states: draining,
			budget: 2, want: []int32{0, 0, 1}, deferred: 1, moving: 2},
		{name: "a grant its leader has not applied yet counts", prev: doc(0, 1, 1), next: doc(0, 2, 2), states: alive,
			reports: Reports{Applied: map[string]Position{"kaas-0": at(4), "kaas-1": at(5), "kaas-2": at(5)}, GrantedAt: map[TP]Position{{"t", 0}: at(5)}},
			budget:  2, want: []int32{0, 2, 1}, deferred: 1, moving: 2},
		{name: "a partition its leader still opens counts", prev: doc(0, 1, 1), next: doc(0, 2, 2), states: alive,
			reports: Reports{Applied: map[string]Position{"kaas-0": at(5), "kaas-1": at(5), "kaas-2": at(5)}, GrantedAt: map[TP]Position{{"t", 0}: at(5)}},
			opening: map[string]map[TP]bool{"kaas-0": {{"t", 0}: true}},
			budget:  2, want: []int32{0, 2, 1}, deferred: 1, moving: 2},
		{name: "an open that is done and reported frees its room", prev: doc(0, 1, 1), next: doc(0, 2, 2), states: alive,
			reports: Reports{Applied: map[string]Position{"kaas-0": at(5), "kaas-1": at(5), "kaas-2": at(5)}, GrantedAt: map[TP]Position{{"t", 0}: at(5)}},
			opening: map[string]map[TP]bool{"kaas-1": {{"t", 1}: true}}, // another broker's opening is not this partition's
			budget:  2, want: []int32{0, 2, 2}, moving: 2},
		{name: "a failover is never deferred", prev: doc(1, 1, 1), next: doc(0, 2, 0), states: withDead,
			budget: 1, want: []int32{0, 2, 0}},
		{name: "a partition new in the file counts", prev: doc(1, 1), next: doc(0, 2, 0), states: draining,
			budget: 2, want: []int32{0, 1, 0}, deferred: 1, moving: 2},
		{name: "no room: every new move waits", prev: doc(-1, -1, 1), next: doc(0, 2, 0), states: draining,
			budget: 2, want: []int32{0, 2, 1}, deferred: 1, moving: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The balancer raises a moved partition's epoch; a deferred
			// move must keep the previous one.
			nt := c.next.Topics["t"]
			pt := c.prev.Topics["t"].Partitions
			for i := range nt.Partitions {
				if i < len(pt) && nt.Partitions[i].Leader != pt[i].Leader {
					nt.Partitions[i].LeaderEpoch = 2
				}
			}
			deferred, moving := LimitMoves(c.prev, c.next, c.states, c.opening, c.reports, c.budget)
			if got := leadersOf(c.next); !slices.Equal(got, c.want) {
				t.Fatalf("leaders %v, want %v", got, c.want)
			}
			if deferred != c.deferred || moving != c.moving {
				t.Fatalf("deferred %d moving %d, want %d and %d", deferred, moving, c.deferred, c.moving)
			}
			for i, p := range c.next.Topics["t"].Partitions {
				if i < len(pt) && p.Leader == pt[i].Leader && p.LeaderEpoch != pt[i].LeaderEpoch {
					t.Fatalf("partition %d kept leader %d with epoch %d, want the previous epoch %d", i, p.Leader, p.LeaderEpoch, pt[i].LeaderEpoch)
				}
			}
		})
	}
}
