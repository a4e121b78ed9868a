package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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
	c := threeBrokers(t, nil, "txc")
	ctx := ctxFor(t, 120*time.Second)
	checkProducerIDsUnique(ctx, t, c.client(), []int32{0, 1, 2}, 2000)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKey, req.CoordinatorKeys = "ctx-1", []string{"ctx-1"}
	coordinatorOf := func() string {
		t.Helper()
		resp, err := req.RequestWith(ctx, c.client())
		if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			t.Fatalf("find coordinator: %v %+v", err, resp)
		}
		return fmt.Sprintf("kaas-%d", resp.Coordinators[0].NodeID)
	}
	// franz-go looks a coordinator up through any broker it knows, seeds
	// included, and gives up when that one broker refuses the connection.
	// So the producer's one seed is a broker this test does not kill, and
	// before each commit the producer learns that the killed broker is
	// gone: every lookup then reaches a live broker, and the test measures
	// kaas's failover, not the client's luck.
	victim := coordinatorOf()
	keep := c.namesBut(victim)[0]
	prod := c.client(clientLog(t), kgo.SeedBrokers(c.brokers[keep].kafka), kgo.TransactionalID("ctx-1"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(60*time.Second))
	forget := func(dead string) {
		t.Helper()
		// A Metadata request through the producer updates the brokers
		// it knows.
		waitUntil(t, 30*time.Second, "the producer no longer knows "+dead, func() bool {
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, prod)
			if err != nil {
				return false
			}
			for _, b := range resp.Brokers {
				if fmt.Sprintf("kaas-%d", b.NodeID) == dead {
					return false
				}
			}
			return true
		})
	}
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
	if now := coordinatorOf(); now != victim {
		t.Fatalf("the coordinator of ctx-1 moved from %s to %s without a kill", victim, now)
	}
	c.brokers[victim].kill()
	t.Logf("killed %s, the coordinator of ctx-1", victim)
	start := time.Now()
	forget(victim)
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the coordinator was killed: %v", err)
	}
	t.Logf("commit went through %v after the kill", time.Since(start))

	// Mid-transaction, a partition leader (not the coordinator) is
	// killed: its partitions reopen elsewhere with the transaction still
	// open in their logs, and take the commit marker there.
	c.start(victim)
	// Until the restarted broker leads partitions again, the file may not
	// count it alive yet, and its slots are still served where they fell.
	waitUntil(t, 30*time.Second, "6 partitions led by 3 brokers", func() bool {
		led, _, _ := c.ledBy()
		return len(led) == 3 && led["kaas-0"] > 0 && led["kaas-1"] > 0 && led["kaas-2"] > 0 && led["kaas-0"]+led["kaas-1"]+led["kaas-2"] == 6
	})
	// The restarted broker takes its group-coordinator slot back: the slot
	// is held until the broker that coordinated ctx-1 meanwhile lets the
	// id go (FindCoordinator answers the restarted broker, which answers
	// NOT_COORDINATOR until then).
	var resp *kmsg.FindCoordinatorResponse
	waitUntil(t, 30*time.Second, "a coordinator for ctx-1", func() bool {
		var err error
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
		if led[n] > 0 && n != keep {
			leader = n
			break
		}
	}
	if leader == "" {
		t.Fatalf("no partition leader besides the coordinator %s and the producer's seed %s: %v", coordinator, keep, led)
	}
	c.brokers[leader].kill()
	t.Logf("killed %s, leading %d partitions; coordinator %s", leader, led[leader], coordinator)
	start = time.Now()
	forget(leader)
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

// txnOutcomes are the values of a transactional producer's transactions by
// how they ended: committed (EndTxn commit answered), aborted (ended with
// abort, or never asked to commit) and unknown (a commit that failed: it
// may or may not have gone through, but only wholly).
type txnOutcomes struct {
	committed []string
	aborted   []string
	unknown   [][]string
}

// check is the exactly-once checker: read_committed (got) holds every
// committed value exactly once, no aborted one, each unknown transaction
// wholly or not at all, and nothing else.
func (o txnOutcomes) check(t *testing.T, got []string) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for _, v := range o.committed {
		if seen[v] != 1 {
			t.Errorf("committed %s read %d times, want once", v, seen[v])
		}
		delete(seen, v)
	}
	for _, v := range o.aborted {
		if seen[v] != 0 {
			t.Errorf("aborted %s read %d times, want never", v, seen[v])
		}
		delete(seen, v)
	}
	for _, txn := range o.unknown {
		present := 0
		for _, v := range txn {
			if seen[v] > 1 {
				t.Errorf("%s read %d times", v, seen[v])
			}
			if seen[v] > 0 {
				present++
			}
			delete(seen, v)
		}
		if present != 0 && present != len(txn) {
			t.Errorf("transaction %v read in part (%d of %d records)", txn, present, len(txn))
		}
	}
	for v := range seen {
		t.Errorf("%s read but never produced", v)
	}
}

