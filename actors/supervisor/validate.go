package supervisor

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/brokerconfig"
	"github.com/kaas-project/kaas/storage/topicconfig"
	"github.com/kaas-project/kaas/storage/topicname"
)

// topicRequest is one entry of a topic-admin request, exactly one of
// Create, Grow or Alter set, with what the mode knows of its topic.
type topicRequest struct {
	Create *messages.TopicSpec      // a CreateTopics entry
	Grow   *messages.PartitionCount // a CreatePartitions entry
	Alter  map[string]string        // the config of an AlterConfigs entry
	// Exists: the topic is known. Current: its partition count (Grow).
	Exists bool
	// Collides names a known topic a new one collides with (Create):
	// topicname.Collision.
	Collides string
	Current  int32
	// Registered reports whether a broker id is registered (manual replica
	// assignments may name only those).
	Registered func(id int32) bool
}

// knownNames is what a new topic may collide with (topicname.Collision):
// the topics known, sorted, and the internal ones. Topics created earlier
// in the same request are appended by the caller as they are accepted, so
// "a.b" and "a_b" in one request do not both get through.
func knownNames(topics []string) []string {
	names := slices.Sorted(slices.Values(topics))
	for _, it := range routing.InternalTopics {
		names = append(names, it.Name)
	}
	return names
}

// admit applies a request's controller_mutation_rate to the n partitions
// of a valid entry; a refused entry gets THROTTLING_QUOTA_EXCEEDED with
// Kafka's message.
func admit(q messages.MutationQuota, n int32, r *messages.TopicResult) bool {
	if q.Admit(n) {
		return true
	}
	r.ErrorCode, r.ErrorMessage = kerr.ThrottlingQuotaExceeded.Code, "The throttling quota has been exceeded."
	return false
}

// topicError is the Kafka error a topic-admin entry gets (0 if valid):
// the one set of rules (names, partition counts, replication factor, the
// refusal of manual replica assignment, configs through topicconfig) for
// both the local registry and KafkaTopic objects.
func topicError(r topicRequest, maxPartitions int32) (int16, string) {
	switch {
	case r.Create != nil:
		return createError(*r.Create, r.Exists, r.Collides, maxPartitions, r.Registered)
	case r.Grow != nil:
		return growError(*r.Grow, r.Exists, r.Current, maxPartitions, r.Registered)
	}
	if !r.Exists {
		return kerr.UnknownTopicOrPartition.Code, ""
	}
	if err := topicconfig.Validate(r.Alter); err != nil {
		return kerr.InvalidConfig.Code, err.Error()
	}
	return 0, ""
}

func createError(spec messages.TopicSpec, exists bool, collides string, maxPartitions int32, registered func(int32) bool) (int16, string) {
	if err := topicname.Validate(spec.Name); err != nil {
		return kerr.InvalidTopicException.Code, err.Error()
	}
	if exists {
		return kerr.TopicAlreadyExists.Code, fmt.Sprintf("topic %q already exists", spec.Name)
	}
	if collides != "" {
		// Kafka's controller answer: metric names would mix the two up.
		return kerr.InvalidTopicException.Code, fmt.Sprintf("Topic '%s' collides with existing topic: %s", spec.Name, collides)
	}
	if spec.ManualAssignment {
		if spec.Partitions != -1 || spec.ReplicationFactor != -1 {
			// Kafka's answer: the assignment alone gives both.
			return kerr.InvalidRequest.Code, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time."
		}
		if len(spec.Assignment) > int(maxPartitions) {
			return kerr.InvalidPartitions.Code, fmt.Sprintf("partition count %d exceeds the limit %d", len(spec.Assignment), maxPartitions)
		}
		if code, msg := assignmentError(spec.Assignment, registered); code != 0 {
			return code, msg
		}
		spec.Partitions = int32(len(spec.Assignment))
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

func growError(pc messages.PartitionCount, exists bool, current, maxPartitions int32, registered func(int32) bool) (int16, string) {
	switch {
	case !exists:
		return kerr.UnknownTopicOrPartition.Code, ""
	case pc.ManualAssignment && int32(len(pc.Assignment)) != pc.Count-current:
		return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", pc.Count-current, len(pc.Assignment))
	case pc.ManualAssignment:
		if code, msg := assignmentError(pc.Assignment, registered); code != 0 {
			return code, msg
		}
	}
	switch {
	case pc.Count <= current:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("topic %q has %d partitions; the new count %d must be larger", pc.Topic, current, pc.Count)
	case pc.Count > maxPartitions:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("partition count %d exceeds the limit %d", pc.Count, maxPartitions)
	}
	return 0, ""
}

// assignmentError checks a manual replica assignment as Kafka does: every
// partition names at least one replica, no broker twice, all partitions
// the same number, and only registered brokers. kaas keeps one copy and
// pins the first replica as the leader; the others are accepted and not
// kept.
func assignmentError(assignment [][]int32, registered func(int32) bool) (int16, string) {
	if len(assignment) == 0 {
		return kerr.InvalidReplicaAssignment.Code, "the replica assignment names no partition"
	}
	for p, replicas := range assignment {
		if len(replicas) == 0 {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes an empty replica list for partition %d.", p)
		}
		if len(replicas) != len(assignment[0]) {
			return kerr.InvalidReplicaAssignment.Code, "All partitions in the manual partition assignment must have the same number of replicas."
		}
		for i, b := range replicas {
			for _, o := range replicas[:i] {
				if o == b {
					return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes broker %d more than once.", b)
				}
			}
			if registered == nil || !registered(b) {
				return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", b)
			}
		}
	}
	return 0, ""
}

// withDefaults is a topic's config over the broker defaults in force: what
// its partitions obey (the routing view keeps the topic's own config).
func withDefaults(defaults func() map[string]string, cfg map[string]string) map[string]string {
	if defaults == nil {
		return cfg
	}
	return brokerconfig.WithDefaults(cfg, defaults())
}
