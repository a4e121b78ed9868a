package supervisor

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

const manualAssignmentRefused = "kaas places partitions itself; manual replica assignment is not supported"

// specError is the Kafka error a CreateTopics entry gets (0 if valid), for
// both the local registry and KafkaTopic objects.
func specError(spec messages.TopicSpec, exists bool, maxPartitions int32) (int16, string) {
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

// growError is the Kafka error a CreatePartitions entry gets (0 if valid).
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
