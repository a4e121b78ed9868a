package messages

// TopicSpec asks for one topic.
type TopicSpec struct {
	Name              string
	Partitions        int32 // -1 = broker default
	ReplicationFactor int16 // -1 = broker default; kaas keeps one shared copy
	Config            map[string]string
	// ManualAssignment is set when the client named replicas itself;
	// Assignment then lists each partition's replicas (index = partition).
	// kaas keeps one copy: the first replica is pinned as the leader.
	ManualAssignment bool
	Assignment       [][]int32
}

// TopicResult answers one topic of an admin request.
type TopicResult struct {
	Name         string
	ID           [16]byte
	ErrorCode    int16
	ErrorMessage string
	Partitions   int32
	Config       map[string]string
}

// MutationQuota admits the partitions one topic creates or deletes against
// the requesting client's controller_mutation_rate (KIP-599), after the
// topic is validated and before it is changed, in request order, as
// Kafka's controller applies it; false refuses the topic with
// THROTTLING_QUOTA_EXCEEDED. Nil admits everything. It may be called from
// any goroutine.
type MutationQuota func(partitions int32) bool

// Admit applies q to n partitions.
func (q MutationQuota) Admit(n int32) bool { return q == nil || q(n) }

// CreateTopics creates topics (CreateTopics, and auto-creation by Metadata
// in local-dev mode).
type CreateTopics struct {
	Topics       []TopicSpec
	ValidateOnly bool
	Quota        MutationQuota
	Reply        func([]TopicResult)
}

// DeleteTopics deletes topics by name or id (a zero id means by name).
type DeleteTopics struct {
	Names []string
	IDs   [][16]byte
	Quota MutationQuota
	Reply func([]TopicResult)
}

// PartitionCount asks a topic to grow to Count partitions.
type PartitionCount struct {
	Topic string
	Count int32
	// ManualAssignment is set when the client named replicas itself;
	// Assignment then lists the replicas of each new partition in order.
	ManualAssignment bool
	Assignment       [][]int32
}

// CreatePartitions grows topics.
type CreatePartitions struct {
	Topics       []PartitionCount
	ValidateOnly bool
	Quota        MutationQuota
	Reply        func([]TopicResult)
}

// AlterTopicConfig replaces a topic's whole config map (the handler merges
// incremental changes into the current map first).
type AlterTopicConfig struct {
	Topic        string
	Config       map[string]string
	ValidateOnly bool
	Reply        func(TopicResult)
}

// SetPins changes which partitions of a topic are pinned to a broker
// (AlterPartitionReassignments): Pins maps a partition to the broker that
// should lead it, or to -1 to drop its pin. The caller has validated the
// topic, the partitions and the brokers against the routing view.
type SetPins struct {
	Topic string
	Pins  map[int32]int32
	Reply func(TopicResult)
}

// UnregisterBroker removes a broker gone for good from the registered set
// (Kafka's UnregisterBroker): only a dead broker can be. Reply gets a Kafka
// error code and message, 0 once the broker's row is gone from the
// assignment.
type UnregisterBroker struct {
	ID    int32
	Reply func(code int16, msg string)
}

// DescribeQuorum asks for the controller's view of the brokers' progress
// through the assignment files (Kafka's DescribeQuorum): Reply gets it, or
// a Kafka error code and message.
type DescribeQuorum struct {
	Reply func(Quorum, int16, string)
}

// Quorum is the controller's view: assignment files play the metadata
// log, a file's version its offset.
type Quorum struct {
	ControllerID int32
	Epoch        int64
	// Version is the newest file the controller wrote.
	Version int64
	Members []QuorumMember
}

// QuorumMember is one registered broker's progress: the newest file it
// applied (-1: not heard from), when it last heartbeated and when it last
// had applied the newest file (Unix ms, -1: never).
type QuorumMember struct {
	ID                 int32
	Host               string
	Port               int32
	Applied            int64
	LastPing, CaughtUp int64
}

// FirstReplicas returns the pins a manual replica assignment asks for:
// partition first+i pinned to the first replica of assignment[i].
func FirstReplicas(first int32, assignment [][]int32) map[int32]int32 {
	out := make(map[int32]int32, len(assignment))
	for i, rs := range assignment {
		if len(rs) > 0 {
			out[first+int32(i)] = rs[0]
		}
	}
	return out
}
