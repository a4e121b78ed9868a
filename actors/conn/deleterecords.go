package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// handleDeleteRecords moves log start offsets forward.
func handleDeleteRecords(r *Request) Pending {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(req.Topics))
	wg := new(waitGroup)
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := &rt.Partitions[j]
			*rp = kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			target, code := partitionTarget(r.View, t.Topic, p.Partition)
			if code != 0 {
				rp.ErrorCode = code
				continue
			}
			wg.Add(1)
			target.ref.Send(&messages.DeleteRecords{Offset: p.Offset, Reply: func(res messages.DeleteRecordsResult) {
				rp.ErrorCode, rp.LowWatermark = res.ErrorCode, res.LowWatermark
				wg.Done()
			}})
		}
	}
	return func() kmsg.Response {
		wg.Wait()
		return resp
	}
}
