package main

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/batch"
)

// recordsBatch encodes records (each with its own Length, timestamp and
// offset deltas, as given) as one batch compressed with codec, its header
// stating firstTS and maxTS, CRC set: a batch as a client may send it,
// right or wrong.
func recordsBatch(t *testing.T, codec int16, firstTS, maxTS int64, records ...kmsg.Record) []byte {
	t.Helper()
	var raw []byte
	for _, r := range records {
		raw = r.AppendTo(raw)
	}
	if codec != batch.CodecNone {
		z, ok := batch.Compress(codec, raw)
		if !ok {
			t.Fatalf("codec %d unavailable", codec)
		}
		raw = z
	}
	n := int32(len(records))
	return batch.Frame(kmsg.RecordBatch{Attributes: codec, PartitionLeaderEpoch: -1, LastOffsetDelta: n - 1,
		FirstTimestamp: firstTS, MaxTimestamp: maxTS, ProducerID: -1, FirstSequence: -1, NumRecords: n, Records: raw})
}

// rec is record i with a timestamp delta, key and value, its Length set.
func rec(i int32, tsDelta int64, key, value []byte) kmsg.Record {
	r := kmsg.Record{TimestampDelta64: tsDelta, OffsetDelta: i, Key: key, Value: value}
	r.Length = int32(len(r.AppendTo(nil)) - 1) // the body after a one-byte Length
	return r
}

// TestProduceReadsEveryRecord: a produced batch has every record read, as
// Kafka's broker reads them, compressed or not: a record whose length
// disagrees with its fields is refused (INVALID_RECORD) and nothing of its
// batch is stored; a keyless record inside a compressed batch to a
// compacted topic is named in record_errors; a record older than the
// batch's first one is held to message.timestamp.before.max.ms; and a
// header whose max timestamp is not its records' highest is stored with
// theirs, its CRC recomputed, so time lookups find the record.
func TestProduceReadsEveryRecord(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	minute := "60000"
	createTopic(t, addr, "plain", 1, nil)
	createTopic(t, addr, "keyed", 1, map[string]*string{"cleanup.policy": sp("compact")})
	createTopic(t, addr, "bounded", 1, map[string]*string{"message.timestamp.before.max.ms": &minute})
	cl := newClient(t, addr, producesByName())
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 60*time.Second)
	now := time.Now().UnixMilli()
	k, v := []byte("k"), []byte("v")
	var want int64 // records stored in "plain"
	for codec := batch.CodecNone; codec <= batch.CodecZstd; codec++ {
		long := rec(1, 1, k, v)
		long.Length++ // one byte more than its fields
		if r := rawProduce(t, cl, "plain", 0, -1, recordsBatch(t, codec, now, now+1, rec(0, 0, k, v), long, rec(2, 2, k, v))); r.ErrorCode != kerr.InvalidRecord.Code {
			t.Errorf("codec %d: a record longer than its fields: %+v, want INVALID_RECORD", codec, r)
		}
		r := rawProduce(t, cl, "keyed", 0, -1, recordsBatch(t, codec, now, now+2, rec(0, 0, k, v), rec(1, 1, nil, v), rec(2, 2, k, v)))
		if r.ErrorCode != kerr.InvalidRecord.Code || len(r.ErrorRecords) != 1 || r.ErrorRecords[0].RelativeOffset != 1 {
			t.Errorf("codec %d: a keyless record to a compacted topic: %+v, want INVALID_RECORD naming record 1", codec, r)
		}
		old := recordsBatch(t, codec, now, now+1, rec(0, 0, k, v), rec(1, -10*60_000, k, v), rec(2, 1, k, v))
		if r := rawProduce(t, cl, "bounded", 0, -1, old); r.ErrorCode != kerr.InvalidTimestamp.Code {
			t.Errorf("codec %d: a record ten minutes before the first: %+v, want INVALID_TIMESTAMP", codec, r)
		}
		// The header says the first record is the latest; the third is.
		lying := recordsBatch(t, codec, now, now, rec(0, 0, k, v), rec(1, 5, k, v), rec(2, 9, k, v))
		if r := rawProduce(t, cl, "plain", 0, -1, lying); r.ErrorCode != 0 || r.BaseOffset != want {
			t.Fatalf("codec %d: a batch whose header understates its max timestamp: %+v, want offset %d", codec, r, want)
		}
		want += 3
	}
	ends, err := adm.ListEndOffsets(ctx, "plain", "keyed", "bounded")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if w := map[string]int64{"plain": want}[o.Topic]; o.Err != nil || o.Offset != w {
			t.Errorf("%s: end offset %d (%v), want %d", o.Topic, o.Offset, o.Err, w)
		}
	})
	// Each stored batch's header holds its records' max timestamp under a
	// valid CRC.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MaxBytes = 0, 1<<20
	topics, err := adm.ListTopics(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "plain", topics["plain"].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fr, err := fetch.RequestWith(ctx, cl)
	if err != nil || len(fr.Topics) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch: %v %+v", err, fr)
	}
	batches, rest, err := batch.Split(fr.Topics[0].Partitions[0].RecordBatches)
	if err != nil || len(rest) != 0 || len(batches) != 5 {
		t.Fatalf("fetched %d batches, %d bytes after them (%v), want 5", len(batches), len(rest), err)
	}
	for i, b := range batches {
		h, err := batch.Validate(b)
		if err != nil || h.MaxTimestamp != now+9 || h.Codec() != int16(i) {
			t.Errorf("stored batch %d: codec %d, max timestamp %d (%v), want codec %d, %d", i, h.Codec(), h.MaxTimestamp, err, i, now+9)
		}
	}
	// Kafka's max-timestamp lookup (ListOffsets -3) finds the last batch's
	// third record.
	if p := listMaxTimestamp(t, ctx, cl, "plain"); p.ErrorCode != 0 || p.Timestamp != now+9 || !slices.Contains([]int64{2, want - 1}, p.Offset) {
		t.Errorf("max timestamp lookup: %+v, want timestamp %d at offset 2 (Kafka's first) or %d", p, now+9, want-1)
	}
	// A client reads every accepted record.
	consumer := newClient(t, addr, kgo.ConsumeTopics("plain"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got int64
	for got < want {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume after %d records: %v", got, err)
		}
		got += int64(fs.NumRecords())
	}
}
