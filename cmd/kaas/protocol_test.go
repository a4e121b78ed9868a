package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/batch"
)

// rawProduce sends one batch to topic/partition with kmsg and returns the
// partition result.
func rawProduce(t *testing.T, cl *kgo.Client, topic string, partition int32, acks int16, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	resp, err := produceRequest(topic, partition, acks, records).RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0]
}

// produceRequest is a Produce of one batch to topic/partition.
func produceRequest(topic string, partition int32, acks int16, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func createTopic(t *testing.T, addr, name string, partitions int32, cfg map[string]*string) {
	t.Helper()
	resp, err := newAdmin(t, addr).CreateTopic(ctxT(t, 10*time.Second), partitions, 1, cfg, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
}

func TestApiVersionsListsOnlyServedAPIs(t *testing.T) {
	_, addr := testBroker(t)
	cl := newClient(t, addr)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctxT(t, 5*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for key, want := range map[kmsg.Key][2]int16{
		kmsg.Produce: {0, 13}, kmsg.Fetch: {4, 18}, kmsg.Metadata: {0, 13}, kmsg.ApiVersions: {0, 5},
		kmsg.DescribeCluster: {0, 2}, kmsg.OffsetForLeaderEpoch: {2, 4}, kmsg.ListOffsets: {0, 11},
		kmsg.DescribeLogDirs: {1, 5}, kmsg.AlterReplicaLogDirs: {1, 2}, kmsg.ElectLeaders: {0, 2}, kmsg.DescribeProducers: {0, 0},
		kmsg.InitProducerID: {0, 5}, kmsg.AddPartitionsToTxn: {0, 5}, kmsg.AddOffsetsToTxn: {0, 4}, kmsg.EndTxn: {0, 5},
		kmsg.DescribeTransactions: {0, 0}, kmsg.ListTransactions: {0, 2}, kmsg.TxnOffsetCommit: {0, 6},
		kmsg.WriteTxnMarkers: {1, 2}, kmsg.DescribeUserSCRAMCredentials: {0, 0}, kmsg.AlterUserSCRAMCredentials: {0, 0},
	} {
		if got[key.Int16()] != want {
			t.Errorf("%s: versions %v, want %v", kmsg.NameForKey(key.Int16()), got[key.Int16()], want)
		}
	}
}

func TestIdempotentProducerSequences(t *testing.T) {
	_, addr := testBroker(t)
	createTopic(t, addr, "idem", 1, nil)
	cl := newClient(t, addr, producesByName())
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctxT(t, 5*time.Second), cl)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %v", err, init)
	}
	pid, epoch := init.ProducerID, init.ProducerEpoch
	mk := func(seq int32, n int) []byte {
		vals := make([][]byte, n)
		for i := range vals {
			vals[i] = []byte(fmt.Sprintf("s%d", int(seq)+i))
		}
		return batch.Build(batch.Spec{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Timestamp: time.Now().UnixMilli(), Values: vals})
	}
	first := rawProduce(t, cl, "idem", 0, -1, mk(0, 3))
	if first.ErrorCode != 0 || first.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", first)
	}
	second := rawProduce(t, cl, "idem", 0, -1, mk(3, 2))
	if second.ErrorCode != 0 || second.BaseOffset != 3 {
		t.Fatalf("second batch: %+v", second)
	}
	// A retry of an already-written batch gets its original offset, no error.
	retry := rawProduce(t, cl, "idem", 0, -1, mk(0, 3))
	if retry.ErrorCode != 0 || retry.BaseOffset != 0 {
		t.Fatalf("retry: %+v", retry)
	}
	// A gap in the sequence is OUT_OF_ORDER_SEQUENCE_NUMBER and writes nothing.
	gap := rawProduce(t, cl, "idem", 0, -1, mk(9, 1))
	if gap.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: %+v", gap)
	}
	next := rawProduce(t, cl, "idem", 0, -1, mk(5, 1))
	if next.ErrorCode != 0 || next.BaseOffset != 5 {
		t.Fatalf("after gap: %+v", next)
	}
	// A sequence older than the remembered window is a duplicate.
	for s := int32(6); s < 12; s++ {
		if r := rawProduce(t, cl, "idem", 0, -1, mk(s, 1)); r.ErrorCode != 0 {
			t.Fatalf("seq %d: %+v", s, r)
		}
	}
	if dup := rawProduce(t, cl, "idem", 0, -1, mk(3, 2)); dup.ErrorCode != kerr.DuplicateSequenceNumber.Code {
		t.Fatalf("old duplicate: %+v", dup)
	}
	// A new epoch must start at sequence 0.
	bumped := batch.Build(batch.Spec{ProducerID: pid, ProducerEpoch: epoch + 1, BaseSequence: 4, Values: [][]byte{[]byte("x")}})
	if r := rawProduce(t, cl, "idem", 0, -1, bumped); r.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("new epoch at seq 4: %+v", r)
	}
	// An older epoch is fenced once a newer one wrote.
	bumped = batch.Build(batch.Spec{ProducerID: pid, ProducerEpoch: epoch + 1, BaseSequence: 0, Values: [][]byte{[]byte("x")}})
	if r := rawProduce(t, cl, "idem", 0, -1, bumped); r.ErrorCode != 0 {
		t.Fatalf("new epoch at seq 0: %+v", r)
	}
	if r := rawProduce(t, cl, "idem", 0, -1, mk(12, 1)); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale epoch: %+v", r)
	}
	// The log holds each record exactly once: 3+2+1+6+1 = 13 records.
	lo, err := newAdmin(t, addr).ListEndOffsets(ctxT(t, 5*time.Second), "idem")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lo.Lookup("idem", 0); o.Offset != 13 {
		t.Fatalf("end offset %d, want 13", o.Offset)
	}
}

