package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// shareConsumer starts a franz-go share-group consumer of topic.
func shareConsumer(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, addr, append([]kgo.Opt{kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(time.Second)}, opts...)...)
}

// pollSome polls cl until a poll returns records (at most max), and
// returns them.
func pollSome(t *testing.T, ctx context.Context, cl *kgo.Client, max int) []*kgo.Record {
	t.Helper()
	for {
		fs := cl.PollRecords(ctx, max)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		if rs := fs.Records(); len(rs) > 0 {
			return rs
		}
	}
}

// waitShareStable waits until the share group has members members, each at
// the group epoch with a non-empty assignment (every member has heard of
// the others).
func waitShareStable(t *testing.T, adm *kadm.Client, group string, members int) {
	t.Helper()
	ctx := ctxT(t, 60*time.Second)
	for {
		d, err := adm.DescribeShareGroups(ctx, group)
		if err == nil {
			g := d[group]
			ok := g.Err == nil && len(g.Members) == members
			for _, m := range g.Members {
				ok = ok && m.MemberEpoch == g.GroupEpoch && len(m.Assignment) > 0
			}
			if ok {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("share group %s never had %d members at the group epoch: %v", group, members, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func produceKeys(t *testing.T, addr, topic string, from, to int) {
	t.Helper()
	cl := newClient(t, addr)
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctxT(t, 20*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestShareGroupTwoConsumersEachRecordOnce: two franz-go share consumers
// in one group both get records, and every record is delivered and
// accepted exactly once.
func TestShareGroupTwoConsumersEachRecordOnce(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest")
	const topic, group, n = "share-once", "sg-once", 400
	createTopic(t, addr, topic, 4, nil)
	adm := newAdmin(t, addr)

	var mu sync.Mutex
	seen := map[string]int{}
	per := [2]int{}
	consumers := [2]*kgo.Client{shareConsumer(t, addr, group, topic), shareConsumer(t, addr, group, topic)}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i, cl := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollRecords(ctx, 100)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Key)]++
					per[i]++
					mu.Unlock()
				})
				cl.MarkAcks(kgo.AckAccept)
				mu.Lock()
				done := len(seen) == n
				mu.Unlock()
				if done {
					cancel()
				}
			}
		}()
	}
	waitShareStable(t, adm, group, 2)
	produceKeys(t, addr, topic, 0, n)
	wg.Wait()
	for _, cl := range consumers {
		if err := cl.FlushAcks(ctxT(t, 10*time.Second)); err != nil {
			t.Fatalf("flush acks: %v", err)
		}
	}
	if len(seen) != n {
		t.Fatalf("consumed %d distinct records, want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("record %s delivered %d times, want once", k, c)
		}
	}
	if per[0] == 0 || per[1] == 0 {
		t.Fatalf("records per consumer %v: both consumers must get records", per)
	}
	d, err := adm.DescribeShareGroups(ctxT(t, 10*time.Second), group)
	if err != nil || d[group].GroupState != "Stable" || len(d[group].Members) != 2 {
		t.Fatalf("describe: %v %+v", err, d[group])
	}
	// In memory, the keeper answers the start offsets: every record is
	// accepted, so each share-partition starts at its high watermark.
	offs, err := adm.DescribeShareGroupOffsets(ctxT(t, 10*time.Second), group)
	if err != nil || offs.Error() != nil {
		t.Fatalf("describe share group offsets: %v %v", err, offs.Error())
	}
	ends, err := adm.ListEndOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		if o := offs[group].Offsets[topic][e.Partition]; o.StartOffset != e.Offset {
			t.Errorf("partition %d: share start %d, high watermark %d", e.Partition, o.StartOffset, e.Offset)
		}
	})
	groups, err := adm.ListGroups(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := groups[group]; !ok || g.GroupType != "share" {
		t.Fatalf("ListGroups shows %s as %+v, want type share", group, g)
	}
}

// TestShareGroupLockTimeoutRedelivers: records a consumer acquired and
// never acknowledged go to another member once their lock runs out, with a
// delivery count above 1 (the stalled client's background fetches may have
// taken them again in between).
func TestShareGroupLockTimeoutRedelivers(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest", "--share-record-lock-duration", "2s", "--group-share-min-record-lock-duration", "1s")
	const topic, group, n = "share-lock", "sg-lock", 20
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, n)

	// The first consumer polls once and then stalls: it stays in the
	// group but never acknowledges.
	stalled := shareConsumer(t, addr, group, topic, kgo.ShareMaxRecords(n))
	got := len(pollSome(t, ctxT(t, 30*time.Second), stalled, n))

	second := shareConsumer(t, addr, group, topic)
	ctx := ctxT(t, 60*time.Second)
	redelivered := map[string]int32{}
	for len(redelivered) < got {
		fs := second.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("redelivered %d of the %d stalled records: %v", len(redelivered), got, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.DeliveryCount() >= 2 {
				redelivered[string(r.Key)] = r.DeliveryCount()
			}
		})
		second.MarkAcks(kgo.AckAccept)
	}
}

