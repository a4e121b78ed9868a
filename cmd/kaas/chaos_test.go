package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestChaosHealsUnderLoad kills actors inside a running 3-broker cluster
// (real apiserver, real processes) while idempotent acks=all producers,
// a consumer group and an offset committer run, and slows and fails fsyncs
// through the fault-injecting storage: partition, group, connection and
// controller actors are stopped, poisoned and made to panic through
// --debug-chaos. No broker process may exit, and the checker finds nothing
// acknowledged lost, duplicated or reordered, no consumer read of a record
// the log does not keep at that offset, no committed offset moving
// backwards, and every partition serving again after each kill.
//
// The CI run lasts KAAS_CHAOS_DURATION (default 15s); go tool task chaos
// runs a soak of any length and prints the report (docs/operations.md).
func TestChaosHealsUnderLoad(t *testing.T) {
	dur := 15 * time.Second
	if s := os.Getenv("KAAS_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("KAAS_CHAOS_DURATION: %v", err)
		}
		dur = d
	}
	const topic, parts = "chaos", 12
	api := startAPIServer(t)
	// The timings of the handoff tests: a shared 2-core machine under full
	// load must not turn a slow heartbeat into a dead-after declaration.
	c := newKaasCluster(t, api, "--lease-duration", "6s", "--renew-deadline", "4s", "--retry-period", "1s",
		"--heartbeat-interval", "250ms", "--fence-after", "2s", "--dead-after", "4s", "--debug-chaos")
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	waitUntil(t, 30*time.Second, "a controller", func() bool { _, ctrl, _ := c.ledBy(); return ctrl != "" })
	adm := kadm.NewClient(c.client())
	if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), parts, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	waitUntil(t, 60*time.Second, "partitions spread", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == parts/3 && led["kaas-1"] == parts/3 && led["kaas-2"] == parts/3
	})

	load := startLoad(t, c, topic, parts, true)
	all := map[int32]bool{}
	for p := range int32(parts) {
		all[p] = true
	}
	loadStart := time.Now()
	waitUntil(t, 60*time.Second, "every partition acknowledges", func() bool { _, ok := load.firstAcks(loadStart, all); return ok })
	readers := startGroupReaders(t, c, "chaos-readers", topic, 2)
	commits := startMonotonicCommitter(t, c, "chaos-commits", topic)

	// The chaos: a kill every 200-600 ms, of a random kind, on a random
	// broker (the controller's for a controller); fsync faults now and
	// then. Controllers are killed at most every 15 s: one that dies five
	// times within a minute is given up, and the process exits (a real
	// failure, which the harness would report as a broker exit).
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 24))
	var kills []chaosEvent
	// fsyncWindows are the fsync fault windows, dated by their end
	// (recovery counts from there).
	var fsyncWindows []chaosEvent
	var lastCtrlKill time.Time
	kinds := []string{"partition", "partition", "group", "connection", "controller"}
	hows := []string{"stop", "poison", "panic"}
	end := time.Now().Add(dur)
	for time.Now().Before(end) {
		time.Sleep(time.Duration(200+rng.IntN(400)) * time.Millisecond)
		for name, b := range c.brokers {
			select {
			case <-b.exited:
				t.Fatalf("%s exited during the chaos", name)
			default:
			}
		}
		if rng.IntN(8) == 0 {
			b := c.brokers[c.names()[rng.IntN(3)]]
			kind, window := "fsync-delay", 2*time.Second
			q := "delay=" + strconv.Itoa(50+rng.IntN(250)) + "ms&for=2s"
			if rng.IntN(2) == 0 {
				kind, window, q = "fsync-fail", time.Second, "fail=0.3&for=1s"
			}
			at := time.Now()
			if _, err := chaosPost(b.http, "/debug/chaos/fsync?"+q); err != nil {
				t.Errorf("fsync faults on %s: %v", b.name, err)
				continue
			}
			fsyncWindows = append(fsyncWindows, chaosEvent{kind: kind, how: q, broker: b.name, at: at.Add(window)})
			continue
		}
		kind, how := kinds[rng.IntN(len(kinds))], hows[rng.IntN(len(hows))]
		name := c.names()[rng.IntN(3)]
		if kind == "controller" {
			_, ctrl, _ := c.ledBy()
			if ctrl == "" || time.Since(lastCtrlKill) < 15*time.Second {
				continue
			}
			name, lastCtrlKill = ctrl, time.Now()
		}
		at := time.Now()
		// Partitions of the load's topic: the others (__consumer_offsets)
		// carry no load to tell when they serve again.
		body, err := chaosPost(c.brokers[name].http, "/debug/chaos/kill?kind="+kind+"&how="+how+"&topic="+topic)
		if err != nil {
			continue // none of that kind there now (no group actor yet, a controller that moved)
		}
		var k chaosKill
		if err := json.Unmarshal(body, &k); err != nil {
			t.Fatalf("kill answer %q: %v", body, err)
		}
		kills = append(kills, chaosEvent{kind: kind, how: how, broker: name, actor: k.Actor, at: at})
	}
	chaosEnd := time.Now()
	// Every partition must serve again after the last kill and the end of
	// the last fsync fault window.
	for _, w := range fsyncWindows {
		if w.at.After(chaosEnd) {
			chaosEnd = w.at
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, ok := load.firstAcks(chaosEnd, all); ok {
			break
		}
		if time.Now().After(deadline) {
			load.mu.Lock()
			for p := range int32(parts) {
				if _, ok := firstAckAfter(load.acked[p], chaosEnd); !ok {
					t.Errorf("partition %d: nothing acknowledged after the chaos; %d records pending, the oldest sent %s",
						p, len(load.pending[p]), load.pending[p][0].sent.Format("15:04:05.000"))
				}
			}
			load.mu.Unlock()
			t.Fatalf("not every partition serves again after the chaos")
		}
	}
	_, ctrl, _ := c.ledBy()
	waitUntil(t, 30*time.Second, "a controller after the chaos", func() bool { _, ctrl, _ = c.ledBy(); return ctrl != "" })
	time.Sleep(time.Second)
	commitStats := commits.stop()
	load.stop()
	readStats := readers.stop()
	for name, b := range c.brokers {
		select {
		case <-b.exited:
			t.Fatalf("%s exited during the chaos", name)
		default:
		}
	}
	res := load.verify(c)
	badReads := readers.checkAgainst(load.logged)

	// Recovery: for a partition kill, until that partition acknowledged a
	// record sent after the kill; for the others, until every partition had.
	recovery := map[string][]time.Duration{}
	never := 0
	load.mu.Lock()
	for _, k := range append(slices.Clone(kills), fsyncWindows...) {
		var d time.Duration
		ok := true
		if p, isPart := partitionOfActor(k.actor); isPart {
			d, ok = firstAckAfter(load.acked[p], k.at)
		} else {
			for p := range int32(parts) {
				dp, okp := firstAckAfter(load.acked[p], k.at)
				ok = ok && okp
				d = max(d, dp)
			}
		}
		if !ok {
			never++
			t.Errorf("%s %s of %s on %s at %s: not serving again", k.how, k.kind, k.actor, k.broker, k.at.Format("15:04:05.000"))
			continue
		}
		recovery[k.kind] = append(recovery[k.kind], d)
	}
	// The slowest acknowledgements, to line up with the kills in the logs.
	var slow []ackedRec
	slowPart := map[time.Time]int32{}
	for p, as := range load.acked {
		for _, a := range as {
			slow = append(slow, a)
			slowPart[a.sent] = p
		}
	}
	sort.Slice(slow, func(i, j int) bool { return slow[i].at.Sub(slow[i].sent) > slow[j].at.Sub(slow[j].sent) })
	var slowest []string
	for _, a := range slow[:min(5, len(slow))] {
		slowest = append(slowest, fmt.Sprintf("p%d sent %s waited %s", slowPart[a.sent], a.sent.Format("15:04:05.000"), a.at.Sub(a.sent).Round(time.Millisecond)))
	}
	load.mu.Unlock()

	restarts := map[string]float64{}
	for _, b := range c.brokers {
		for k, v := range scrapeRestarts(t, b.http) {
			restarts[k] += v
		}
	}
	byKind := map[string]int{}
	for _, k := range kills {
		byKind[k.kind+"/"+k.how]++
	}
	windows := map[string]int{}
	for _, w := range fsyncWindows {
		windows[w.kind]++
	}
	// Each broker's fsyncs delayed and failed by the injector (the
	// endpoint answers them; no faults are left set).
	var delayed, failed int64
	for _, b := range c.brokers {
		body, err := chaosPost(b.http, "/debug/chaos/fsync")
		var n struct{ Delayed, Failed int64 }
		if err == nil {
			err = json.Unmarshal(body, &n)
		}
		if err != nil {
			t.Errorf("fsync counts of %s: %v", b.name, err)
		}
		delayed, failed = delayed+n.Delayed, failed+n.Failed
	}
	var rep strings.Builder
	fmt.Fprintf(&rep, "chaos report: %s of chaos on 3 brokers (%d partitions), %d CPUs, %s\n", dur, parts, runtime.NumCPU(), time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&rep, "  kills: %d (%s)\n", len(kills), sortedCounts(byKind))
	fmt.Fprintf(&rep, "  fsync fault windows: %d (%s); fsyncs delayed %d, failed %d (at the disk log's fsync seam)\n", len(fsyncWindows), sortedCounts(windows), delayed, failed)
	fmt.Fprintf(&rep, "  restarts counted (kaas_actor_restarts_total): %s\n", sortedCountsF(restarts))
	fmt.Fprintf(&rep, "  records: %d acknowledged, %d read back; lost %d, duplicated %d, reordered %d, not at their acknowledged offset %d, epoch regressions %d\n",
		res.acked, res.inLog, res.lost, res.dups, res.disorder, res.notAtOffset, res.epochDrops)
	fmt.Fprintf(&rep, "  group readers: %d records read; reads the log does not keep at that offset: %d\n", readStats, badReads)
	fmt.Fprintf(&rep, "  committer: %d commits acknowledged, last %d, committed offset moved backwards %d times, final %d\n",
		commitStats.acked, commitStats.last, commitStats.backwards, commitStats.final)
	fmt.Fprintf(&rep, "  kills after which a partition never served again: %d\n", never)
	var recoveryByKind []string
	for _, kind := range slices.Sorted(func(yield func(string) bool) {
		for k := range recovery {
			if !yield(k) {
				return
			}
		}
	}) {
		ds := recovery[kind]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		recoveryByKind = append(recoveryByKind, fmt.Sprintf("%s n=%d p50 %s p99 %s max %s", kind, len(ds), pct(ds, .5).Round(time.Millisecond),
			pct(ds, .99).Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond)))
	}
	fmt.Fprintf(&rep, "  recovery (a kill, or the end of an fsync fault window, to serving again), by kind: %s", strings.Join(recoveryByKind, "; "))
	fmt.Fprintf(&rep, "\n  slowest acknowledgements: %s\n", strings.Join(slowest, "; "))
	fmt.Fprintf(&rep, "  controller at the end: %s\n", ctrl)
	t.Log(rep.String())
	if out := os.Getenv("KAAS_CHAOS_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(rep.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if len(kills) == 0 || badReads > 0 || commitStats.backwards > 0 || commitStats.acked == 0 || commitStats.final < commitStats.last {
		t.Errorf("chaos invariants violated (see the report)")
	}
	if restarts["partition"] == 0 {
		t.Errorf("no partition restart counted: %v", restarts)
	}
}