func TestIdempotentClientSurvivesRetries(t *testing.T) {
	_, addr := testBroker(t)
	createTopic(t, addr, "idem-client", 3, nil)
	cl := newClient(t, addr, kgo.DefaultProduceTopic("idem-client"), kgo.MaxBufferedRecords(1000), kgo.ProducerLinger(time.Millisecond))
	ctx := ctxT(t, 20*time.Second)
	const n = 2000
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i)), Partition: int32(i % 3)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ends, err := newAdmin(t, addr).ListEndOffsets(ctx, "idem-client")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != n {
		t.Fatalf("%d records in the log, want %d", total, n)
	}
}

func TestProduceErrors(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	max := "2000"
	createTopic(t, addr, "small", 1, map[string]*string{"max.message.bytes": &max})
	cl := newClient(t, addr, producesByName())
	good := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("ok")}})

	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0x55
	if r := rawProduce(t, cl, "small", 0, 1, corrupt); r.ErrorCode != kerr.CorruptMessage.Code {
		t.Errorf("corrupt batch: %+v", r)
	}
	big := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{bytes.Repeat([]byte("x"), 5000)}})
	if r := rawProduce(t, cl, "small", 0, 1, big); r.ErrorCode != kerr.MessageTooLarge.Code {
		t.Errorf("oversize batch: %+v", r)
	}
	if r := rawProduce(t, cl, "nope", 0, 1, good); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: %+v", r)
	}
	if r := rawProduce(t, cl, "small", 7, 1, good); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown partition: %+v", r)
	}
	acks2 := kmsg.NewPtrProduceRequest()
	acks2.Acks, acks2.TimeoutMillis = 2, 1000
	at := kmsg.NewProduceRequestTopic()
	at.Topic = "small"
	ap := kmsg.NewProduceRequestTopicPartition()
	ap.Records = good
	at.Partitions = append(at.Partitions, ap)
	acks2.Topics = append(acks2.Topics, at)
	if r := rawRequest(t, addr, acks2, 9).(*kmsg.ProduceResponse); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequiredAcks.Code {
		t.Errorf("acks=2: %+v", r.Topics[0].Partitions[0])
	}
	two := append(append([]byte(nil), good...), good...)
	if r := rawProduce(t, cl, "small", 0, 1, two); r.ErrorCode != kerr.InvalidRecord.Code {
		t.Errorf("two batches: %+v", r)
	}
	// Nothing above was written; a good batch lands at offset 0.
	if r := rawProduce(t, cl, "small", 0, 1, good); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Errorf("good batch after errors: %+v", r)
	}
	// A transactional InitProducerID needs a valid transaction timeout.
	txn := kmsg.NewPtrInitProducerIDRequest()
	id := "tx-1"
	txn.TransactionalID = &id
	if resp := rawRequest(t, addr, txn, 4).(*kmsg.InitProducerIDResponse); resp.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Errorf("transactional InitProducerID without a timeout: %+v", resp)
	}
	txn.TransactionTimeoutMillis = 60000
	if resp := rawRequest(t, addr, txn, 4).(*kmsg.InitProducerIDResponse); resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 {
		t.Errorf("transactional InitProducerID: %+v", resp)
	}
}

