package share

import (
	"reflect"
	"testing"
	"time"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/batch"
)

// data is a batch of n records at base by producer pid (-1: none),
// transactional or not.
func data(base, pid int64, n int, txn bool) []byte {
	s := batch.Spec{BaseOffset: base, ProducerID: pid, BaseSequence: -1, Transactional: txn}
	if pid >= 0 {
		s.BaseSequence = 0
	}
	for range n {
		s.Values = append(s.Values, []byte("v"))
	}
	return batch.Build(s)
}

// mark is producer pid's commit or abort marker at off.
func mark(off, pid int64, commit bool) []byte {
	b := batch.Marker(pid, 0, commit, 0, 0)
	batch.SetBaseOffset(b, off)
	return b
}

func concat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// TestAbortedRanges: the data batches of aborted transactions in what a
// read_committed read returned, found as a consumer finds them from the
// aborted-transaction list; committed and plain batches and the markers
// themselves are not among them.
func TestAbortedRanges(t *testing.T) {
	for _, tc := range []struct {
		name    string
		log     []byte
		aborted []messages.AbortedTxn
		want    []Range
	}{
		{"nothing aborted", concat(data(0, 7, 2, true), mark(2, 7, true), data(3, -1, 1, false)), nil, nil},
		{"one aborted transaction", concat(data(0, 7, 2, true), data(2, 7, 3, true), mark(5, 7, false), data(6, -1, 1, false)),
			[]messages.AbortedTxn{{ProducerID: 7, FirstOffset: 0}}, []Range{{First: 0, Last: 4}}},
		{"interleaved: another producer's committed batch stays", concat(
			data(0, 7, 2, true), data(2, 8, 2, true), data(4, 7, 1, true), mark(5, 7, false), mark(6, 8, true)),
			[]messages.AbortedTxn{{ProducerID: 7, FirstOffset: 0}}, []Range{{First: 0, Last: 1}, {First: 4, Last: 4}}},
		{"the producer's next transaction after its abort marker stays", concat(
			data(0, 7, 1, true), mark(1, 7, false), data(2, 7, 2, true), mark(4, 7, true)),
			[]messages.AbortedTxn{{ProducerID: 7, FirstOffset: 0}}, []Range{{First: 0, Last: 0}}},
		{"an aborted transaction that started before the read", concat(data(10, 7, 2, true), mark(12, 7, false), data(13, 7, 1, false)),
			[]messages.AbortedTxn{{ProducerID: 7, FirstOffset: 4}}, []Range{{First: 10, Last: 11}}},
		{"two aborted transactions of two producers", concat(
			data(0, 7, 1, true), data(1, 8, 1, true), mark(2, 8, false), data(3, 7, 1, true), mark(4, 7, false)),
			[]messages.AbortedTxn{{ProducerID: 8, FirstOffset: 1}, {ProducerID: 7, FirstOffset: 0}},
			[]Range{{First: 0, Last: 1}, {First: 3, Last: 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := abortedRanges(tc.log, tc.aborted); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("abortedRanges = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestArchiveSkipsAbortedRecords: archived offsets are never acquired; the
// start moves past them once everything before them is done; an offset
// already acquired is left to its owner.
func TestArchiveSkipsAbortedRecords(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p := NewPartition(Config{ReadCommitted: true})
	p.Initialize(0, 0)
	if got := p.Acquire(now, "m", 0, 1, 0); len(got) != 1 || got[0].First != 0 || got[0].Last != 1 {
		t.Fatalf("acquire 0-1: %v", got)
	}
	p.Archive(1, 4) // 1 is m's: kept acquired
	if got := p.Acquire(now, "n", 0, 6, 0); !reflect.DeepEqual(got, []Range{{First: 5, Last: 6, DeliveryCount: 1}}) {
		t.Fatalf("acquire 0-6 after archiving 1-4: %v; want 5-6 only", got)
	}
	if st, _ := p.At(3); st != Archived {
		t.Fatalf("offset 3: %v; want archived", st)
	}
	if code := p.Acknowledge(now, "m", 0, 1, []AckType{AckAccept}); code != 0 {
		t.Fatalf("ack 0-1: %d", code)
	}
	if p.Start() != 5 {
		t.Fatalf("start %d after acking 0-1; want 5 (2-4 archived)", p.Start())
	}
}
