package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/batch"
)

// brokerAck is one acknowledgement, with the broker that gave it.
type brokerAck struct {
	part    int32
	seq     int
	offset  int64
	broker  int32
	retried bool      // an earlier attempt of this record may have been appended (no clean refusal before the write)
	sent    time.Time // this attempt's request handed to the client
	at      time.Time
}

// brokerRefusal is one produce the broker answered with an error.
type brokerRefusal struct {
	part   int32
	broker int32
	code   int16
	msg    string
	at     time.Time
}

type leaderView struct{ leader, epoch int32 }

// attributedLoad is an idempotent acks=all producer over every partition
// of a topic that, unlike startLoad's franz-go producer, sends each produce
// request itself to the broker it takes for the leader, one request in
// flight per partition: every acknowledgement is then known with the
// broker that gave it and when. Values are "<partition>-<seq>", acks go
// into the embedded loadChecker, so loadChecker.verify checks the log.
type attributedLoad struct {
	*loadChecker
	cl     *kgo.Client
	ids    []int32
	pid    int64
	pepoch int16

	mu        sync.Mutex
	leaders   map[int32]leaderView
	refreshed time.Time
	acks      []brokerAck
	refusals  []brokerRefusal
	refreshMu sync.Mutex
}

func startAttributedLoad(t testing.TB, c *kaasCluster, topic string, parts int, ids []int32) *attributedLoad {
	a := &attributedLoad{
		loadChecker: &loadChecker{t: t, topic: topic, parts: parts, acked: map[int32][]ackedRec{}, pending: map[int32][]ackedRec{},
			kinds: map[string]int{}, done: make(chan struct{})},
		cl: c.client(producesByName()), ids: ids, leaders: map[int32]leaderView{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	ictx := ctxFor(t, 30*time.Second)
	for {
		resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ictx, a.cl)
		if err == nil && resp.ErrorCode == 0 {
			a.pid, a.pepoch = resp.ProducerID, resp.ProducerEpoch
			break
		}
		if ictx.Err() != nil {
			t.Fatalf("InitProducerID: %v %v", err, resp)
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.refresh(ctx, true)
	var wg sync.WaitGroup
	for p := int32(0); p < int32(parts); p++ {
		wg.Add(1)
		go func() { defer wg.Done(); a.producePartition(ctx, p) }()
	}
	go func() { wg.Wait(); close(a.done) }()
	return a
}

// refresh asks every broker for the topic's metadata and keeps, per
// partition, the answer with the highest leader epoch (what a client does:
// an isolated broker still names itself at its old epoch). force skips the
// rate limit.
func (a *attributedLoad) refresh(ctx context.Context, force bool) {
	a.refreshMu.Lock()
	defer a.refreshMu.Unlock()
	a.mu.Lock()
	recent := time.Since(a.refreshed) < 50*time.Millisecond
	a.mu.Unlock()
	if recent && !force {
		return
	}
	best := map[int32]leaderView{}
	var wg sync.WaitGroup
	var bmu sync.Mutex
	for _, id := range a.ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(a.topic)
			req.Topics = append(req.Topics, rt)
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			resp, err := req.RequestWith(rctx, a.cl.Broker(int(id)))
			if err != nil {
				return
			}
			bmu.Lock()
			defer bmu.Unlock()
			for _, t := range resp.Topics {
				if t.Topic == nil || *t.Topic != a.topic {
					continue
				}
				for _, p := range t.Partitions {
					if p.Leader < 0 {
						continue
					}
					if v, ok := best[p.Partition]; !ok || p.LeaderEpoch > v.epoch {
						best[p.Partition] = leaderView{leader: p.Leader, epoch: p.LeaderEpoch}
					}
				}
			}
		}()
	}
	wg.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	for p, v := range best {
		if cur, ok := a.leaders[p]; !ok || v.epoch >= cur.epoch {
			a.leaders[p] = v
		}
	}
	a.refreshed = time.Now()
}

func (a *attributedLoad) leader(p int32) (leaderView, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.leaders[p]
	return v, ok
}

// produceTo sends one batch for partition p to broker id and returns the
// partition's answer.
func (a *attributedLoad) produceTo(ctx context.Context, id, p int32, records []byte) (kmsg.ProduceResponseTopicPartition, error) {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = a.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, a.cl.Broker(int(id)))
	if err != nil {
		return kmsg.ProduceResponseTopicPartition{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kmsg.ProduceResponseTopicPartition{}, fmt.Errorf("produce response for %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0], nil
}

func (a *attributedLoad) producePartition(ctx context.Context, p int32) {
	for seq := 0; ctx.Err() == nil; seq++ {
		records := batch.Build(batch.Spec{ProducerID: a.pid, ProducerEpoch: a.pepoch, BaseSequence: int32(seq),
			Timestamp: time.Now().UnixMilli(), Values: [][]byte{[]byte(fmt.Sprintf("%d-%d", p, seq))}})
		sent := time.Now()
		maybeWritten := false
		for ctx.Err() == nil {
			v, ok := a.leader(p)
			if !ok {
				a.refresh(ctx, false)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			attempt := time.Now()
			rp, err := a.produceTo(ctx, v.leader, p, records)
			at := time.Now()
			if err != nil {
				if ctx.Err() == nil {
					maybeWritten = true
					a.loadChecker.mu.Lock()
					a.errs++
					a.kinds[err.Error()]++
					a.loadChecker.mu.Unlock()
					a.refresh(ctx, false)
					time.Sleep(20 * time.Millisecond)
				}
				continue
			}
			if rp.ErrorCode == 0 {
				a.mu.Lock()
				a.acks = append(a.acks, brokerAck{part: p, seq: seq, offset: rp.BaseOffset, broker: v.leader, retried: maybeWritten, sent: attempt, at: at})
				a.mu.Unlock()
				a.loadChecker.mu.Lock()
				a.acked[p] = append(a.acked[p], ackedRec{seq: seq, offset: rp.BaseOffset, sent: sent, at: at})
				a.loadChecker.mu.Unlock()
				break
			}
			msg := ""
			if rp.ErrorMessage != nil {
				msg = *rp.ErrorMessage
			}
			// A refusal at admission wrote nothing; one after the write
			// (the group commit failed or was superseded) may have.
			if !strings.HasPrefix(msg, "broker fenced") {
				maybeWritten = true
			}
			a.mu.Lock()
			a.refusals = append(a.refusals, brokerRefusal{part: p, broker: v.leader, code: rp.ErrorCode, msg: msg, at: at})
			a.mu.Unlock()
			a.loadChecker.mu.Lock()
			a.errs++
			a.kinds[kerr.ErrorForCode(rp.ErrorCode).Error()]++
			a.loadChecker.mu.Unlock()
			a.refresh(ctx, false)
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// snapshot copies the acknowledgements and refusals so far.
func (a *attributedLoad) snapshot() ([]brokerAck, []brokerRefusal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]brokerAck(nil), a.acks...), append([]brokerRefusal(nil), a.refusals...)
}

// TestNetworkPartitionFencesIsolatedBroker runs three brokers, each in a
// network namespace of its own, against the real test apiserver, and cuts
// one broker off from the other brokers and the apiserver while the test's
// clients still reach it, under an idempotent acks=all load on every
// partition. The isolated broker must refuse every write and offset commit
// sent later than its fence bound after the cut, until healed; no two
// brokers may acknowledge new writes in one leader epoch of a partition,
// nothing acknowledged may be lost, duplicated or reordered, the survivors
// must take its partitions, and once the network heals it must rejoin and
// lead again.
//
// The bound needs no slack. The fence closes --fence-after after the send
// of the last ping answered, which went out before the cut (the rules are
// in place when the cut is dated), and a write is checked against the
// fence when the broker admits it, after the client sent it: a write sent
// past the bound is admitted past the fence. A write admitted just before
// the fence may still be acknowledged after it, once its group commit
// ends; what keeps that safe is --dead-after exceeding --fence-after and
// the leader claim (docs/handoffs.md), and the log read back shows nothing
// acknowledged lost.
//
// Two cases, both bound by --fence-after: the isolated broker is not the
// controller (it stops exchanging heartbeats at once), and it is the
// controller (its own hub still answers its pings, but those exchanges
// count from its last Lease renewal, which precedes the cut; the survivors
// fence meanwhile too, until one of them is elected controller at a higher
// epoch, which the test waits for).
func TestNetworkPartitionFencesIsolatedBroker(t *testing.T) {
	requireNetns(t)
	api := startAPIServer(t)
	// The brokers' flags, KAAS_TEST_BROKER_ARGS last (it wins).
	flags := append(slices.Clone(clusterFlags), strings.Fields(os.Getenv("KAAS_TEST_BROKER_ARGS"))...)
	// Writes sent this long after the cut must be refused by the isolated broker.
	bound := flagDuration(t, flags, "--fence-after")
	for _, tc := range []struct {
		name       string
		controller bool
	}{
		{"broker", false},
		{"controller", true},
	} {
		t.Run(tc.name, func(t *testing.T) { runNetworkPartition(t, api, tc.controller, bound) })
	}
}

// flagDuration is the value of the last duration flag name in args.
func flagDuration(t testing.TB, args []string, name string) time.Duration {
	t.Helper()
	for i := len(args) - 2; i >= 0; i-- {
		if args[i] == name {
			d, err := time.ParseDuration(args[i+1])
			if err != nil {
				t.Fatalf("%s %q: %v", name, args[i+1], err)
			}
			return d
		}
	}
	t.Fatalf("%s not in %v", name, args)
	return 0
}

func runNetworkPartition(t *testing.T, api *apiserver, isolateController bool, bound time.Duration) {
	lab := newNetLab(t, api)
	c := newKaasCluster(t, api, clusterFlags...)
	c.netns = lab
	names := []string{"kaas-0", "kaas-1", "kaas-2"}
	for _, n := range names {
		c.start(n)
	}
	const topic, parts = "nf", 12
	waitUntil(t, 30*time.Second, "a controller elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl != ""
	})
	adm := kadm.NewClient(c.client())
	if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), parts, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	waitUntil(t, 30*time.Second, "4 partitions led per broker", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == 4 && led["kaas-1"] == 4 && led["kaas-2"] == 4
	})
	load := startAttributedLoad(t, c, topic, parts, []int32{0, 1, 2})
	stopped := false
	defer func() {
		if !stopped {
			load.stop()
		}
	}()
	waitUntil(t, 30*time.Second, "every partition acknowledged", func() bool {
		_, ok := load.firstAcks(time.Time{}, allParts(parts))
		return ok
	})
	_, ctrl, ctrlEpoch := c.ledBy()
	victim := ""
	for _, n := range names {
		if (n == ctrl) == isolateController {
			victim = n
			break
		}
	}
	victimID := int32(victim[len(victim)-1] - '0')
	commits := startDirectCommits(t, c, load.cl, adm, victimID, topic)
	for deadline := time.Now().Add(30 * time.Second); !commits.acknowledged(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no commit to group %s acknowledged by %s in 30 s; answers: %s", commits.group, victim, commits.codes())
		}
	}
	time.Sleep(time.Second)
	led := c.partitionsLedBy(t, topic, victim, 4)
	lab.isolate(victim)
	cut := time.Now()
	t.Logf("%s (controller %v) cut off at %s; it leads partitions %v", victim, ctrl == victim, cut.UTC().Format("15:04:05.000"), sortedParts(led))

	// The survivors take its partitions and acknowledge them.
	var failover []time.Duration
	waitUntil(t, 30*time.Second, "every partition of the isolated broker acknowledged by a survivor", func() bool {
		failover = survivorFirstAcks(load, cut, led, victimID)
		return len(failover) == len(led)
	})
	if isolateController {
		waitUntil(t, 30*time.Second, "a survivor elected controller at a higher epoch", func() bool {
			_, now, epoch := c.ledBy()
			return now != "" && now != victim && epoch > ctrlEpoch
		})
	}
	// Probe the isolated broker directly, past its fence bound, on every
	// partition it led: each probe is a fresh (non-idempotent) write that
	// it must refuse. One it accepted would be acknowledged after the
	// fence, and verify finds its value in the log.
	if d := time.Until(cut.Add(bound)); d > 0 {
		time.Sleep(d)
	}
	probes, probeAcks := 0, 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		for p := range led {
			pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			rp, err := load.produceTo(pctx, victimID, p,
				batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: time.Now().UnixMilli(), Values: [][]byte{[]byte(fenceProbe)}}))
			cancel()
			if err != nil {
				continue
			}
			probes++
			if rp.ErrorCode == 0 {
				probeAcks++
				t.Errorf("isolated %s acknowledged a probe on partition %d at offset %d, %v after the cut", victim, p, rp.BaseOffset, time.Since(cut))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if probes == 0 {
		t.Errorf("no probe reached the isolated %s: its clients must still reach it", victim)
	}

	commits.stop()
	healAt := time.Now()
	lab.heal(victim)
	t.Logf("network healed at %s (%v after the cut)", healAt.UTC().Format("15:04:05.000"), healAt.Sub(cut).Round(time.Millisecond))
	rejoin := waitUntil(t, 45*time.Second, victim+" leads partitions and acknowledges again", func() bool {
		acks, _ := load.snapshot()
		for _, a := range acks {
			if a.broker == victimID && a.at.After(healAt) {
				return true
			}
		}
		return false
	})
	time.Sleep(500 * time.Millisecond)
	load.stop()
	stopped = true

	epochAt := map[int32]map[int64]int32{}
	var emu sync.Mutex
	load.onRecord = func(r *kgo.Record) {
		emu.Lock()
		defer emu.Unlock()
		if epochAt[r.Partition] == nil {
			epochAt[r.Partition] = map[int64]int32{}
		}
		epochAt[r.Partition][r.Offset] = r.LeaderEpoch
	}
	load.verify(c)

	acks, refusals := load.snapshot()
	// The isolated broker's last acknowledgement before the heal, and its
	// first refusal for being fenced.
	var lastAck, firstFenced time.Time
	var late []string
	for _, a := range acks {
		if a.broker != victimID {
			continue
		}
		if a.at.After(cut) && a.at.Before(healAt) && a.at.After(lastAck) {
			lastAck = a.at
		}
		if a.sent.Sub(cut) > bound && a.sent.Before(healAt) {
			late = append(late, fmt.Sprintf("p%d offset %d sent at +%v", a.part, a.offset, a.sent.Sub(cut).Round(time.Millisecond)))
		}
	}
	for _, r := range refusals {
		if r.broker == victimID && r.at.After(cut) && strings.HasPrefix(r.msg, "broker fenced") && (firstFenced.IsZero() || r.at.Before(firstFenced)) {
			firstFenced = r.at
		}
	}
	// Per partition, requests are sequential: once the isolated broker
	// refused one as fenced, it must acknowledge nothing more there until
	// the heal (a fence lifts only with a heartbeat exchange, and none
	// crosses the cut).
	fencedAt := map[int32]time.Time{}
	for _, r := range refusals {
		if r.broker == victimID && r.at.After(cut) && r.at.Before(healAt) && strings.HasPrefix(r.msg, "broker fenced") {
			if f, ok := fencedAt[r.part]; !ok || r.at.Before(f) {
				fencedAt[r.part] = r.at
			}
		}
	}
	for _, a := range acks {
		if f, ok := fencedAt[a.part]; ok && a.broker == victimID && a.at.After(f) && a.at.Before(healAt) {
			t.Errorf("isolated %s acknowledged p%d offset %d %v after refusing that partition as fenced", victim, a.part, a.offset, a.at.Sub(f))
		}
	}
	if len(late) > 0 {
		t.Errorf("isolated %s acknowledged %d writes sent later than %v after the cut: %v", victim, len(late), bound, late[:min(5, len(late))])
	}
	if firstFenced.IsZero() {
		t.Errorf("isolated %s never refused a write as fenced", victim)
	}
	checkOneWriterPerEpoch(t, acks, epochAt)
	commitFenced := commits.check(cut, bound)
	sort.Slice(failover, func(i, j int) bool { return failover[i] < failover[j] })
	others := allParts(parts)
	for p := range led {
		delete(others, p)
	}
	othersGap := load.gaps(cut, healAt, others)
	since := func(at time.Time) string {
		if at.IsZero() {
			return "never"
		}
		return at.Sub(cut).Round(time.Millisecond).String()
	}
	t.Logf("FIGURES %s isolated (controller %v), %v: last ack by it %s after the cut, first 'fenced' refusal %s after (bound %v); "+
		"its %d partitions acknowledged by survivors after %v (median) / %v (max); the other partitions' longest gap between acks during the cut %v (max); %d probes past the bound all refused; rejoined and acknowledging %v after the heal; offset commits to it refused from %s after the cut",
		victim, isolateController, strings.TrimSpace(strings.Join(clusterFlags, " ")+" "+os.Getenv("KAAS_TEST_BROKER_ARGS")), since(lastAck), since(firstFenced), bound,
		len(led), pct(failover, 0.5).Round(time.Millisecond), failover[len(failover)-1].Round(time.Millisecond), othersGap[len(othersGap)-1].Round(time.Millisecond), probes-probeAcks, rejoin.Round(time.Millisecond), since(commitFenced))
}

// checkOneWriterPerEpoch fails when two brokers acknowledged new writes of
// one partition in one leader epoch (read back from the log), or when an
// acknowledgement's epoch is older than one acknowledged before it (a
// deposed leader still acknowledging). A retried record may be answered as
// a duplicate by the next leader, at the offset and epoch the previous one
// wrote it: that is the same write, not a second writer.
func checkOneWriterPerEpoch(t testing.TB, acks []brokerAck, epochAt map[int32]map[int64]int32) {
	t.Helper()
	sort.SliceStable(acks, func(i, j int) bool { return acks[i].at.Before(acks[j].at) })
	type key struct {
		part  int32
		epoch int32
	}
	owner := map[key]int32{}
	newest := map[int32]int32{}
	bad := 0
	for _, a := range acks {
		e, ok := epochAt[a.part][a.offset]
		if !ok {
			continue // verify reports an acknowledged offset missing from the log
		}
		if e < newest[a.part] && !a.retried {
			bad++
			t.Errorf("partition %d: broker %d acknowledged offset %d of leader epoch %d after epoch %d was acknowledged", a.part, a.broker, a.offset, e, newest[a.part])
		}
		newest[a.part] = max(newest[a.part], e)
		k := key{a.part, e}
		if o, ok := owner[k]; !ok {
			owner[k] = a.broker
		} else if o != a.broker && !a.retried {
			bad++
			t.Errorf("partition %d leader epoch %d: new writes acknowledged by broker %d and broker %d", a.part, e, o, a.broker)
		}
		if bad > 10 {
			return
		}
	}
	t.Logf("one writer per partition and leader epoch: %d acknowledgements over %d (partition, epoch) pairs", len(acks), len(owner))
}

// survivorFirstAcks returns, per partition of led, how long after cut its
// first acknowledgement by another broker than victim came (of a record
// sent after cut); partitions without one yet are left out.
func survivorFirstAcks(l *attributedLoad, cut time.Time, led map[int32]bool, victim int32) []time.Duration {
	acks, _ := l.snapshot()
	first := map[int32]time.Duration{}
	for _, a := range acks {
		if !led[a.part] || a.broker == victim || !a.at.After(cut) {
			continue
		}
		if d, ok := first[a.part]; !ok || a.at.Sub(cut) < d {
			first[a.part] = a.at.Sub(cut)
		}
	}
	var out []time.Duration
	for _, d := range first {
		out = append(out, d)
	}
	return out
}

func allParts(n int) map[int32]bool {
	out := map[int32]bool{}
	for p := int32(0); p < int32(n); p++ {
		out[p] = true
	}
	return out
}

func sortedParts(m map[int32]bool) []int32 {
	var out []int32
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// directCommits commits an ever-growing offset, every 20 ms, for a group
// that the isolated broker coordinates, sent straight to that broker
// (generation -1: a group that only stores offsets), and records each
// answer with when its request was sent.
type directCommits struct {
	t       testing.TB
	c       *kaasCluster
	adm     *kadm.Client
	group   string
	topic   string
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	answers []commitAnswer
}

type commitAnswer struct {
	offset   int64
	code     int16
	sent, at time.Time
}

func startDirectCommits(t testing.TB, c *kaasCluster, cl *kgo.Client, adm *kadm.Client, id int32, topic string) *directCommits {
	t.Helper()
	var names []string
	for i := 0; i < 60; i++ {
		names = append(names, fmt.Sprintf("nf-group-%d", i))
	}
	coords := adm.FindGroupCoordinators(ctxFor(t, 30*time.Second), names...)
	group := ""
	for _, n := range names {
		if r, ok := coords[n]; ok && r.Err == nil && r.NodeID == id {
			group = n
			break
		}
	}
	if group == "" {
		t.Fatalf("none of %d groups is coordinated by broker %d", len(names), id)
	}
	// OffsetCommit v10 names topics by id.
	topics, err := adm.ListTopics(ctxFor(t, 30*time.Second), topic)
	if err != nil || topics[topic].Err != nil {
		t.Fatalf("topic id of %s: %v %v", topic, err, topics[topic].Err)
	}
	topicID := topics[topic].ID
	d := &directCommits{t: t, c: c, adm: adm, group: group, topic: topic, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		defer close(d.done)
		for n := int64(1); ctx.Err() == nil; n++ {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation = group, -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = topic, topicID
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = 0, n, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			sent := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := req.RequestWith(rctx, cl.Broker(int(id)))
			rcancel()
			if err == nil && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
				d.mu.Lock()
				d.answers = append(d.answers, commitAnswer{offset: n, code: resp.Topics[0].Partitions[0].ErrorCode, sent: sent, at: time.Now()})
				d.mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return d
}

func (d *directCommits) acknowledged() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.answers {
		if a.code == 0 {
			return true
		}
	}
	return false
}

// codes counts the answers by error code.
func (d *directCommits) codes() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := map[string]int{}
	for _, a := range d.answers {
		if err := kerr.ErrorForCode(a.code); err != nil {
			n[err.Error()]++
		} else {
			n["ok"]++
		}
	}
	return fmt.Sprint(n)
}

func (d *directCommits) stop() {
	d.cancel()
	<-d.done
}

// check fails when the isolated broker acknowledged a commit sent later
// than bound after the cut, or when an acknowledged commit is lost (the
// group's offset, read through whichever broker coordinates it now, is
// below the last one acknowledged). It returns when the broker first
// refused a commit after the cut.
func (d *directCommits) check(cut time.Time, bound time.Duration) (refused time.Time) {
	t := d.t
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var acked, before int64
	for _, a := range d.answers {
		if a.code == 0 {
			acked = max(acked, a.offset)
			if a.sent.Before(cut) {
				before++
			}
			if a.sent.Sub(cut) > bound {
				t.Errorf("group %s: the isolated broker acknowledged the commit of %d sent %v after the cut", d.group, a.offset, a.sent.Sub(cut).Round(time.Millisecond))
			}
		} else if refused.IsZero() && a.at.After(cut) {
			refused = a.at
		}
	}
	if before == 0 {
		t.Errorf("group %s: no commit acknowledged before the cut", d.group)
	}
	var got kadm.OffsetResponses
	var err error
	ctx := ctxFor(t, 30*time.Second)
	for ctx.Err() == nil {
		if got, err = d.adm.FetchOffsets(ctx, d.group); err == nil && got.Error() == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	o, _ := got.Lookup(d.topic, 0)
	if o.At < acked {
		t.Errorf("group %s: acknowledged commit %d lost (committed offset now %d, %v)", d.group, acked, o.At, err)
	}
	return refused
}