// TestShareGroupDeliveryLimitArchivesPoison: a record released on every
// delivery is archived at the delivery count limit and never delivered
// again, while the others are accepted.
func TestShareGroupDeliveryLimitArchivesPoison(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest", "--share-delivery-count-limit", "3")
	const topic, group = "share-poison", "sg-poison"
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, 10) // key "3" is the poison record

	cl := shareConsumer(t, addr, group, topic)
	ctx := ctxT(t, 60*time.Second)
	var poison []int32
	accepted := map[string]bool{}
	sentinel := false
	for !sentinel {
		fs := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("poison deliveries %v, accepted %d, sentinel %v: %v", poison, len(accepted), sentinel, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch k := string(r.Key); k {
			case "3":
				poison = append(poison, r.DeliveryCount())
				r.Ack(kgo.AckRelease)
			case "sentinel":
				sentinel = true
			default:
				accepted[k] = true
			}
		})
		cl.MarkAcks(kgo.AckAccept)
		if len(poison) == 3 && !sentinel {
			// The third release archives the record; the sentinel,
			// produced after that release is flushed, comes after it.
			if err := cl.FlushAcks(ctx); err != nil {
				t.Fatal(err)
			}
			p := newClient(t, addr)
			if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("sentinel")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fmt.Sprint(poison) != "[1 2 3]" {
		t.Fatalf("poison record deliveries %v, want [1 2 3]", poison)
	}
	if len(accepted) != 9 {
		t.Fatalf("accepted %d other records, want 9", len(accepted))
	}
}

// TestShareGroupStateSurvivesRestart: share-partition state is on the
// volume: after a restart on the same --data-dir a share consumer gets
// only the records not accepted before, released ones with their delivery
// count carried over, although the group reads from the earliest offset.
func TestShareGroupStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--share-auto-offset-reset", "earliest"}
	_, addr, stop := startTestBroker(t, args...)
	const topic, group, n = "share-durable", "sg-durable", 10
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, n)

	// Accept keys 0-4, release keys 5-9 (each seen at least once).
	cl := shareConsumer(t, addr, group, topic)
	ctx := ctxT(t, 60*time.Second)
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("saw %d of %d records before the restart: %v", len(seen), n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			k, _ := strconv.Atoi(string(r.Key))
			seen[string(r.Key)] = true
			if k < 5 {
				r.Ack(kgo.AckAccept)
			} else {
				r.Ack(kgo.AckRelease)
			}
		})
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	stop()

	_, addr2, _ := startTestBroker(t, args...)
	// DescribeShareGroupOffsets reads the start offset from the volume:
	// keys 0-4 (offsets 0-4) were accepted, 5 is the first not done.
	// Its lag needs the partition's end offset: while the partition is
	// still opening the entry carries NOT_LEADER_OR_FOLLOWER, the start
	// already known.
	adm2 := newAdmin(t, addr2)
	waitUntil(t, 20*time.Second, "the share-partition described with its lag", func() bool {
		offs, err := adm2.DescribeShareGroupOffsets(ctxT(t, 10*time.Second), group)
		if err != nil || offs.Error() != nil {
			t.Fatalf("describe share group offsets: %v %v", err, offs.Error())
		}
		o := offs[group].Offsets[topic][0]
		if o.StartOffset != 5 {
			t.Fatalf("share-partition start %d (%v), want 5", o.StartOffset, o.Err)
		}
		if o.Err != nil && !errors.Is(o.Err, kerr.NotLeaderForPartition) && !errors.Is(o.Err, kerr.LeaderNotAvailable) {
			t.Fatalf("share-partition described with %v", o.Err)
		}
		return o.Err == nil
	})
	cl2 := shareConsumer(t, addr2, group, topic)
	ctx2 := ctxT(t, 60*time.Second)
	after := map[string]int32{}
	for len(after) < 5 {
		fs := cl2.PollRecords(ctx2, 100)
		if ctx2.Err() != nil {
			t.Fatalf("after the restart got %v: %v", after, ctx2.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, dup := after[string(r.Key)]; !dup {
				after[string(r.Key)] = r.DeliveryCount()
			}
		})
		cl2.MarkAcks(kgo.AckAccept)
	}
	for k, c := range after {
		if i, _ := strconv.Atoi(k); i < 5 {
			t.Fatalf("record %s, accepted before the restart, delivered again (got %v)", k, after)
		}
		if c < 2 {
			t.Fatalf("record %s released before the restart came with delivery count %d, want at least 2", k, c)
		}
	}
}

