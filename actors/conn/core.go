package conn

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

// registerCore registers the APIs this package serves. Consumer-group APIs
// are registered by the group package.
func registerCore(s *Server) {
	for _, a := range []API{
		{Key: kmsg.Produce.Int16(), MinVersion: 3, MaxVersion: 11, Handle: handleProduce},
		{Key: kmsg.Fetch.Int16(), MinVersion: 4, MaxVersion: 16, Handle: handleFetch},
		{Key: kmsg.ListOffsets.Int16(), MinVersion: 1, MaxVersion: 8, Handle: handleListOffsets},
		{Key: kmsg.Metadata.Int16(), MinVersion: 0, MaxVersion: 12, Handle: handleMetadata},
		{Key: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: 4, Handle: handleApiVersions},
		{Key: kmsg.CreateTopics.Int16(), MinVersion: 0, MaxVersion: 7, Handle: handleCreateTopics},
		{Key: kmsg.DeleteTopics.Int16(), MinVersion: 0, MaxVersion: 6, Handle: handleDeleteTopics},
		{Key: kmsg.DeleteRecords.Int16(), MinVersion: 0, MaxVersion: 2, Handle: handleDeleteRecords},
		{Key: kmsg.InitProducerID.Int16(), MinVersion: 0, MaxVersion: 4, Handle: handleInitProducerID},
		{Key: kmsg.OffsetForLeaderEpoch.Int16(), MinVersion: 0, MaxVersion: 4, Handle: handleOffsetForLeaderEpoch},
		{Key: kmsg.DescribeConfigs.Int16(), MinVersion: 0, MaxVersion: 4, Handle: handleDescribeConfigs},
		{Key: kmsg.AlterConfigs.Int16(), MinVersion: 0, MaxVersion: 2, Handle: handleAlterConfigs},
		{Key: kmsg.CreatePartitions.Int16(), MinVersion: 0, MaxVersion: 3, Handle: handleCreatePartitions},
		{Key: kmsg.IncrementalAlterConfigs.Int16(), MinVersion: 0, MaxVersion: 1, Handle: handleIncrementalAlterConfigs},
		{Key: kmsg.DescribeCluster.Int16(), MinVersion: 0, MaxVersion: 2, Handle: handleDescribeCluster},
	} {
		s.Register(a)
	}
}

// partitionTarget resolves a partition to its local actor, or to the error
// a client should see: UNKNOWN_TOPIC_OR_PARTITION when it does not exist,
// NOT_LEADER_OR_FOLLOWER when another broker (or nobody, mid-move) leads it.
func partitionTarget(v *routing.View, topic string, partition int32) (ref partitionRef, code int16) {
	t, ok := v.Topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return partitionRef{}, kerr.UnknownTopicOrPartition.Code
	}
	r, ok := v.Local[routing.TP{Topic: topic, Partition: partition}]
	if !ok {
		return partitionRef{}, kerr.NotLeaderForPartition.Code
	}
	return partitionRef{ref: r, epoch: t.Partitions[partition].LeaderEpoch}, 0
}

type partitionRef struct {
	ref interface{ Send(any) }
	// epoch is the leader epoch the view knows.
	epoch int32
}

// topicName resolves a topic by name, or by id when the name is empty and
// the id is set (Fetch v13+, Metadata v12, DeleteTopics v6).
func topicName(v *routing.View, name string, id [16]byte) (string, bool) {
	if name != "" {
		_, ok := v.Topics[name]
		return name, ok
	}
	if t, ok := v.TopicIDs[id]; ok {
		return t.Name, true
	}
	return "", false
}

// waitGroup gathers replies from actors; each reply writes its own slot.
type waitGroup = sync.WaitGroup
