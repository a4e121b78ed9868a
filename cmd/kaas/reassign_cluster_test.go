package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/assignment"
)

// On three brokers: a topic created with a manual assignment is led where
// its first replicas say; a reassignment moves a leader (two-phase, data
// kept); a cancel drops the pin from the KafkaTopic; __consumer_offsets is
// shown led by the group coordinators.
func TestReassignmentOnCluster(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	c.startAll("kaas-0", "kaas-1", "kaas-2")
	ctx := ctxFor(t, 120*time.Second)
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)

	if code, msg := createWithAssignment(t, cl, "placed", []int32{2, 0}, []int32{2, 1}, []int32{2, 0}); code != 0 {
		t.Fatalf("create with assignment: %d %s", code, msg)
	}
	if code, _ := createWithAssignment(t, cl, "nowhere", []int32{5}); code == 0 {
		t.Fatal("assignment naming unregistered broker 5 accepted")
	}
	leaders := func() map[int32]int32 {
		td, err := adm.ListTopics(ctx, "placed")
		if err != nil {
			return nil
		}
		out := map[int32]int32{}
		for _, p := range td["placed"].Partitions {
			out[p.Partition] = p.Leader
		}
		return out
	}
	waitUntil(t, 30*time.Second, "placed led by broker 2", func() bool {
		l := leaders()
		return len(l) == 3 && l[0] == 2 && l[1] == 2 && l[2] == 2
	})
	pins := func() string {
		return api.kubectlMaybe("-n", c.ns, "get", "kafkatopics", "placed", "-o", `jsonpath={range .spec.pins[*]}{.partition}:{.broker} {end}`)
	}
	if got := strings.TrimSpace(pins()); got != "0:2 1:2 2:2" {
		t.Fatalf("KafkaTopic spec.pins %q", got)
	}
	produceEverywhere(t, cl, "placed", 3, "before")

	// Move partition 0 to broker 0 and partition 1 to broker 1.
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("placed", 0, []int32{0})
	req.Assign("placed", 1, []int32{1, 2})
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil || res.Error() != nil {
		t.Fatalf("reassign: %v %v", err, res.Error())
	}
	moved := waitUntil(t, 30*time.Second, "partitions 0 and 1 moved", func() bool {
		l := leaders()
		return len(l) == 3 && l[0] == 0 && l[1] == 1 && l[2] == 2
	})
	t.Logf("reassignment completed in %v", moved)
	waitUntil(t, 10*time.Second, "no reassignment listed once done", func() bool {
		ls, err := adm.ListPartitionReassignments(ctx, nil)
		return err == nil && len(ls) == 0
	})
	produceEverywhere(t, cl, "placed", 3, "after")
	got := consumeAll(t, c, "placed", 6)
	for p := 0; p < 3; p++ {
		for _, tag := range []string{"before", "after"} {
			if part, ok := got[fmt.Sprintf("%s-%d", tag, p)]; !ok || part != int32(p) {
				t.Fatalf("record %s-%d: partition %d present %v", tag, p, part, ok)
			}
		}
	}

	// Cancel partition 0's pin: the KafkaTopic keeps the others.
	var cancel kadm.AlterPartitionAssignmentsReq
	cancel.CancelAssign("placed", 0)
	if res, err := adm.AlterPartitionAssignments(ctx, cancel); err != nil || res.Error() != nil {
		t.Fatalf("cancel: %v %v", err, res.Error())
	}
	if got := strings.TrimSpace(pins()); got != "1:1 2:2" {
		t.Fatalf("KafkaTopic spec.pins after cancel %q", got)
	}

	// __consumer_offsets partition p is led by the coordinator of the groups
	// Kafka stores there (slot p).
	all, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	offsets := all["__consumer_offsets"]
	if !offsets.IsInternal || len(offsets.Partitions) != 50 {
		t.Fatalf("__consumer_offsets: %+v", offsets)
	}
	for p := int32(0); p < 50; p++ {
		group := ""
		for i := 0; group == ""; i++ {
			if g := fmt.Sprintf("g-%d", i); assignment.SlotFor(g, 50) == int(p) {
				group = g
			}
		}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey, fc.CoordinatorKeys = group, []string{group}
		resp, err := fc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		node := resp.NodeID
		if len(resp.Coordinators) > 0 {
			node = resp.Coordinators[0].NodeID
		}
		if leader := offsets.Partitions[p].Leader; leader != node {
			t.Fatalf("__consumer_offsets-%d led by %d; group %s (slot %d) coordinated by %d", p, leader, group, p, node)
		}
	}
}
