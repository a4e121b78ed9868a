package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/batch"
)

// txnProduce runs one transaction of cl writing values to topic and ends
// it with commit.
func txnProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, values []string, commit bool) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %s: %v", v, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit=%v): %v", commit, err)
	}
}

// consumeIsolated reads topic from the start with the isolation level until
// want records arrived, then drains for quiet more; it returns the values,
// sorted.
func consumeIsolated(t *testing.T, addr, topic string, level kgo.IsolationLevel, want int, quiet time.Duration) []string {
	t.Helper()
	return consumeIsolatedWithin(t, addr, topic, level, want, quiet, 20*time.Second)
}

// consumeIsolatedWithin is consumeIsolated with its deadline.
func consumeIsolatedWithin(t *testing.T, addr, topic string, level kgo.IsolationLevel, want int, quiet, within time.Duration) []string {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	var got []string
	deadline := time.Now().Add(within)
	var quietUntil time.Time
	for {
		if len(got) >= want && quietUntil.IsZero() {
			quietUntil = time.Now().Add(quiet)
		}
		if !quietUntil.IsZero() && time.Now().After(quietUntil) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d records: %v", len(got), want, got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("fetch %s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	sort.Strings(got)
	return got
}

// checkIsolatedReads checks, with franz-go, that topic reads the values of
// committed at read_committed and of all at read_uncommitted; each record
// is given as ".../value", as the external clients' scripts report them.
func checkIsolatedReads(t *testing.T, addr, topic string, committed, all []string) {
	t.Helper()
	values := func(rs []string) []string {
		var v []string
		for _, r := range rs {
			v = append(v, r[strings.LastIndexByte(r, '/')+1:])
		}
		slices.Sort(v)
		return v
	}
	if got := consumeIsolated(t, addr, topic, kgo.ReadCommitted(), len(committed), 300*time.Millisecond); !slices.Equal(got, values(committed)) {
		t.Errorf("franz-go read_committed read %v, want %v", got, values(committed))
	}
	if got := consumeIsolated(t, addr, topic, kgo.ReadUncommitted(), len(all), 300*time.Millisecond); !slices.Equal(got, values(all)) {
		t.Errorf("franz-go read_uncommitted read %v, want %v", got, values(all))
	}
}

func sumOffsets(l kadm.ListedOffsets) int64 {
	var n int64
	l.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

func txnValues(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

// TestTransactionsReadCommitted drives franz-go transactions against a
// broker on a data dir: committed transactions are read by read_committed
// consumers, aborted ones never, an open one holds the last stable offset
// back until its timeout aborts it; a restart rebuilds the same view from
// the log and the transaction log; a second producer with the same
// transactional id fences the first.
func TestTransactionsReadCommitted(t *testing.T) {
	dir := t.TempDir()
	_, addr, stop := startTestBroker(t, "--data-dir", dir)
	ctx := ctxT(t, 60*time.Second)
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "tx"); err != nil {
		t.Fatal(err)
	}
	p1 := newClient(t, addr, kgo.TransactionalID("t1"), kgo.DefaultProduceTopic("tx"))
	txnProduce(t, ctx, p1, "tx", txnValues("c1", 10), true)
	txnProduce(t, ctx, p1, "tx", txnValues("a1", 10), false)
	txnProduce(t, ctx, p1, "tx", txnValues("c2", 5), true)

	// A transaction left open, with a short timeout.
	p2 := newClient(t, addr, kgo.TransactionalID("t2"), kgo.TransactionTimeout(3*time.Second))
	if err := p2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p2.ProduceSync(ctx, &kgo.Record{Topic: "tx", Partition: 0, Value: []byte("open-00")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	committed := append(txnValues("c1", 10), txnValues("c2", 5)...)
	sort.Strings(committed)
	if got := consumeIsolated(t, addr, "tx", kgo.ReadCommitted(), len(committed), 300*time.Millisecond); fmt.Sprint(got) != fmt.Sprint(committed) {
		t.Fatalf("read_committed = %v\nwant %v", got, committed)
	}
	t.Run("kcat read_committed", func(t *testing.T) {
		requireTool(t, "kcat")
		var got []string
		for _, m := range kcatRead(t, addr, "-C", "-t", "tx", "-o", "beginning", "-X", "isolation.level=read_committed") {
			got = append(got, m.Value)
		}
		sort.Strings(got)
		if fmt.Sprint(got) != fmt.Sprint(committed) {
			t.Errorf("kcat read_committed = %v\nwant %v", got, committed)
		}
	})
	if got := consumeIsolated(t, addr, "tx", kgo.ReadUncommitted(), 26, 300*time.Millisecond); len(got) != 26 {
		t.Fatalf("read_uncommitted read %d records, want 26: %v", len(got), got)
	}
	// ListOffsets: the open transaction holds read_committed's end back.
	ends, err := adm.ListEndOffsets(ctx, "tx")
	if err != nil {
		t.Fatal(err)
	}
	stable, err := adm.ListCommittedOffsets(ctx, "tx")
	if err != nil {
		t.Fatal(err)
	}
	if e, s := sumOffsets(ends), sumOffsets(stable); s >= e {
		t.Fatalf("last stable offsets (sum %d) not below the ends (sum %d) with a transaction open", s, e)
	}

	// Restart on the same data dir: the coordinator reloads t2 (Ongoing)
	// and aborts it at its timeout; partitions rebuild the aborted index.
	p1.Close()
	p2.Close()
	stop()
	_, addr, _ = startTestBroker(t, "--data-dir", dir)
	adm = newAdmin(t, addr)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ends, err := adm.ListEndOffsets(ctx, "tx")
		if err != nil {
			t.Fatal(err)
		}
		stable, err := adm.ListCommittedOffsets(ctx, "tx")
		if err == nil && sumOffsets(ends) == sumOffsets(stable) && sumOffsets(ends) > 26 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("open transaction never aborted: ends %d stable %d (%v)", sumOffsets(ends), sumOffsets(stable), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := consumeIsolated(t, addr, "tx", kgo.ReadCommitted(), len(committed), 300*time.Millisecond); fmt.Sprint(got) != fmt.Sprint(committed) {
		t.Fatalf("read_committed after restart = %v\nwant %v", got, committed)
	}
	described, err := adm.DescribeTransactions(ctx, "t1", "t2")
	if err != nil {
		t.Fatal(err)
	}
	if st := described["t2"].State; st != "CompleteAbort" {
		t.Fatalf("t2 state = %q, want CompleteAbort", st)
	}
	if st := described["t1"].State; st != "CompleteCommit" {
		t.Fatalf("t1 state = %q, want CompleteCommit", st)
	}
	listed, err := adm.ListTransactions(ctx, nil, []string{"CompleteAbort"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["t2"]; !ok || len(listed) != 1 || listed["t2"].ProducerID != described["t2"].ProducerID {
		t.Fatalf("ListTransactions(CompleteAbort) = %+v", listed)
	}

	// Fencing: a new incarnation of t1 fences the old one.
	old := newClient(t, addr, kgo.TransactionalID("t1"), kgo.DefaultProduceTopic("tx"))
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie-00")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fresh := newClient(t, addr, kgo.TransactionalID("t1"), kgo.DefaultProduceTopic("tx"))
	txnProduce(t, ctx, fresh, "tx", txnValues("c3", 3), true)
	err = old.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Logf("fenced producer's commit failed with %v", err)
	}
	committed = append(committed, txnValues("c3", 3)...)
	sort.Strings(committed)
	if got := consumeIsolated(t, addr, "tx", kgo.ReadCommitted(), len(committed), 300*time.Millisecond); fmt.Sprint(got) != fmt.Sprint(committed) {
		t.Fatalf("read_committed after fencing = %v\nwant %v", got, committed)
	}

}

// etlSession is a franz-go consume-transform-produce session reading "in"
// with group "etl" and writing "out-"+value to "out".
func etlSession(t *testing.T, addr, txnID string) *kgo.GroupTransactSession {
	t.Helper()
	s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID(txnID),
		kgo.ConsumerGroup("etl"), kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.RetryTimeout(10*time.Second), kgo.FetchMaxPartitionBytes(2000))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// etlRound polls once and transforms what it got in one transaction ended
// with commit; it returns how many inputs it transformed.
func etlRound(t *testing.T, ctx context.Context, s *kgo.GroupTransactSession, commit bool) int {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	fs := s.PollFetches(pctx)
	cancel()
	var in []*kgo.Record
	fs.EachRecord(func(r *kgo.Record) { in = append(in, r) })
	if len(in) == 0 {
		return 0
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	for _, r := range in {
		s.Produce(ctx, &kgo.Record{Topic: "out", Key: r.Key, Value: append([]byte("out-"), r.Value...)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	committed, err := s.End(ctx, kgo.TransactionEndTry(commit))
	if err != nil {
		t.Fatalf("end: %v", err)
	}
	if !committed {
		return 0
	}
	return len(in)
}

// TestTransactionsConsumeTransformProduce runs franz-go's
// GroupTransactSession over kaas: a worker commits a round, aborts the
// next and leaves; a second worker finishes. Every input's output appears
// exactly once in read_committed, and no output of the aborted round does.
func TestTransactionsConsumeTransformProduce(t *testing.T) {
	_, addr := testBroker(t, "--data-dir", t.TempDir(), "--group-initial-rebalance-delay", "0s")
	ctx := ctxT(t, 60*time.Second)
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "out"); err != nil {
		t.Fatal(err)
	}
	const n = 300
	inputs := txnValues("in", n)
	// Small batches (10 records each), so that a poll returns a part.
	prod := newClient(t, addr)
	for i, v := range inputs {
		prod.Produce(ctx, &kgo.Record{Topic: "in", Key: []byte(v), Value: []byte(v)}, nil)
		if i%10 == 9 {
			if err := prod.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}

	w1 := etlSession(t, addr, "etl-1")
	done := 0
	for done == 0 && ctx.Err() == nil {
		done = etlRound(t, ctx, w1, true)
	}
	if done >= n {
		t.Fatalf("the first round took all %d inputs", done)
	}
	for aborted := false; !aborted && ctx.Err() == nil; {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := w1.PollFetches(pctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("fetch %s-%d: %v", topic, p, err)
			}
		})
		if fs.NumRecords() == 0 {
			continue
		}
		if err := w1.Begin(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			w1.Produce(ctx, &kgo.Record{Topic: "out", Value: append([]byte("aborted-"), r.Value...)}, nil)
		})
		if _, err := w1.End(ctx, kgo.TryAbort); err != nil {
			t.Fatal(err)
		}
		aborted = true
	}
	w1.Close()

	w2 := etlSession(t, addr, "etl-2")
	deadline := time.Now().Add(40 * time.Second)
	for done < n && time.Now().Before(deadline) && ctx.Err() == nil {
		done += etlRound(t, ctx, w2, true)
	}
	if done != n {
		t.Fatalf("transformed %d of %d inputs", done, n)
	}
	want := make([]string, n)
	for i, v := range inputs {
		want[i] = "out-" + v
	}
	sort.Strings(want)
	if got := consumeIsolated(t, addr, "out", kgo.ReadCommitted(), n, 300*time.Millisecond); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read_committed output (%d records) is not every input exactly once", len(got))
	}
	// The group's committed offsets cover every input.
	offs, err := adm.FetchOffsets(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != n {
		t.Fatalf("group committed %d offsets in total, want %d", total, n)
	}
}

// TestTransactionalProduceIsVerified: a transactional batch sent without
// AddPartitionsToTxn (KIP-890's hanging transaction) is refused with
// INVALID_TXN_STATE and nothing is written, so the last stable offset never
// sticks; the same batch after AddPartitionsToTxn is written; after the
// commit the producer must add the partition again. Under the transaction
// protocol v2 (Produce v12) the partition is added for the producer, and
// the epoch EndTxn v5 bumps fences the ended transaction's late batches.
func TestTransactionalProduceIsVerified(t *testing.T) {
	_, addr := testBroker(t)
	createTopic(t, addr, "verified", 2, nil)
	id := "raw-tx"
	ipr := kmsg.NewPtrInitProducerIDRequest()
	ipr.TransactionalID, ipr.TransactionTimeoutMillis = &id, 60000
	var init *kmsg.InitProducerIDResponse
	for {
		// The first request for an id may find it loading; retry.
		init = rawRequest(t, addr, ipr, 4).(*kmsg.InitProducerIDResponse)
		if init.ErrorCode != kerr.CoordinatorLoadInProgress.Code && init.ErrorCode != kerr.ConcurrentTransactions.Code {
			break
		}
	}
	if init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(init.ErrorCode))
	}
	pid, epoch := init.ProducerID, init.ProducerEpoch
	produceV := func(version int16, partition int32, epoch int16, seq int32) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = &id, -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "verified"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = partition
		rp.Records = batch.Build(batch.Spec{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: true,
			Values: [][]byte{[]byte(fmt.Sprint("v", seq))}})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rawRequest(t, addr, req, version).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}
	produce := func(partition int32, seq int32) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		return produceV(9, partition, epoch, seq)
	}
	ends := func() (latest, stable int64) {
		t.Helper()
		adm := newAdmin(t, addr)
		l, err := adm.ListEndOffsets(ctxT(t, 10*time.Second), "verified")
		if err != nil {
			t.Fatal(err)
		}
		s, err := adm.ListCommittedOffsets(ctxT(t, 10*time.Second), "verified")
		if err != nil {
			t.Fatal(err)
		}
		return sumOffsets(l), sumOffsets(s)
	}

	if r := produce(0, 0); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("transactional batch without AddPartitionsToTxn: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	if l, s := ends(); l != 0 || s != 0 {
		t.Fatalf("after the refused batch: end %d, stable %d; want nothing written", l, s)
	}

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "verified", []int32{0}
	add.Topics = append(add.Topics, at)
	if r := rawRequest(t, addr, add, 3).(*kmsg.AddPartitionsToTxnResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if r := produce(0, 0); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("batch of an added partition: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
	if r := produce(1, 0); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("batch of a partition not added: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// A producer that knows TRANSACTION_ABORTABLE (Produce v11+, KIP-1050)
	// is told to abort instead.
	if r := produceV(11, 1, epoch, 0); r.ErrorCode != kerr.TransactionAbortable.Code {
		t.Fatalf("v11 batch of a partition not added: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if l, s := ends(); l != 1 || s != 0 {
		t.Fatalf("open transaction: end %d, stable %d; want 1, 0", l, s)
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, pid, epoch, true
	if r := rawRequest(t, addr, end, 3).(*kmsg.EndTxnResponse); r.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if l, s := ends(); l != 2 || s != 2 {
		t.Fatalf("committed: end %d, stable %d; want 2, 2 (record and marker)", l, s)
	}
	if r := produce(0, 1); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("batch after the commit without a new AddPartitionsToTxn: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if l, s := ends(); l != 2 || s != 2 {
		t.Fatalf("after the refused batch: end %d, stable %d; want 2, 2", l, s)
	}

	// The transaction protocol v2.
	if r := produceV(12, 0, epoch, 1); r.ErrorCode != 0 || r.BaseOffset != 2 {
		t.Fatalf("v12 batch (the partition added for the producer): %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
	end.Version = 5
	r5 := rawRequest(t, addr, end, 5).(*kmsg.EndTxnResponse)
	if r5.ErrorCode != 0 || r5.ProducerID != pid || r5.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5: %v, producer %d epoch %d; want %d, %d", kerr.ErrorForCode(r5.ErrorCode), r5.ProducerID, r5.ProducerEpoch, pid, epoch+1)
	}
	if l, s := ends(); l != 4 || s != 4 {
		t.Fatalf("committed (v2): end %d, stable %d; want 4, 4", l, s)
	}
	if r := produceV(12, 0, epoch, 2); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("late v12 batch of the ended transaction's epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := produceV(12, 1, epoch, 0); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("v12 batch of the old epoch on a partition without its marker: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := produceV(12, 0, epoch+1, 0); r.ErrorCode != 0 || r.BaseOffset != 4 {
		t.Fatalf("v12 batch of the next transaction: %v %+v", kerr.ErrorForCode(r.ErrorCode), r)
	}
}

// TestLateMarkerDoesNotEndTheNextTransaction (KIP-1228): under the
// transaction protocol v2 the coordinator bumps the producer's epoch to
// end a transaction, and the next one is written at that epoch. A late or
// repeated marker of the ended transaction, sent as WriteTxnMarkers v2 with
// TransactionVersion 2, is refused (INVALID_PRODUCER_EPOCH) while the next
// transaction is open, which stays open until its producer ends it.
func TestLateMarkerDoesNotEndTheNextTransaction(t *testing.T) {
	_, addr := testBroker(t)
	createTopic(t, addr, "late", 1, nil)
	ctx := ctxT(t, 30*time.Second)
	cl := newClient(t, addr, kgo.TransactionalID("late-marker"), kgo.DefaultProduceTopic("late"))
	txnProduce(t, ctx, cl, "late", []string{"one"}, true) // offsets 0 and its marker at 1
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("two")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := newAdmin(t, addr)
	described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"late": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var open kadm.DescribedProducer
	described.EachProducer(func(p kadm.DescribedProducer) { open = p })
	if open.CurrentTxnStartOffset != 2 {
		t.Fatalf("the second transaction is not open at offset 2: %+v", open)
	}

	// The first transaction's commit marker again: its epoch is the one
	// the open transaction writes at.
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.TransactionVersion = open.ProducerID, open.ProducerEpoch, true, 2
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "late", []int32{0}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp := rawRequest(t, addr, req, 2).(*kmsg.WriteTxnMarkersResponse)
	if c := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("late marker answered %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(c))
	}
	lso, err := adm.ListEndOffsets(ctx, "late")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lso.Lookup("late", 0); o.Offset != 3 {
		t.Fatalf("end offset %d after the refused marker, want 3 (nothing written)", o.Offset)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	if got := consumeIsolated(t, addr, "late", kgo.ReadCommitted(), 1, 300*time.Millisecond); len(got) != 1 || got[0] != "one" {
		t.Fatalf("read_committed: %v, want [one] (the second transaction aborted by its producer)", got)
	}
}

// openTransaction starts a broker with the one-partition topic and a
// franz-go producer of transactional id topic whose transaction holds one
// record there, open.
func openTransaction(t *testing.T, ctx context.Context, topic string, opts ...kgo.Opt) (addr string, cl *kgo.Client) {
	t.Helper()
	_, addr = testBroker(t)
	createTopic(t, addr, topic, 1, nil)
	cl = newClient(t, addr, append([]kgo.Opt{kgo.TransactionalID(topic), kgo.DefaultProduceTopic(topic)}, opts...)...)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return addr, cl
}

// TestTimedOutTransactionAbortedByItsProducer: under the transaction
// protocol v2 a franz-go producer whose transaction the coordinator aborted
// on timeout aborts it itself, as it may on Kafka (the abort is answered
// with the epoch the timeout bumped to), and goes on with its next
// transaction without a new InitProducerId.
func TestTimedOutTransactionAbortedByItsProducer(t *testing.T) {
	ctx := ctxT(t, 40*time.Second)
	addr, cl := openTransaction(t, ctx, "timed-out", kgo.TransactionTimeout(2*time.Second))
	adm := newAdmin(t, addr)
	for {
		described, err := adm.DescribeTransactions(ctx, "timed-out")
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := described["timed-out"]; ok && d.State == "CompleteAbort" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the transaction was not aborted on timeout: %+v", described)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("the producer's abort of its timed-out transaction: %v", err)
	}
	txnProduce(t, ctx, cl, "timed-out", []string{"next"}, true)
	if got := consumeIsolated(t, addr, "timed-out", kgo.ReadCommitted(), 1, 300*time.Millisecond); len(got) != 1 || got[0] != "next" {
		t.Fatalf("read_committed: %v, want [next]", got)
	}
}

// TestAdminAbortsOpenTransaction: what `kafka-transactions.sh abort` does to
// a transaction that holds a partition's last stable offset. The operator
// finds the producer with DescribeProducers and sends its abort marker with
// WriteTxnMarkers (KIP-664); the transaction closes on the partition, so
// read_committed consumers go past it, and its producer's own abort later
// succeeds and leaves it able to go on.
func TestAdminAbortsOpenTransaction(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	addr, cl := openTransaction(t, ctx, "stuck")
	adm := newAdmin(t, addr)
	openTxn := func() (kadm.DescribedProducer, bool) {
		described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"stuck": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		var p kadm.DescribedProducer
		described.EachProducer(func(d kadm.DescribedProducer) { p = d })
		return p, p.CurrentTxnStartOffset >= 0
	}
	p, open := openTxn()
	if !open || p.CurrentTxnStartOffset != 0 {
		t.Fatalf("DescribeProducers: %+v, want a transaction open at offset 0", p)
	}
	resp, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch,
		CoordinatorEpoch: p.CoordinatorEpoch, Topics: kadm.TopicsSet{"stuck": {0: {}}}})
	if err != nil {
		t.Fatal(err)
	}
	resp.EachPartition(func(r kadm.TxnMarkersPartitionResponse) {
		if r.Err != nil {
			t.Errorf("abort marker on %s-%d: %v", r.Topic, r.Partition, r.Err)
		}
	})
	if p, open := openTxn(); open {
		t.Fatalf("the transaction is still open after the abort marker: %+v", p)
	}
	plain := newClient(t, addr, kgo.DefaultProduceTopic("stuck"))
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := consumeIsolated(t, addr, "stuck", kgo.ReadCommitted(), 1, 300*time.Millisecond); len(got) != 1 || got[0] != "after" {
		t.Fatalf("read_committed after the abort: %v, want [after]", got)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("the producer's own abort: %v", err)
	}
	txnProduce(t, ctx, cl, "stuck", []string{"next"}, true)
	if got := consumeIsolated(t, addr, "stuck", kgo.ReadCommitted(), 2, 300*time.Millisecond); len(got) != 2 || got[0] != "after" || got[1] != "next" {
		t.Fatalf("read_committed at the end: %v, want [after next]", got)
	}
}

// TestLastStableOffsetNotBelowLogStart: DeleteRecords past the first
// offset of a transaction still open moves the last stable offset up to
// the new log start, as Kafka's first unstable offset follows the log
// start: ListOffsets for read_committed answers the log start, never an
// offset below it, and a read_committed consumer reset to the end reads
// on from there once the transaction commits.
func TestLastStableOffsetNotBelowLogStart(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	addr, cl := openTransaction(t, ctx, "trimmed") // "open" at offset 0
	plain := newClient(t, addr, kgo.DefaultProduceTopic("trimmed"))
	for _, v := range []string{"a", "b", "c"} { // offsets 1-3
		if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := newAdmin(t, addr)
	lso := func() int64 {
		t.Helper()
		offs, err := adm.ListCommittedOffsets(ctx, "trimmed")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup("trimmed", 0)
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		return o.Offset
	}
	if got := lso(); got != 0 {
		t.Fatalf("last stable offset with the transaction open at 0: %d", got)
	}
	res, err := adm.DeleteRecords(ctx, kadm.Offsets{"trimmed": {0: {Topic: "trimmed", Partition: 0, At: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("trimmed", 0); r.Err != nil || r.LowWatermark != 2 {
		t.Fatalf("DeleteRecords: low watermark %d (%v), want 2", r.LowWatermark, r.Err)
	}
	if got := lso(); got != 2 {
		t.Fatalf("last stable offset after DeleteRecords to 2: %d, want the log start 2", got)
	}
	// A read_committed consumer reset to the end starts at the last
	// stable offset, 2, and waits there for the transaction.
	cons := newClient(t, addr, kgo.ConsumeTopics("trimmed"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	early, cancel := context.WithTimeout(ctx, time.Second)
	fs := cons.PollFetches(early)
	cancel()
	if recs := fs.Records(); len(recs) != 0 {
		t.Fatalf("read_committed with the transaction open: %v", recs)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := lso(); got != 5 { // past the commit marker at 4
		t.Fatalf("last stable offset after the commit: %d, want 5", got)
	}
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("d")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 3 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("read_committed from the end: %v (read %v)", err, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%s@%d", r.Value, r.Offset)) })
	}
	if want := []string{"b@2", "c@3", "d@5"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed from the end: %v, want %v", got, want)
	}
}

// TestReadCommittedWaitsForDurableMarker: a transaction's end is stable
// only once its marker is durable, as on Kafka, whose last stable offset
// holds a completed transaction until the high watermark passes its marker
// (ProducerStateManager's unreplicatedTxns). With the abort marker's fsync
// held back (--debug-chaos), no read_committed fetch is given the aborted
// records without the marker that ends them (@platformatic/kafka's
// consumer delivers aborted records whose marker it has not got), nor a
// last stable offset past them; once the marker is durable the last
// stable offset passes it.
func TestReadCommittedWaitsForDurableMarker(t *testing.T) {
	const topic = "lso-marker"
	httpAddr := freeAddr(t)
	_, addr := testBroker(t, "--data-dir", t.TempDir(), "--debug-chaos", "--http-addr", httpAddr)
	ctx := ctxT(t, 60*time.Second)
	createTopic(t, addr, topic, 1, nil)
	p := newClient(t, addr, kgo.TransactionalID("lso-marker"), kgo.DefaultProduceTopic(topic))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "aborted-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := chaosPost(httpAddr, "/debug/chaos/fsync?delay=1500ms&for=5s"); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- p.EndTransaction(ctx, kgo.TryAbort) }()

	cl := newClient(t, addr)
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %+v", topic, err, td[topic])
	}
	// The aborted records are offsets 0-2 and the abort marker offset 3.
	for done := false; !done; {
		select {
		case err := <-ended:
			if err != nil {
				t.Fatalf("abort: %v", err)
			}
			done = true
		default:
		}
		rp := readCommittedFetch(ctx, t, cl, td[topic])
		if rp.LastStableOffset > 0 && rp.LastStableOffset < 4 {
			t.Fatalf("last stable offset %d past the aborted records, before their marker (high watermark %d)", rp.LastStableOffset, rp.HighWatermark)
		}
		if len(rp.RecordBatches) > 0 && rp.LastStableOffset < 4 {
			t.Fatalf("read_committed fetch got %d bytes of records without the abort marker (last stable offset %d, high watermark %d)", len(rp.RecordBatches), rp.LastStableOffset, rp.HighWatermark)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitUntil(t, 10*time.Second, "the last stable offset passes the durable abort marker", func() bool {
		return readCommittedFetch(ctx, t, cl, td[topic]).LastStableOffset == 4
	})
}
