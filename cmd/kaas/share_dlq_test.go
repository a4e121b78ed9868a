package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/share"
	"github.com/kaas-project/kaas/storage/sharestate"
)

// produceTo writes n records to partition p of topic, keyed "<p>-<i>"
// with values "v<p>-<i>".
func produceTo(t *testing.T, addr, topic string, p int32, n int) {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range n {
		k := fmt.Sprintf("%d-%d", p, i)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(k), Value: []byte("v" + k)})
	}
	if err := cl.ProduceSync(ctxT(t, 20*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// readTopic reads topic from its start until it has n records (and a
// moment longer, so that a record too many shows), ordered by partition
// and offset.
func readTopic(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	ctx := ctxT(t, 30*time.Second)
	var got []*kgo.Record
	var extra context.Context
	for {
		if len(got) >= n && extra == nil {
			var cancel context.CancelFunc
			extra, cancel = context.WithTimeout(ctx, time.Second)
			defer cancel()
		}
		pollCtx := ctx
		if extra != nil {
			pollCtx = extra
		}
		fs := cl.PollFetches(pollCtx)
		if pollCtx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	if len(got) != n {
		t.Fatalf("%s holds %d records, want %d", topic, len(got), n)
	}
	slices.SortFunc(got, func(a, b *kgo.Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	return got
}

// deadLetter is what a dead-letter record says, in a comparable form.
func deadLetter(r *kgo.Record) string {
	h := map[string]string{}
	for _, x := range r.Headers {
		h[x.Key] = string(x.Value)
	}
	kv := "null/null"
	if r.Key != nil || r.Value != nil {
		kv = string(r.Key) + "/" + string(r.Value)
	}
	return fmt.Sprintf("p%d %s-%s@%s group=%s count=%s %q %s", r.Partition, h["__dlq.errors.topic"], h["__dlq.errors.partition"],
		h["__dlq.errors.offset"], h["__dlq.errors.group"], h["__dlq.errors.delivery.count"], h["__dlq.errors.message"], kv)
}

// dlqTopicConfig is the config that lets a topic be a dead-letter topic.
var dlqTopicConfig = map[string]*string{"errors.deadletterqueue.group.enable": kmsg.StringPtr("true")}

// waitShareStart waits until partition 0 of topic's share-partition of
// group starts at want (its records' dead-letter writes are done).
func waitShareStart(t *testing.T, adm *kadm.Client, group, topic string, want int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		start, _ := shareLag(t, adm, group, topic)
		if start == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("share-partition %s-0 of %s starts at %d, want %d", topic, group, start, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestShareGroupDeadLetterQueue: records a share consumer rejects are
// written to the group's dead-letter topic (KIP-1191), each to the
// dead-letter partition its source partition maps to (source partition
// mod dead-letter partitions), with Kafka's headers and no key or value
// (errors.deadletterqueue.copy.record.enable is off); accepted records are
// not; the share-partition's start passes them once they are written. In
// memory and with --data-dir; /metrics counts them.
func TestShareGroupDeadLetterQueue(t *testing.T) {
	for _, withDir := range []bool{false, true} {
		name := "memory"
		httpAddr := freeAddr(t)
		args := []string{"--share-auto-offset-reset", "earliest", "--http-addr", httpAddr}
		if withDir {
			name = "data-dir"
			args = append(args, "--data-dir", t.TempDir())
		}
		t.Run(name, func(t *testing.T) {
			_, addr := testBroker(t, args...)
			const src, dlq, group = "orders", "dlq.orders", "sg-dlq"
			createTopic(t, addr, src, 2, nil)
			createTopic(t, addr, dlq, 2, dlqTopicConfig)
			cl := newClient(t, addr)
			if code, msg := alterGroupConfigs(t, cl, group, "errors.deadletterqueue.topic.name", dlq); code != 0 {
				t.Fatalf("set the group's dead-letter topic: %d %s", code, msg)
			}
			produceTo(t, addr, src, 0, 4)
			produceTo(t, addr, src, 1, 4)
			adm := newAdmin(t, addr)
			td, err := adm.ListTopics(ctxT(t, 10*time.Second), src)
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 30*time.Second)
			s0 := &rawShareSession{cl: cl, group: group, member: "m0", topicID: td[src].ID}
			s1 := &rawShareSession{cl: newClient(t, addr), group: group, member: "m1", topicID: td[src].ID, partition: 1}
			if n := s0.acquire(t, ctx); n != 4 {
				t.Fatalf("acquired %d records of partition 0, want 4", n)
			}
			if n := s1.acquire(t, ctx); n != 4 {
				t.Fatalf("acquired %d records of partition 1, want 4", n)
			}
			s0.acknowledge(t, ctx, 0, 0, 3) // reject
			s0.acknowledge(t, ctx, 1, 1, 1) // accept
			s0.acknowledge(t, ctx, 2, 3, 3)
			s1.acknowledge(t, ctx, 0, 0, 1)
			s1.acknowledge(t, ctx, 1, 1, 3)
			s1.acknowledge(t, ctx, 2, 3, 1)

			var got []string
			for _, r := range readTopic(t, addr, dlq, 4) {
				got = append(got, deadLetter(r))
			}
			want := []string{
				`p0 orders-0@0 group=sg-dlq count=1 "Offset rejected by client." null/null`,
				`p0 orders-0@2 group=sg-dlq count=1 "Offset rejected by client." null/null`,
				`p0 orders-0@3 group=sg-dlq count=1 "Offset rejected by client." null/null`,
				`p1 orders-1@1 group=sg-dlq count=1 "Offset rejected by client." null/null`,
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("dead letters:\n%s\nwant:\n%s", got, want)
			}
			waitShareStart(t, adm, group, src, 4)
			_, fam := scrape(t, httpAddr)
			if w, f := sample(fam, "kaas_share_dead_letter_records_total", "result", "written"), sample(fam, "kaas_share_dead_letter_records_total", "result", "failed"); w != 4 || f != 0 {
				t.Fatalf("dead-letter records written %v, failed %v; want 4 and 0", w, f)
			}
		})
	}
}

// TestShareGroupDeadLetterCopyAndLimit: a franz-go share consumer rejects
// one record and releases another on every delivery: with
// errors.deadletterqueue.copy.record.enable both reach the dead-letter
// topic with their key and value, the released one once it reaches the
// group's delivery count limit (2), with Kafka's cause for each.
func TestShareGroupDeadLetterCopyAndLimit(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest")
	const src, dlq, group = "payments", "dlq.payments", "sg-dlq-copy"
	createTopic(t, addr, src, 1, nil)
	createTopic(t, addr, dlq, 1, dlqTopicConfig)
	if code, msg := alterGroupConfigs(t, newClient(t, addr), group, "errors.deadletterqueue.topic.name", dlq,
		"errors.deadletterqueue.copy.record.enable", "true", "share.delivery.count.limit", "2"); code != 0 {
		t.Fatalf("set the group's configs: %d %s", code, msg)
	}
	produceTo(t, addr, src, 0, 6)

	cl := shareConsumer(t, addr, group, src)
	ctx := ctxT(t, 60*time.Second)
	accepted := map[string]bool{}
	var released []int32
	rejected := false
	for len(accepted) < 4 || !rejected || len(released) < 2 {
		fs := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("accepted %d, rejected %v, released at %v: %v", len(accepted), rejected, released, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			switch string(r.Key) {
			case "0-1":
				rejected = true
				r.Ack(kgo.AckReject)
			case "0-4":
				released = append(released, r.DeliveryCount())
				r.Ack(kgo.AckRelease)
			default:
				accepted[string(r.Key)] = true
				r.Ack(kgo.AckAccept)
			}
		})
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(released) != "[1 2]" {
		t.Fatalf("released record delivered at counts %v, want [1 2]", released)
	}
	var got []string
	for _, r := range readTopic(t, addr, dlq, 2) {
		got = append(got, deadLetter(r))
	}
	want := []string{
		`p0 payments-0@1 group=sg-dlq-copy count=1 "Offset rejected by client." 0-1/v0-1`,
		`p0 payments-0@4 group=sg-dlq-copy count=2 "Offset delivery count exceeded the threshold." 0-4/v0-4`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("dead letters:\n%s\nwant:\n%s", got, want)
	}
}

// TestShareGroupDeadLetterTopicChecks: a dead-letter topic that cannot take
// the write (Kafka's checks: it exists without
// errors.deadletterqueue.group.enable, its name lacks the cluster's prefix,
// it does not exist and may not be created) gets nothing, and the records
// are archived all the same; once the cluster allows creating it (a dynamic
// broker config), the next rejected record creates it as a dead-letter
// topic and is written there.
func TestShareGroupDeadLetterTopicChecks(t *testing.T) {
	httpAddr := freeAddr(t)
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest", "--http-addr", httpAddr)
	const src = "events"
	createTopic(t, addr, src, 1, nil)
	createTopic(t, addr, "dlq.plain", 1, nil)
	createTopic(t, addr, "errors.events", 1, dlqTopicConfig)
	produceTo(t, addr, src, 0, 1)
	cl := newClient(t, addr)
	adm := newAdmin(t, addr)
	td, err := adm.ListTopics(ctxT(t, 10*time.Second), src)
	if err != nil {
		t.Fatal(err)
	}
	reject := func(group, topic string) {
		t.Helper()
		if code, msg := alterGroupConfigs(t, cl, group, "errors.deadletterqueue.topic.name", topic); code != 0 {
			t.Fatalf("set %s's dead-letter topic: %d %s", group, code, msg)
		}
		ctx := ctxT(t, 30*time.Second)
		s := &rawShareSession{cl: cl, group: group, member: "m", topicID: td[src].ID}
		if n := s.acquire(t, ctx); n != 1 {
			t.Fatalf("%s acquired %d records, want 1", group, n)
		}
		s.acknowledge(t, ctx, 0, 0, 3)
		waitShareStart(t, adm, group, src, 1)
	}
	reject("sg-not-enabled", "dlq.plain")
	reject("sg-prefix", "errors.events")
	reject("sg-missing", "dlq.missing")
	_, fam := scrape(t, httpAddr)
	if w, f := sample(fam, "kaas_share_dead_letter_records_total", "result", "written"), sample(fam, "kaas_share_dead_letter_records_total", "result", "failed"); w != 0 || f != 3 {
		t.Fatalf("dead-letter records written %v, failed %v; want 0 and 3", w, f)
	}
	for _, topic := range []string{"dlq.plain", "errors.events"} {
		readTopic(t, addr, topic, 0)
	}

	// Allowed to create it now: the cluster-wide dynamic broker config.
	res, err := adm.AlterBrokerConfigs(ctxT(t, 10*time.Second), []kadm.AlterConfig{
		{Name: "errors.deadletterqueue.auto.create.topics.enable", Value: kmsg.StringPtr("true")}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("allow creating dead-letter topics: %v %+v", err, res)
	}
	reject("sg-created", "dlq.created")
	r := readTopic(t, addr, "dlq.created", 1)[0]
	if got, want := deadLetter(r), `p0 events-0@0 group=sg-created count=1 "Offset rejected by client." null/null`; got != want {
		t.Fatalf("dead letter %s, want %s", got, want)
	}
	rc, err := adm.DescribeTopicConfigs(ctxT(t, 10*time.Second), "dlq.created")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := rc.On("dlq.created", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range cfg.Configs {
		if kv.Key == "errors.deadletterqueue.group.enable" && (kv.Value == nil || *kv.Value != "true") {
			t.Fatalf("created dead-letter topic has %s=%v, want true", kv.Key, kv.MaybeValue())
		}
	}
	_, fam = scrape(t, httpAddr)
	if w := sample(fam, "kaas_share_dead_letter_records_total", "result", "written"); w != 1 {
		t.Fatalf("dead-letter records written %v, want 1", w)
	}
}

// TestShareGroupDeadLetterResumesAfterRestart: records a broker left
// archiving (their share-partition state saved, their dead-letter write
// not done: a crash between the two) are written to the dead-letter topic
// by the broker that loads the share-partition next, with the cause Kafka
// infers from the delivery count, and are never delivered again.
func TestShareGroupDeadLetterResumesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--share-auto-offset-reset", "earliest"}
	_, addr, stop := startTestBroker(t, args...)
	const src, dlq, group = "jobs", "dlq.jobs", "sg-dlq-resume"
	createTopic(t, addr, src, 1, nil)
	createTopic(t, addr, dlq, 1, dlqTopicConfig)
	if code, msg := alterGroupConfigs(t, newClient(t, addr), group, "errors.deadletterqueue.topic.name", dlq,
		"share.delivery.count.limit", "2"); code != 0 {
		t.Fatalf("set the group's configs: %d %s", code, msg)
	}
	produceTo(t, addr, src, 0, 4)
	td, err := newAdmin(t, addr).ListTopics(ctxT(t, 10*time.Second), src)
	if err != nil {
		t.Fatal(err)
	}
	stop()

	// What a broker leaves that stopped after saving 1 and 2 archiving
	// (1 rejected at its first delivery, 2 at the limit) and before
	// writing them: 0 accepted, 3 never delivered.
	store, err := sharestate.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	archiving := uint8(share.Archiving)
	if err := store.Save(group, src, 0, sharestate.Snapshot{TopicID: td[src].ID, Start: 1,
		States: []uint8{archiving, archiving}, Counts: []int16{1, 2}}); err != nil {
		t.Fatal(err)
	}

	_, addr, _ = startTestBroker(t, args...)
	ctx := ctxT(t, 30*time.Second)
	s := &rawShareSession{cl: newClient(t, addr), group: group, member: "m", topicID: td[src].ID}
	if n := s.acquire(t, ctx); n != 1 {
		t.Fatalf("acquired %d records after the restart, want 1 (offset 3)", n)
	}
	var got []string
	for _, r := range readTopic(t, addr, dlq, 2) {
		got = append(got, deadLetter(r))
	}
	want := []string{
		`p0 jobs-0@1 group=sg-dlq-resume count=1 "Offset rejected by client." null/null`,
		`p0 jobs-0@2 group=sg-dlq-resume count=2 "Offset delivery count exceeded the threshold." null/null`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("dead letters:\n%s\nwant:\n%s", got, want)
	}
	waitShareStart(t, newAdmin(t, addr), group, src, 3)
}

// TestShareGroupConfigChangesApplyToRunningGroup: a dead-letter topic set
// on a share group while a franz-go share consumer of it runs takes effect
// without a restart or a move: within seconds the records it rejects go
// to that topic.
func TestShareGroupConfigChangesApplyToRunningGroup(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest")
	const src, dlq, group = "tasks", "dlq.tasks", "sg-dlq-later"
	createTopic(t, addr, src, 1, nil)
	createTopic(t, addr, dlq, 1, dlqTopicConfig)
	cl := shareConsumer(t, addr, group, src)
	prod := newClient(t, addr)
	ctx := ctxT(t, 60*time.Second)
	produce := func(key string) {
		t.Helper()
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: src, Key: []byte(key)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// consume rejects every record it gets until it has seen key.
	consume := func(key string) {
		t.Helper()
		for seen := false; !seen; {
			fs := cl.PollRecords(ctx, 100)
			if ctx.Err() != nil {
				t.Fatalf("record %s not delivered: %v", key, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) {
				seen = seen || string(r.Key) == key
				r.Ack(kgo.AckReject)
			})
			if err := cl.FlushAcks(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce("before")
	consume("before")
	if code, msg := alterGroupConfigs(t, newClient(t, addr), group, "errors.deadletterqueue.topic.name", dlq); code != 0 {
		t.Fatalf("set the group's dead-letter topic: %d %s", code, msg)
	}
	rd := newClient(t, addr, kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var letters []string
	for i := 0; len(letters) == 0; i++ {
		key := "after-" + strconv.Itoa(i)
		produce(key)
		consume(key)
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		rd.PollFetches(pollCtx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == "__dlq.errors.offset" {
					letters = append(letters, string(h.Value))
				}
			}
		})
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("no rejected record reached the dead-letter topic set while the group ran: %v", ctx.Err())
		}
	}
	if letters[0] == "0" {
		t.Fatalf("the record rejected before the dead-letter topic was set went there")
	}
}

// TestShareGroupDeadLetterCopiesLargeRecords: a run of rejected records
// larger together than one fetch (1 MiB) is copied to the dead-letter topic
// a fetch at a time, every record whole.
func TestShareGroupDeadLetterCopiesLargeRecords(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest")
	const src, dlq, group = "blobs", "dlq.blobs", "sg-dlq-large"
	createTopic(t, addr, src, 1, nil)
	createTopic(t, addr, dlq, 1, dlqTopicConfig)
	cl := newClient(t, addr)
	if code, msg := alterGroupConfigs(t, cl, group, "errors.deadletterqueue.topic.name", dlq,
		"errors.deadletterqueue.copy.record.enable", "true"); code != 0 {
		t.Fatalf("set the group's configs: %d %s", code, msg)
	}
	ctx := ctxT(t, 30*time.Second)
	const n, size = 4, 600 << 10
	for i := range n {
		v := bytes.Repeat([]byte{byte('a' + i)}, size)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: src, Key: []byte(strconv.Itoa(i)), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	td, err := newAdmin(t, addr).ListTopics(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	s := &rawShareSession{cl: cl, group: group, member: "m", topicID: td[src].ID}
	for got := int64(0); got < n; {
		got += s.acquire(t, ctx)
	}
	s.acknowledge(t, ctx, 0, n-1, 3)
	recs := readTopic(t, addr, dlq, n)
	for i, r := range recs {
		if string(r.Key) != strconv.Itoa(i) || !bytes.Equal(r.Value, bytes.Repeat([]byte{byte('a' + i)}, size)) {
			t.Fatalf("dead letter %d: key %q, %d value bytes; want the record copied whole", i, r.Key, len(r.Value))
		}
	}
}
