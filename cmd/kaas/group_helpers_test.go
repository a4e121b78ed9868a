package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Group tests run with short timers: a 50 ms initial rebalance delay, session
// timeouts down to 100 ms, 100 ms KIP-848 heartbeats, 3 s KIP-848 sessions.
func init() {
	groupOptions.Group.InitialRebalanceDelay = 50 * time.Millisecond
	groupOptions.Group.MinSessionTimeout = 100 * time.Millisecond
	groupOptions.Group.ConsumerHeartbeatInterval = 100 * time.Millisecond
	groupOptions.Group.ConsumerSessionTimeout = 3 * time.Second
}

// groupClientOpts are the options every test group consumer uses.
func groupClientOpts(addr, topic, group string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(addr), kgo.RetryTimeout(10 * time.Second),
		kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(3 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second), kgo.FetchMaxWait(100 * time.Millisecond),
	}
}

// ledger records what consumers processed, across members.
type ledger struct {
	mu    sync.Mutex
	seen  map[string]int
	dups  []string
	count atomic.Int64
}

func newLedger() *ledger { return &ledger{seen: map[string]int{}} }

func (l *ledger) add(member string, r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := string(r.Value)
	l.seen[v]++
	if l.seen[v] == 1 {
		l.count.Add(1)
	} else {
		l.dups = append(l.dups, fmt.Sprintf("%s processed %s (p%d@%d) again", member, v, r.Partition, r.Offset))
	}
}

// member is one consumer of a churn test: it processes what it polls,
// commits it before the next poll, and commits again on revocation, so a
// partition's hand-off to another member carries a committed offset.
type member struct {
	name string
	cl   *kgo.Client
	stop chan struct{}
	done chan struct{}
}

func startMember(t *testing.T, ctx context.Context, name string, led *ledger, opts []kgo.Opt) *member {
	t.Helper()
	m := &member{name: name, stop: make(chan struct{}), done: make(chan struct{})}
	opts = append([]kgo.Opt{
		kgo.ClientID(name), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: commit on revoke of %v: %v", name, revoked, err)
			}
		}),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := cl.PollRecords(pctx, 500)
			cancel()
			for _, fe := range fs.Errors() {
				if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
					t.Errorf("%s: poll: %v", name, fe.Err)
				}
			}
			fs.EachRecord(func(r *kgo.Record) { led.add(name, r) })
			if err := cl.CommitUncommittedOffsets(ctx); err != nil &&
				!errors.Is(err, kerr.RebalanceInProgress) && !errors.Is(err, kerr.IllegalGeneration) && !errors.Is(err, context.Canceled) {
				// A commit racing a cooperative rebalance may be refused
				// (as by Kafka); the partition stays with this member and
				// the next commit, or the one on revocation, carries it.
				t.Errorf("%s: commit: %v", name, err)
			}
			cl.AllowRebalance()
		}
	}()
	return m
}

// leave stops polling, then closes the client (which leaves the group).
func (m *member) leave() {
	close(m.stop)
	<-m.done
	m.cl.AllowRebalance()
	m.cl.Close()
}

// checkProcessedOnce fails unless the ledger saw each of the values
// v-00000 .. v-<n-1> exactly once and group's committed offsets on topic end
// at the log end; it returns the sum of the end offsets.
func checkProcessedOnce(t *testing.T, ctx context.Context, adm *kadm.Client, led *ledger, group, topic string, n int) int64 {
	t.Helper()
	led.mu.Lock()
	for _, d := range led.dups {
		t.Error(d)
	}
	for i := range n {
		if led.seen[fmt.Sprintf("v-%05d", i)] == 0 {
			t.Errorf("v-%05d never processed", i)
		}
	}
	led.mu.Unlock()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	ends.Each(func(e kadm.ListedOffset) {
		if c, ok := committed.Lookup(topic, e.Partition); !ok || c.Err != nil || c.At != e.Offset {
			t.Errorf("partition %d: committed %+v (found %v), want the end offset %d", e.Partition, c, ok, e.Offset)
		}
		sum += e.Offset
	})
	return sum
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
