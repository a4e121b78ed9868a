package partition

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

func hdr(pid int64, epoch int16, seq int32, n int32, base int64) batch.Header {
	return batch.Header{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: n - 1, NumRecords: n, BaseOffset: base}
}

func TestProducersCheck(t *testing.T) {
	type step struct {
		h       batch.Header
		want    int16
		dupAt   int64 // expected duplicate offset, -1 = not a duplicate
		appendH bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"no producer id is never checked", []step{{hdr(-1, -1, -1, 1, 0), 0, -1, true}, {hdr(-1, -1, -1, 1, 1), 0, -1, true}}},
		{"unknown producer accepts any sequence", []step{{hdr(5, 0, 17, 2, 0), 0, -1, true}, {hdr(5, 0, 19, 1, 2), 0, -1, true}}},
		{"in order", []step{{hdr(5, 0, 0, 3, 0), 0, -1, true}, {hdr(5, 0, 3, 1, 3), 0, -1, true}}},
		{"gap", []step{{hdr(5, 0, 0, 3, 0), 0, -1, true}, {hdr(5, 0, 4, 1, 3), kerr.OutOfOrderSequenceNumber.Code, -1, false}}},
		{"retry of a recent batch", []step{{hdr(5, 0, 0, 3, 0), 0, -1, true}, {hdr(5, 0, 3, 2, 3), 0, -1, true}, {hdr(5, 0, 0, 3, 0), 0, 0, false}}},
		{"stale epoch", []step{{hdr(5, 2, 0, 1, 0), 0, -1, true}, {hdr(5, 1, 1, 1, 1), kerr.InvalidProducerEpoch.Code, -1, false}}},
		{"new epoch must restart at 0", []step{{hdr(5, 0, 0, 1, 0), 0, -1, true}, {hdr(5, 1, 1, 1, 1), kerr.OutOfOrderSequenceNumber.Code, -1, false}, {hdr(5, 1, 0, 1, 1), 0, -1, true}}},
		{"sequence wraps at MaxInt32", []step{{hdr(5, 0, 1<<31-2, 2, 0), 0, -1, true}, {hdr(5, 0, 0, 1, 2), 0, -1, true}}},
		{"older than the window is a duplicate", []step{
			{hdr(5, 0, 0, 1, 0), 0, -1, true}, {hdr(5, 0, 1, 1, 1), 0, -1, true}, {hdr(5, 0, 2, 1, 2), 0, -1, true},
			{hdr(5, 0, 3, 1, 3), 0, -1, true}, {hdr(5, 0, 4, 1, 4), 0, -1, true}, {hdr(5, 0, 5, 1, 5), 0, -1, true},
			{hdr(5, 0, 0, 1, 0), kerr.DuplicateSequenceNumber.Code, -1, false},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewProducers()
			for i, s := range tc.steps {
				res := p.Check(s.h)
				if res.ErrorCode != s.want {
					t.Fatalf("step %d: error %d (%s), want %d", i, res.ErrorCode, res.Message, s.want)
				}
				if s.dupAt >= 0 && (res.Duplicate == nil || res.Duplicate.FirstOffset != s.dupAt) {
					t.Fatalf("step %d: duplicate %+v, want offset %d", i, res.Duplicate, s.dupAt)
				}
				if s.dupAt < 0 && res.Duplicate != nil {
					t.Fatalf("step %d: unexpected duplicate %+v", i, res.Duplicate)
				}
				if s.appendH {
					p.Record(s.h)
				}
			}
		})
	}
}

func TestProducersSnapshotRoundTrip(t *testing.T) {
	p := NewProducers()
	p.Record(hdr(9, 1, 0, 2, 0))
	p.Record(hdr(9, 1, 2, 2, 2))
	b, err := p.Snapshot(4)
	if err != nil {
		t.Fatal(err)
	}
	q, off, err := LoadSnapshot(b)
	if err != nil || off != 4 || q.Len() != 1 {
		t.Fatalf("load: %v off=%d len=%d", err, off, q.Len())
	}
	if res := q.Check(hdr(9, 1, 2, 2, 2)); res.Duplicate == nil || res.Duplicate.FirstOffset != 2 {
		t.Fatalf("restored table lost the batch: %+v", res)
	}
	if _, _, err := LoadSnapshot([]byte("{garbage")); err == nil {
		t.Fatal("garbage snapshot accepted")
	}
	q.Expire(1 << 62)
	if q.Len() != 0 {
		t.Fatal("expire kept an old producer")
	}
}

