package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// OffsetForLeaderEpoch (key 23): v2-4, answered per partition by its actor
// from the leader-epoch cache.
func init() {
	serve(API{Key: kmsg.OffsetForLeaderEpoch.Int16(), MinVersion: 2, MaxVersion: 4, Handle: handleOffsetForLeaderEpoch, ErrorResponse: offsetForLeaderEpochError})
}

// handleOffsetForLeaderEpoch answers the end offset of a leader epoch from
// the partition's leader-epoch cache (KIP-101/KIP-320 truncation detection).
func handleOffsetForLeaderEpoch(r *Request) Pending {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, len(req.Topics))
	fan := newFanOut(r)
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := &rt.Partitions[j]
			*rp = kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.EndOffset = p.Partition, -1, -1
			fan.send(t.Topic, p.Partition, &rp.ErrorCode, func(done func()) any {
				return &messages.OffsetForLeaderEpoch{
					CurrentLeaderEpoch: p.CurrentLeaderEpoch, LeaderEpoch: p.LeaderEpoch,
					Reply: func(res messages.OffsetForLeaderEpochResult) {
						rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = res.ErrorCode, res.LeaderEpoch, res.EndOffset
						done()
					},
				}
			})
		}
	}
	return fan.answer(resp)
}

// offsetForLeaderEpochError answers every partition of an
// OffsetForLeaderEpoch with code.
func offsetForLeaderEpochError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, code, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