// TestClusterTransactionsDrain commits transactions over six partitions led
// by three brokers in a loop (every third one aborted) while a broker
// leading two of them, not the transaction coordinator, is drained with
// SIGTERM: its partitions move with their open transactions and take the
// markers at their new leaders. The checker finds every committed record
// exactly once in read_committed and nothing of an aborted transaction.
func TestClusterTransactionsDrain(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	adm := kadm.NewClient(c.client())
	ctx := ctxFor(t, 180*time.Second)
	waitUntil(t, 30*time.Second, "a controller elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl != ""
	})
	if resp, err := adm.CreateTopic(ctx, 6, 1, nil, "txd"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	waitUntil(t, 30*time.Second, "6 partitions led, 2 per broker", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == 2 && led["kaas-1"] == 2 && led["kaas-2"] == 2
	})
	const id = "drain-1"
	prod := c.client(kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(60*time.Second))
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKey, req.CoordinatorKeys = id, []string{id}
	var coordinator string
	waitUntil(t, 30*time.Second, "a coordinator for "+id, func() bool {
		resp, err := req.RequestWith(ctx, c.client())
		if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return false
		}
		coordinator = fmt.Sprintf("kaas-%d", resp.Coordinators[0].NodeID)
		return true
	})
	// The victim leads partitions and is not the coordinator; not the
	// controller either when there is a choice.
	_, ctrl, _ := c.ledBy()
	var victim string
	for _, n := range c.namesBut(coordinator) {
		if victim == "" || victim == ctrl {
			victim = n
		}
	}
	t.Logf("coordinator %s, controller %s, draining %s", coordinator, ctrl, victim)

	var out txnOutcomes
	failed := 0
	drainAt, afterExit := 3, 0
	for round := 0; afterExit < 6; round++ {
		if round > 300 || ctx.Err() != nil {
			t.Fatalf("%d rounds without %d commits after %s exited", round, 6, victim)
		}
		exited := false
		select {
		case <-c.brokers[victim].exited:
			exited = round > drainAt
			if exited && afterExit == 0 {
				t.Logf("round %d: %s has exited", round, victim)
			}
		default:
		}
		commit := round%3 != 2
		tag := "c"
		if !commit {
			tag = "a"
		}
		if err := prod.BeginTransaction(); err != nil {
			t.Fatalf("round %d: begin: %v", round, err)
		}
		var vals []string
		produceErr := make(chan error, 6)
		for p := int32(0); p < 6; p++ {
			v := fmt.Sprintf("%s%03d-%d", tag, round, p)
			vals = append(vals, v)
			prod.Produce(ctx, &kgo.Record{Topic: "txd", Partition: p, Value: []byte(v)}, func(_ *kgo.Record, err error) { produceErr <- err })
		}
		var firstErr error
		for range vals {
			if err := <-produceErr; err != nil && firstErr == nil {
				firstErr = err
			}
		}
		if firstErr != nil {
			t.Logf("round %d: produce: %v; aborting", round, firstErr)
			commit = false
		}
		if round == drainAt {
			// The drain starts with the transaction open on the
			// victim's partitions; the commit's markers meet them moving.
			t.Logf("round %d: SIGTERM to %s", round, victim)
			_ = c.brokers[victim].cmd.Process.Signal(syscall.SIGTERM)
		}
		err := prod.EndTransaction(ctxFor(t, 30*time.Second), kgo.TransactionEndTry(commit))
		switch {
		case !commit:
			out.aborted = append(out.aborted, vals...)
		case err != nil:
			out.unknown = append(out.unknown, vals)
		default:
			out.committed = append(out.committed, vals...)
			if exited {
				afterExit++
			}
		}
		if err != nil || firstErr != nil {
			failed++
			t.Logf("round %d: end (commit=%v): %v", round, commit, err)
		}
	}
	c.waitExit(t, victim)
	waitUntil(t, 30*time.Second, "the drained broker's partitions led by the other two", func() bool {
		led, _, _ := c.ledBy()
		return len(led) == 2 && led[c.namesBut(victim)[0]]+led[c.namesBut(victim)[1]] == 6
	})
	t.Logf("%d committed records, %d aborted, %d transactions of unknown outcome, %d rounds failed",
		len(out.committed), len(out.aborted), len(out.unknown), failed)
	if failed > 0 {
		t.Errorf("%d transactions failed during the drain; a drain lets every one through", failed)
	}
	got := consumeIsolated(t, c.seeds()[0], "txd", kgo.ReadCommitted(), len(out.committed), time.Second)
	out.check(t, got)
}

// checkProducerIDsUnique asks each broker for perBroker idempotent producer
// ids at once: the brokers started within milliseconds of each other, and
// no id may be handed out twice (partition leaders and group coordinators
// key producer state and pending transactional offsets by it).
func checkProducerIDsUnique(ctx context.Context, t *testing.T, cl *kgo.Client, brokers []int32, perBroker int) {
	t.Helper()
	var mu sync.Mutex
	seen := map[int64]int32{}
	var wg sync.WaitGroup
	for _, b := range brokers {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range perBroker / 4 {
					req := kmsg.NewPtrInitProducerIDRequest()
					req.TransactionTimeoutMillis = -1
					resp, err := req.RequestWith(ctx, cl.Broker(int(b)))
					if err == nil && resp.ErrorCode != 0 {
						err = kerr.ErrorForCode(resp.ErrorCode)
					}
					if err != nil {
						t.Errorf("InitProducerId at broker %d: %v", b, err)
						return
					}
					mu.Lock()
					if other, dup := seen[resp.ProducerID]; dup {
						t.Errorf("producer id %d handed out by broker %d and by broker %d", resp.ProducerID, other, b)
					}
					seen[resp.ProducerID] = b
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
}
