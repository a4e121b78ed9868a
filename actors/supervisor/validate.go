package supervisor

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

const manualAssignmentRefused = "kaas places partitions itself; manual replica assignment is not supported"

// topicRequest is one entry of a topic-admin request, exactly one of
// Create, Grow or Alter set, with what the mode knows of its topic.
type topicRequest struct {
	Create *messages.TopicSpec      // a CreateTopics entry
	Grow   *messages.PartitionCount // a CreatePartitions entry
	Alter  map[string]string        // the config of an AlterConfigs entry
	// Exists: the topic is known. Current: its partition count (Grow).
	Exists  bool
	Current int32
}

// topicError is the Kafka error a topic-admin entry gets (0 if valid):
// the one set of rules (names, partition counts, replication factor, the
// refusal of manual replica assignment, configs through topicconfig) for
// both the local registry and KafkaTopic objects.
func topicError(r topicRequest, maxPartitions int32) (int16, string) {
	switch {
	case r.Create != nil:
		return createError(*r.Create, r.Exists, maxPartitions)
	case r.Grow != nil:
		return growError(*r.Grow, r.Exists, r.Current, maxPartitions)
	}
	if !r.Exists {
		return kerr.UnknownTopicOrPartition.Code, ""
	}
	if err := topicconfig.Validate(r.Alter); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	return 0, ""
}

func createError(spec messages.TopicSpec, exists bool, maxPartitions int32) (int16, string) {
	if err := topicconfig.ValidTopicName(spec.Name); err != nil {
		return kerr.InvalidTopicException.Code, err.Error()
	}
	if exists {
		return kerr.TopicAlreadyExists.Code, fmt.Sprintf("topic %q already exists", spec.Name)
	}
	if spec.ManualAssignment {
		return kerr.InvalidReplicaAssignment.Code, manualAssignmentRefused
	}
	if spec.Partitions == 0 || spec.Partitions < -1 {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("partition count %d must be positive", spec.Partitions)
	}
	if spec.Partitions > maxPartitions {
		return kerr.InvalidPartitions.Code, fmt.Sprintf("partition count %d exceeds the limit %d", spec.Partitions, maxPartitions)
	}
	if spec.ReplicationFactor == 0 || spec.ReplicationFactor < -1 {
		return kerr.InvalidReplicationFactor.Code, fmt.Sprintf("replication factor %d must be -1 or positive", spec.ReplicationFactor)
	}
	if err := topicconfig.Validate(spec.Config); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	return 0, ""
}

func growError(pc messages.PartitionCount, exists bool, current, maxPartitions int32) (int16, string) {
	switch {
	case !exists:
		return kerr.UnknownTopicOrPartition.Code, ""
	case pc.ManualAssignment:
		return kerr.InvalidReplicaAssignment.Code, manualAssignmentRefused
	case pc.Count <= current:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("topic %q has %d partitions; the new count %d must be larger", pc.Topic, current, pc.Count)
	case pc.Count > maxPartitions:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("partition count %d exceeds the limit %d", pc.Count, maxPartitions)
	}
	return 0, ""
}