// A loaded snapshot lists its producers with their last batches (at most
// producerBatches) and an open transaction's first offset, as dump-log
// prints them; the copies do not alias the table.
func TestProducersSnapshotEntries(t *testing.T) {
	p := NewProducers()
	for i := int64(0); i < producerBatches+2; i++ {
		p.Record(hdr(9, 1, int32(2*i), 2, 2*i))
	}
	open := txnHdr(4, 3, 0, 1, 20)
	p.Record(open)
	p.RecordTxn(open)
	b, err := p.Snapshot(21)
	if err != nil {
		t.Fatal(err)
	}
	q, _, err := LoadSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	es := q.Entries()
	if len(es) != 2 || es[0].ID != 4 || es[1].ID != 9 || es[0].Epoch != 3 || es[1].Epoch != 1 {
		t.Fatalf("entries %+v", es)
	}
	if bs := es[1].Batches; len(bs) != producerBatches || bs[0].FirstSeq != 4 || bs[len(bs)-1].LastSeq != 13 || bs[len(bs)-1].LastOffset != 13 {
		t.Fatalf("producer 9's batches %+v", bs)
	}
	if got := q.TxnFirstOffset(4); got != 20 {
		t.Errorf("producer 4's open transaction starts at %d, want 20", got)
	}
	if got := q.TxnFirstOffset(9); got != -1 {
		t.Errorf("producer 9 has no transaction, got first offset %d", got)
	}
	es[1].Batches[0].FirstSeq = 99
	if q.Entries()[1].Batches[0].FirstSeq != 4 {
		t.Error("Entries aliases the table's batches")
	}
}

func TestEndOffsetForEpoch(t *testing.T) {
	epochs := []storage.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 10}, {Epoch: 5, StartOffset: 30}}
	cases := []struct {
		req       int32
		wantEpoch int32
		wantEnd   int64
	}{
		{-1, -1, -1},
		{0, 0, 10},
		{1, 0, 10},  // never led: floor epoch 0, ends where 2 starts
		{2, 2, 30},  // ends where 5 starts
		{4, 2, 30},  // floor 2
		{5, 5, 42},  // current epoch: log end
		{7, -1, -1}, // unknown future epoch
	}
	for _, tc := range cases {
		e, end := EndOffsetForEpoch(epochs, 5, 42, tc.req)
		if e != tc.wantEpoch || end != tc.wantEnd {
			t.Errorf("epoch %d: got (%d, %d), want (%d, %d)", tc.req, e, end, tc.wantEpoch, tc.wantEnd)
		}
	}
	if e, end := EndOffsetForEpoch([]storage.EpochEntry{{Epoch: 3, StartOffset: 5}}, 3, 9, 1); e != 1 || end != 5 {
		t.Errorf("below the first epoch: (%d, %d)", e, end)
	}
	if got := epochAt(epochs, 15, 5); got != 2 {
		t.Errorf("epochAt(15) = %d", got)
	}
}

func TestProducersStates(t *testing.T) {
	p := NewProducers()
	h := hdr(9, 1, 0, 3, 0)
	h.MaxTimestamp = 1234
	p.Record(h)
	p.Record(hdr(4, 0, 0, 1, 3))
	p.Record(batch.Header{BaseOffset: 4, LastOffsetDelta: 0, NumRecords: 1, ProducerID: -1})
	want := []messages.ProducerState{
		{ProducerID: 4, ProducerEpoch: 0, LastSequence: 0, LastTimestamp: 0, TxnStartOffset: -1},
		{ProducerID: 9, ProducerEpoch: 1, LastSequence: 2, LastTimestamp: 1234, TxnStartOffset: -1},
	}
	if got := p.States(); !reflect.DeepEqual(got, want) {
		t.Fatalf("states %+v, want %+v", got, want)
	}
}
