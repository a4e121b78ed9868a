package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// ListOffsets (key 2): v0-11, answered per partition by its actor. kaas
// has no tiered storage: latest-tiered (-5, v9+) and earliest pending
// upload (-6, v11+) find no offset, and v10's TimeoutMillis (for remote
// lookups) has nothing to bound. v0, which Kafka 4 no longer serves
// (KIP-896), is served for the tools that still send it (Burrow's cluster
// module, sarama before 1.40): its one old-style offset is the one v1
// answers.
func init() {
	serve(API{Key: kmsg.ListOffsets.Int16(), MinVersion: 0, MaxVersion: 11, Handle: handleListOffsets, ErrorResponse: listOffsetsError})
}

// handleListOffsets resolves earliest (-2), latest (-1), max-timestamp (-3),
// earliest-local (-4), latest-tiered (-5), earliest pending upload (-6) and
// timestamp lookups per partition. A special timestamp sent at a version
// older than the one that defined it is UNSUPPORTED_VERSION, as Kafka's
// ReplicaManager answers.
//
// A partition named more than once is answered once: INVALID_REQUEST, as Kafka's ReplicaManager answers a duplicated partition (it keys
// the answer by partition, so a topic named twice is answered once too).
func handleListOffsets(r *Request) Pending {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	// The answer's layout first: the reply callbacks write into its slots.
	type answerTopic struct {
		name  string
		parts []*kmsg.ListOffsetsRequestTopicPartition
	}
	var layout []answerTopic
	topicAt := map[string]int{}
	named := map[routing.TP]int{}
	for i := range req.Topics {
		t := &req.Topics[i]
		at, ok := topicAt[t.Topic]
		if !ok {
			at = len(layout)
			topicAt[t.Topic] = at
			layout = append(layout, answerTopic{name: t.Topic})
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			k := routing.TP{Topic: t.Topic, Partition: p.Partition}
			if named[k]++; named[k] == 1 {
				layout[at].parts = append(layout[at].parts, p)
			}
		}
	}
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(layout))
	fan := newFanOut(r)
	for i, l := range layout {
		rt := &resp.Topics[i]
		*rt = kmsg.NewListOffsetsResponseTopic()
		rt.Topic = l.name
		rt.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(l.parts))
		for j, p := range l.parts {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			if named[routing.TP{Topic: l.name, Partition: p.Partition}] > 1 {
				rp.ErrorCode = kerr.InvalidRequest.Code
				continue
			}
			if least, special := listOffsetsSince[p.Timestamp]; special && req.Version < least {
				rp.ErrorCode = kerr.UnsupportedVersion.Code
				continue
			}
			fan.send(l.name, p.Partition, &rp.ErrorCode, func(done func()) any {
				return &messages.ListOffsets{
					Timestamp: p.Timestamp, CurrentLeaderEpoch: p.CurrentLeaderEpoch, IsolationLevel: req.IsolationLevel,
					Reply: func(res messages.ListOffsetsResult) {
						rp.ErrorCode, rp.Timestamp, rp.Offset, rp.LeaderEpoch = res.ErrorCode, res.Timestamp, res.Offset, res.LeaderEpoch
						if req.Version == 0 && res.ErrorCode == 0 && res.Offset >= 0 && p.MaxNumOffsets > 0 {
							rp.OldStyleOffsets = []int64{res.Offset}
						}
						done()
					},
				}
			})
		}
	}
	return fan.answer(resp)
}

// listOffsetsSince is the first ListOffsets version that defines each
// special timestamp.
var listOffsetsSince = map[int64]int16{-1: 0, -2: 0, -3: 7, -4: 8, -5: 9, -6: 11}

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
