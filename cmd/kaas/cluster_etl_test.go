package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// killOnEndTxn is a franz-go hook that SIGKILLs the broker an EndTxn is
// written to, once, when armed: the transaction's offsets are then pending
// at the group coordinator and the commit marker has yet to reach them.
type killOnEndTxn struct {
	armed   atomic.Bool
	brokers map[int32]*clusterBroker
	victim  atomic.Int32
	killed  chan struct{}
}

func (h *killOnEndTxn) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != kmsg.EndTxn.Int16() || err != nil || !h.armed.CompareAndSwap(true, false) {
		return
	}
	if b := h.brokers[meta.NodeID]; b != nil {
		b.kill()
		h.victim.Store(meta.NodeID)
		close(h.killed)
	}
}

// findCoordinator is the node FindCoordinator answers for key (keyType 0:
// a group, 1: a transactional id), or -1.
func findCoordinator(ctx context.Context, cl *kgo.Client, keyType int8, key string) int32 {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = keyType
	req.CoordinatorKey, req.CoordinatorKeys = key, []string{key}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
		return -1
	}
	return resp.Coordinators[0].NodeID
}

// keyCoordinatedBy returns the first of prefix-0, prefix-1, ... that node
// coordinates as a key of keyType (see findCoordinator); the test fails if
// none of the first 200 is.
func keyCoordinatedBy(ctx context.Context, t *testing.T, cl *kgo.Client, keyType int8, prefix string, node int32) string {
	t.Helper()
	for i := range 200 {
		if key := fmt.Sprintf("%s-%d", prefix, i); findCoordinator(ctx, cl, keyType, key) == node {
			return key
		}
	}
	t.Fatalf("no key %s-N coordinated by kaas-%d", prefix, node)
	return ""
}

