package main

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createWithAssignment sends CreateTopics with a manual replica assignment
// (replicas[p] for partition p) and returns the topic's error code.
func createWithAssignment(t *testing.T, cl *kgo.Client, topic string, replicas ...[]int32) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, rs := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 15000
	resp, err := req.RequestWith(ctxT(t, 20*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	msg := ""
	if m := resp.Topics[0].ErrorMessage; m != nil {
		msg = *m
	}
	return resp.Topics[0].ErrorCode, msg
}

// Local-dev mode has one broker: manual assignments and reassignments that
// name it are accepted (and already in force), any other broker is refused
// as Kafka refuses an unregistered one.
func TestManualAssignmentLocal(t *testing.T) {
	b, addr := testBroker(t)
	self := b.views.Load().Self
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 20*time.Second)

	if code, msg := createWithAssignment(t, cl, "by-hand", []int32{self}, []int32{self}, []int32{self}); code != 0 {
		t.Fatalf("create with assignment on the one broker: %d %s", code, msg)
	}
	td, err := adm.ListTopics(ctx, "by-hand")
	if err != nil || len(td["by-hand"].Partitions) != 3 {
		t.Fatalf("by-hand: %+v %v", td["by-hand"], err)
	}
	if code, _ := createWithAssignment(t, cl, "elsewhere", []int32{self}, []int32{self + 7}); code != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("assignment naming broker %d: code %d, want INVALID_REPLICA_ASSIGNMENT", self+7, code)
	}
	if code, _ := createWithAssignment(t, cl, "gap", []int32{self}, nil); code != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("assignment with an empty replica list: code %d", code)
	}

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("by-hand", 0, []int32{self})
	req.Assign("by-hand", 1, []int32{self + 7})
	req.CancelAssign("by-hand", 2)
	req.Assign("by-hand", 9, []int32{self})
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]error{0: nil, 1: kerr.InvalidReplicaAssignment, 2: kerr.NoReassignmentInProgress, 9: kerr.UnknownTopicOrPartition} {
		if got := res["by-hand"][p].Err; want == nil && got != nil || want != nil && !errors.Is(got, want) {
			t.Fatalf("reassign by-hand-%d: %v, want %v", p, got, want)
		}
	}
	ls, err := adm.ListPartitionReassignments(ctx, nil)
	if err != nil || len(ls) != 0 {
		t.Fatalf("reassignments in progress on one broker: %v %v", ls, err)
	}
}