type chaosEvent struct {
	kind, how, broker, actor string
	at                       time.Time
}

// chaosPost posts to a broker's debug chaos endpoint.
func chaosPost(httpAddr, path string) ([]byte, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Post("http://"+httpAddr+path, "", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// partitionOfActor parses the partition of a partition actor's id
// (supervisor/partition/<topic>/<topic id>/<partition>/...).
func partitionOfActor(id string) (int32, bool) {
	f := strings.Split(id, "/")
	if len(f) < 5 || f[1] != "partition" {
		return 0, false
	}
	p, err := strconv.Atoi(f[4])
	return int32(p), err == nil
}

// firstAckAfter is the time from at to the first acknowledgement of a
// record handed to the client after at.
func firstAckAfter(acks []ackedRec, at time.Time) (time.Duration, bool) {
	for _, a := range acks {
		if !a.sent.Before(at) {
			return a.at.Sub(at), true
		}
	}
	return 0, false
}

// scrapeRestarts reads kaas_actor_restarts_total by kind from /metrics.
func scrapeRestarts(t *testing.T, httpAddr string) map[string]float64 {
	out := map[string]float64{}
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Errorf("metrics: %v", err)
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "kaas_actor_restarts_total{") {
			continue
		}
		labels, val, _ := strings.Cut(line, "} ")
		kind := ""
		for _, kv := range strings.Split(strings.TrimPrefix(labels, "kaas_actor_restarts_total{"), ",") {
			if k, v, ok := strings.Cut(kv, "="); ok && k == "kind" {
				kind = strings.Trim(v, `"`)
			}
		}
		f, _ := strconv.ParseFloat(val, 64)
		out[kind] += f
	}
	return out
}

