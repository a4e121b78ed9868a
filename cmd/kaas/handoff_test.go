package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/disklog"
)

// loadChecker runs an idempotent acks=all producer over every partition of
// a topic and remembers what was acknowledged, and when.
type loadChecker struct {
	t     testing.TB
	topic string
	parts int
	mu    sync.Mutex
	acked map[int32][]ackedRec // per partition, in ack order
	// pending holds, per partition, the records handed to the client and
	// not answered yet: a record stuck through a whole step is its longest
	// wait, and is in no ack.
	pending map[int32][]ackedRec
	errs    int
	kinds   map[string]int
	cancel  context.CancelFunc
	done    chan struct{}
	// interval paces each partition to one record per interval (0: full
	// speed); pace changes it while the load runs.
	interval atomic.Int64
	// onRecord, when set, sees every record verify reads back (a caller's
	// own checks on top, e.g. which leader epoch holds an offset).
	onRecord func(*kgo.Record)
	// logged is what verify read back: per partition, the producer
	// sequence at each offset.
	logged map[int32]map[int64]int
}

// checked is verify's account of the log read back.
type checked struct {
	acked, inLog                                  int
	lost, dups, disorder, epochDrops, notAtOffset int
}

// pace sets the load's interval per partition (0: full speed).
func (l *loadChecker) pace(d time.Duration) { l.interval.Store(int64(d)) }

type ackedRec struct {
	seq      int
	offset   int64
	sent, at time.Time // handed to the client; acknowledged
}

// startLoad produces to every partition of topic. With fast, the client's
// backoffs are short, so the unavailability measured is the broker's
// rather than the client's; without, the client keeps franz-go's defaults
// (250 ms retry backoff doubling per retry, metadata refreshed at most
// every 5 s), what an application gets.
func startLoad(t testing.TB, c *kaasCluster, topic string, parts int, fast bool) *loadChecker {
	l := &loadChecker{t: t, topic: topic, parts: parts, acked: map[int32][]ackedRec{}, pending: map[int32][]ackedRec{},
		kinds: map[string]int{}, done: make(chan struct{})}
	// At most maxInflight records per partition are outstanding: a
	// partition that is moving must not fill the client's shared buffer and
	// block producing to every other partition (which would show the
	// client's head-of-line blocking as every partition's unavailability).
	const maxInflight = 8
	opts := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2 * time.Millisecond), kgo.MaxBufferedRecords(parts*maxInflight + 1), kgo.RecordRetries(1 << 30)}
	if fast {
		opts = append(opts, kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }), kgo.MetadataMinAge(10*time.Millisecond))
	} else {
		opts = append(opts, kgo.MetadataMinAge(5*time.Second)) // franz-go's default (c.client shortens it)
	}
	if f := os.Getenv("KAAS_HANDOFF_CLIENT_LOG"); f != "" && fast {
		// The fast client's debug log (every request, move and metadata
		// refresh), timestamped to line up with the brokers' logs.
		lf, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lf.Close() })
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(lf, kgo.LogLevelDebug, func() string { return time.Now().Format("15:04:05.000000 ") })))
	}
	cl := c.client(opts...)
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	// KAAS_HANDOFF_INTERVAL (e.g. 100ms) paces each partition to one
	// record per interval instead of full speed for the whole test: the
	// same moves with CPU to spare, to tell the broker's move cost from
	// the load's.
	if d, err := time.ParseDuration(os.Getenv("KAAS_HANDOFF_INTERVAL")); err == nil {
		l.pace(d)
	}
	go func() {
		defer close(l.done)
		seq := make([]int, parts)
		inflight := make([]atomic.Int32, parts)
		lastSent := make([]time.Time, parts)
		var interval time.Duration
		for ctx.Err() == nil {
			if d := time.Duration(l.interval.Load()); d != interval {
				// Spread the partitions' turns over the interval: at any
				// moment some partition is about to send, so a move
				// catches records at its start whatever the pace. (All
				// in step, a move could fall between two rounds.)
				interval = d
				now := time.Now()
				for p := range lastSent {
					lastSent[p] = now.Add(-interval * time.Duration(p) / time.Duration(parts))
				}
			}
			for p := 0; p < parts && ctx.Err() == nil; p++ {
				if inflight[p].Load() >= maxInflight {
					continue
				}
				if now := time.Now(); interval > 0 {
					if now.Sub(lastSent[p]) < interval {
						continue
					}
					lastSent[p] = now
				}
				inflight[p].Add(1)
				s := seq[p]
				seq[p]++
				r := &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(fmt.Sprintf("%d-%d", p, s))}
				sent := time.Now()
				l.mu.Lock()
				l.pending[r.Partition] = append(l.pending[r.Partition], ackedRec{seq: s, sent: sent})
				l.mu.Unlock()
				cl.Produce(ctx, r, func(r *kgo.Record, err error) {
					inflight[r.Partition].Add(-1)
					l.mu.Lock()
					defer l.mu.Unlock()
					l.pending[r.Partition] = slices.DeleteFunc(l.pending[r.Partition], func(a ackedRec) bool { return a.seq == s })
					if err != nil {
						l.errs++
						l.kinds[err.Error()]++
						return
					}
					l.acked[r.Partition] = append(l.acked[r.Partition], ackedRec{seq: s, offset: r.Offset, sent: sent, at: time.Now()})
				})
			}
			time.Sleep(5 * time.Millisecond)
		}
		fctx, fcancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer fcancel()
		_ = cl.Flush(fctx)
	}()
	return l
}

// handedOffAfter is the drained broker's own account (its "drained" log
// line) of when, after SIGTERM, it had applied the file giving its last
// partitions to their next leaders; it stays up a little longer for the
// clients still retrying there.
func handedOffAfter(t testing.TB, b *clusterBroker) time.Duration {
	var out time.Duration
	for _, line := range strings.Split(b.log.String(), "\n") {
		var l struct {
			Message   string  `json:"message"`
			HandedOff float64 `json:"handed_off"` // ms
		}
		if json.Unmarshal([]byte(strings.TrimSpace(line)), &l) == nil && l.Message == "drained" {
			out = time.Duration(l.HandedOff * float64(time.Millisecond))
		}
	}
	if out == 0 {
		t.Errorf("%s: no drained line with handed_off in its log", b.name)
	}
	return out.Round(time.Millisecond)
}

// startConsumer reads topic from its end with franz-go's default settings
// (no group) and records when each record arrived, as a loadChecker whose
// acknowledgements are receptions: gaps then measures how long a moving
// partition's records stop reaching an application.
func startConsumer(t testing.TB, c *kaasCluster, topic string, parts int) *loadChecker {
	l := &loadChecker{t: t, topic: topic, parts: parts, acked: map[int32][]ackedRec{}, kinds: map[string]int{}, done: make(chan struct{})}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go func() {
		defer close(l.done)
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			l.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				l.acked[r.Partition] = append(l.acked[r.Partition], ackedRec{offset: r.Offset, at: now})
			})
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *loadChecker) stop() {
	l.cancel()
	<-l.done
}

