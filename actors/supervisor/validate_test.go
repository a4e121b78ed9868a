package supervisor

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/messages"
)

func TestTopicError(t *testing.T) {
	const limit = 100
	create := func(name string, partitions int32, rf int16, cfg map[string]string) *messages.TopicSpec {
		return &messages.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: rf, Config: cfg}
	}
	manualSpec := func(partitions int32, rf int16, assignment ...[]int32) *messages.TopicSpec {
		s := create("t", partitions, rf, nil)
		s.ManualAssignment, s.Assignment = true, assignment
		return s
	}
	registered := func(id int32) bool { return id >= 0 && id < 3 }
	manual := func(assignment ...[]int32) topicRequest {
		return topicRequest{Create: manualSpec(-1, -1, assignment...), Registered: registered}
	}
	grow := func(count int32, manual bool, assignment ...[]int32) *messages.PartitionCount {
		return &messages.PartitionCount{Topic: "t", Count: count, ManualAssignment: manual, Assignment: assignment}
	}
	for _, tc := range []struct {
		name string
		req  topicRequest
		want int16
	}{
		{"create: valid", topicRequest{Create: create("orders.v1_x-y", 3, 1, map[string]string{"retention.ms": "1000"})}, 0},
		{"create: default partitions and replication factor", topicRequest{Create: create("t", -1, -1, nil)}, 0},
		{"create: empty name", topicRequest{Create: create("", 1, 1, nil)}, kerr.InvalidTopicException.Code},
		{"create: name ..", topicRequest{Create: create("..", 1, 1, nil)}, kerr.InvalidTopicException.Code},
		{"create: bad character", topicRequest{Create: create("a/b", 1, 1, nil)}, kerr.InvalidTopicException.Code},
		{"create: a bad name before existing", topicRequest{Create: create("a b", 1, 1, nil), Exists: true}, kerr.InvalidTopicException.Code},
		{"create: exists", topicRequest{Create: create("t", 1, 1, nil), Exists: true}, kerr.TopicAlreadyExists.Code},
		{"create: collides", topicRequest{Create: create("a_b", 1, 1, nil), Collides: "a.b"}, kerr.InvalidTopicException.Code},
		{"create: exists before collides", topicRequest{Create: create("a_b", 1, 1, nil), Exists: true, Collides: "a.b"}, kerr.TopicAlreadyExists.Code},
		{"create: manual assignment", manual([]int32{2, 0}, []int32{1, 2}), 0},
		{"create: manual assignment and a partition count", topicRequest{Create: manualSpec(2, -1, []int32{0}, []int32{1}), Registered: registered}, kerr.InvalidRequest.Code},
		{"create: manual assignment of an unknown broker", manual([]int32{0}, []int32{7}), kerr.InvalidReplicaAssignment.Code},
		{"create: manual assignment naming a broker twice", manual([]int32{1, 1}), kerr.InvalidReplicaAssignment.Code},
		{"create: manual assignment with an empty list", manual([]int32{0}, []int32{}), kerr.InvalidReplicaAssignment.Code},
		{"create: manual assignment of uneven replica counts", manual([]int32{0}, []int32{1, 2}), kerr.InvalidReplicaAssignment.Code},
		{"create: manual assignment, no broker registered", topicRequest{Create: manualSpec(-1, -1, []int32{0})}, kerr.InvalidReplicaAssignment.Code},
		{"create: zero partitions", topicRequest{Create: create("t", 0, 1, nil)}, kerr.InvalidPartitions.Code},
		{"create: negative partitions", topicRequest{Create: create("t", -2, 1, nil)}, kerr.InvalidPartitions.Code},
		{"create: partitions at the limit", topicRequest{Create: create("t", limit, 1, nil)}, 0},
		{"create: partitions over the limit", topicRequest{Create: create("t", limit+1, 1, nil)}, kerr.InvalidPartitions.Code},
		{"create: zero replication factor", topicRequest{Create: create("t", 1, 0, nil)}, kerr.InvalidReplicationFactor.Code},
		{"create: replication factor -2", topicRequest{Create: create("t", 1, -2, nil)}, kerr.InvalidReplicationFactor.Code},
		{"create: replication factor 3 (accepted, one copy kept)", topicRequest{Create: create("t", 1, 3, nil)}, 0},
		{"create: unknown config", topicRequest{Create: create("t", 1, 1, map[string]string{"no.such": "1"})}, kerr.InvalidConfig.Code},
		{"create: bad config value", topicRequest{Create: create("t", 1, 1, map[string]string{"retention.ms": "soon"})}, kerr.InvalidConfig.Code},
		{"grow: valid", topicRequest{Grow: grow(4, false), Exists: true, Current: 2}, 0},
		{"grow: unknown topic", topicRequest{Grow: grow(4, false), Current: 0}, kerr.UnknownTopicOrPartition.Code},
		{"grow: manual assignment", topicRequest{Grow: grow(4, true, []int32{2}, []int32{0}), Exists: true, Current: 2, Registered: registered}, 0},
		{"grow: manual assignment of the wrong length", topicRequest{Grow: grow(4, true, []int32{2}), Exists: true, Current: 2, Registered: registered}, kerr.InvalidReplicaAssignment.Code},
		{"grow: manual assignment of an unknown broker", topicRequest{Grow: grow(3, true, []int32{5}), Exists: true, Current: 2, Registered: registered}, kerr.InvalidReplicaAssignment.Code},
		{"grow: same count", topicRequest{Grow: grow(2, false), Exists: true, Current: 2}, kerr.InvalidPartitions.Code},
		{"grow: shrink", topicRequest{Grow: grow(1, false), Exists: true, Current: 2}, kerr.InvalidPartitions.Code},
		{"grow: over the limit", topicRequest{Grow: grow(limit+1, false), Exists: true, Current: 2}, kerr.InvalidPartitions.Code},
		{"alter: valid", topicRequest{Alter: map[string]string{"retention.ms": "60000"}, Exists: true}, 0},
		{"alter: empty (every key to its default)", topicRequest{Alter: map[string]string{}, Exists: true}, 0},
		{"alter: unknown topic", topicRequest{Alter: map[string]string{"retention.ms": "1"}}, kerr.UnknownTopicOrPartition.Code},
		{"alter: unknown topic before a bad config", topicRequest{Alter: map[string]string{"no.such": "1"}}, kerr.UnknownTopicOrPartition.Code},
		{"alter: unknown config", topicRequest{Alter: map[string]string{"no.such": "1"}, Exists: true}, kerr.InvalidConfig.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := topicError(tc.req, limit)
			if code != tc.want {
				t.Fatalf("code %d (%s), want %d", code, msg, tc.want)
			}
			if code != 0 && code != kerr.UnknownTopicOrPartition.Code && msg == "" {
				t.Fatalf("code %d without a message", code)
			}
		})
	}
}
