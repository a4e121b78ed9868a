package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// DeleteRecords (key 21): v0-2, answered per partition by its actor.
func init() {
	serve(API{Key: kmsg.DeleteRecords.Int16(), MinVersion: 0, MaxVersion: 2, Handle: handleDeleteRecords, ErrorResponse: deleteRecordsError})
}

// handleDeleteRecords moves log start offsets forward.
func handleDeleteRecords(r *Request) Pending {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	resp.Topics = make([]kmsg.DeleteRecordsResponseTopic, len(req.Topics))
	fan := newFanOut(r)
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
			if routing.IsInternal(t.Topic) {
				// Kafka's answer (ReplicaManager): only the broker truncates it.
				rp.ErrorCode = kerr.InvalidTopicException.Code
				continue
			}
			fan.send(t.Topic, p.Partition, &rp.ErrorCode, func(done func()) any {
				return &messages.DeleteRecords{Offset: p.Offset, Reply: func(res messages.DeleteRecordsResult) {
					rp.ErrorCode, rp.LowWatermark = res.ErrorCode, res.LowWatermark
					done()
				}}
			})
		}
	}
	return fan.answer(resp)
}

// deleteRecordsError answers every partition of a DeleteRecords with code.
func deleteRecordsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, code, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
