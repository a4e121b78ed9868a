package conn

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// AlterPartitionReassignments (key 45): v0-1. kaas keeps one shared copy of
// each partition, so a reassignment names the broker that should lead it:
// the first replica is pinned (the rest of the list is accepted and not
// kept), and the controller moves the partition there two-phase like any
// planned move. Null replicas cancel: the pin is dropped and the partition
// stays where it is, for the balancer to place from then on. A broker whose
// log dir is cordoned (KIP-1066) that does not lead the partition already is
// INELIGIBLE_REPLICA.
func init() {
	serve(API{Key: kmsg.AlterPartitionAssignments.Int16(), MinVersion: 0, MaxVersion: 1, Handle: handleAlterPartitionReassignments})
}

// handleAlterPartitionReassignments validates every partition against the
// routing view and sends each topic's valid pins to the supervisor.
func handleAlterPartitionReassignments(r *Request) Pending {
	req := r.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	v := r.View
	cordoned := cordonedBrokers(r.Server)
	wg := new(waitGroup)
	resp.Topics = make([]kmsg.AlterPartitionAssignmentsResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		out := &resp.Topics[i]
		*out = kmsg.NewAlterPartitionAssignmentsResponseTopic()
		out.Topic = rt.Topic
		out.Partitions = make([]kmsg.AlterPartitionAssignmentsResponseTopicPartition, len(rt.Partitions))
		t := v.Topics[rt.Topic]
		pins := map[int32]int32{}
		var sent []int // indexes of the partitions in pins
		for j, p := range rt.Partitions {
			rp := &out.Partitions[j]
			*rp = kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			code, msg, broker := reassignmentError(v, cordoned, rt.Topic, t, p)
			if code != 0 {
				rp.ErrorCode, rp.ErrorMessage = code, &msg
				continue
			}
			if _, dup := pins[p.Partition]; dup {
				rp.ErrorCode, rp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("partition named twice")
				continue
			}
			pins[p.Partition] = broker
			sent = append(sent, j)
		}
		if len(sent) == 0 {
			continue
		}
		wg.Add(1)
		r.Server.Supervisor().Send(&messages.SetPins{Topic: rt.Topic, Pins: pins, Reply: func(res messages.TopicResult) {
			for _, j := range sent {
				out.Partitions[j].ErrorCode = res.ErrorCode
				out.Partitions[j].ErrorMessage = optString(res.ErrorMessage)
			}
			wg.Done()
		}})
	}
	return func() kmsg.Response {
		wg.Wait()
		return resp
	}
}

// reassignmentError checks one partition of a reassignment and returns the
// broker to pin (-1 to cancel), or the error Kafka gives.
func reassignmentError(v *routing.View, cordoned func(int32) bool, topic string, t *routing.Topic, p kmsg.AlterPartitionAssignmentsRequestTopicPartition) (int16, string, int32) {
	switch {
	case routing.IsInternal(topic):
		return kerr.InvalidRequest.Code, "Cannot reassign partitions of internal topic " + topic, 0
	case t == nil || p.Partition < 0 || int(p.Partition) >= len(t.Partitions):
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("unknown partition %s-%d", topic, p.Partition), 0
	case p.Replicas == nil:
		if _, pinned := t.Pins[p.Partition]; !pinned {
			return kerr.NoReassignmentInProgress.Code, fmt.Sprintf("no reassignment of %s-%d to cancel", topic, p.Partition), 0
		}
		return 0, "", -1
	case len(p.Replicas) == 0:
		return kerr.InvalidReplicaAssignment.Code, "The replica list is empty.", 0
	}
	for i, b := range p.Replicas {
		for _, o := range p.Replicas[:i] {
			if o == b {
				return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The replica list names broker %d more than once.", b), 0
			}
		}
		if _, ok := v.Broker(b); !ok {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("The proposed assignment includes broker %d, but no such broker is registered.", b), 0
		}
		if cordoned(b) && t.Partitions[p.Partition].Leader != b {
			return kerr.IneligibleReplica.Code, fmt.Sprintf("The proposed assignment places %s-%d on broker %d, whose log dirs are all cordoned.", topic, p.Partition, b), 0
		}
	}
	return 0, "", p.Replicas[0]
}