// longestGap is partition p's longest time without an acknowledgement
// inside [from, to], and when it began. The caller holds l.mu.
func (l *loadChecker) longestGap(p int32, from, to time.Time) (time.Duration, time.Time) {
	prev, worst, start := from, time.Duration(0), from
	for _, a := range l.acked[p] {
		if a.at.Before(from) {
			continue
		}
		if a.at.After(to) {
			break
		}
		if d := a.at.Sub(prev); d > worst {
			worst, start = d, prev
		}
		prev = a.at
	}
	if d := to.Sub(prev); d > worst {
		worst, start = d, prev
	}
	return worst, start
}

// gaps returns, per partition (of only, or of all when only is nil), the
// longest time without an acknowledgement inside [from, to], sorted.
func (l *loadChecker) gaps(from, to time.Time, only map[int32]bool) []time.Duration {
	return l.perPartition(only, func(p int32) time.Duration {
		d, _ := l.longestGap(p, from, to)
		return d
	})
}

// perPartition returns fn of every partition of only (of all when only is
// nil), sorted; fn runs with l.mu held.
func (l *loadChecker) perPartition(only map[int32]bool, fn func(p int32) time.Duration) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Duration
	for p := int32(0); p < int32(l.parts); p++ {
		if only == nil || only[p] {
			out = append(out, fn(p))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// waits returns, per partition (of only, or of all when only is nil), the
// longest time a record waited for its acknowledgement inside [from, to],
// sorted. Unlike a gap between acks, it does not grow with the pace of a
// paced load: a record handed over just as its partition stops taking
// writes waits the whole unavailability. A record handed over before from
// counts from from: the records in flight when a drain starts are the ones
// that wait through it, and one still waiting from a SIGKILL when the next
// step starts has waited for dead-after only before it. A record handed
// over by to and still unanswered has waited until now.
func (l *loadChecker) waits(from, to time.Time, only map[int32]bool) []time.Duration {
	now := time.Now()
	return l.perPartition(only, func(p int32) (worst time.Duration) {
		for _, a := range l.acked[p] {
			if !a.at.Before(from) && !a.sent.After(to) {
				worst = max(worst, a.at.Sub(later(a.sent, from)))
			}
		}
		for _, a := range l.pending[p] {
			if !a.sent.After(to) {
				worst = max(worst, now.Sub(later(a.sent, from)))
			}
		}
		return worst
	})
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// firstAcks returns, per partition of only, how long after from its first
// acknowledgement came, sorted; ok is false while some have none yet.
//
// Only records handed to the client after from count: a response the
// client had not yet processed when a broker was killed is not evidence
// that the partition is available again.
func (l *loadChecker) firstAcks(from time.Time, only map[int32]bool) (out []time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range only {
		as := l.acked[p]
		i := sort.Search(len(as), func(i int) bool { return as[i].at.After(from) })
		for i < len(as) && !as[i].sent.After(from) {
			i++
		}
		if i == len(as) {
			return nil, false
		}
		out = append(out, as[i].at.Sub(from))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, true
}

// worstGaps names the n partitions with the longest gap between acks
// inside [from, to] and when each gap began (diagnostics for the figures).
func (l *loadChecker) worstGaps(from, to time.Time, n int, only map[int32]bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	type gap struct {
		p      int32
		d      time.Duration
		starts time.Time
	}
	var all []gap
	for p := int32(0); p < int32(l.parts); p++ {
		if only != nil && !only[p] {
			continue
		}
		d, starts := l.longestGap(p, from, to)
		all = append(all, gap{p: p, d: d, starts: starts})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].d > all[j].d })
	var out []string
	for _, g := range all[:min(n, len(all))] {
		out = append(out, fmt.Sprintf("p%d %v from %s to %s", g.p, g.d.Round(time.Millisecond), g.starts.UTC().Format("15:04:05.000"),
			g.starts.Add(g.d).UTC().Format("15:04:05.000")))
	}
	return strings.Join(out, ", ")
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(float64(len(ds))*p))]
}

// verify reads every partition back and checks the invariants against what
// producers saw acknowledged: nothing acknowledged lost, nothing twice,
// producer order kept, each record at its acknowledged offset, and leader
// epochs never going down along the log (two writers would interleave).
func (l *loadChecker) verify(c *kaasCluster) checked {
	t := l.t
	t.Helper()
	cl := c.client(kgo.ConsumeTopics(l.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	adm := kadm.NewClient(c.client())
	ctx := ctxFor(t, 120*time.Second)
	// The cluster may still be settling (a move after the last restart):
	// ask until every partition has a leader.
	var ends kadm.ListedOffsets
	var err error
	for {
		ends, err = adm.ListEndOffsets(ctx, l.topic)
		if err == nil && ends.Error() == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("end offsets: %v %v", err, ends.Error())
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := int64(0)
	ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	type seen struct {
		seq   int
		epoch int32
	}
	logs := map[int32][]seen{}
	offsets := map[int32]map[int64]int{}
	var got int64
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back %d of %d records", got, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			if l.onRecord != nil {
				l.onRecord(r)
			}
			if bytes.HasPrefix(r.Value, []byte(fenceProbe)) {
				// Sent to a broker once it was stopped and deposed: it
				// must have refused it (stopLeaderPastDeadAfter).
				t.Errorf("partition %d offset %d holds the probe sent to a stopped, deposed broker", r.Partition, r.Offset)
				return
			}
			parts := strings.SplitN(string(r.Value), "-", 2)
			s, _ := strconv.Atoi(parts[1])
			logs[r.Partition] = append(logs[r.Partition], seen{seq: s, epoch: r.LeaderEpoch})
			if offsets[r.Partition] == nil {
				offsets[r.Partition] = map[int64]int{}
			}
			offsets[r.Partition][r.Offset] = s
		})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lost, dups, disorder, epochDrops, moved := 0, 0, 0, 0, 0
	var lostSome []string // the first few, to find them in the brokers' logs
	for p := int32(0); p < int32(l.parts); p++ {
		count := map[int]int{}
		lastSeq, lastEpoch := -1, int32(-1)
		for _, s := range logs[p] {
			count[s.seq]++
			if s.seq <= lastSeq {
				disorder++
			}
			if s.epoch < lastEpoch {
				epochDrops++
			}
			lastSeq, lastEpoch = s.seq, max(lastEpoch, s.epoch)
		}
		for _, n := range count {
			if n > 1 {
				dups++
			}
		}
		for _, a := range l.acked[p] {
			if count[a.seq] == 0 {
				lost++
				if len(lostSome) < 20 {
					end := int64(-1)
					if o, ok := ends.Lookup(l.topic, p); ok {
						end = o.Offset
					}
					lostSome = append(lostSome, fmt.Sprintf("p%d seq %d acknowledged at offset %d at %s (sent %s; log end %d)",
						p, a.seq, a.offset, a.at.UTC().Format("15:04:05.000"), a.sent.UTC().Format("15:04:05.000"), end))
				}
			} else if offsets[p][a.offset] != a.seq {
				moved++
			}
		}
	}
	total := 0
	for _, as := range l.acked {
		total += len(as)
	}
	t.Logf("produce errors by kind: %v", l.kinds)
	t.Logf("checker: %d acknowledged, %d in the log, %d produce errors; lost %d, duplicates %d, out of order %d, epoch regressions %d, not at acked offset %d",
		total, got, l.errs, lost, dups, disorder, epochDrops, moved)
	if len(lostSome) > 0 {
		t.Logf("lost (the first %d): %s", len(lostSome), strings.Join(lostSome, "; "))
	}
	if lost+dups+disorder+epochDrops+moved > 0 || total == 0 {
		t.Errorf("invariants violated")
	}
	l.logged = offsets
	return checked{acked: total, inLog: int(got), lost: lost, dups: dups, disorder: disorder, epochDrops: epochDrops, notAtOffset: moved}
}

