package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/metrics"
)

// TestCompactedTopicClients: a compacted topic on a disk log, produced to
// (zstd batches) with overwrites and tombstones, cleaned by the broker's cleaner, then
// read from offset 0 by franz-go (a plain consumer and a group consumer
// that restarts half-way) and kcat: every reader sees each live key's
// latest value, no tombstoned key's old value, fewer records than were
// produced, offsets only going up.
func TestCompactedTopicClients(t *testing.T) {
	httpAddr := freeAddr(t)
	_, addr, _ := startTestBroker(t, "--data-dir", t.TempDir(), "--cleaner-interval", "100ms", "--http-addr", httpAddr)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 90*time.Second)
	const topic = "compacted"
	cfg := map[string]*string{"cleanup.policy": sp("compact"), "segment.bytes": sp("4096"),
		"min.cleanable.dirty.ratio": sp("0.01"), "delete.retention.ms": sp("0")}
	if r, err := adm.CreateTopics(ctx, 1, 1, cfg, topic); err != nil || r[topic].Err != nil {
		t.Fatalf("create: %v %v", err, r[topic].Err)
	}
	// An existing topic turns compacted with IncrementalAlterConfigs (and
	// AlterConfigs); an unknown policy is refused.
	const other = "turned-compacted"
	if r, err := adm.CreateTopics(ctx, 1, 1, nil, other); err != nil || r[other].Err != nil {
		t.Fatalf("create: %v %v", err, r[other].Err)
	}
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: sp("compact,delete")}}, other); err != nil || r[0].Err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v %+v", err, r)
	}
	if r, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: sp("compact")}}, other); err != nil || r[0].Err != nil {
		t.Fatalf("AlterConfigs: %v %+v", err, r)
	}
	if r, _ := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "cleanup.policy", Value: sp("shred")}}, other); len(r) == 0 || r[0].Err == nil {
		t.Fatalf("cleanup.policy=shred accepted: %+v", r)
	}
	// DescribeConfigs reports the compaction settings.
	dc, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, c := range dc[0].Configs {
		seen[c.Key] = c.MaybeValue()
	}
	if seen["cleanup.policy"] != "compact" || seen["min.cleanable.dirty.ratio"] != "0.01" || seen["delete.retention.ms"] != "0" {
		t.Fatalf("DescribeConfigs: %v", seen)
	}
	cl := newClient(t, addr, kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.DefaultProduceTopic(topic))
	// A record without a key is refused on a compacted topic.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record: %v, want INVALID_RECORD", err)
	}
	want := map[string]string{}
	produced := 0
	for round := 0; round < 20; round++ {
		var recs []*kgo.Record
		for k := 0; k < 40; k++ {
			key := fmt.Sprintf("key-%02d", k)
			r := &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf("value-%02d-%03d", k, round))}
			if round == 19 && k%5 == 0 {
				r.Value = nil // tombstone
				delete(want, key)
			} else {
				want[key] = string(r.Value)
			}
			recs = append(recs, r)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced += len(recs)
	}
	got := rollAndAwaitClean(t, ctx, cl, addr, topic, 8000, want, produced+1, 4)
	checkTable(t, "franz-go", got, want)

	// The cleaner's state in /metrics and /healthz.
	_, fams := scrape(t, httpAddr)
	if v := sample(fams, "kaas_cleaner_last_clean_timestamp_seconds", "topic", topic, "partition", "0"); v <= 0 {
		t.Fatalf("kaas_cleaner_last_clean_timestamp_seconds = %v", v)
	}
	if v := sample(fams, "kaas_cleaner_cleaned_bytes_total", "topic", topic); v <= 0 {
		t.Fatalf("kaas_cleaner_cleaned_bytes_total = %v", v)
	}
	if v := sample(fams, "kaas_cleaner_dirty_ratio", "topic", topic, "partition", "0"); v < 0 || v > 1 {
		t.Fatalf("kaas_cleaner_dirty_ratio = %v", v)
	}
	resp, err := http.Get("http://" + httpAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var hz health
	err = json.NewDecoder(resp.Body).Decode(&hz)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range hz.Cleaner {
		found = found || (c.Topic == topic && c.LastCleanUnix > 0 && c.CleanedTo > 0)
	}
	if !found {
		t.Fatalf("/healthz cleaner: %+v", hz.Cleaner)
	}

	// A group consumer that stops half-way and a second one that resumes
	// from the committed offset see the same table together.
	const group = "compacted-readers"
	first := newClient(t, addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var part []*kgo.Record
	for len(part) < len(got)/2 {
		fs := first.PollRecords(ctx, len(got)/2-len(part))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		part = append(part, fs.Records()...)
	}
	if err := first.CommitRecords(ctx, part...); err != nil {
		t.Fatal(err)
	}
	first.Close()
	second := newClient(t, addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for len(part) < len(got) {
		fs := second.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		part = append(part, fs.Records()...)
	}
	checkTable(t, "franz-go group", part, want)

	// sarama from the oldest offset, up to the last record franz-go read.
	ccfg := saramaConfig(sarama.V3_6_0_0)
	ccfg.Consumer.Return.Errors = true
	ccfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	cons, err := sarama.NewConsumer([]string{addr}, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	var sr []*kgo.Record
	lastOff := got[len(got)-1].Offset
	for len(sr) == 0 || sr[len(sr)-1].Offset < lastOff {
		select {
		case m := <-pc.Messages():
			sr = append(sr, &kgo.Record{Key: m.Key, Value: m.Value, Offset: m.Offset})
		case err := <-pc.Errors():
			t.Fatalf("sarama: %v", err)
		case <-ctx.Done():
			t.Fatalf("sarama: read %d records, the last at %d, want up to %d", len(sr), sr[len(sr)-1].Offset, lastOff)
		}
	}
	_ = pc.Close()
	_ = cons.Close()
	checkTable(t, "sarama", sr, want)

	// kcat (librdkafka) from the beginning.
	requireTool(t, "kcat")
	var kc []*kgo.Record
	for _, m := range kcatConsume(t, addr, topic) {
		r := &kgo.Record{Key: []byte(m.Key), Offset: m.Offset}
		if m.Value != "" {
			r.Value = []byte(m.Value)
		}
		kc = append(kc, r)
	}
	checkTable(t, "kcat", kc, want)
}

// cleanedOnce reports whether a pass completed on topic's partition 0.
func cleanedOnce(topic string) bool {
	for _, s := range metrics.Cleaners() {
		if s.Topic == topic && s.Partition == 0 && s.LastCleanUnix > 0 {
			return true
		}
	}
	return false
}

// readAllFrom reads partition 0 of topic from offset 0 to its end (opts:
// more consumer options, e.g. an isolation level).
func readAllFrom(t *testing.T, addr, topic string, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 20*time.Second)
	// A leader just opened answers OFFSET_NOT_AVAILABLE until its first
	// group commit: ask again rather than read to no end.
	var end int64
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		lo, ok := ends.Lookup(topic, 0)
		if err == nil && ok && lo.Err == nil {
			end = lo.Offset
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("end offset of %s: %v %+v", topic, err, lo)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cl := newClient(t, addr, append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}})}, opts...)...)
	defer cl.Close()
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end-1 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// checkTable folds records into a key table and compares it with want;
// offsets must go up and every key appears at most once (the cleaned log
// holds no superseded record, but tombstones may remain).
func checkTable(t *testing.T, who string, recs []*kgo.Record, want map[string]string) {
	t.Helper()
	table := map[string]string{}
	last := int64(-1)
	for _, r := range recs {
		if r.Offset <= last {
			t.Fatalf("%s: offset %d after %d", who, r.Offset, last)
		}
		last = r.Offset
		if r.Value == nil {
			delete(table, string(r.Key))
			continue
		}
		table[string(r.Key)] = string(r.Value)
	}
	if len(table) != len(want) {
		t.Fatalf("%s: %d live keys, want %d", who, len(table), len(want))
	}
	for k, v := range want {
		if table[k] != v {
			t.Fatalf("%s: key %s reads %q, want %q", who, k, table[k], v)
		}
	}
}

