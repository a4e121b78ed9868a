package conn

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/quota"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// Produce (key 0): v3-13 served; ApiVersions advertises v0-13, as Apache
// Kafka 4 does (KAFKA-18659), because librdkafka only compresses with
// gzip/snappy/lz4 when the range reaches v0; v0-2 close the connection,
// as on Kafka 4. The partition actor (actors/partition) validates and
// appends each batch, after a topic's compression.type has been applied
// here (recompress.go), and verifies a transactional batch that starts a
// transaction on its partition with the transaction coordinator (KIP-890;
// from v12, the transaction protocol v2, the coordinator adds the partition
// to the transaction instead, as the producer sent no AddPartitionsToTxn);
// NOT_LEADER_OR_FOLLOWER answers carry a leader hint (leader_hints.go). A
// producer_byte_rate quota meters the request's size and throttles
// (quotas.go). From v13 topics are named by id (KIP-516): an id the broker
// does not know is UNKNOWN_TOPIC_ID.
func init() {
	serve(API{Key: kmsg.Produce.Int16(), MinVersion: 3, MaxVersion: 13, AdvertiseV0: true,
		Handle: handleProduce, ErrorResponse: produceError})
}

// handleProduce fans a produce request out to partition actors (in request
// order, so pipelined idempotent batches arrive in sequence) and gathers
// their answers. acks=0 sends no response, as Kafka (a throttle still
// mutes the connection), and a failure closes the connection
// (produceFailures).
func handleProduce(r *Request) Pending {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	// The request is metered as it arrives and appended whatever its
	// throttle, as Kafka does; the throttle goes in the answer and mutes
	// the connection after it.
	resp.ThrottleMillis = throttleMillis(r.recordQuota(quota.Produce, r.Size))
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	var fail int16
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		fail = kerr.InvalidRequiredAcks.Code
	}
	fan := newFanOut(r)
	var txnID string
	var verify func(messages.VerifyTxn)
	if req.TransactionID != nil && *req.TransactionID != "" {
		txnID, verify = *req.TransactionID, r.Server.VerifyTxn
	}
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewProduceResponseTopic()
		// The response names the topic as the request did (by id from
		// v13); Topic is kept for the leader hints either way.
		name := produceTopic(r.View, req.Version, t)
		rt.Topic, rt.TopicID = name, t.TopicID
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := &rt.Partitions[j]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			switch {
			case fail != 0:
				rp.ErrorCode = fail
				continue
			case name == "":
				rp.ErrorCode = kerr.UnknownTopicID.Code
				continue
			case routing.IsInternal(name):
				// Kafka's answer (ReplicaManager): only the broker appends there.
				rp.ErrorCode = kerr.InvalidTopicException.Code
				rp.ErrorMessage = kmsg.StringPtr("Cannot append to internal topic " + name)
				continue
			}
			records, code, msg := recompressProduced(r.View.Topics[name], p.Records)
			if code != 0 {
				rp.ErrorCode, rp.ErrorMessage = code, kmsg.StringPtr(msg)
				continue
			}
			fan.send(name, p.Partition, &rp.ErrorCode, func(done func()) any {
				return &messages.Produce{Batch: records, Acks: req.Acks, TransactionalID: txnID, Verify: verify, AddToTxn: req.Version >= 12, Abortable: req.Version >= 11, Reply: func(res messages.ProduceResult) {
					rp.ErrorCode, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = res.ErrorCode, res.BaseOffset, res.LogAppendTime, res.LogStartOffset
					rp.ErrorMessage = optString(res.ErrorMessage)
					for _, e := range res.RecordErrors {
						er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
						er.RelativeOffset, er.ErrorMessage = e.BatchIndex, optString(e.Message)
						rp.ErrorRecords = append(rp.ErrorRecords, er)
					}
					done()
				}}
			})
		}
	}
	return func() kmsg.Response {
		fan.wait()
		r.Server.noteRefusal(hintProduce(r.CurrentView(), resp))
		return resp // for acks=0 too: the connection reads its failures
	}
}

// produceFailures lists the partitions a Produce answer failed, as
// "topic-partition: ERROR" (at most eight, then how many more); "" when
// none did.
func produceFailures(resp kmsg.Response) string {
	pr, _ := resp.(*kmsg.ProduceResponse)
	if pr == nil {
		return ""
	}
	var b strings.Builder
	n := 0
	for _, t := range pr.Topics {
		name := t.Topic
		if name == "" {
			name = fmt.Sprintf("%x", t.TopicID)
		}
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				continue
			}
			if n++; n <= 8 {
				if b.Len() > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s-%d: %s", name, p.Partition, metrics.ErrorName(p.ErrorCode))
			}
		}
	}
	if n > 8 {
		fmt.Fprintf(&b, " and %d more", n-8)
	}
	return b.String()
}

// produceTopic is the name of a Produce topic: as sent before v13, else
// the topic of its id ("" for an id the broker does not know).
func produceTopic(v *routing.View, version int16, t *kmsg.ProduceRequestTopic) string {
	if version < 13 {
		return t.Topic
	}
	name, _ := topicName(v, "", t.TopicID)
	return name
}

// produceError answers every partition of a Produce with code.
func produceError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
