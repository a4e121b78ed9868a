package group

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

func tinfo(parts map[string]int32) map[string]TopicInfo {
	out := map[string]TopicInfo{}
	for n, p := range parts {
		out[n] = TopicInfo{Name: n, ID: topicID(n), Partitions: p}
	}
	return out
}

func members(subs ...[]string) []AssignMember {
	var out []AssignMember
	for i, s := range subs {
		out = append(out, AssignMember{ID: fmt.Sprintf("m%d", i), Topics: s, Current: Assignment{}})
	}
	return out
}

// checkAssignment verifies every partition of a subscribed topic is assigned
// exactly once, and only to subscribers.
func checkAssignment(t *testing.T, ms []AssignMember, tops map[string]TopicInfo, out map[string]Assignment) {
	t.Helper()
	seen := map[tpid]string{}
	for _, m := range ms {
		for tid, ps := range out[m.ID] {
			var name string
			for n, ti := range tops {
				if ti.ID == tid {
					name = n
				}
			}
			if !slices.Contains(m.Topics, name) {
				t.Fatalf("%s got %s it does not subscribe to", m.ID, name)
			}
			if !slices.IsSorted(ps) {
				t.Fatalf("%s: unsorted %v", m.ID, ps)
			}
			for _, p := range ps {
				k := tpid{tid, p}
				if o, ok := seen[k]; ok {
					t.Fatalf("%s-%d assigned to %s and %s", name, p, o, m.ID)
				}
				seen[k] = m.ID
			}
		}
	}
	for n, ti := range tops {
		subscribed := false
		for _, m := range ms {
			subscribed = subscribed || slices.Contains(m.Topics, n)
		}
		for p := int32(0); p < ti.Partitions; p++ {
			if _, ok := seen[tpid{ti.ID, p}]; subscribed && !ok {
				t.Fatalf("%s-%d unassigned", n, p)
			}
		}
	}
}

func spread(ms []AssignMember, out map[string]Assignment) (lo, hi int) {
	lo = 1 << 30
	for _, m := range ms {
		n := out[m.ID].count()
		lo, hi = min(lo, n), max(hi, n)
	}
	return lo, hi
}

func TestAssignUniform(t *testing.T) {
	for _, tc := range []struct {
		name    string
		topics  map[string]int32
		subs    [][]string
		maxDiff int
	}{
		{"even", map[string]int32{"a": 6}, [][]string{{"a"}, {"a"}, {"a"}}, 0},
		{"uneven", map[string]int32{"a": 7, "b": 3}, [][]string{{"a", "b"}, {"a", "b"}, {"a", "b"}}, 1},
		{"more members than partitions", map[string]int32{"a": 2}, [][]string{{"a"}, {"a"}, {"a"}}, 1},
		{"heterogeneous", map[string]int32{"a": 4, "b": 4}, [][]string{{"a"}, {"a", "b"}, {"b"}}, 1},
		{"one subscriber only", map[string]int32{"a": 4, "b": 4}, [][]string{{"a"}, {"a"}, {"b"}}, 2},
		{"no subscribers", map[string]int32{"a": 4}, [][]string{{}, {}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, tops := members(tc.subs...), tinfo(tc.topics)
			out := AssignUniform(ms, tops)
			checkAssignment(t, ms, tops, out)
			if lo, hi := spread(ms, out); hi-lo > tc.maxDiff {
				t.Fatalf("spread %d..%d: %v", lo, hi, out)
			}
			// Deterministic.
			again := AssignUniform(ms, tops)
			for id := range out {
				if !out[id].equal(again[id]) {
					t.Fatal("not deterministic")
				}
			}
		})
	}
}

func TestAssignUniformIsSticky(t *testing.T) {
	tops := tinfo(map[string]int32{"a": 12})
	ms := members([]string{"a"}, []string{"a"}, []string{"a"})
	out := AssignUniform(ms, tops)
	// A fourth member joins: only what it needs moves (3 partitions).
	for i := range ms {
		ms[i].Current = out[ms[i].ID]
	}
	ms = append(ms, AssignMember{ID: "m3", Topics: []string{"a"}, Current: Assignment{}})
	next := AssignUniform(ms, tops)
	checkAssignment(t, ms, tops, next)
	moved := 0
	for _, m := range ms[:3] {
		m.Current.each(func(tid [16]byte, p int32) {
			if !next[m.ID].has(tid, p) {
				moved++
			}
		})
	}
	if moved != 3 || next["m3"].count() != 3 {
		t.Fatalf("moved %d partitions, m3 got %d", moved, next["m3"].count())
	}
	// A member leaves: its partitions spread, the others keep theirs.
	for i := range ms {
		ms[i].Current = next[ms[i].ID]
	}
	left := ms[1:]
	after := AssignUniform(left, tops)
	checkAssignment(t, left, tops, after)
	for _, m := range left {
		m.Current.each(func(tid [16]byte, p int32) {
			if !after[m.ID].has(tid, p) {
				t.Fatalf("%s lost partition %d when another member left", m.ID, p)
			}
		})
	}
}

func TestAssignUniformRandomized(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 200; iter++ {
		names := []string{"a", "b", "c"}
		parts := map[string]int32{}
		for _, n := range names {
			parts[n] = int32(rng.Intn(10))
		}
		tops := tinfo(parts)
		var subs [][]string
		for i := 0; i < 1+rng.Intn(6); i++ {
			var s []string
			for _, n := range names {
				if rng.Intn(3) > 0 {
					s = append(s, n)
				}
			}
			subs = append(subs, s)
		}
		ms := members(subs...)
		out := AssignUniform(ms, tops)
		checkAssignment(t, ms, tops, out)
		// Homogeneous subscriptions are balanced to within one.
		same := true
		for _, s := range subs {
			same = same && slices.Equal(s, subs[0])
		}
		if lo, hi := spread(ms, out); same && hi-lo > 1 {
			t.Fatalf("homogeneous spread %d..%d: %v %v", lo, hi, subs, out)
		}
		// Reassigning from the result changes nothing.
		for i := range ms {
			ms[i].Current = out[ms[i].ID]
		}
		again := AssignUniform(ms, tops)
		for id := range out {
			if !out[id].equal(again[id]) {
				t.Fatalf("not stable: %v -> %v", out, again)
			}
		}
	}
}

func TestAssignRange(t *testing.T) {
	tops := tinfo(map[string]int32{"a": 5, "b": 5})
	ms := members([]string{"a", "b"}, []string{"a", "b"})
	ms[0].ID, ms[1].ID = "z-dynamic", "y-dynamic"
	ms = append(ms, AssignMember{ID: "q", InstanceID: "static-0", Topics: []string{"a"}})
	out := AssignRange(ms, tops)
	checkAssignment(t, ms, tops, out)
	want := map[string]map[string][]int32{
		"q":         {"a": {0, 1}},                 // static members first
		"y-dynamic": {"a": {2, 3}, "b": {0, 1, 2}}, // then dynamic by member id
		"z-dynamic": {"a": {4}, "b": {3, 4}},
	}
	for id, w := range want {
		for n, ps := range w {
			if got := out[id][topicID(n)]; !slices.Equal(got, ps) {
				t.Errorf("%s %s: %v, want %v", id, n, got, ps)
			}
		}
	}
}
