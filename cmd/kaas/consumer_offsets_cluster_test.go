package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kaas-project/kaas/storage/assignment"
)

// TestClusterConsumerOffsetsRecords: on two brokers and then three, each
// group's commits are records of its partition of __consumer_offsets, led
// by its coordinator; when a third broker takes its share of the slots,
// a moved slot's partition is led by it at a higher leader epoch, holds
// what the earlier leader wrote, and takes the group's next commits.
func TestClusterConsumerOffsetsRecords(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	c.startAll("kaas-0", "kaas-1")
	ctx := ctxFor(t, 120*time.Second)
	cl := c.client()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "co-orders"); err != nil {
		t.Fatal(err)
	}
	groups := groupOfEachSlot("co")
	commitAll := func(at int64) {
		t.Helper()
		for _, g := range groups {
			o := kadm.Offsets{}
			o.Add(kadm.Offset{Topic: "co-orders", Partition: 0, At: at, LeaderEpoch: -1})
			if r, err := adm.CommitOffsets(ctx, g, o); err != nil || r.Error() != nil {
				t.Fatalf("commit %s: %v %v", g, err, r.Error())
			}
		}
	}
	// every partition holds its group's commit at.
	holds := func(at int64) func() bool {
		return func() bool {
			for s, g := range groups {
				if got := latestOffsets(readOffsetsRecords(t, ctx, cl, int32(s))); !slices.Equal(got, []string{fmt.Sprintf("%s/co-orders/0=%d", g, at)}) {
					return false
				}
			}
			return true
		}
	}
	commitAll(10)
	waitUntil(t, 60*time.Second, "every group's commit in its partition", holds(10))
	leaders := func() map[int32]kadm.PartitionDetail {
		td, err := adm.ListTopicsWithInternal(ctx, assignment.OffsetsTopic)
		if err != nil {
			t.Fatal(err)
		}
		return td[assignment.OffsetsTopic].Partitions
	}
	before := leaders()

	c.start("kaas-2")
	waitUntil(t, 60*time.Second, "kaas-2 leading 16 partitions of "+assignment.OffsetsTopic, func() bool {
		n := 0
		for _, p := range leaders() {
			if p.Leader == 2 {
				n++
			}
		}
		return n == 16
	})
	after := leaders()
	for p, d := range after {
		was := before[p]
		switch {
		case d.Leader == 2 && d.LeaderEpoch <= was.LeaderEpoch:
			t.Errorf("partition %d moved to kaas-2 at epoch %d, from epoch %d", p, d.LeaderEpoch, was.LeaderEpoch)
		case d.Leader != 2 && (d.Leader != was.Leader || d.LeaderEpoch != was.LeaderEpoch):
			t.Errorf("partition %d changed from %d@%d to %d@%d, not to the new broker", p, was.Leader, was.LeaderEpoch, d.Leader, d.LeaderEpoch)
		}
	}
	// The moved partitions, read from kaas-2, hold the earlier commits;
	// the next commits land there.
	waitUntil(t, 30*time.Second, "the earlier commits read from every leader", holds(10))
	commitAll(20)
	waitUntil(t, 60*time.Second, "every group's next commit in its partition", holds(20))
}