// partitionsLedBy reads assignment.json for the partitions of topic that
// broker leads, waiting until the file gives it want of them (the brokers'
// own counts can run ahead of a file that still holds a move).
func (c *kaasCluster) partitionsLedBy(t testing.TB, topic, broker string, want int) map[int32]bool {
	t.Helper()
	var out map[int32]bool
	waitUntil(t, 30*time.Second, fmt.Sprintf("assignment.json gives %s %d partitions", broker, want), func() bool {
		a, err := assignment.ReadFile(assignment.Path(c.dataDir))
		if err != nil {
			return false
		}
		b, ok := a.BrokerByName(broker)
		if !ok {
			return false
		}
		out = map[int32]bool{}
		for i, p := range a.Topics[topic].Partitions {
			if p.Leader == b.ID {
				out[int32(i)] = true
			}
		}
		return len(out) == want
	})
	return out
}

// healthzEpochs samples every broker's controller epoch and fails if any
// broker's epoch goes down.
func watchEpochs(t testing.TB, c *kaasCluster, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := map[string]int64{} // per process incarnation
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for name, b := range c.brokers {
				h, err := b.healthz()
				if err != nil || b.cmd.Process == nil {
					continue
				}
				key := fmt.Sprintf("%s/%d", name, b.cmd.Process.Pid)
				if h.Epoch < last[key] {
					t.Errorf("%s: epoch went from %d to %d", name, last[key], h.Epoch)
				}
				last[key] = h.Epoch
			}
		}
	}()
	return &wg
}

// handoffSizes are the numbers of partitions KAAS_HANDOFF_PARTITIONS lists,
// comma-separated (each rounded down to a multiple of 3, so that each
// broker leads a third), or 3,000 when it is unset: a planned move of a
// broker then moves 1,000 partitions at once. TestSafeHandoffs runs at the
// first size (KAAS_HANDOFF_PARTITIONS=150 is a quicker local run);
// BenchmarkHandoffs at each.
func handoffSizes(tb testing.TB) []int {
	env := os.Getenv("KAAS_HANDOFF_PARTITIONS")
	if env == "" {
		return []int{3000}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 3 {
			tb.Fatalf("KAAS_HANDOFF_PARTITIONS=%q: want partition counts of at least 3, comma-separated", env)
		}
		out = append(out, v-v%3)
	}
	return out
}

// BenchmarkHandoffs runs TestSafeHandoffs' scenario (invariants included)
// once per size that KAAS_HANDOFF_PARTITIONS lists, whatever b.N (-count
// repeats it), and prints a markdown table of what each event cost the
// clients, one column per size: p50 / p99 / max over the partitions
// concerned, in ms. It reports the paced drain's and paced rebalance's p99
// wait of a moved partition's records, the full-load drain's, and the CPU
// the paced drain cost the brokers beyond the pace per partition moved.
// Without KAAS_HANDOFF_PARTITIONS it skips, so that `go test -bench .`
// starts no cluster:
//
//	KAAS_HANDOFF_PARTITIONS=300,600,1500,3000 go test ./cmd/kaas -run '^$' -bench '^BenchmarkHandoffs$' -benchtime 1x -timeout 60m
//
// (go tool task bench-handoffs).
func BenchmarkHandoffs(b *testing.B) {
	if os.Getenv("KAAS_HANDOFF_PARTITIONS") == "" {
		b.Skip("set KAAS_HANDOFF_PARTITIONS (e.g. 300,600,1500,3000) or run go tool task bench-handoffs")
	}
	var runs []*handoffFigures
	for _, parts := range handoffSizes(b) {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			// One run of the scenario is the unit: its clusters' cleanups
			// run only when this function returns, so a loop over b.N
			// would run each scenario beside the idle brokers of the last.
			fig := &handoffFigures{tb: b, parts: parts, cells: map[figureKey]string{}, metrics: map[string]float64{}}
			runHandoffs(b, parts, fig)
			b.ReportMetric(0, "ns/op") // a scenario's length says nothing
			for unit, v := range fig.metrics {
				b.ReportMetric(v, unit)
			}
			runs = append(runs, fig)
		})
	}
	if len(runs) > 0 {
		printHandoffTable(os.Stdout, runs)
	}
}

// The events of the handoff scenario, in the order of BenchmarkHandoffs'
// table.
const (
	evBaseline       = "baseline: nothing moving, full load"
	evDrain          = "drain (SIGTERM) of a broker leading a third, full load"
	evPacedBase      = "nothing moving, paced load (1 record/s per partition)"
	evPacedDrain     = "drain (SIGTERM) of a broker leading a third, paced load"
	evPacedRebalance = "rebalance onto the drained broker restarted, paced load"
	evRebalance      = "rebalance onto a restarted broker (a third moved from two live brokers), full load"
	evKill           = "SIGKILL of a broker leading a third (dead-after 4 s)"
	evStop           = "SIGSTOP of a leader (not the controller) past dead-after, then SIGCONT"
	evRoll           = "rolling restart (SIGTERM + start, each broker in turn)"

	defaultsProducer = "franz-go defaults producer (30 partitions, 10 moved): longest gap between acks"
	defaultsConsumer = "franz-go defaults consumer (30 partitions, 10 moved): longest gap between records received"
)

var handoffEvents = []string{evBaseline, evDrain, evPacedBase, evPacedDrain, evPacedRebalance, evRebalance, evKill, evStop, evRoll}

// handoffFigures collects what one run of the handoff scenario measured:
// the cells of one column of BenchmarkHandoffs' table, and its metrics.
// TestSafeHandoffs runs the scenario with a nil *handoffFigures, which
// records and logs nothing.
type handoffFigures struct {
	tb      testing.TB
	parts   int
	cells   map[figureKey]string
	order   []figureKey
	metrics map[string]float64
}

type figureKey struct{ event, measure string }

// cell records one cell of the table.
func (f *handoffFigures) cell(event, measure, format string, args ...any) {
	if f == nil {
		return
	}
	k := figureKey{event, measure}
	if _, ok := f.cells[k]; !ok {
		f.order = append(f.order, k)
	}
	f.cells[k] = fmt.Sprintf(format, args...)
}