func sortedCounts(m map[string]int) string {
	var s []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		s = append(s, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(s, ", ")
}

func sortedCountsF(m map[string]float64) string {
	n := map[string]int{}
	for k, v := range m {
		n[k] = int(v)
	}
	return sortedCounts(n)
}

// groupReaders are consumer-group members reading a topic; every record
// read is kept to be checked against the log read back at the end.
type groupReaders struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	reads  map[int32]map[int64]string
	n      int
	bad    []string
}

func startGroupReaders(t *testing.T, c *kaasCluster, group, topic string, members int) *groupReaders {
	g := &groupReaders{reads: map[int32]map[int64]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	for range members {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			defer cl.Close()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				g.mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					g.n++
					if g.reads[r.Partition] == nil {
						g.reads[r.Partition] = map[int64]string{}
					}
					v := string(r.Value)
					if prev, ok := g.reads[r.Partition][r.Offset]; ok && prev != v {
						g.bad = append(g.bad, fmt.Sprintf("partition %d offset %d read as %q and as %q", r.Partition, r.Offset, prev, v))
					}
					g.reads[r.Partition][r.Offset] = v
				})
				g.mu.Unlock()
			}
		}()
	}
	return g
}

func (g *groupReaders) stop() int {
	g.cancel()
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// checkAgainst counts the reads that disagree with the log read back
// (logged: producer sequence by offset): a record read that the log does
// not keep at its offset was served from beyond the high watermark.
func (g *groupReaders) checkAgainst(logged map[int32]map[int64]int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	bad := len(g.bad)
	for p, offs := range g.reads {
		for off, v := range offs {
			seq, ok := logged[p][off]
			if !ok || v != fmt.Sprintf("%d-%d", p, seq) {
				bad++
			}
		}
	}
	return bad
}

// monotonicCommitter commits ever higher offsets for one partition and
// watches the committed offset: it must never move backwards, and the
// last acknowledged commit must be there at the end.
type monotonicCommitter struct {
	c      *kaasCluster
	group  string
	topic  string
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	stats  commitStats
}

type commitStats struct {
	acked, backwards int
	last, final      int64
}

func startMonotonicCommitter(t *testing.T, c *kaasCluster, group, topic string) *monotonicCommitter {
	cm := &monotonicCommitter{c: c, group: group, topic: topic, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	cm.cancel = cancel
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RetryTimeout(5*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	go func() {
		defer close(cm.done)
		defer cl.Close()
		seen := int64(-1)
		for n := int64(1); ctx.Err() == nil; n++ {
			offs := kadm.Offsets{}
			offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: n, LeaderEpoch: -1})
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := adm.CommitOffsets(cctx, group, offs)
			if err == nil && resp.Error() == nil {
				cm.mu.Lock()
				cm.stats.acked++
				cm.stats.last = n
				cm.mu.Unlock()
			}
			got, err := adm.FetchOffsets(cctx, group)
			ccancel()
			if err == nil && got.Error() == nil {
				if o, ok := got.Lookup(topic, 0); ok {
					cm.mu.Lock()
					if o.At < seen {
						cm.stats.backwards++
					}
					seen = max(seen, o.At)
					cm.mu.Unlock()
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return cm
}

func (cm *monotonicCommitter) stop() commitStats {
	cm.cancel()
	<-cm.done
	adm := kadm.NewClient(cm.c.client())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		got, err := adm.FetchOffsets(ctx, cm.group)
		if err == nil && got.Error() == nil {
			if o, ok := got.Lookup(cm.topic, 0); ok {
				cm.mu.Lock()
				cm.stats.final = o.At
				cm.mu.Unlock()
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.stats
}
