package supervisor

import (
	"maps"
	"testing"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/assignment"
)

func TestTrackHeld(t *testing.T) {
	// file builds an assignment of topic "t" (id) with the given leaders at
	// the given epochs.
	file := func(id string, leaders ...[2]int32) *assignment.Assignment {
		a := &assignment.Assignment{Topics: map[string]assignment.Topic{}}
		var ps []assignment.Partition
		for _, l := range leaders {
			ps = append(ps, assignment.Partition{Leader: l[0], LeaderEpoch: l[1]})
		}
		a.Topics["t"] = assignment.Topic{ID: id, Partitions: ps}
		return a
	}
	tp := func(p int32) routing.TP { return routing.TP{Topic: "t", Partition: p} }
	for _, tc := range []struct {
		name       string
		prev, next *assignment.Assignment
		before     map[routing.TP]heldLeader
		want       map[routing.TP]heldLeader
	}{
		{"nothing held", file("a", [2]int32{1, 3}), file("a", [2]int32{2, 4}), nil, map[routing.TP]heldLeader{}},
		{"a hold starts: the leader it starts from",
			file("a", [2]int32{1, 3}, [2]int32{2, 0}), file("a", [2]int32{-1, 4}, [2]int32{2, 0}), nil,
			map[routing.TP]heldLeader{tp(0): {"a", 1, 3}}},
		{"a hold that spans files keeps where it started",
			file("a", [2]int32{-1, 4}), file("a", [2]int32{-1, 4}), map[routing.TP]heldLeader{tp(0): {"a", 1, 3}},
			map[routing.TP]heldLeader{tp(0): {"a", 1, 3}}},
		{"granted: dropped",
			file("a", [2]int32{-1, 4}), file("a", [2]int32{2, 4}), map[routing.TP]heldLeader{tp(0): {"a", 1, 3}},
			map[routing.TP]heldLeader{}},
		{"held since before this broker started: unknown",
			file("a", [2]int32{-1, 4}), file("a", [2]int32{-1, 4}), nil, map[routing.TP]heldLeader{}},
		{"first file: unknown", nil, file("a", [2]int32{-1, 4}), nil, map[routing.TP]heldLeader{}},
		{"the topic was re-created: the old incarnation's leader is not carried",
			file("a", [2]int32{-1, 4}), file("b", [2]int32{-1, 0}), map[routing.TP]heldLeader{tp(0): {"a", 1, 3}},
			map[routing.TP]heldLeader{}},
		{"re-created and held: not the old incarnation's leader either",
			file("a", [2]int32{1, 3}), file("b", [2]int32{-1, 0}), nil, map[routing.TP]heldLeader{}},
		{"a new partition held: unknown",
			file("a", [2]int32{1, 3}), file("a", [2]int32{1, 3}, [2]int32{-1, 0}), nil, map[routing.TP]heldLeader{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := trackHeld(tc.prev, tc.next, tc.before); !maps.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
