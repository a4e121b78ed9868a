package conn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsetsDuplicatePartitions: a partition named twice (here in a
// topic named twice) is answered once, INVALID_REQUEST, without asking its
// partition actor, as Kafka answers from v1.
func TestListOffsetsDuplicatePartitions(t *testing.T) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 11
	for range 2 {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "a"
		for _, ts := range []int64{-1, -2} {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = 3, ts
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := handleListOffsets(&Request{Body: req})().(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "a" || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answer %+v, want topic a with one partition", resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	if p.Partition != 3 || p.ErrorCode != kerr.InvalidRequest.Code || p.Offset != -1 || p.Timestamp != -1 || p.LeaderEpoch != -1 {
		t.Errorf("partition answer %+v, want partition 3 INVALID_REQUEST, offset, timestamp and epoch -1", p)
	}
}
