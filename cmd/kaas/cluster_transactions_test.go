package main

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterTransactions runs transactions over partitions led by three
// brokers (markers cross brokers as WriteTxnMarkers), then SIGKILLs the
// transaction coordinator's broker in the middle of a transaction: the
// coordinator that takes the id over resumes it from the transaction log
// on the shared volume and the producer's commit goes through there. Then
// it SIGKILLs a partition leader mid-transaction: the partitions recover the
// open transaction from their logs at their new leaders, which take the
// markers. read_committed sees every committed record exactly once.
func TestClusterTransactions(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	adm := kadm.NewClient(c.client())
	ctx := ctxFor(t, 120*time.Second)
	waitUntil(t, 30*time.Second, "a controller elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl != ""
	})
	if resp, err := adm.CreateTopic(ctx, 6, 1, nil, "txc"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	waitUntil(t, 30*time.Second, "6 partitions led, 2 per broker", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == 2 && led["kaas-1"] == 2 && led["kaas-2"] == 2
	})
	prod := c.client(kgo.TransactionalID("ctx-1"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(60*time.Second))
	everywhere := func(tag string) []string {
		var vals []string
		for p := int32(0); p < 6; p++ {
			v := fmt.Sprintf("%s-%d", tag, p)
			vals = append(vals, v)
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "txc", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		return vals
	}
	var committed []string
	for i, commit := range []bool{true, false, true} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		vals := everywhere(fmt.Sprintf("t%d", i))
		if err := prod.EndTransaction(ctxFor(t, 20*time.Second), kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction %d: %v", i, err)
		}
		if commit {
			committed = append(committed, vals...)
		}
	}

	// Mid-transaction, the coordinator's broker is killed.
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	committed = append(committed, everywhere("killed")...)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKey, req.CoordinatorKeys = "ctx-1", []string{"ctx-1"}
	resp, err := req.RequestWith(ctx, c.client())
	if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("find coordinator: %v %+v", err, resp)
	}
	victim := fmt.Sprintf("kaas-%d", resp.Coordinators[0].NodeID)
	c.brokers[victim].kill()
	t.Logf("killed %s, the coordinator of ctx-1", victim)
	start := time.Now()
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the coordinator was killed: %v", err)
	}
	t.Logf("commit went through %v after the kill", time.Since(start))

	// Mid-transaction, a partition leader (not the coordinator) is
	// killed: its partitions reopen elsewhere with the transaction still
	// open in their logs, and take the commit marker there.
	c.start(victim)
	waitUntil(t, 30*time.Second, "6 partitions led by 3 brokers", func() bool {
		led, _, _ := c.ledBy()
		return len(led) == 3 && led["kaas-0"]+led["kaas-1"]+led["kaas-2"] == 6
	})
	// The restarted broker takes its group-coordinator slot back: the slot
	// is held until the broker that coordinated ctx-1 meanwhile lets the
	// id go (FindCoordinator answers COORDINATOR_NOT_AVAILABLE until then).
	waitUntil(t, 30*time.Second, "a coordinator for ctx-1", func() bool {
		resp, err = req.RequestWith(ctx, c.client())
		return err == nil && len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode == 0
	})
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	committed = append(committed, everywhere("leader-killed")...)
	coordinator := fmt.Sprintf("kaas-%d", resp.Coordinators[0].NodeID)
	led, _, _ := c.ledBy()
	leader := ""
	for _, n := range c.namesBut(coordinator) {
		if led[n] > 0 {
			leader = n
			break
		}
	}
	if leader == "" {
		t.Fatalf("no partition leader besides the coordinator %s: %v", coordinator, led)
	}
	c.brokers[leader].kill()
	t.Logf("killed %s, leading %d partitions; coordinator %s", leader, led[leader], coordinator)
	start = time.Now()
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after a partition leader was killed: %v", err)
	}
	t.Logf("commit went through %v after the kill", time.Since(start))

	sort.Strings(committed)
	seed := c.brokers[c.namesBut(leader)[0]].kafka
	if got := consumeIsolated(t, seed, "txc", kgo.ReadCommitted(), len(committed), 500*time.Millisecond); fmt.Sprint(got) != fmt.Sprint(committed) {
		t.Fatalf("read_committed = %v\nwant %v", got, committed)
	}
}
