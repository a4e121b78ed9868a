package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// ListOffsets (key 2): v1-8, answered per partition by its actor.
func init() {
	serve(API{Key: kmsg.ListOffsets.Int16(), MinVersion: 1, MaxVersion: 8, Handle: handleListOffsets, ErrorResponse: listOffsetsError})
}

// handleListOffsets resolves earliest (-2), latest (-1), max-timestamp (-3),
// earliest-local (-4) and timestamp lookups per partition.
func handleListOffsets(r *Request) Pending {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	fan := newFanOut(r)
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
			fan.send(t.Topic, p.Partition, &rp.ErrorCode, func(done func()) any {
				return &messages.ListOffsets{
					Timestamp: p.Timestamp, CurrentLeaderEpoch: p.CurrentLeaderEpoch, IsolationLevel: req.IsolationLevel,
					Reply: func(res messages.ListOffsetsResult) {
						rp.ErrorCode, rp.Timestamp, rp.Offset, rp.LeaderEpoch = res.ErrorCode, res.Timestamp, res.Offset, res.LeaderEpoch
						done()
					},
				}
			})
		}
	}
	return fan.answer(resp)
}

// listOffsetsError answers every partition of a ListOffsets with code.
func listOffsetsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
