package partition

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/storage/batch"
)

func txnHdr(pid int64, epoch int16, seq int32, n int32, base int64) batch.Header {
	h := hdr(pid, epoch, seq, n, base)
	h.Attributes |= batch.AttrTransactional
	return h
}

func markerHdr(pid int64, epoch int16, base int64) batch.Header {
	return batch.Header{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1, NumRecords: 1, BaseOffset: base,
		Attributes: batch.AttrTransactional | batch.AttrControl}
}

// TestTxnStateScript replays a log of two interleaved transactions and
// checks the last stable offset (a transaction stable once its marker is
// durable), the aborted index and fencing after each step, then that a
// snapshot restores the same state.
func TestTxnStateScript(t *testing.T) {
	p := NewProducers()
	rec := func(h batch.Header) { p.Record(h); p.RecordTxn(h) }
	marker := func(h batch.Header, commit bool) { p.Record(h); p.RecordMarker(h, commit, 0) }

	rec(hdr(1, 0, 0, 2, 0))    // idempotent, offsets 0-1
	rec(txnHdr(7, 0, 0, 3, 2)) // txn A, 2-4
	rec(txnHdr(8, 0, 0, 1, 5)) // txn B, 5
	rec(txnHdr(7, 0, 3, 1, 6)) // txn A, 6
	if got := p.LastStable(100); got != 2 {
		t.Fatalf("LSO with A and B open = %d, want 2", got)
	}
	marker(markerHdr(7, 0, 7), false) // abort A at 7
	if got := p.LastStable(7); got != 2 {
		t.Fatalf("LSO with A's marker not durable = %d, want 2", got)
	}
	p.Durable(8)
	if got := p.LastStable(8); got != 5 {
		t.Fatalf("LSO with B open = %d, want 5", got)
	}
	if got := p.LastStable(4); got != 4 {
		t.Fatalf("LSO is never above the high watermark: %d", got)
	}
	marker(markerHdr(8, 0, 8), true) // commit B at 8
	if got := p.LastStable(100); got != 100 {
		t.Fatalf("LSO with nothing open = %d", got)
	}
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 7}}
	if got := p.Aborted(0, 100); !reflect.DeepEqual(got, want) {
		t.Fatalf("aborted = %+v", got)
	}
	if got := p.Aborted(8, 100); len(got) != 0 {
		t.Fatalf("aborted after its marker = %+v", got)
	}
	if got := p.Aborted(0, 2); len(got) != 0 {
		t.Fatalf("aborted before its first offset = %+v", got)
	}
	// A new transaction of the same producer after its marker is open again.
	rec(txnHdr(8, 0, 1, 1, 9))
	if !p.InTxn(8) || p.LastStable(100) != 9 {
		t.Fatalf("second transaction of 8: open %v, LSO %d", p.InTxn(8), p.LastStable(100))
	}

	// Snapshot round trip keeps the transaction state.
	snap, err := p.Snapshot(10)
	if err != nil {
		t.Fatal(err)
	}
	q, _, err := LoadSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	if q.LastStable(100) != 9 || !reflect.DeepEqual(q.Aborted(0, 100), want) {
		t.Fatalf("restored: LSO %d aborted %+v", q.LastStable(100), q.Aborted(0, 100))
	}

	// A marker under a bumped epoch fences the producer's older epoch.
	marker(markerHdr(8, 1, 10), false)
	if c := p.Check(txnHdr(8, 0, 2, 1, 11)); c.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("zombie batch after fencing: %+v", c)
	}
	if c := p.Check(txnHdr(8, 1, 0, 1, 11)); c.ErrorCode != 0 {
		t.Fatalf("new epoch's first batch: %+v", c)
	}
	// Retention past an aborted transaction forgets it.
	p.TrimTxns(8)
	if got := p.Aborted(0, 100); len(got) != 1 || got[0].ProducerID != 8 {
		t.Fatalf("after trim = %+v", got)
	}
	// Expiration keeps producers with an open transaction.
	rec(txnHdr(9, 0, 0, 1, 12))
	p.Expire(1 << 40)
	if !p.InTxn(9) || p.m[9] == nil {
		t.Fatal("expired a producer with an open transaction")
	}
}

// TestMarkerRefused: which markers a partition refuses. A bumped marker
// (KIP-1228) must be above the epoch of the transaction open here: a
// transaction at the marker's own epoch began after the one the marker
// ends (the transaction protocol v2 writes the next transaction at the
// epoch its last marker carried), so a late or repeated marker is refused
// rather than ending it. An unbumped marker cannot tell the two apart.
func TestMarkerRefused(t *testing.T) {
	table := func(open bool) *Producers {
		p := NewProducers()
		for _, h := range []batch.Header{txnHdr(7, 2, 0, 1, 0), hdr(8, 4, 0, 1, 2)} {
			p.Record(h)
			p.RecordTxn(h)
		}
		p.Record(markerHdr(7, 3, 1)) // the transaction at epoch 2 ended at 3
		p.RecordMarker(markerHdr(7, 3, 1), true, 0)
		if open { // the next one, at epoch 3
			p.Record(txnHdr(7, 3, 0, 1, 3))
			p.RecordTxn(txnHdr(7, 3, 0, 1, 3))
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		open   bool // producer 7's next transaction, at epoch 3, is open
		pid    int64
		epoch  int16
		bumped bool
		want   int16
	}{
		{"unknown producer", false, 9, 0, true, 0},
		{"older epoch", false, 7, 2, false, kerr.InvalidProducerEpoch.Code},
		{"older epoch, bumped", false, 7, 2, true, kerr.InvalidProducerEpoch.Code},
		{"repeated, nothing open", false, 7, 3, true, 0},
		{"the next transaction's end", true, 7, 4, true, 0},
		{"repeated while the next transaction is open", true, 7, 3, true, kerr.InvalidProducerEpoch.Code},
		{"unbumped at the open transaction's epoch", true, 7, 3, false, 0},
		{"an idempotent producer's epoch", false, 8, 4, true, 0},
	} {
		if got := table(tc.open).MarkerRefused(tc.pid, tc.epoch, tc.bumped); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
