package streams

import "github.com/twmb/franz-go/pkg/kmsg"

// Heartbeat status codes (StreamsGroupHeartbeatResponse.Status).
const (
	StatusStaleTopology                int8 = 0
	StatusMissingSourceTopics          int8 = 1
	StatusIncorrectlyPartitionedTopics int8 = 2
	StatusMissingInternalTopics        int8 = 3
	StatusShutdownApplication          int8 = 4
)

// TopologyTopics lists, once each and sorted, every topic a topology names:
// source, repartition sink and source, and changelog topics (what Kafka's
// broker checks before its coordinator sees a join).
func TopologyTopics(t *kmsg.StreamsGroupHeartbeatRequestTopology) []string {
	return fromRequest(t).topicNames()
}
