package conn

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

// A pinned partition is listed while it is not led by its pinned broker:
// held mid-move (no leader) or still led elsewhere; one led where pinned,
// or not pinned, is not.
func TestListPartitionReassignments(t *testing.T) {
	v := &routing.View{Topics: map[string]*routing.Topic{
		"t": {Name: "t", Partitions: []routing.Partition{{Leader: 1}, {Leader: -1}, {Leader: 2}, {Leader: 0}},
			Pins: map[int32]int32{0: 1, 1: 2, 2: 0}},
		"quiet": {Name: "quiet", Partitions: []routing.Partition{{Leader: 0}}},
	}}
	list := func(req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
		return handleListPartitionReassignments(&Request{Body: req, View: v})().(*kmsg.ListPartitionReassignmentsResponse)
	}
	all := list(kmsg.NewPtrListPartitionReassignmentsRequest())
	if len(all.Topics) != 1 || all.Topics[0].Topic != "t" || len(all.Topics[0].Partitions) != 2 {
		t.Fatalf("listed %+v", all.Topics)
	}
	held, moving := all.Topics[0].Partitions[0], all.Topics[0].Partitions[1]
	if held.Partition != 1 || !slices.Equal(held.AddingReplicas, []int32{2}) || len(held.RemovingReplicas) != 0 {
		t.Fatalf("held partition: %+v", held)
	}
	if moving.Partition != 2 || !slices.Equal(moving.Replicas, []int32{0, 2}) || !slices.Equal(moving.RemovingReplicas, []int32{2}) {
		t.Fatalf("moving partition: %+v", moving)
	}
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	rt := kmsg.NewListPartitionReassignmentsRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0, 2, 9}
	req.Topics = append(req.Topics, rt)
	rt.Topic = "missing"
	req.Topics = append(req.Topics, rt)
	some := list(req)
	if len(some.Topics) != 1 || len(some.Topics[0].Partitions) != 1 || some.Topics[0].Partitions[0].Partition != 2 {
		t.Fatalf("listed for t-0, t-2, t-9, missing: %+v", some.Topics)
	}
}