// TestProduceOfALyingRecordCount: a batch whose header claims more records
// than it holds is refused, uncompressed or compressed (every record is
// read), to a plain or a compacted topic, and the broker stays up: reading
// such a batch must not size anything by the count it claims.
func TestProduceOfALyingRecordCount(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	compact := "compact"
	createTopic(t, addr, "plain", 1, nil)
	createTopic(t, addr, "keyed", 1, map[string]*string{"cleanup.policy": &compact})
	cl := newClient(t, addr, producesByName())
	lie := func(b []byte, n int32) []byte {
		b = append([]byte(nil), b...)
		// Record count (offset 57), last offset delta (23), CRC (17).
		binary.BigEndian.PutUint32(b[57:], uint32(n))
		binary.BigEndian.PutUint32(b[23:], uint32(n-1))
		binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
		return b
	}
	plain := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Keys: [][]byte{[]byte("k")}, Values: [][]byte{[]byte("v")}})
	gzipped, err := batch.Recompress(plain, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, topic string
		records     []byte
		want        int16
	}{
		{"uncompressed, 2^31-1 records claimed", "plain", lie(plain, math.MaxInt32), kerr.InvalidRecord.Code},
		{"uncompressed, 2 records claimed", "keyed", lie(plain, 2), kerr.InvalidRecord.Code},
		// More records than a batch may decompress to could hold.
		{"gzip, 2^31-1 records claimed", "plain", lie(gzipped, math.MaxInt32), kerr.InvalidRecord.Code},
		{"gzip, 1,000,000 records claimed", "plain", lie(gzipped, 1_000_000), kerr.InvalidRecord.Code},
		{"gzip, 2 records claimed", "keyed", lie(gzipped, 2), kerr.InvalidRecord.Code},
	} {
		if r := rawProduce(t, cl, c.topic, 0, -1, c.records); r.ErrorCode != c.want {
			t.Errorf("%s to %s: %+v, want error %d", c.what, c.topic, r, c.want)
		}
	}
	for _, topic := range []string{"plain", "keyed"} {
		if r := rawProduce(t, cl, topic, 0, -1, gzipped); r.ErrorCode != 0 || r.BaseOffset != 0 {
			t.Errorf("%s: a good batch after the lying ones: %+v", topic, r)
		}
	}
	listed, err := kadm.NewClient(cl).ListOffsetsAfterMilli(ctxFor(t, 10*time.Second), 0, "plain", "keyed")
	if err != nil {
		t.Fatal(err)
	}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != 0 {
			t.Errorf("ListOffsets by time of %s: %+v", o.Topic, o)
		}
	})
}

