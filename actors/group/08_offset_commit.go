package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// OffsetCommit (key 8): v2-10, to the group's actor, which persists the
// commit before answering.
func init() {
	serve(groupAPI{key: kmsg.OffsetCommit.Int16(), min: 2, max: 10, handle: (*Coordinator).handleOffsetCommit})
}

// handleOffsetCommit dispatches to the group actor.
// The commit itself: offsets.go, (*Group).OffsetCommit, then Apply or Fail.
func (c *Coordinator) handleOffsetCommit(r *conn.Request) conn.Pending {
	return c.dispatch(r, r.Body.(*kmsg.OffsetCommitRequest).Group)
}

// offsetCommitError answers every partition of an OffsetCommit with code.
func offsetCommitError(req *kmsg.OffsetCommitRequest, code int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
