package conn

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

// ListPartitionReassignments (key 46): v0, from the routing view: a
// reassignment is in progress while a pinned partition is not yet led by
// its pinned broker (that broker is the replica being added, the current
// leader the one being removed). Partitions led where they are pinned are
// not listed, as Kafka lists only unfinished reassignments.
func init() {
	serve(API{Key: kmsg.ListPartitionReassignments.Int16(), MinVersion: 0, MaxVersion: 0, Handle: handleListPartitionReassignments})
}

func handleListPartitionReassignments(r *Request) Pending {
	req := r.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	v := r.View
	add := func(t *routing.Topic, partitions []int32) {
		out := kmsg.NewListPartitionReassignmentsResponseTopic()
		out.Topic = t.Name
		for _, p := range partitions {
			pin, pinned := t.Pins[p]
			if !pinned || p < 0 || int(p) >= len(t.Partitions) {
				continue
			}
			leader := t.Partitions[p].Leader
			if leader == pin {
				continue
			}
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = p
			rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = []int32{pin}, []int32{pin}, []int32{}
			if leader >= 0 {
				rp.Replicas = []int32{pin, leader}
				rp.RemovingReplicas = []int32{leader}
			}
			out.Partitions = append(out.Partitions, rp)
		}
		if len(out.Partitions) > 0 {
			resp.Topics = append(resp.Topics, out)
		}
	}
	if req.Topics == nil {
		for _, name := range v.TopicNames() {
			t := v.Topics[name]
			parts := make([]int32, 0, len(t.Pins))
			for p := range t.Pins {
				parts = append(parts, p)
			}
			sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
			add(t, parts)
		}
		return Ready(resp)
	}
	for _, rt := range req.Topics {
		// Unknown topics and partitions are left out, as Kafka does.
		if t, ok := v.Topics[rt.Topic]; ok {
			add(t, rt.Partitions)
		}
	}
	return Ready(resp)
}