// dist records a sorted distribution over partitions as p50 / p99 / max.
func (f *handoffFigures) dist(event, measure string, ds []time.Duration) {
	f.cell(event, measure+", p50 / p99 / max (ms)", "%d / %d / %d",
		pct(ds, 0.5).Milliseconds(), pct(ds, 0.99).Milliseconds(), pct(ds, 1).Milliseconds())
}

// times records durations, in ms, separated as measure's slashes separate
// their names.
func (f *handoffFigures) times(event, measure string, ds ...time.Duration) {
	var out []string
	for _, d := range ds {
		out = append(out, strconv.FormatInt(d.Milliseconds(), 10))
	}
	f.cell(event, measure+" (ms)", "%s", strings.Join(out, " / "))
}

// metric records a duration as a benchmark metric, in ms.
func (f *handoffFigures) metric(d time.Duration, unit string) {
	if f != nil {
		f.metrics[unit] = float64(d) / float64(time.Millisecond)
	}
}

// logf logs a diagnostic of the figures (which partitions waited longest).
func (f *handoffFigures) logf(format string, args ...any) {
	if f != nil {
		f.tb.Helper()
		f.tb.Logf(format, args...)
	}
}

// printHandoffTable writes the runs' figures as one markdown table, a
// column per run, the rows in the order of handoffEvents.
func printHandoffTable(w io.Writer, runs []*handoffFigures) {
	var keys []figureKey
	seen := map[figureKey]bool{}
	for _, r := range runs {
		for _, k := range r.order {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	slices.SortStableFunc(keys, func(a, b figureKey) int {
		return slices.Index(handoffEvents, a.event) - slices.Index(handoffEvents, b.event)
	})
	fmt.Fprint(w, "\n| event | measure |")
	for _, r := range runs {
		fmt.Fprintf(w, " %d partitions, %d moved |", r.parts, r.parts/3)
	}
	fmt.Fprint(w, "\n| --- | --- |"+strings.Repeat(" --: |", len(runs))+"\n")
	for i, k := range keys {
		event := k.event
		if i > 0 && keys[i-1].event == event {
			event = ""
		}
		fmt.Fprintf(w, "| %s | %s |", event, k.measure)
		for _, r := range runs {
			v, ok := r.cells[k]
			if !ok {
				v = "–"
			}
			fmt.Fprintf(w, " %s |", v)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// TestSafeHandoffs runs the handoff scenario (runHandoffs) and asserts its
// invariants only; BenchmarkHandoffs runs the same scenario for its figures.
func TestSafeHandoffs(t *testing.T) {
	runHandoffs(t, handoffSizes(t)[0], nil)
}

// runHandoffs is TestSafeHandoffs' scenario on a cluster of three brokers
// leading parts partitions under load: a drain, a controller SIGSTOP, a
// SIGKILL, the rebalance after it, a leader SIGSTOP past dead-after, a
// rolling restart, and a drain and rebalance under a paced load. It fails
// tb on any lost, duplicated or reordered record, a record not at its
// acknowledged offset, a leader epoch going down, a lost commit, or a
// broker that writes once deposed. fig, when not nil, collects what each
// event cost the clients (BenchmarkHandoffs' table).
func runHandoffs(t testing.TB, parts int, fig *handoffFigures) {
	api := startAPIServer(t)
	// A longer lease than clusterFlags, and fence-after 2 s / dead-after 4 s:
	// 3,000 partitions under full load on a 2-core machine can starve a
	// broker's control goroutines while it opens or closes a thousand
	// partitions, and tighter timings turn that into false dead-after
	// declarations.
	c := newKaasCluster(t, api, "--lease-duration", "6s", "--renew-deadline", "4s", "--retry-period", "1s",
		"--heartbeat-interval", "250ms", "--fence-after", "2s", "--dead-after", "4s", "--drain-timeout", "30s")
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	waitUntil(t, 30*time.Second, "a controller", func() bool { _, ctrl, _ := c.ledBy(); return ctrl != "" })
	adm := kadm.NewClient(c.client())
	if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), int32(parts), 1, nil, "load"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	waitUntil(t, 60*time.Second, "partitions spread", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == parts/3 && led["kaas-1"] == parts/3 && led["kaas-2"] == parts/3
	})
	stopEpochs := make(chan struct{})
	epochWatch := watchEpochs(t, c, stopEpochs)
	// A second producer with the client's default settings, over a small
	// topic: what an application sees of the same moves.
	const defaultParts = 30
	if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), defaultParts, 1, nil, "defaults"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	perBroker := (parts + defaultParts) / 3
	// balanced: every broker is running and leads its third of both topics.
	balanced := func() bool {
		l, _, _ := c.ledBy()
		return len(l) == 3 && l["kaas-0"] == perBroker && l["kaas-1"] == perBroker && l["kaas-2"] == perBroker
	}
	waitUntil(t, 60*time.Second, "both topics spread", balanced)
	checkLeaderHints(t, c, "load", parts)
	load := startLoad(t, c, "load", parts, true)
	slow := startLoad(t, c, "defaults", defaultParts, false)
	reader := startConsumer(t, c, "defaults", defaultParts)
	defer reader.stop()
	loadStart := time.Now()
	commits := startCommitter(t, c, "handoff-group", "load")
	all := map[int32]bool{}
	for p := 0; p < parts; p++ {
		all[int32(p)] = true
	}
	waitUntil(t, 60*time.Second, "every partition acknowledges", func() bool { _, ok := load.firstAcks(loadStart, all); return ok })
	allDefaults := map[int32]bool{}
	for p := range int32(defaultParts) {
		allDefaults[p] = true
	}
	waitUntil(t, 60*time.Second, "every partition of the default-settings client acknowledges", func() bool {
		_, ok := slow.firstAcks(loadStart, allDefaults)
		return ok
	})
	time.Sleep(time.Second)
	// Baseline: the longest gap between acknowledgements of each partition
	// while nothing moves. Move figures are read against it: under full
	// load, every partition's acks come in bursts one group commit apart.
	baseFrom := time.Now()
	time.Sleep(2 * time.Second)
	g := load.gaps(baseFrom, time.Now(), nil)
	fig.dist(evBaseline, "every partition: longest gap between acks", g)
	g = load.waits(baseFrom, time.Now(), nil)
	fig.dist(evBaseline, "every partition: longest wait of a record", g)

	// 1. Drain a broker that is not the controller (SIGTERM).
	_, ctrl, _ := c.ledBy()
	victim := "kaas-0"
	if ctrl == victim {
		victim = "kaas-1"
	}
	moved := c.partitionsLedBy(t, "load", victim, parts/3)
	movedDefaults := c.partitionsLedBy(t, "defaults", victim, defaultParts/3)
	// The drained broker exits within a second or two; the others open
	// its partitions after that.
	others := c.namesBut(victim)
	profiled := c.profileBrokers(t, os.Getenv("KAAS_HANDOFF_PROFILE"), "drain", time.Second, victim)
	profiledOthers := c.profileBrokers(t, os.Getenv("KAAS_HANDOFF_PROFILE"), "drain", 3*time.Second, others...)
	drainStart := time.Now()
	t.Logf("drain starts at %s", drainStart.Format("15:04:05.000000"))
	_ = c.brokers[victim].cmd.Process.Signal(syscall.SIGTERM)
	// Readiness turns false at once while the admin port keeps answering
	// (until the broker exits: a drain of a few partitions can beat this).
	for notReady := false; !notReady; {
		resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + c.brokers[victim].http + "/readyz")
		if err == nil {
			notReady = resp.StatusCode == http.StatusServiceUnavailable
			resp.Body.Close()
		}
		select {
		case <-c.brokers[victim].exited:
			if !notReady && time.Since(drainStart) > time.Second {
				t.Errorf("%s: /readyz never answered 503 during a %v drain (last: %v)", victim, time.Since(drainStart), err)
			}
			notReady = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	c.waitExit(t, victim)
	drained := time.Since(drainStart)
	time.Sleep(500 * time.Millisecond)
	drainEnd := time.Now()
	handedOff := handedOffAfter(t, c.brokers[victim])
	fig.times(evDrain, "all given on after / broker exited after", handedOff, drained)
	g = load.gaps(drainStart, drainEnd, moved)
	fig.dist(evDrain, "moved partitions: longest gap between acks", g)
	fig.logf("longest gaps of the drain of %s: %s", victim, load.worstGaps(drainStart, drainEnd, 3, moved))
	g = load.waits(drainStart, drainEnd, moved)
	fig.dist(evDrain, "moved partitions: longest wait of a record", g)
	fig.metric(pct(g, 0.99), "drain-p99-ms")
	// Partitions that did not move share produce requests (one in flight
	// per broker for an idempotent producer) with ones that did.
	stayed := map[int32]bool{}
	for p := range all {
		if !moved[p] {
			stayed[p] = true
		}
	}
	g = load.gaps(drainStart, drainEnd, stayed)
	fig.dist(evDrain, "partitions not moved: longest gap between acks", g)
	g = slow.gaps(drainStart, drainEnd, movedDefaults)
	fig.dist(evDrain, defaultsProducer, g)
	g = reader.gaps(drainStart, drainEnd, movedDefaults)
	fig.dist(evDrain, defaultsConsumer, g)
	profiled.Wait()
	profiledOthers.Wait()
	c.start(victim)
	waitUntil(t, 60*time.Second, "rebalanced after restart", balanced)

	// 2. SIGSTOP the controller past the lease duration: another broker
	// wins; the old one, resumed, never writes a file that takes effect.
	_, ctrl, epoch := c.ledBy()
	old := c.brokers[ctrl]
	_ = old.cmd.Process.Signal(syscall.SIGSTOP)
	stopAt := time.Now()
	waitUntil(t, 30*time.Second, "new controller while the old is stopped", func() bool {
		_, n, e := c.ledBy()
		return n != "" && n != ctrl && e > epoch
	})
	time.Sleep(3 * time.Second) // past dead-after: its partitions move too
	_ = old.cmd.Process.Signal(syscall.SIGCONT)
	t.Logf("controller %s stopped for %v", ctrl, time.Since(stopAt).Round(time.Millisecond))
	_, _, newEpoch := c.ledBy()
	time.Sleep(3 * time.Second)
	e, _, err := assignment.ReadHeader(assignment.Path(c.dataDir))
	if err != nil || e < newEpoch {
		t.Fatalf("assignment.json epoch %d after the old controller resumed (new epoch %d): %v", e, newEpoch, err)
	}
	waitUntil(t, 30*time.Second, "resumed broker rejoins", balanced)

	// 3. SIGKILL a leader under load.
	_, ctrl, _ = c.ledBy()
	victim = "kaas-2"
	if ctrl == victim {
		victim = "kaas-1"
	}
	moved = c.partitionsLedBy(t, "load", victim, parts/3)
	var ok bool
	survivors := c.namesBut(victim)
	killAt := time.Now()
	c.brokers[victim].kill()
	profiledKill := c.profileBrokers(t, os.Getenv("KAAS_HANDOFF_PROFILE"), "kill", 8*time.Second, survivors...)
	waitUntil(t, 60*time.Second, "every partition of the killed broker acknowledges again", func() bool {
		g, ok = load.firstAcks(killAt, moved)
		return ok
	})
	fig.dist(evKill, "its partitions: first ack of a record sent after the kill", g)
	profiledKill.Wait()
	// The restarted broker gets a third back from the two live ones: a
	// planned move between live brokers.
	rebalanceStart := time.Now()
	c.start(victim)
	waitUntil(t, 60*time.Second, "rebalanced after kill", balanced)
	time.Sleep(time.Second)
	rebalanceEnd := time.Now()
	movedOn := c.partitionsLedBy(t, "load", victim, parts/3)
	g = load.gaps(rebalanceStart, rebalanceEnd, movedOn)
	fig.dist(evRebalance, "moved partitions: longest gap between acks", g)
	g = load.waits(rebalanceStart, rebalanceEnd, movedOn)
	fig.dist(evRebalance, "moved partitions: longest wait of a record", g)
	movedBack := c.partitionsLedBy(t, "defaults", victim, defaultParts/3)
	g = slow.gaps(rebalanceStart, rebalanceEnd, movedBack)
	fig.dist(evRebalance, defaultsProducer, g)
	g = reader.gaps(rebalanceStart, rebalanceEnd, movedBack)
	fig.dist(evRebalance, defaultsConsumer, g)

	// 4. SIGSTOP a leader (not the controller) past dead-after, then SIGCONT.
	stopLeaderPastDeadAfter(t, c, load, parts, balanced, fig)

	// 5. Rolling restart of every broker (SIGTERM, wait, start).
	rollStart := time.Now()
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		_ = c.brokers[n].cmd.Process.Signal(syscall.SIGTERM)
		c.waitExit(t, n)
		c.start(n)
		waitUntil(t, 60*time.Second, n+" back and balanced", balanced)
	}
	rollEnd := time.Now()
	fig.times(evRoll, "took, in all", rollEnd.Sub(rollStart))
	g = load.gaps(rollStart, rollEnd, nil)
	fig.dist(evRoll, "every partition: longest gap between acks", g)
	fig.logf("longest gaps of the rolling restart: %s", load.worstGaps(rollStart, rollEnd, 5, nil))
	g = load.waits(rollStart, rollEnd, nil)
	fig.dist(evRoll, "every partition: longest wait of a record", g)
	g = slow.gaps(rollStart, rollEnd, nil)
	fig.dist(evRoll, "franz-go defaults producer (30 partitions): longest gap between acks", g)
	g = reader.gaps(rollStart, rollEnd, nil)
	fig.dist(evRoll, "franz-go defaults consumer (30 partitions): longest gap between records received", g)

	// 6. A drain and the rebalance back with the load paced to one record
	// per second per partition: the cost of the move itself, where at full
	// speed the load's own queueing adds to every record's wait.
	if os.Getenv("KAAS_HANDOFF_INTERVAL") == "" { // else the whole scenario is paced
		pacedDrain(t, c, load, slow, parts, balanced, fig)
	}

	load.stop()
	slow.stop()
	commits.stopAndVerify()
	close(stopEpochs)
	epochWatch.Wait()
	load.verify(c)
	slow.verify(c)
}

// pacedDrain paces load (and the default-settings client, slow, which would
// otherwise keep the brokers' group commits busy at full speed) to one
// record per second per partition, then drains a broker that is not the
// controller and rebalances onto it once it is back. fig gets the longest
// wait of a record of load with nothing moving, through the drain and
// through the rebalance, and the CPU the drain cost beyond the pace.
func pacedDrain(t testing.TB, c *kaasCluster, load, slow *loadChecker, parts int, balanced func() bool, fig *handoffFigures) {
	t.Helper()
	load.pace(time.Second)
	slow.pace(time.Second)
	time.Sleep(2 * time.Second) // the full-speed backlog drains
	// KAAS_HANDOFF_PROFILE: every broker's CPU while nothing moves, to
	// diff the receivers' CPU in the drain against.
	profiled := c.profileBrokers(t, os.Getenv("KAAS_HANDOFF_PROFILE"), "paced-base", 2*time.Second, c.names()...)
	from := time.Now()
	time.Sleep(2 * time.Second)
	profiled.Wait()
	g := load.waits(from, time.Now(), nil)
	fig.dist(evPacedBase, "every partition: longest wait of a record", g)
	_, ctrl, _ := c.ledBy()
	victim := "kaas-1"
	if ctrl == victim {
		victim = "kaas-2"
	}
	moved := c.partitionsLedBy(t, "load", victim, parts/3)
	receivers := c.namesBut(victim)
	c.waitForSpareSets(t, "load", moved)
	// The CPU the pace alone costs, measured once the spare sets are back
	// (until then the janitors recreating them add work of their own).
	idleFrom, cpuOK := c.sampleCPU()
	time.Sleep(time.Second)
	idleTo, _ := c.sampleCPU()
	profiled = c.profileBrokers(t, os.Getenv("KAAS_HANDOFF_PROFILE"), "paced-drain", 2*time.Second, receivers...)
	from = time.Now()
	drainFrom, _ := c.sampleCPU()
	_ = c.brokers[victim].cmd.Process.Signal(syscall.SIGTERM)
	c.waitExit(t, victim)
	drainTo, _ := c.sampleCPU()
	drained := time.Since(from)
	time.Sleep(500 * time.Millisecond)
	g = load.waits(from, time.Now(), moved)
	profiled.Wait()
	handedOff := handedOffAfter(t, c.brokers[victim])
	fig.times(evPacedDrain, "all given on after / broker exited after", handedOff, drained)
	fig.dist(evPacedDrain, "moved partitions: longest wait of a record", g)
	fig.metric(pct(g, 0.99), "paced-drain-p99-ms")
	if cpuOK && fig != nil {
		// What the move costs the machine: every process shares its cores
		// (three brokers, the apiserver, this test's clients).
		idleBusy, _, idleCPU := c.cpuSpent(idleFrom, idleTo)
		busy, steal, used := c.cpuSpent(drainFrom, drainTo)
		idleFor, drainFor := idleTo.at.Sub(idleFrom.at), drainTo.at.Sub(drainFrom.at)
		share := func(cpu, d time.Duration) float64 {
			return 100 * float64(cpu) / float64(d) / float64(runtime.NumCPU())
		}
		extra := used - time.Duration(float64(idleCPU)/float64(idleFor)*float64(drainFor))
		fig.cell(evPacedDrain, "machine busy, SIGTERM to exit: % (stolen; the brokers)",
			"%.0f (%.0f; %.0f)", 100*busy, 100*steal, share(used, drainFor))
		fig.cell(evPacedDrain, "machine busy at the pace alone: % (the brokers)", "%.0f (%.0f)", 100*idleBusy, share(idleCPU, idleFor))
		fig.cell(evPacedDrain, "the brokers' CPU beyond the pace, in all (ms)", "%d", extra.Milliseconds())
		perMoved := float64(extra) / float64(time.Millisecond) / float64(len(moved))
		fig.cell(evPacedDrain, "the brokers' CPU beyond the pace, per partition moved (ms)", "%.2f", perMoved)
		fig.metrics["cpu-ms/partition-moved"] = perMoved
	}
	c.waitForSpareSets(t, "load", moved)
	from = time.Now()
	c.start(victim)
	waitUntil(t, 60*time.Second, "rebalanced after the paced drain", balanced)
	time.Sleep(time.Second)
	g = load.waits(from, time.Now(), c.partitionsLedBy(t, "load", victim, parts/3))
	fig.dist(evPacedRebalance, "moved partitions: longest wait of a record", g)
	fig.metric(pct(g, 0.99), "paced-rebalance-p99-ms")
}

// waitForSpareSets waits (at most 30 s) until 99 % of the partitions of
// topic in parts have a spare set (disklog: the empty segment the next
// epoch's segment takes by rename, recreated by the leader's janitor 5-10 s
// after a move used it, 100 a second per broker). Right after the rolling
// restart most of them do not, and an open without one creates its segment
// files: step 6 measures a move in a cluster that has settled.
func (c *kaasCluster) waitForSpareSets(t testing.TB, topic string, parts map[int32]bool) {
	t.Helper()
	count := func() (spare, dirs int) {
		ents, err := os.ReadDir(c.dataDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			id, ok := disklog.ParseDirName(e.Name())
			if !ok || id.Topic != topic || !parts[id.Partition] {
				continue
			}
			dirs++
			if _, err := os.Stat(filepath.Join(c.dataDir, e.Name(), "log.spare")); err == nil {
				spare++
			}
		}
		return spare, dirs
	}
	start := time.Now()
	first, dirs := count()
	spare := first
	for dirs == 0 || spare < dirs*99/100 {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%d of %d partition directories of %s have a spare set after 30s", spare, dirs, topic)
		}
		time.Sleep(100 * time.Millisecond)
		spare, dirs = count()
	}
	t.Logf("spare sets: %d of %d partitions had one, %d after %v", first, dirs, spare, time.Since(start).Round(time.Millisecond))
}

// waitExit waits for a broker sent SIGTERM to exit.
func (c *kaasCluster) waitExit(t testing.TB, name string) {
	t.Helper()
	select {
	case <-c.brokers[name].exited:
	case <-time.After(40 * time.Second):
		t.Fatalf("%s did not exit after SIGTERM", name)
	}
}

// checkLeaderHints sends a Produce v11 for every partition of topic to one
// broker and checks that each partition it does not lead is refused with
// NOT_LEADER_OR_FOLLOWER naming the leader and epoch assignment.json gives,
// with that leader's endpoint in the response (KIP-951): a client moves to
// the new leader without a metadata refresh.
func checkLeaderHints(t testing.TB, c *kaasCluster, topic string, parts int) {
	t.Helper()
	a, err := assignment.ReadFile(assignment.Path(c.dataDir))
	if err != nil {
		t.Fatal(err)
	}
	b := c.brokers["kaas-0"]
	self, _ := a.BrokerByName("kaas-0")
	cl := c.client(kgo.SeedBrokers(b.kafka), producesByName())
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := range int32(parts) {
		if a.Topics[topic].Partitions[p].Leader == self.ID {
			continue // a batch this broker would append
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(t, 10*time.Second), cl.Broker(int(self.ID)))
	if err != nil {
		t.Fatal(err)
	}
	endpoints := map[int32]string{}
	for _, br := range resp.Brokers {
		endpoints[br.NodeID] = net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port)))
	}
	bad := 0
	for _, rp := range resp.Topics[0].Partitions {
		want := a.Topics[topic].Partitions[rp.Partition]
		leader, _ := a.BrokerByID(want.Leader)
		if rp.ErrorCode != kerr.NotLeaderForPartition.Code || rp.CurrentLeader.LeaderID != want.Leader ||
			rp.CurrentLeader.LeaderEpoch != want.LeaderEpoch || endpoints[want.Leader] != net.JoinHostPort(leader.Host, strconv.Itoa(int(leader.Port))) {
			if bad++; bad <= 3 {
				t.Errorf("partition %d: error %d, hint %d@%d (endpoint %q); want NOT_LEADER_OR_FOLLOWER, %d@%d at %s:%d",
					rp.Partition, rp.ErrorCode, rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch, endpoints[rp.CurrentLeader.LeaderID],
					want.Leader, want.LeaderEpoch, leader.Host, leader.Port)
			}
		}
	}
	if bad > 0 || len(resp.Topics[0].Partitions) == 0 {
		t.Fatalf("%d of %d partitions refused without the right leader hint", bad, len(resp.Topics[0].Partitions))
	}
}

