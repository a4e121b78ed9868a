package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// DescribeQuorum (key 55): v0-2 (kafka-metadata-quorum.sh describe). kaas
// has no Raft quorum: its metadata log is the series of assignment files,
// so the answer maps it onto Kafka's shape. Any broker forwards the request
// to the controller, as Kafka's brokers do. The partition is
// __cluster_metadata-0; its leader, and only voter, is the controller; the
// leader epoch is the controller epoch (the Lease's transitions); an
// offset is an assignment file's version, so the high watermark is the
// newest file written and each broker (an observer) is at the file it last
// reported applying, its lag how many files behind it is. Fetch times are
// heartbeats: LastFetchTimestamp is a broker's last heartbeat,
// LastCaughtUpTimestamp the last one that named the newest file then. A
// registered broker not heard from since this controller's election is at
// offset -1. v2's nodes give the voter's Kafka listener (kaas serves no
// controller endpoints).
func init() {
	serve(API{Key: kmsg.DescribeQuorum.Int16(), MinVersion: 0, MaxVersion: 2, Handle: handleDescribeQuorum})
}

// metadataLog is the topic name of Kafka's metadata log.
const metadataLog = "__cluster_metadata"

func handleDescribeQuorum(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeQuorumRequest)
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	listener := r.Session.Listener
	done := make(chan struct{})
	r.Server.Supervisor().Send(&messages.DescribeQuorum{Reply: func(q messages.Quorum, code int16, msg string) {
		defer close(done)
		if code != 0 {
			resp.ErrorCode, resp.ErrorMessage = code, optString(msg)
			return
		}
		describeQuorum(req, resp, q, listener)
	}})
	return func() kmsg.Response {
		<-done
		return resp
	}
}

// describeQuorum fills resp from the controller's view q. A request for
// another topic or partition gets UNKNOWN_TOPIC_OR_PARTITION for it, as
// from Kafka.
func describeQuorum(req *kmsg.DescribeQuorumRequest, resp *kmsg.DescribeQuorumResponse, q messages.Quorum, listener string) {
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewDescribeQuorumResponseTopicPartition()
			p.Partition = rp.Partition
			if rt.Topic != metadataLog || rp.Partition != 0 {
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
				t.Partitions = append(t.Partitions, p)
				continue
			}
			p.LeaderID, p.LeaderEpoch, p.HighWatermark = q.ControllerID, int32(q.Epoch), q.Version
			for _, m := range q.Members {
				st := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
				st.ReplicaID, st.LogEndOffset, st.LastFetchTimestamp, st.LastCaughtUpTimestamp = m.ID, m.Applied, m.LastPing, m.CaughtUp
				if m.ID == q.ControllerID {
					p.CurrentVoters = append(p.CurrentVoters, st)
					if req.Version >= 2 {
						n := kmsg.NewDescribeQuorumResponseNode()
						n.NodeID = m.ID
						n.Listeners = []kmsg.DescribeQuorumResponseNodeListener{{Name: listener, Host: m.Host, Port: uint16(m.Port)}}
						resp.Nodes = append(resp.Nodes, n)
					}
				} else {
					p.Observers = append(p.Observers, st)
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
}
