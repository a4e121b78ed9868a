package messages

// TopicSpec asks for one topic.
type TopicSpec struct {
	Name              string
	Partitions        int32 // -1 = broker default
	ReplicationFactor int16 // -1 = broker default; kaas keeps one shared copy
	Config            map[string]string
	// ManualAssignment is set when the client named replicas itself.
	ManualAssignment bool
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

// CreateTopics creates topics (CreateTopics, and auto-creation by Metadata
// in local-dev mode).
type CreateTopics struct {
	Topics       []TopicSpec
	ValidateOnly bool
	Reply        func([]TopicResult)
}

// DeleteTopics deletes topics by name or id (a zero id means by name).
type DeleteTopics struct {
	Names []string
	IDs   [][16]byte
	Reply func([]TopicResult)
}

// PartitionCount asks a topic to grow to Count partitions.
type PartitionCount struct {
	Topic string
	Count int32
	// ManualAssignment is set when the client named replicas itself.
	ManualAssignment bool
}

// CreatePartitions grows topics.
type CreatePartitions struct {
	Topics       []PartitionCount
	ValidateOnly bool
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