// profileBrokers, when dir is set (KAAS_HANDOFF_PROFILE), records a CPU
// profile and an execution trace of the named brokers for the next d, and a
// CPU profile of this test process (the load) if it is not being profiled
// already: a diagnostic for where a move's time goes, never an assertion.
func (c *kaasCluster) profileBrokers(t testing.TB, dir, step string, d time.Duration, names ...string) *sync.WaitGroup {
	var wg sync.WaitGroup
	if dir == "" {
		return &wg
	}
	fetch := func(url, file string) {
		defer wg.Done()
		resp, err := http.Get(url)
		if err != nil {
			t.Logf("profile %s: %v", url, err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			t.Logf("profile %s: %v", file, err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	}
	ms := d.Milliseconds()
	for _, n := range names {
		b := c.brokers[n]
		wg.Add(2)
		go fetch(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", b.http, max(1, ms/1000)), fmt.Sprintf("%s-%s.cpu", step, b.name))
		go fetch(fmt.Sprintf("http://%s/debug/pprof/trace?seconds=%g", b.http, float64(ms)/1000), fmt.Sprintf("%s-%s.trace", step, b.name))
	}
	if f, err := os.OpenFile(filepath.Join(dir, step+"-test.cpu"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
		if pprof.StartCPUProfile(f) != nil {
			f.Close()
		} else {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(d)
				pprof.StopCPUProfile()
				f.Close()
			}()
		}
	}
	time.Sleep(300 * time.Millisecond) // the profiles have begun
	return &wg
}

// committer commits an ever-growing offset for one group while coordinators
// move (drains, kills, rolling restarts), remembering the last commit that
// was acknowledged. No acknowledged commit may be lost.
type committer struct {
	t               testing.TB
	c               *kaasCluster
	group, topic    string
	cancel          context.CancelFunc
	done            chan struct{}
	mu              sync.Mutex
	acked, attempts int64
}

func startCommitter(t testing.TB, c *kaasCluster, group, topic string) *committer {
	cm := &committer{t: t, c: c, group: group, topic: topic, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	cm.cancel = cancel
	go func() {
		defer close(cm.done)
		for n := int64(1); ctx.Err() == nil; n++ {
			// A fresh client per commit: a cached coordinator would stay on a
			// killed broker through dial errors.
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RetryTimeout(5*time.Second))
			if err != nil {
				continue
			}
			offs := kadm.Offsets{}
			offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: n, LeaderEpoch: -1})
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := kadm.NewClient(cl).CommitOffsets(cctx, group, offs)
			ccancel()
			cl.Close()
			cm.mu.Lock()
			cm.attempts++
			if err == nil && resp.Error() == nil {
				cm.acked = n
			}
			cm.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return cm
}

func (cm *committer) stopAndVerify() {
	t := cm.t
	cm.cancel()
	<-cm.done
	adm := kadm.NewClient(cm.c.client())
	ctx := ctxFor(t, 30*time.Second)
	var got kadm.OffsetResponses
	var err error
	for ctx.Err() == nil {
		if got, err = adm.FetchOffsets(ctx, cm.group); err == nil && got.Error() == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	o, _ := got.Lookup(cm.topic, 0)
	cm.mu.Lock()
	defer cm.mu.Unlock()
	t.Logf("committer: %d commits tried, last acknowledged %d, committed offset now %d (%v)", cm.attempts, cm.acked, o.At, err)
	if cm.acked == 0 || o.At < cm.acked {
		t.Errorf("group %s: acknowledged commit %d lost across coordinator moves (now %d)", cm.group, cm.acked, o.At)
	}
}

// fenceProbe prefixes the value of the record stopLeaderPastDeadAfter sends
// to a stopped broker.
const fenceProbe = "fence-probe"

// stopLeaderPastDeadAfter SIGSTOPs a broker that leads partitions but is not
// the controller, for longer than dead-after, while the load runs. The
// controller declares it dead and gives its partitions away without waiting
// for a release (it fenced itself after fence-after). When it resumes, the
// produce requests it was sent meanwhile (the load's, and a probe written to
// its socket once every thread is stopped) are read before it can have
// heard of the new assignment. It must refuse them (NOT_LEADER_OR_FOLLOWER),
// and, checked on disk, whatever it still appends to the segments it had
// written (a batch the stop caught between its fence check and its write)
// lies past the base offset of the segment its next leader rolled to, where
// nothing reads. Then it rejoins and takes its share back.
func stopLeaderPastDeadAfter(t testing.TB, c *kaasCluster, load *loadChecker, parts int, balanced func() bool, fig *handoffFigures) {
	t.Helper()
	_, ctrl, _ := c.ledBy()
	victim := "kaas-1"
	if ctrl == victim {
		victim = "kaas-0"
	}
	b := c.brokers[victim]
	led := c.partitionsLedBy(t, "load", victim, parts/3)
	probeP := int32(-1)
	for p := range led {
		probeP = p
		break
	}
	a, err := assignment.ReadFile(assignment.Path(c.dataDir))
	if err != nil {
		t.Fatal(err)
	}
	self, _ := a.BrokerByName(victim)
	// The victim has opened each of its partitions once it has rolled to a
	// segment of the epoch the file gives it there (a rebalance that looks
	// done in the counts may still be opening some).
	written := map[int32]string{} // what it appends to
	waitUntil(t, 30*time.Second, victim+" opened every partition it leads", func() bool {
		newest := newestSegments(c.dataDir, "load", led)
		for p := range led {
			epoch := a.Topics["load"].Partitions[p].LeaderEpoch
			if !strings.HasPrefix(filepath.Base(newest[p]), fmt.Sprintf("%08x-", uint32(epoch))) {
				return false
			}
			written[p] = newest[p]
		}
		return true
	})
	// Open the produce connection first (franz-go keeps one per broker for
	// produce requests), so that the probe's bytes reach the stopped
	// broker's socket rather than waiting for a dial and a handshake.
	cl := c.client(kgo.SeedBrokers(b.kafka), producesByName())
	warm := kmsg.NewPtrProduceRequest()
	warm.Acks, warm.TimeoutMillis = -1, 5000
	if _, err := warm.RequestWith(ctxFor(t, 10*time.Second), cl.Broker(int(self.ID))); err != nil {
		t.Fatalf("warm the produce connection to %s: %v", victim, err)
	}
	stopAt := time.Now()
	if err := b.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, victim+" stopped", func() bool { return processStopped(b.cmd.Process.Pid) })
	probe := kmsg.NewPtrProduceRequest()
	probe.Acks, probe.TimeoutMillis = -1, 30000 // the client waits this plus 10 s for the answer: the stop lasts seconds
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "load"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = probeP
	rp.Records = batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: time.Now().UnixMilli(), Values: [][]byte{[]byte(fenceProbe)}})
	rt.Partitions = append(rt.Partitions, rp)
	probe.Topics = append(probe.Topics, rt)
	answered := make(chan *kmsg.ProduceResponse, 1)
	go func() {
		resp, err := probe.RequestWith(ctxFor(t, 60*time.Second), cl.Broker(int(self.ID)))
		if err != nil {
			t.Errorf("probe produce to the stopped %s: %v", victim, err)
		}
		answered <- resp
	}()
	// The controller gives its partitions away once it is dead; the next
	// leaders open them and roll to segments of their own.
	c.partitionsLedBy(t, "load", victim, 0)
	givenAway := time.Since(stopAt)
	for deadline := time.Now().Add(30 * time.Second); ; {
		now := newestSegments(c.dataDir, "load", led)
		var waiting []string
		for p, seg := range written {
			if now[p] == seg {
				waiting = append(waiting, fmt.Sprintf("%d (%s)", p, filepath.Base(seg)))
			}
		}
		if len(waiting) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d partitions of the stopped %s not rolled by a next leader after 30s, e.g. %v", len(waiting), victim, waiting[:min(3, len(waiting))])
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Each segment the victim wrote, its size now, and the base offset of
	// the segment its next leader rolled to.
	type sealedSeg struct{ size, successorBase int64 }
	sealed := map[string]sealedSeg{}
	for _, seg := range written {
		fi, err := os.Stat(seg)
		if errors.Is(err, os.ErrNotExist) {
			continue // empty, so replaced and set aside by the next leader: no longer part of the log
		}
		if err != nil {
			t.Fatal(err)
		}
		sealed[seg] = sealedSeg{size: fi.Size(), successorBase: successorBase(t, seg)}
	}
	contAt := time.Now()
	if err := b.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if resp := <-answered; resp != nil {
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Errorf("the resumed %s answered the probe %+v, want NOT_LEADER_OR_FOLLOWER", victim, resp.Topics)
		}
	}
	var g []time.Duration
	waitUntil(t, 60*time.Second, "every partition of the stopped broker acknowledges again", func() bool {
		var ok bool
		g, ok = load.firstAcks(contAt, led)
		return ok
	})
	fig.times(evStop, "given away after / stopped for", givenAway, contAt.Sub(stopAt))
	fig.dist(evStop, "its partitions: first ack after SIGCONT", g)
	waitUntil(t, 60*time.Second, "rebalanced after the stopped broker resumed", balanced)
	// The resumed broker may still append a batch that the stop caught
	// between its fence check and its write (the same Receive): it must lie
	// at or past the successor's base offset, where recovery and reads never
	// look (and the claim check kept it unacknowledged). Anything below
	// would be a second writer inside the log.
	grew, batches := 0, 0
	for path, seg := range sealed {
		b, err := os.ReadFile(path) // (renamed aside since: never read again)
		if err != nil || int64(len(b)) <= seg.size {
			continue
		}
		grew++
		for rest := b[seg.size:]; len(rest) >= 12; {
			n := 12 + int64(binary.BigEndian.Uint32(rest[8:12]))
			if n > int64(len(rest)) {
				break // a torn write: never read either
			}
			batches++
			if base := int64(binary.BigEndian.Uint64(rest[:8])); base < seg.successorBase {
				t.Errorf("%s: %s appended a batch at offset %d after it resumed, below its successor's base %d", path, victim, base, seg.successorBase)
			}
			rest = rest[n:]
		}
	}
	t.Logf("after %s resumed: %d of %d segments it had written grew, by %d batches in all, each past its successor's base", victim, grew, len(sealed), batches)
}

// successorBase is the base offset of the segment after seg in its
// partition's directory.
func successorBase(t testing.TB, seg string) int64 {
	logs, _ := filepath.Glob(filepath.Join(filepath.Dir(seg), "*.log"))
	sort.Strings(logs)
	for i, l := range logs {
		if l == seg && i+1 < len(logs) {
			_, base, _ := strings.Cut(strings.TrimSuffix(filepath.Base(logs[i+1]), ".log"), "-")
			n, err := strconv.ParseInt(base, 10, 64)
			if err != nil {
				t.Fatalf("segment name %s: %v", logs[i+1], err)
			}
			return n
		}
	}
	t.Fatalf("no segment after %s", seg)
	return 0
}

// processStopped reports whether every thread of pid is stopped (SIGSTOP
// takes effect per thread; one in an uninterruptible syscall, state D,
// stops when it returns, before running any more of the program).
func processStopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			return false
		}
		// pid (comm) state ...: comm may hold spaces, the state follows the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't' && b[i+2] != 'D') {
			return false
		}
	}
	return true
}

// newestSegments returns, per partition of only, the path of its newest
// segment (the highest leader epoch, then the highest base offset).
func newestSegments(dataDir, topic string, only map[int32]bool) map[int32]string {
	out := map[int32]string{}
	ents, _ := os.ReadDir(dataDir) // once: a glob per partition would read it a thousand times
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), topic+"-")
		if !ok || !e.IsDir() || strings.HasSuffix(rest, ".deleted") {
			continue
		}
		n, _, _ := strings.Cut(rest, "-")
		p, err := strconv.Atoi(n)
		if err != nil || !only[int32(p)] {
			continue
		}
		// Names are <epoch>-<base offset>, both zero-padded: the newest
		// sorts last.
		logs, _ := filepath.Glob(filepath.Join(dataDir, e.Name(), "*.log"))
		sort.Strings(logs)
		if len(logs) > 0 {
			out[int32(p)] = logs[len(logs)-1]
		}
	}
	return out
}