func TestFetchLongPoll(t *testing.T) {
	_, addr := testBroker(t)
	createTopic(t, addr, "poll", 1, nil)
	fetch := func(wait int32, offset int64) (*kmsg.FetchResponse, time.Duration) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = wait, 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "poll"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = 0, offset, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		start := time.Now()
		resp := rawRequest(t, addr, req, 11).(*kmsg.FetchResponse)
		return resp, time.Since(start)
	}
	// Empty partition: the fetch waits for MaxWaitMillis.
	resp, took := fetch(400, 0)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 {
		t.Fatalf("empty fetch: %+v", p)
	}
	if took < 350*time.Millisecond {
		t.Fatalf("empty fetch answered after %v, before MaxWaitMillis", took)
	}
	// A produce during the wait answers the fetch early, with the record.
	go func() {
		time.Sleep(150 * time.Millisecond)
		p := newClient(t, addr)
		p.ProduceSync(context.Background(), &kgo.Record{Topic: "poll", Value: []byte("wake")})
	}()
	resp, took = fetch(5000, 0)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 1 {
		t.Fatalf("woken fetch: %+v", p)
	}
	if took > 4*time.Second {
		t.Fatalf("produce did not wake the long poll (took %v)", took)
	}
	// Out of range offsets are refused.
	resp, _ = fetch(0, 99)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("offset 99: %+v", p)
	}
}

// rawConn opens a TCP connection and speaks frames by hand.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

func frame(key, version int16, corr int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if version >= 3 && key == 18 {
		b = append(b, 0) // header tags
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func readFrame(t testing.TB, c net.Conn) ([]byte, error) {
	t.Helper()
	return readSizedFrame(c)
}

// readSizedFrame reads one size-prefixed frame from r.
func readSizedFrame(r io.Reader) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(sz[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

func assertClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	if _, err := readFrame(t, c); err == nil {
		t.Fatalf("%s: connection still answered", what)
	} else if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
		t.Fatalf("%s: connection neither answered nor closed: %v", what, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	_, addr := testBroker(t, "--max-request-size", "65536")
	good := newClient(t, addr)
	ping := func() {
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 5*time.Second), good); err != nil {
			t.Fatalf("healthy client broken: %v", err)
		}
	}
	ping()

	c := rawConn(t, addr)
	_, _ = c.Write([]byte{0x7f, 0xff, 0xff, 0xff}) // 2 GiB frame: refused before allocation
	assertClosed(t, c, "oversize frame")
	ping()

	c = rawConn(t, addr)
	_, _ = c.Write(frame(3, 1, 1, []byte{0xff, 0xff, 0xff})) // Metadata v1 with a garbage body
	assertClosed(t, c, "malformed body")
	ping()

	c = rawConn(t, addr)
	_, _ = c.Write(frame(1234, 0, 1, nil)) // unknown API key
	assertClosed(t, c, "unknown key")
	ping()

	c = rawConn(t, addr)
	_, _ = c.Write(frame(kmsg.AddPartitionsToTxn.Int16(), 0, 1, nil)) // known to Kafka, not served
	assertClosed(t, c, "unserved key")
	ping()

	c = rawConn(t, addr)
	_, _ = c.Write([]byte{0, 0, 0, 3, 1, 2, 3}) // frame shorter than a header
	assertClosed(t, c, "short frame")
	ping()
}

func TestUnsupportedVersions(t *testing.T) {
	_, addr := testBroker(t)
	// ApiVersions newer than served: v0 answer with UNSUPPORTED_VERSION and the table.
	c := rawConn(t, addr)
	_, _ = c.Write(frame(18, 77, 42, nil))
	resp, err := readFrame(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(resp)); corr != 42 {
		t.Fatalf("correlation id %d", corr)
	}
	av := kmsg.NewPtrApiVersionsResponse()
	av.Version = 0
	if err := av.ReadFrom(resp[4:]); err != nil {
		t.Fatal(err)
	}
	if av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v77 answer: %+v", av)
	}
	// Any other version outside the served range closes the connection, as
	// Kafka's socket server does: Produce v2 (listed in ApiVersions from v0,
	// never served), versions KIP-896 removed in Kafka 4 (Fetch v3,
	// OffsetCommit v1, OffsetFetch v0, CreateTopics v1,
	// DescribeAcls v0), Metadata v14 (newer than served). Other connections
	// are unaffected.
	good := newClient(t, addr)
	for _, r := range []struct {
		req     kmsg.Request
		version int16
	}{
		{produceV2(), 2},
		{kmsg.NewPtrFetchRequest(), 3},
		{kmsg.NewPtrOffsetCommitRequest(), 1},
		{kmsg.NewPtrOffsetFetchRequest(), 0},
		{kmsg.NewPtrCreateTopicsRequest(), 1},
		{kmsg.NewPtrDescribeACLsRequest(), 0},
		{kmsg.NewPtrMetadataRequest(), 14},
	} {
		what := fmt.Sprintf("%s v%d", kmsg.NameForKey(r.req.Key()), r.version)
		c = rawConn(t, addr)
		r.req.SetVersion(r.version)
		f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))
		_, _ = c.Write(f.AppendRequest(nil, r.req, 7))
		assertClosed(t, c, what)
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 5*time.Second), good); err != nil {
			t.Fatalf("after %s: healthy client broken: %v", what, err)
		}
	}
}

