package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// handleListOffsets resolves earliest (-2), latest (-1), max-timestamp (-3),
// earliest-local (-4) and timestamp lookups per partition.
func handleListOffsets(r *Request) Pending {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	wg := new(waitGroup)
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := &rt.Partitions[j]
			*rp = kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			target, code := partitionTarget(r.View, t.Topic, p.Partition)
			if code != 0 {
				rp.ErrorCode = code
				continue
			}
			wg.Add(1)
			target.ref.Send(&messages.ListOffsets{
				Timestamp: p.Timestamp, CurrentLeaderEpoch: p.CurrentLeaderEpoch, IsolationLevel: req.IsolationLevel,
				Reply: func(res messages.ListOffsetsResult) {
					rp.ErrorCode, rp.Timestamp, rp.Offset, rp.LeaderEpoch = res.ErrorCode, res.Timestamp, res.Offset, res.LeaderEpoch
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