// TestClusterTransactionalETLThroughKills is the exactly-once checker over
// three brokers: two franz-go GroupTransactSession workers transform a
// pre-filled input topic into an output topic (every fourth round of each
// deliberately aborted, its outputs tagged "aborted-"). The first worker's
// transactional id is coordinated by the group's coordinator, and that
// broker is SIGKILLed as the worker's EndTxn (commit) is written: the
// transaction's offsets are pending there, and both the transaction and
// the group resume at other brokers from the shared volume. Later a broker
// leading output partitions is SIGKILLed mid-run. Each killed broker is
// restarted (the workers wait at three quarters of the inputs until the
// second kill). A worker whose End fails starts a new session, as franz-go
// asks of an application. read_committed then holds every input's output
// exactly once and nothing of an aborted round.
func TestClusterTransactionalETLThroughKills(t *testing.T) {
	const (
		n     = 2000
		group = "etlk"
		in    = "etlk-in"
		out   = "etlk-out"
	)
	c := threeBrokers(t, []string{"--group-initial-rebalance-delay", "0s"}, in, out)
	ctx := ctxFor(t, 240*time.Second)
	admCl := c.client()
	adm := kadm.NewClient(admCl)
	prod := c.client(kgo.ProducerLinger(0))
	for i := range n {
		v := fmt.Sprintf("in-%05d", i)
		prod.Produce(ctx, &kgo.Record{Topic: in, Key: []byte(v), Value: []byte(v)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %s: %v", v, err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// The first worker's id is one the group's coordinator coordinates.
	var groupCoord int32 = -1
	waitUntil(t, 30*time.Second, "a coordinator for the group", func() bool {
		groupCoord = findCoordinator(ctx, admCl, 0, group)
		return groupCoord >= 0
	})
	id1 := keyCoordinatedBy(ctx, t, admCl, 1, "etlk-1", groupCoord)
	hook := &killOnEndTxn{brokers: map[int32]*clusterBroker{}, killed: make(chan struct{})}
	for _, name := range c.names() {
		var id int32
		fmt.Sscanf(name, "kaas-%d", &id)
		hook.brokers[id] = c.brokers[name]
	}
	t.Logf("group %s and transactional id %s coordinated by kaas-%d", group, id1, groupCoord)

	var (
		done    atomic.Int64 // inputs of the rounds End reported committed
		aborted atomic.Int64 // deliberately aborted rounds
		wg      sync.WaitGroup
		// gate holds the workers at 3/4 of the inputs until a partition
		// leader has been killed, so that the kill falls mid-run.
		gate = make(chan struct{})
		// history is what each worker did, printed if the checker fails.
		historyMu sync.Mutex
		history   []string
	)
	record := func(format string, args ...any) {
		historyMu.Lock()
		defer historyMu.Unlock()
		history = append(history, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
	}
	t.Cleanup(func() {
		if t.Failed() {
			historyMu.Lock()
			t.Logf("what the workers did:\n%s", strings.Join(history, "\n"))
			historyMu.Unlock()
		}
	})
	wctx, stop := context.WithCancel(ctx)
	worker := func(id string, opts ...kgo.Opt) {
		defer wg.Done()
		assigned := func(what string) func(context.Context, *kgo.Client, map[string][]int32) {
			return func(_ context.Context, _ *kgo.Client, m map[string][]int32) { record("%s %s %v", id, what, m[in]) }
		}
		open := func() *kgo.GroupTransactSession {
			s, err := kgo.NewGroupTransactSession(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...), kgo.TransactionalID(id),
				kgo.OnPartitionsAssigned(assigned("assigned")), kgo.OnPartitionsRevoked(assigned("revoked")), kgo.OnPartitionsLost(assigned("lost")),
				kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond),
				kgo.RetryTimeout(60 * time.Second), kgo.FetchMaxPartitionBytes(1500),
				kgo.TransactionTimeout(30 * time.Second), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
			if err != nil {
				t.Error(err)
			}
			return s
		}
		s := open()
		if s == nil {
			return
		}
		defer func() {
			if s != nil {
				s.Close()
			}
		}()
		// round counts the polls that returned records: the empty polls
		// between them must not decide which rounds are aborted.
		commits := 0 // rounds this worker committed
		for round := 0; wctx.Err() == nil; {
			if done.Load() >= 3*n/4 {
				select {
				case <-gate:
				case <-wctx.Done():
					return
				}
			}
			pctx, cancel := context.WithTimeout(wctx, time.Second)
			// At most 40 records a round: many rounds, so that aborts,
			// kills and rebalances fall between and inside them.
			fs := s.PollRecords(pctx, 40)
			cancel()
			var recs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
			if len(recs) == 0 {
				continue
			}
			round++
			if err := s.Begin(); err != nil {
				t.Logf("%s round %d: begin: %v", id, round, err)
				continue
			}
			abort := round%4 == 0
			var failed atomic.Bool
			// Each output names its round after a "|", so that a
			// duplicate can be traced to the rounds that wrote it.
			src := fmt.Sprintf("|%s/%d", id, round)
			spans := map[int32][2]int64{}
			for _, r := range recs {
				sp, ok := spans[r.Partition]
				if !ok {
					sp[0] = r.Offset
				}
				sp[1] = r.Offset
				spans[r.Partition] = sp
				v := "out-" + string(r.Value) + src
				if abort {
					v = "aborted-" + string(r.Value) + src
				}
				s.Produce(wctx, &kgo.Record{Topic: out, Key: r.Key, Value: []byte(v)}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Store(true)
					}
				})
			}
			// Flushed before End so a failed produce turns the round
			// into an abort.
			_ = s.Client().Flush(wctx)
			try := kgo.TryCommit
			if abort || failed.Load() {
				try = kgo.TryAbort
			} else if id == id1 && commits >= 3 && !hook.fired() {
				hook.armed.Store(true)
			}
			committed, err := s.End(wctx, try)
			hook.armed.Store(false)
			record("%s round %d: %d records %v, commit=%v: committed=%v err=%v", id, round, len(recs), spans, try == kgo.TryCommit, committed, err)
			switch {
			case err != nil && wctx.Err() == nil:
				// No error of End is retryable (franz-go's contract):
				// the application starts over with a new session,
				// whose InitProducerId fences this one and aborts
				// whatever it left open.
				t.Logf("%s round %d: end (%d records, commit=%v): %v; starting a new session", id, round, len(recs), try == kgo.TryCommit, err)
				s.Close()
				if s = open(); s == nil {
					return
				}
			case err != nil:
			case committed:
				done.Add(int64(len(recs)))
				commits++
			case abort:
				aborted.Add(1)
			}
		}
	}
	wg.Add(2)
	go worker(id1, kgo.WithHooks(hook))
	go worker("etlk-2")
	defer func() {
		stop()
		wg.Wait()
	}()

	// Kill 1: the coordinator of id1 and of the group, at id1's EndTxn.
	select {
	case <-hook.killed:
	case <-ctx.Done():
		t.Fatalf("the coordinator was never killed (%d inputs done)", done.Load())
	}
	victim := fmt.Sprintf("kaas-%d", hook.victim.Load())
	t.Logf("killed %s at an EndTxn of %s (%d inputs done)", victim, id1, done.Load())
	waitUntil(t, 60*time.Second, "the killed broker's partitions led by the other two", func() bool {
		led, _, _ := c.ledBy()
		return len(led) == 2 && led[c.namesBut(victim)[0]]+led[c.namesBut(victim)[1]] == 12
	})
	c.start(victim)
	waitUntil(t, 60*time.Second, "12 partitions led by 3 brokers", func() bool {
		led, _, _ := c.ledBy()
		return len(led) == 3 && led["kaas-0"] > 0 && led["kaas-1"] > 0 && led["kaas-2"] > 0 && led["kaas-0"]+led["kaas-1"]+led["kaas-2"] == 12
	})

	// Kill 2: a broker leading output partitions, mid-run, preferably not
	// a coordinator.
	mark := done.Load()
	waitUntil(t, 60*time.Second, "more inputs transformed", func() bool { return done.Load() >= min(mark+100, 3*n/4) })
	var leader string
	coords := map[int32]bool{findCoordinator(ctx, admCl, 0, group): true, findCoordinator(ctx, admCl, 1, id1): true, findCoordinator(ctx, admCl, 1, "etlk-2"): true}
	md, err := adm.Metadata(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics[out].Partitions {
		if p.Leader >= 0 && (leader == "" || !coords[p.Leader]) {
			leader = fmt.Sprintf("kaas-%d", p.Leader)
		}
	}
	if leader == "" {
		t.Fatalf("no leader of %s: %+v", out, md.Topics[out])
	}
	c.brokers[leader].kill()
	t.Logf("killed %s, leading partitions of %s (%d inputs done)", leader, out, done.Load())
	close(gate)
	waitUntil(t, 60*time.Second, "the killed leader's partitions led by the other two", func() bool {
		led, _, _ := c.ledBy()
		return len(led) == 2 && led[c.namesBut(leader)[0]]+led[c.namesBut(leader)[1]] == 12
	})
	c.start(leader)

	// Done once the group's committed offsets cover every input.
	waitUntil(t, 90*time.Second, "the group's offsets covering every input", func() bool {
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		var total int64
		offs.Each(func(o kadm.OffsetResponse) {
			if o.Topic == in {
				total += o.At
			}
		})
		return total == n
	})
	stop()
	wg.Wait()
	if aborted.Load() == 0 {
		t.Fatal("no round was aborted")
	}
	// read_committed stops at a transaction still open (a worker stopped
	// mid-round leaves one) until its coordinator aborts it, at worst at
	// its 30 s timeout.
	got := consumeIsolatedWithin(t, c.seeds()[0], out, kgo.ReadCommitted(), n, time.Second, 90*time.Second)
	seen := map[string][]string{}
	for _, v := range got {
		v, src, _ := strings.Cut(v, "|")
		seen[v] = append(seen[v], src)
		if strings.HasPrefix(v, "aborted-") {
			t.Errorf("read_committed holds %s, of aborted round %s", v, src)
		}
	}
	for i := range n {
		if srcs := seen[fmt.Sprintf("out-in-%05d", i)]; len(srcs) != 1 {
			t.Errorf("output of in-%05d read %d times, want once (rounds %v)", i, len(srcs), srcs)
		}
	}
	t.Logf("%d outputs read_committed, %d rounds deliberately aborted", len(got), aborted.Load())
}

// fired reports whether the hook has killed its broker.
func (h *killOnEndTxn) fired() bool {
	select {
	case <-h.killed:
		return true
	default:
		return false
	}
}