func produceV2() *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rt.Partitions = append(rt.Partitions, kmsg.NewProduceRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	return req
}

// rawRequest sends one request at a fixed version over a fresh TCP
// connection (kgo would renegotiate versions and rewrite acks).
func rawRequest(t *testing.T, addr string, req kmsg.Request, version int16) kmsg.Response {
	t.Helper()
	c := rawConn(t, addr)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req.SetVersion(version)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))
	if _, err := c.Write(f.AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	b, err := readFrame(t, c)
	if err != nil {
		t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	body := b[4:]
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		body = body[1:] // empty header tag section
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode %s v%d response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	return resp
}

// TestProduceTimestampBounds: message.timestamp.before.max.ms and the
// after.max.ms default refuse out-of-range CreateTime records with
// INVALID_TIMESTAMP and append nothing; an in-range record is written.
func TestProduceTimestampBounds(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	hour := "3600000"
	createTopic(t, addr, "bounded", 1, map[string]*string{"message.timestamp.before.max.ms": &hour})
	cl := newClient(t, addr, kgo.DefaultProduceTopic("bounded"))
	ctx := ctxT(t, 20*time.Second)

	old := &kgo.Record{Value: []byte("old"), Timestamp: time.Now().Add(-2 * time.Hour)}
	if err := cl.ProduceSync(ctx, old).FirstErr(); !errors.Is(err, kerr.InvalidTimestamp) {
		t.Fatalf("record two hours old: %v, want INVALID_TIMESTAMP", err)
	}
	future := &kgo.Record{Value: []byte("future"), Timestamp: time.Now().Add(2 * time.Hour)}
	if err := cl.ProduceSync(ctx, future).FirstErr(); !errors.Is(err, kerr.InvalidTimestamp) {
		t.Fatalf("record two hours ahead: %v, want INVALID_TIMESTAMP", err)
	}
	good := &kgo.Record{Value: []byte("now"), Timestamp: time.Now().Add(-time.Minute)}
	if err := cl.ProduceSync(ctx, good).FirstErr(); err != nil {
		t.Fatalf("record a minute old: %v", err)
	}
	if good.Offset != 0 {
		t.Fatalf("in-range record at offset %d; refused records were appended", good.Offset)
	}
}

// TestJoinGroupV0AndV1: JoinGroup v0 (no rebalance timeout: the session
// timeout stands for it) and v1 join a classic group over the wire and
// are answered with a member id, generation 1 and themselves as leader.
func TestJoinGroupV0AndV1(t *testing.T) {
	_, addr := testBroker(t, "--group-initial-rebalance-delay", "0")
	for _, v := range []int16{0, 1} {
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{"t"}
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", meta.AppendTo(nil)
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = fmt.Sprintf("join-v%d", v), 10000, 10000
		req.ProtocolType, req.Protocols = "consumer", []kmsg.JoinGroupRequestProtocol{p}
		resp := rawExchange(t, rawConn(t, addr), req, v, 1).(*kmsg.JoinGroupResponse)
		if resp.ErrorCode != 0 || resp.MemberID == "" || resp.Generation != 1 || resp.LeaderID != resp.MemberID ||
			resp.Protocol == nil || *resp.Protocol != "range" || len(resp.Members) != 1 {
			t.Fatalf("JoinGroup v%d: %+v", v, resp)
		}
	}
}
