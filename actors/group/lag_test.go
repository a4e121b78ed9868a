package group

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// The coordinator's CommittedOffsets follows what the group actors
// committed: new commits, overwritten ones, and a deleted group's going.
func TestCoordinatorPublishesCommittedOffsets(t *testing.T) {
	views := &routing.Store{}
	views.Publish(view(nil))
	c, _ := startCoordinator(t, groupstore.NewMemory(), views)
	commit := func(group string, offsets map[int32]int64) {
		t.Helper()
		r := await(t, callGroup(c, group, commitReq(8, -1, "", map[string]map[int32]int64{"t": offsets}))).(*kmsg.OffsetCommitResponse)
		for _, p := range r.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("commit %s: %s", group, code(p.ErrorCode))
			}
		}
	}
	expect := func(what string, want ...metrics.CommittedOffset) {
		t.Helper()
		eventually(t, what, func() bool { return slices.Equal(c.CommittedOffsets(), want) })
	}
	commit("g", map[int32]int64{0: 7, 1: 3})
	commit("h", map[int32]int64{0: 1})
	expect("the first commits",
		metrics.CommittedOffset{Group: "g", Topic: "t", Partition: 0, Offset: 7},
		metrics.CommittedOffset{Group: "g", Topic: "t", Partition: 1, Offset: 3},
		metrics.CommittedOffset{Group: "h", Topic: "t", Partition: 0, Offset: 1})
	commit("g", map[int32]int64{1: 12})
	expect("the overwritten commit",
		metrics.CommittedOffset{Group: "g", Topic: "t", Partition: 0, Offset: 7},
		metrics.CommittedOffset{Group: "g", Topic: "t", Partition: 1, Offset: 12},
		metrics.CommittedOffset{Group: "h", Topic: "t", Partition: 0, Offset: 1})
	if del := await(t, callGroup(c, "h", &messages.GroupDelete{})).(kmsg.DeleteGroupsResponseGroup); del.ErrorCode != 0 {
		t.Fatalf("delete: %s", code(del.ErrorCode))
	}
	expect("the deleted group gone",
		metrics.CommittedOffset{Group: "g", Topic: "t", Partition: 0, Offset: 7},
		metrics.CommittedOffset{Group: "g", Topic: "t", Partition: 1, Offset: 12})
}
