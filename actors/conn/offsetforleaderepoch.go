package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// handleOffsetForLeaderEpoch answers the end offset of a leader epoch from
// the partition's leader-epoch cache (KIP-101/KIP-320 truncation detection).
func handleOffsetForLeaderEpoch(r *Request) Pending {
	req := r.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, len(req.Topics))
	wg := new(waitGroup)
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
			target, code := partitionTarget(r.View, t.Topic, p.Partition)
			if code != 0 {
				rp.ErrorCode = code
				continue
			}
			wg.Add(1)
			target.ref.Send(&messages.OffsetForLeaderEpoch{
				CurrentLeaderEpoch: p.CurrentLeaderEpoch, LeaderEpoch: p.LeaderEpoch,
				Reply: func(res messages.OffsetForLeaderEpochResult) {
					rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = res.ErrorCode, res.LeaderEpoch, res.EndOffset
					wg.Done()
				},
			})
		}
	}
	return func() kmsg.Response {
		wg.Wait()
		return resp
	}
}