// openTxn produces values to topic in a transaction of id, left open, and
// returns its producer.
func openTxn(t *testing.T, ctx context.Context, addr, topic, id string, values ...string) *kgo.Client {
	t.Helper()
	cl := newClient(t, addr, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// endTxn commits or aborts cl's transaction.
func endTxn(t *testing.T, ctx context.Context, cl *kgo.Client, end kgo.TransactionEndTry) {
	t.Helper()
	if err := cl.EndTransaction(ctx, end); err != nil {
		t.Fatal(err)
	}
}

// TestShareGroupIsolationChangeAppliesToTheNextFetch: share.isolation.level
// altered (through the broker serving the group) applies to the next read:
// switched to read_committed, a running share consumer gets none of a
// transaction aborted after the change; switched back to read_uncommitted,
// it gets the records of the next aborted transaction, none given up on.
func TestShareGroupIsolationChangeAppliesToTheNextFetch(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest")
	const topic, group = "share-isolation-switch", "sg-isolation-switch"
	createTopic(t, addr, topic, 1, nil)
	ctx := ctxT(t, 60*time.Second)
	plain := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	produce := func(values ...string) {
		t.Helper()
		for _, v := range values {
			if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	abort := func(id string, values ...string) {
		t.Helper()
		endTxn(t, ctx, openTxn(t, ctx, addr, topic, id, values...), kgo.TryAbort)
	}
	cons := shareConsumer(t, addr, group, topic)
	got := map[string]bool{}
	readUntil := func(last string) {
		t.Helper()
		for !got[last] {
			fs := cons.PollRecords(ctx, 100)
			if ctx.Err() != nil {
				t.Fatalf("waiting for %q, got %v: %v", last, got, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
			cons.MarkAcks(kgo.AckAccept)
		}
	}
	produce("p0")
	readUntil("p0") // the share-partition reads read_uncommitted

	if code, msg := alterGroupConfigs(t, newClient(t, addr), group, "share.isolation.level", "read_committed"); code != 0 {
		t.Fatalf("share.isolation.level=read_committed: %d %s", code, msg)
	}
	abort("t-abort-1", "a1", "a2")
	produce("p1")
	readUntil("p1")
	for _, v := range []string{"a1", "a2"} {
		if got[v] {
			t.Fatalf("read_committed since the change, the share group got the aborted %q: %v", v, got)
		}
	}

	if code, msg := alterGroupConfigs(t, newClient(t, addr), group, "share.isolation.level", "read_uncommitted"); code != 0 {
		t.Fatalf("share.isolation.level=read_uncommitted: %d %s", code, msg)
	}
	abort("t-abort-2", "b1", "b2")
	produce("p2")
	readUntil("p2")
	for _, v := range []string{"b1", "b2"} {
		if !got[v] {
			t.Fatalf("read_uncommitted since the change, the share group did not get the aborted %q: %v", v, got)
		}
	}
}

// TestShareGroupReadCommitted: a share group with share.isolation.level
// read_committed gets the records of committed transactions and of plain
// producers, never those of an aborted transaction, and nothing past an
// open transaction until it commits; a read_uncommitted group on the same
// partition gets every record, the aborted ones too.
func TestShareGroupReadCommitted(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest")
	const topic = "share-rc"
	createTopic(t, addr, topic, 1, nil)
	if code, msg := alterGroupConfigs(t, newClient(t, addr), "sg-rc", "share.isolation.level", "read_committed"); code != 0 {
		t.Fatalf("share.isolation.level=read_committed: %d %s", code, msg)
	}
	ctx := ctxT(t, 60*time.Second)
	endTxn(t, ctx, openTxn(t, ctx, addr, topic, "t-commit", "c1", "c2"), kgo.TryCommit)
	endTxn(t, ctx, openTxn(t, ctx, addr, topic, "t-abort", "a1", "a2", "a3"), kgo.TryAbort)
	plain := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("p1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	open := openTxn(t, ctx, addr, topic, "t-open", "o1")
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("p2")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// read accepts what cl's share group delivers until it has want.
	read := func(cl *kgo.Client, want ...string) map[string]bool {
		t.Helper()
		got := map[string]bool{}
		for len(got) < len(want) {
			fs := cl.PollRecords(ctx, 100)
			if ctx.Err() != nil {
				t.Fatalf("got %v, want %v: %v", got, want, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
			cl.MarkAcks(kgo.AckAccept)
		}
		return got
	}
	rc := shareConsumer(t, addr, "sg-rc", topic)
	got := read(rc, "c1", "c2", "p1")
	for _, v := range []string{"a1", "a2", "a3", "o1", "p2"} {
		if got[v] {
			t.Fatalf("read_committed share group got %q (aborted, open or past the open transaction): %v", v, got)
		}
	}
	// Nothing more while the transaction is open.
	pollCtx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	fs := rc.PollRecords(pollCtx, 100)
	cancel()
	fs.EachRecord(func(r *kgo.Record) {
		t.Errorf("read_committed share group got %q while its transaction is open", r.Value)
	})
	endTxn(t, ctx, open, kgo.TryCommit)
	got = read(rc, "o1", "p2")
	if !got["o1"] || !got["p2"] {
		t.Fatalf("after the commit: %v; want o1 and p2", got)
	}

	ru := shareConsumer(t, addr, "sg-ru", topic)
	got = read(ru, "c1", "c2", "a1", "a2", "a3", "p1", "o1", "p2")
	for _, v := range []string{"a1", "a2", "a3"} {
		if !got[v] {
			t.Fatalf("read_uncommitted share group: %v; want the aborted records too", got)
		}
	}
}