// TestCompactedTopicKafkajs: kafkajs (which has no zstd) reads a compacted
// topic of gzip batches from the beginning, after the cleaner rewrote
// them (decompressed, compacted, recompressed with gzip).
func TestCompactedTopicKafkajs(t *testing.T) {
	dir := kafkajsDir(t)
	_, addr, _ := startTestBroker(t, "--data-dir", t.TempDir(), "--cleaner-interval", "100ms")
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 90*time.Second)
	const topic = "compacted-gzip"
	cfg := map[string]*string{"cleanup.policy": sp("compact"), "segment.bytes": sp("2048"),
		"min.cleanable.dirty.ratio": sp("0.01")}
	if r, err := adm.CreateTopics(ctx, 1, 1, cfg, topic); err != nil || r[topic].Err != nil {
		t.Fatalf("create: %v %v", err, r[topic].Err)
	}
	cl := newClient(t, addr, kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.DefaultProduceTopic(topic))
	want := map[string]string{}
	produced := 0
	for round := 0; round < 10; round++ {
		var recs []*kgo.Record
		for k := 0; k < 20; k++ {
			key, v := fmt.Sprintf("key-%02d", k), fmt.Sprintf("value-%02d-%03d", k, round)
			recs = append(recs, &kgo.Record{Key: []byte(key), Value: []byte(v)})
			want[key] = v
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced += len(recs)
	}
	got := rollAndAwaitClean(t, ctx, cl, addr, topic, 4000, want, produced+1, 3)
	res := runNode(t, dir, 60*time.Second, "consume-compacted.js", addr, topic, fmt.Sprint(got[len(got)-1].Offset))
	var out struct {
		Consumed []struct {
			Offset int64   `json:"offset"`
			Key    string  `json:"key"`
			Value  *string `json:"value"`
		} `json:"consumed"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("kafkajs output %q: %v", truncate(res.Stdout, 2000), err)
	}
	var recs []*kgo.Record
	for _, c := range out.Consumed {
		r := &kgo.Record{Key: []byte(c.Key), Offset: c.Offset}
		if c.Value != nil {
			r.Value = []byte(*c.Value)
		}
		recs = append(recs, r)
	}
	checkTable(t, "kafkajs", recs, want)
	// The cleaner goes on while kafkajs reads: kafkajs reads what the log
	// held when franz-go read it before, or less, and at least what it
	// holds after.
	after := readAllFrom(t, addr, topic)
	offsets := func(rs []*kgo.Record) map[int64]bool {
		m := map[int64]bool{}
		for _, r := range rs {
			m[r.Offset] = true
		}
		return m
	}
	read, before := offsets(recs), offsets(got)
	for o := range read {
		if !before[o] {
			t.Fatalf("kafkajs read offset %d, which the log did not hold before (franz-go read %d records)", o, len(got))
		}
	}
	for o := range offsets(after) {
		if !read[o] {
			t.Fatalf("kafkajs did not read offset %d, which the log still holds (kafkajs read %d records, franz-go %d before and %d after)", o, len(recs), len(got), len(after))
		}
	}
}

// rollAndAwaitClean rolls the active segment, so the last records written
// are cleanable too, with a write to a new segment carrying a key of its own
// (random hex of fillerSize bytes: larger than segment.bytes even
// compressed), then waits until the cleaner has run and the log reads as
// fewer than total/div records; it returns what the log reads.
func rollAndAwaitClean(t *testing.T, ctx context.Context, cl *kgo.Client, addr, topic string, fillerSize int, want map[string]string, total, div int) []*kgo.Record {
	t.Helper()
	filler := make([]byte, fillerSize)
	_, _ = rand.Read(filler)
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("zz-filler"), Value: []byte(hex.EncodeToString(filler))}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want["zz-filler"] = hex.EncodeToString(filler)
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := readAllFrom(t, addr, topic)
		if len(got) < total/div && cleanedOnce(topic) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cleaner did not run: %d records of %d produced read back; cleaner %+v", len(got), total, metrics.Cleaners())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestCompactedTopicAbortedTransactions: a compacted topic holding an
// aborted and a committed transaction (franz-go transactional producer)
// among plain overwrites; once cleaned, a read_uncommitted reader from
// offset 0 sees no record of the aborted transaction and a read_committed
// reader reaches the end (the last stable offset is not held back by a
// transaction the cleaner touched); both read the same table.
func TestCompactedTopicAbortedTransactions(t *testing.T) {
	_, addr, _ := startTestBroker(t, "--data-dir", t.TempDir(), "--cleaner-interval", "100ms")
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 90*time.Second)
	const topic = "compacted-txn"
	createCompacted(t, ctx, adm, topic)
	txn := newClient(t, addr, kgo.TransactionalID("compacting"), kgo.DefaultProduceTopic(topic))
	want := abortedAndCommitted(t, ctx, txn, topic, 20)
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	produced := 2*20 + 2
	for round := 0; round < 10; round++ {
		produced += overwriteRound(t, ctx, cl, round, 20, want)
	}
	got := rollAndAwaitClean(t, ctx, cl, addr, topic, 4000, want, produced+1, 3)
	// The pass that removes the aborted records may come after the one
	// rollAndAwaitClean saw.
	deadline := time.Now().Add(60 * time.Second)
	for hasValuePrefix(got, "aborted-") {
		if time.Now().After(deadline) {
			t.Fatalf("records of the aborted transaction still read after cleaning: %d records", len(got))
		}
		time.Sleep(200 * time.Millisecond)
		got = readAllFrom(t, addr, topic)
	}
	checkTable(t, "read_uncommitted", got, want)
	rc := readAllFrom(t, addr, topic, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	checkTable(t, "read_committed", rc, want)
}

// createCompacted creates topic compacted, in small segments, cleaned as
// soon as anything is dirty, tombstones and commit markers removable at once.
func createCompacted(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) {
	t.Helper()
	cfg := map[string]*string{"cleanup.policy": sp("compact"), "segment.bytes": sp("2048"),
		"min.cleanable.dirty.ratio": sp("0.01"), "delete.retention.ms": sp("0")}
	if r, err := adm.CreateTopics(ctx, 1, 1, cfg, topic); err != nil || r[topic].Err != nil {
		t.Fatalf("create: %v %v", err, r[topic].Err)
	}
}

// overwriteRound produces (plain) one value of round to each of keys keys
// key-NN, noting them in want; it returns how many records it wrote.
func overwriteRound(t *testing.T, ctx context.Context, cl *kgo.Client, round, keys int, want map[string]string) int {
	t.Helper()
	var recs []*kgo.Record
	for k := 0; k < keys; k++ {
		key, v := fmt.Sprintf("key-%02d", k), fmt.Sprintf("value-%02d-%03d", k, round)
		recs = append(recs, &kgo.Record{Key: []byte(key), Value: []byte(v)})
		want[key] = v
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// hasValuePrefix reports whether a record's value starts with prefix.
func hasValuePrefix(recs []*kgo.Record, prefix string) bool {
	for _, r := range recs {
		if strings.HasPrefix(string(r.Value), prefix) {
			return true
		}
	}
	return false
}

// TestCompactedTopicRemovesAbortMarkers: on a compacted topic the cleaner
// removes an aborted transaction's records, then its abort marker (at the
// next pass, delete.retention.ms=0), as Kafka's cleaner does. Once its
// records are gone a read_committed fetch is told of no aborted
// transaction, and reads the same producer's next, committed transaction;
// so it does after the broker is killed and recovers the cleaned log.
// TestCompactedTopicAbortMarkerAfterHandoffAndCrash recovers from a
// producer snapshot older than the cleaning.
func TestCompactedTopicRemovesAbortMarkers(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--cleaner-interval", "100ms"}
	k := startKaas(t, args...)
	ctx := ctxT(t, 150*time.Second)
	const topic = "compacted-abort-markers"
	createCompacted(t, ctx, newAdmin(t, k.Addr), topic)
	txn := newClient(t, k.Addr, kgo.TransactionalID("abort-markers"), kgo.DefaultProduceTopic(topic))
	want := abortedAndCommitted(t, ctx, txn, topic, 10)
	cl := newClient(t, k.Addr, kgo.DefaultProduceTopic(topic))
	cleanAbortMarkers(t, ctx, cl, k.Addr, topic, want)
	checkCommittedRead(t, "cleaned", k.Addr, topic, want)
	k.kill()
	k = startKaas(t, args...)
	checkCommittedRead(t, "after kill -9", k.Addr, topic, want)
}

// abortedAndCommitted writes, with one transactional producer, n records
// in a transaction it aborts, then n in one it commits, to partition 0 of
// topic; it returns the committed records' table.
func abortedAndCommitted(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, n int) map[string]string {
	t.Helper()
	var aborted, committed []string
	for i := 0; i < n; i++ {
		aborted = append(aborted, fmt.Sprintf("aborted-%02d", i))
		committed = append(committed, fmt.Sprintf("committed-%02d", i))
	}
	txnProduce(t, ctx, cl, topic, aborted, false)
	txnProduce(t, ctx, cl, topic, committed, true)
	want := map[string]string{}
	for _, v := range committed {
		want[v] = v
	}
	return want
}

// markersRead counts the abort and commit markers of partition 0 of topic.
func markersRead(t *testing.T, addr, topic string) (aborts, commits int) {
	t.Helper()
	for _, r := range readAllFrom(t, addr, topic, kgo.KeepControlRecords()) {
		if r.Attrs.IsControl() {
			// The control record's key: version, then type (0 abort, 1 commit).
			if len(r.Key) == 4 && r.Key[3] == 1 {
				commits++
			} else {
				aborts++
			}
		}
	}
	return aborts, commits
}

// cleanAbortMarkers writes overwrites of ten keys and a segment's worth of
// filler with cl, round after round, sealing dirty segments for the
// cleaner, until no abort marker is left in partition 0 of topic (which
// holds one committed transaction, whose marker stays); want gets what it
// writes.
func cleanAbortMarkers(t *testing.T, ctx context.Context, cl *kgo.Client, addr, topic string, want map[string]string) {
	t.Helper()
	filler := make([]byte, 2048)
	deadline := time.Now().Add(90 * time.Second)
	for round := 0; ; round++ {
		overwriteRound(t, ctx, cl, round, 10, want)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("zz-filler"), Value: filler}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want["zz-filler"] = string(filler)
		aborts, commits := markersRead(t, addr, topic)
		if commits != 1 {
			t.Fatalf("%d commit markers read, want the committed transaction's", commits)
		}
		if aborts == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abort marker is still read after %d rounds of cleaning", round+1)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkCommittedRead checks that a read_committed fetch of partition 0 of
// topic from offset 0 is told of no aborted transaction, and that a
// read_committed consumer reads no aborted record and every value of want.
func checkCommittedRead(t *testing.T, who, addr, topic string, want map[string]string) {
	t.Helper()
	if n := abortedTxnsTold(t, addr, topic); n != 0 {
		t.Fatalf("%s: a read_committed fetch from offset 0 is told of %d aborted transactions, none has records left", who, n)
	}
	got := map[string]string{}
	for _, r := range readAllFrom(t, addr, topic, kgo.FetchIsolationLevel(kgo.ReadCommitted())) {
		if strings.HasPrefix(string(r.Value), "aborted-") {
			t.Fatalf("%s: aborted record %s read at %d", who, r.Value, r.Offset)
		}
		got[string(r.Key)] = string(r.Value)
	}
	for key, v := range want {
		if got[key] != v {
			t.Fatalf("%s: read_committed reads %s = %.40q, want %.40q", who, key, got[key], v)
		}
	}
}

// abortedTxnsTold is how many aborted transactions a read_committed Fetch
// of partition 0 of topic from offset 0, sent to its leader, is told of.
func abortedTxnsTold(t *testing.T, addr, topic string) int {
	t.Helper()
	cl := newClient(t, addr)
	ctx := ctxT(t, 10*time.Second)
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil || len(td[topic].Partitions) != 1 {
		t.Fatalf("metadata of %s: %v %+v", topic, err, td[topic])
	}
	return len(readCommittedFetch(ctx, t, cl, td[topic]).AbortedTransactions)
}

// readCommittedFetch sends partition 0's leader a read_committed Fetch
// (v11, no wait) of that partition from offset 0 and returns its answer.
func readCommittedFetch(ctx context.Context, t *testing.T, cl *kgo.Client, td kadm.TopicDetail) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.IsolationLevel = 11, 1
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 16<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = td.Topic, td.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 16<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := cl.Broker(int(td.Partitions[0].Leader)).Request(ctx, req)
	resp, _ := kr.(*kmsg.FetchResponse)
	if err != nil || resp == nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("read_committed fetch of %s: %v %+v", td.Topic, err, resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestCompactedTopicCommittedTransactions: on a disk log, a franz-go
// transactional producer overwrites the same keys in several committed
// transactions (the last deleting one key with a tombstone), aborts one,
// and a plain producer overwrites keys of its own in between. Once
// cleaned, read_uncommitted from offset 0 reads each key at most once,
// nothing superseded and nothing aborted, and read_committed reads the
// same table: each key's latest committed or plain value. Commit markers
// whose transactions are gone go too (delete.retention.ms=0), the last
// commit marker stays, and so does the abort marker until a pass after
// the one that emptied its transaction. After a restart (a new leader
// rebuilding its transaction and producer state from the cleaned log)
// both readers read the same, and the transactional producer commits again.
func TestCompactedTopicCommittedTransactions(t *testing.T) {
	dir, addr := t.TempDir(), freeAddr(t)
	args := []string{"--data-dir", dir, "--cleaner-interval", "100ms"}
	_, _, stop := startTestBrokerAt(t, addr, args...)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 150*time.Second)
	const topic = "compacted-committed"
	createCompacted(t, ctx, adm, topic)
	txn := newClient(t, addr, kgo.TransactionalID("compacting-committed"), kgo.DefaultProduceTopic(topic))
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	// transact writes one transaction of records key -> value (nil: a
	// tombstone) and commits or aborts it.
	transact := func(p *kgo.Client, recs []*kgo.Record, commit bool) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit=%v): %v", commit, err)
		}
	}
	want := map[string]string{}
	const rounds = 8
	produced, commits := 0, 0
	for round := 0; round < rounds; round++ {
		var recs []*kgo.Record
		for k := 0; k < 10; k++ {
			key := fmt.Sprintf("txn-%02d", k)
			r := &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf("committed-%02d-%d", k, round))}
			if round == rounds-1 && k == 9 {
				r.Value = nil
				delete(want, key)
			} else {
				want[key] = string(r.Value)
			}
			recs = append(recs, r)
		}
		transact(txn, recs, true)
		commits++
		produced += len(recs) + 1
		if round == rounds/2 {
			var aborted []*kgo.Record
			for k := 0; k < 10; k++ {
				aborted = append(aborted, &kgo.Record{Key: []byte(fmt.Sprintf("txn-%02d", k)), Value: []byte(fmt.Sprintf("aborted-%02d", k))})
			}
			transact(txn, aborted, false)
			produced += len(aborted) + 1
		}
		produced += overwriteRound(t, ctx, cl, round, 10, want)
	}
	rollAndAwaitClean(t, ctx, cl, addr, topic, 4000, want, produced+1, 3)
	// check reads the log both ways once the cleaner is done with it: it
	// waits for a read_uncommitted reader to see no aborted, superseded or
	// repeated record, then compares both readers' tables with want.
	check := func(who string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			got := readAllFrom(t, addr, topic, kgo.KeepControlRecords())
			var data []*kgo.Record
			seen := map[string]bool{}
			clean := true
			var commitsLeft, abortsLeft []int64
			for _, r := range got {
				if r.Attrs.IsControl() {
					// The control record's key: version, then type (0 abort, 1 commit).
					if len(r.Key) == 4 && r.Key[3] == 1 {
						commitsLeft = append(commitsLeft, r.Offset)
					} else {
						abortsLeft = append(abortsLeft, r.Offset)
					}
					continue
				}
				data = append(data, r)
				k, v := string(r.Key), string(r.Value)
				if seen[k] || strings.HasPrefix(v, "aborted-") || r.Value != nil && v != want[k] {
					clean = false
				}
				seen[k] = true
			}
			if clean {
				checkTable(t, who+" read_uncommitted", data, want)
				if len(abortsLeft) > 1 || len(commitsLeft) == 0 || len(commitsLeft) >= commits {
					t.Fatalf("%s: markers left: commits at %v (of %d), aborts at %v", who, commitsLeft, commits, abortsLeft)
				}
				// The last transaction's marker follows its records.
				last := commitsLeft[len(commitsLeft)-1]
				for _, r := range data {
					if strings.HasPrefix(string(r.Key), "txn-") && r.Offset > last {
						t.Fatalf("%s: %s at %d after the last commit marker at %d", who, r.Key, r.Offset, last)
					}
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: superseded, repeated or aborted records still read after cleaning: %d records", who, len(got))
			}
			time.Sleep(200 * time.Millisecond)
		}
		rc := readAllFrom(t, addr, topic, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		checkTable(t, who+" read_committed", rc, want)
	}
	check("cleaned")
	stop()
	startTestBrokerAt(t, addr, args...)
	check("restarted")
	txn2 := newClient(t, addr, kgo.TransactionalID("compacting-committed"), kgo.DefaultProduceTopic(topic))
	transact(txn2, []*kgo.Record{{Key: []byte("txn-00"), Value: []byte("after-restart")}}, true)
	want["txn-00"] = "after-restart"
	// A plain record after it: a reader stops at the last record it sees.
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("key-00"), Value: []byte("after-restart")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want["key-00"] = "after-restart"
	rc := readAllFrom(t, addr, topic, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	checkTable(t, "read_committed after a restart", rc, want)
}
