package conn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

func TestDescribeQuorumMapsTheAssignmentFiles(t *testing.T) {
	q := messages.Quorum{ControllerID: 1, Epoch: 7, Version: 42, Members: []messages.QuorumMember{
		{ID: 0, Host: "kaas-0", Port: 9092, Applied: 41, LastPing: 1000, CaughtUp: 900},
		{ID: 1, Host: "kaas-1", Port: 9092, Applied: 42, LastPing: 2000, CaughtUp: 2000},
		{ID: 2, Host: "kaas-2", Port: 9093, Applied: -1, LastPing: -1, CaughtUp: -1},
	}}
	for _, version := range []int16{0, 2} {
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Version = version
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}, {Partition: 1}}
		other := kmsg.NewDescribeQuorumRequestTopic()
		other.Topic = "orders"
		other.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
		req.Topics = []kmsg.DescribeQuorumRequestTopic{rt, other}
		resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
		describeQuorum(req, resp, q, "PLAINTEXT")

		if len(resp.Topics) != 2 || len(resp.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: topics %+v", version, resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch != 7 || p.HighWatermark != 42 {
			t.Fatalf("v%d: partition %+v", version, p)
		}
		if len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaID != 1 || p.CurrentVoters[0].LogEndOffset != 42 {
			t.Fatalf("v%d: voters %+v", version, p.CurrentVoters)
		}
		if len(p.Observers) != 2 || p.Observers[0].ReplicaID != 0 || p.Observers[0].LogEndOffset != 41 ||
			p.Observers[0].LastFetchTimestamp != 1000 || p.Observers[0].LastCaughtUpTimestamp != 900 ||
			p.Observers[1].ReplicaID != 2 || p.Observers[1].LogEndOffset != -1 || p.Observers[1].LastFetchTimestamp != -1 {
			t.Fatalf("v%d: observers %+v", version, p.Observers)
		}
		for _, bad := range []kmsg.DescribeQuorumResponseTopicPartition{resp.Topics[0].Partitions[1], resp.Topics[1].Partitions[0]} {
			if bad.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("v%d: a partition that is not the metadata log: %+v", version, bad)
			}
		}
		wantNodes := 0
		if version >= 2 {
			wantNodes = 1
		}
		if len(resp.Nodes) != wantNodes {
			t.Fatalf("v%d: nodes %+v", version, resp.Nodes)
		}
		if wantNodes == 1 {
			if n := resp.Nodes[0]; n.NodeID != 1 || len(n.Listeners) != 1 || n.Listeners[0].Name != "PLAINTEXT" || n.Listeners[0].Host != "kaas-1" || n.Listeners[0].Port != 9092 {
				t.Fatalf("v2 node %+v", n)
			}
		}
		// It encodes at its version.
		if b := resp.AppendTo(nil); len(b) == 0 {
			t.Fatalf("v%d: empty encoding", version)
		}
	}
}
