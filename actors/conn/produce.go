package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// handleProduce fans a produce request out to partition actors (in request
// order, so pipelined idempotent batches arrive in sequence) and gathers
// their answers. acks=0 sends no response, as Kafka.
func handleProduce(r *Request) Pending {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	var fail int16
	switch {
	case req.TransactionID != nil:
		fail = kerr.TransactionalIDAuthorizationFailed.Code
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		fail = kerr.InvalidRequiredAcks.Code
	}
	wg := new(waitGroup)
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := &rt.Partitions[j]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			if fail != 0 {
				rp.ErrorCode = fail
				continue
			}
			target, code := partitionTarget(r.View, t.Topic, p.Partition)
			if code != 0 {
				rp.ErrorCode = code
				continue
			}
			wg.Add(1)
			target.ref.Send(&messages.Produce{Batch: p.Records, Acks: req.Acks, Reply: func(res messages.ProduceResult) {
				rp.ErrorCode, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = res.ErrorCode, res.BaseOffset, res.LogAppendTime, res.LogStartOffset
				if res.ErrorMessage != "" {
					msg := res.ErrorMessage
					rp.ErrorMessage = &msg
				}
				wg.Done()
			}})
		}
	}
	return func() kmsg.Response {
		wg.Wait()
		if req.Acks == 0 {
			return nil
		}
		r.Server.noteRefusal(hintProduce(r.Server.Views().Load(), resp))
		return resp
	}
}
