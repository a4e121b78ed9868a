package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// DescribeProducers (key 61): v0, answered per partition by its actor from
// its idempotent-producer table. There are no transactions: the
// coordinator epoch and current transaction start offset are always -1.
func init() {
	serve(API{Key: kmsg.DescribeProducers.Int16(), MinVersion: 0, MaxVersion: 0, Handle: handleDescribeProducers, ErrorResponse: describeProducersError})
}

func handleDescribeProducers(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	resp.Topics = make([]kmsg.DescribeProducersResponseTopic, len(req.Topics))
	fan := newFanOut(r)
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.DescribeProducersResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = p
			fan.send(t.Topic, p, &rp.ErrorCode, func(done func()) any {
				return &messages.DescribeProducers{Reply: func(res messages.DescribeProducersResult) {
					rp.ErrorCode = res.ErrorCode
					for _, st := range res.Producers {
						ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
						ap.ProducerID, ap.ProducerEpoch = st.ProducerID, int32(st.ProducerEpoch)
						ap.LastSequence, ap.LastTimestamp = st.LastSequence, st.LastTimestamp
						ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = -1, st.TxnStartOffset
						rp.ActiveProducers = append(rp.ActiveProducers, ap)
					}
					done()
				}}
			})
		}
	}
	return fan.answer(resp)
}

// describeProducersError answers every partition of a DescribeProducers
// with code.
func describeProducersError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
