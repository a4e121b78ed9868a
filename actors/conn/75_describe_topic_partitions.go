package conn

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTopicPartitions (key 75, KIP-966): v0, from the routing view,
// topics in name order (internal ones included), paged by a cursor: at most
// ResponsePartitionLimit partitions (capped at Kafka's default
// max.request.partition.size.limit, 2000) per answer, and NextCursor names
// the first partition left out. Partitions are described as Metadata
// describes them; one copy means no eligible-leader replicas.
func init() {
	serve(API{Key: kmsg.DescribeTopicPartitions.Int16(), MinVersion: 0, MaxVersion: 0, Handle: handleDescribeTopicPartitions,
		ErrorResponse: describeTopicPartitionsError})
}

// maxPartitionsPerDescribe is Kafka's max.request.partition.size.limit default.
const maxPartitionsPerDescribe = 2000

func handleDescribeTopicPartitions(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	v := r.View
	var names []string
	if len(req.Topics) == 0 {
		names = v.AllTopicNames()
	} else {
		seen := map[string]bool{}
		for _, t := range req.Topics {
			if !seen[t.Topic] {
				seen[t.Topic] = true
				names = append(names, t.Topic)
			}
		}
	}
	sort.Strings(names)
	if c := req.Cursor; c != nil && len(req.Topics) > 0 {
		if i := sort.SearchStrings(names, c.Topic); i == len(names) || names[i] != c.Topic {
			return Ready(describeTopicPartitionsError(req, kerr.InvalidRequest.Code))
		}
	}
	limit := int(req.ResponsePartitionLimit)
	if limit <= 0 || limit > maxPartitionsPerDescribe {
		limit = maxPartitionsPerDescribe
	}
	for _, name := range names {
		first := int32(0)
		if c := req.Cursor; c != nil {
			if name < c.Topic {
				continue
			}
			if name == c.Topic {
				first = max(c.Partition, 0)
			}
		}
		t, ok := v.AnyTopic(name)
		if !ok {
			rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			rt.Topic = kmsg.StringPtr(name)
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if limit == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: first}
			break
		}
		md := metadataTopic(v, t)
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.TopicID, rt.IsInternal = md.Topic, md.TopicID, md.IsInternal
		for p := first; int(p) < len(md.Partitions); p++ {
			if limit == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p}
				break
			}
			mp := md.Partitions[p]
			dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			dp.ErrorCode, dp.Partition, dp.LeaderID, dp.LeaderEpoch = mp.ErrorCode, mp.Partition, mp.Leader, mp.LeaderEpoch
			dp.Replicas, dp.ISR, dp.OfflineReplicas = mp.Replicas, mp.ISR, mp.OfflineReplicas
			dp.EligibleLeaderReplicas, dp.LastKnownELR = []int32{}, []int32{}
			rt.Partitions = append(rt.Partitions, dp)
			limit--
		}
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
	}
	return Ready(resp)
}

// describeTopicPartitionsError answers every requested topic with code.
func describeTopicPartitionsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr(t.Topic), code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
