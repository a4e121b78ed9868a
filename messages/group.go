package messages

// GroupCall routes one consumer-group operation to the actor of Group, through
// the group manager (which spawns that actor on demand, or answers
// NOT_COORDINATOR itself when this broker does not coordinate the group).
type GroupCall struct {
	Group      string
	ClientID   string
	ClientHost string
	// Principal is the connection's authenticated principal ("User:..."):
	// a KIP-848 regex resolves to the topics it may describe.
	Principal string
	// Op is the request: the kmsg request body for APIs that address one
	// group (*kmsg.JoinGroupRequest, *kmsg.SyncGroupRequest,
	// *kmsg.HeartbeatRequest, *kmsg.LeaveGroupRequest,
	// *kmsg.OffsetCommitRequest, *kmsg.OffsetDeleteRequest,
	// *kmsg.ConsumerGroupHeartbeatRequest), or one group's share of a
	// multi-group request (*GroupFetchOffsets, *GroupDescribe, *GroupDelete,
	// *GroupDescribeConsumer).
	Op any
	// Reply is called exactly once, from the group's actor or the manager,
	// with the kmsg response (for one-group APIs) or the kmsg per-group
	// result (kmsg.OffsetFetchResponseGroup, kmsg.DescribeGroupsResponseGroup,
	// kmsg.DeleteGroupsResponseGroup, kmsg.ConsumerGroupDescribeResponseGroup).
	// It must not block.
	Reply func(any)
}

// GroupTopic names partitions by topic name, or by id (OffsetFetch v10+).
type GroupTopic struct {
	Topic      string
	TopicID    [16]byte
	Partitions []int32
}

// GroupFetchOffsets is one group's part of an OffsetFetch.
type GroupFetchOffsets struct {
	Version int16
	// Topics is nil to fetch every committed offset.
	Topics []GroupTopic
	// MemberID and MemberEpoch identify a KIP-848 member (v9+); an admin
	// fetch has no member id and epoch -1.
	MemberID      *string
	MemberEpoch   int32
	RequireStable bool
}

// GroupDescribe is one group's part of DescribeGroups.
type GroupDescribe struct {
	Version int16
}

// GroupDelete is one group's part of DeleteGroups.
type GroupDelete struct{}

// GroupDescribeConsumer is one group's part of ConsumerGroupDescribe.
type GroupDescribeConsumer struct{}

// GroupDescribeShare is one group's part of ShareGroupDescribe.
type GroupDescribeShare struct{}

// GroupDescribeStreams is one group's part of StreamsGroupDescribe.
type GroupDescribeStreams struct{}

// GroupConfigsChanged tells the group coordinator that a group's GROUP
// configs changed on this broker: its actor, when it has one, reads them
// again.
type GroupConfigsChanged struct{ Group string }

// GroupShareAdmin asks a group whether an admin may change its
// share-partition state (AlterShareGroupOffsets, DeleteShareGroupOffsets):
// the reply is an error code (0: yes). Create makes an absent group an
// empty share group.
type GroupShareAdmin struct{ Create bool }

// GroupRow is one ListGroups row.
type GroupRow struct {
	Group        string
	ProtocolType string
	State        string
	Type         string
}

// GroupList asks the group manager for the groups this broker coordinates.
// Reply gets the rows, or a non-zero error code (the coordinator is still
// loading).
type GroupList struct {
	States []string // empty = any state (case-insensitive)
	Types  []string // empty = any type: "classic", "consumer"
	Reply  func(rows []GroupRow, errorCode int16)
}

// GroupsViewChanged tells the group manager the routing view changed: it
// relinquishes the groups this broker no longer coordinates and loads the
// stored groups it now does. The manager also polls the view, so sending
// this only makes the hand-over prompt.
type GroupsViewChanged struct{}
