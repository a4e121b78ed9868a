package memlog

import (
	"errors"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

func appendN(t *testing.T, l *Log, n int, size int, ts int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		b := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: ts, Values: [][]byte{make([]byte, size)}})
		batch.SetBaseOffset(b, l.NextOffset())
		h, err := batch.Validate(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(b, h); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll copies records and closes them.
func readAll(t *testing.T, r storage.Records) []byte {
	t.Helper()
	b, err := r.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != r.Len() {
		t.Fatalf("records of %d bytes read as %d", r.Len(), len(b))
	}
	_ = r.Close()
	return b
}

func TestReadLimits(t *testing.T) {
	l := New(storage.LogConfig{})
	appendN(t, l, 10, 100, 1)
	r, err := l.Read(3, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	bs, _, _ := batch.Split(readAll(t, r))
	if len(bs) != 1 {
		t.Fatalf("maxBytes 1 must still return one batch, got %d", len(bs))
	}
	if h, _ := batch.ParseHeader(bs[0]); h.BaseOffset != 3 {
		t.Fatalf("first batch at %d", h.BaseOffset)
	}
	r, _ = l.Read(0, 1<<20, 5)
	bs, _, _ = batch.Split(readAll(t, r))
	if len(bs) != 5 {
		t.Fatalf("limit 5 returned %d batches", len(bs))
	}
	if r, _ := l.Read(10, 1<<20, 10); r.Len() != 0 {
		t.Fatal("read at the end returned data")
	}
	if _, err := l.Read(11, 1, 11); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("read past the end: %v", err)
	}
}

func TestRetentionBySizeAndTime(t *testing.T) {
	l := New(storage.LogConfig{SegmentBytes: 1000, RetentionBytes: 2500})
	appendN(t, l, 40, 100, time.Now().UnixMilli()) // ~170 B per batch, ~6 per segment
	if err := l.EnforceRetention(time.Now()); err != nil {
		t.Fatal(err)
	}
	if l.size > 2500+1000 {
		t.Fatalf("size %d after retention", l.size)
	}
	if l.StartOffset() == 0 || l.NextOffset() != 40 {
		t.Fatalf("start %d next %d", l.StartOffset(), l.NextOffset())
	}
	if _, err := l.Read(0, 100, 40); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatal("deleted offsets still readable")
	}
	old := New(storage.LogConfig{SegmentBytes: 500, RetentionMs: time.Hour})
	appendN(t, old, 10, 100, time.Now().Add(-2*time.Hour).UnixMilli())
	appendN(t, old, 10, 100, time.Now().UnixMilli())
	_ = old.EnforceRetention(time.Now())
	if old.StartOffset() < 8 || old.StartOffset() > 10 {
		t.Fatalf("time retention kept start at %d", old.StartOffset())
	}
}

// As Kafka, a quiet partition keeps nothing older than retention.ms: the
// last segment goes too, measured from its newest record, and the log goes
// on at its end.
func TestRetentionDropsAnExpiredLastSegment(t *testing.T) {
	now := time.Now()
	l := New(storage.LogConfig{RetentionMs: time.Hour})
	appendN(t, l, 5, 100, now.Add(-3*time.Hour).UnixMilli())
	appendN(t, l, 1, 100, now.Add(-90*time.Minute).UnixMilli())
	if err := l.EnforceRetention(now.Add(-40 * time.Minute)); err != nil || l.StartOffset() != 0 {
		t.Fatalf("newest record within retention.ms: %v, start %d", err, l.StartOffset())
	}
	if err := l.EnforceRetention(now); err != nil || l.StartOffset() != 6 || l.NextOffset() != 6 || l.Size() != 0 {
		t.Fatalf("after retention.ms: %v, start %d next %d size %d", err, l.StartOffset(), l.NextOffset(), l.Size())
	}
	if _, err := l.Read(5, 100, 6); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("read of a dropped offset: %v", err)
	}
	if r, err := l.Read(6, 100, 6); err != nil || r.Len() != 0 {
		t.Fatalf("read at the end: %v", err)
	}
	appendN(t, l, 2, 100, now.UnixMilli())
	if l.StartOffset() != 6 || l.NextOffset() != 8 {
		t.Fatalf("after appending: start %d next %d", l.StartOffset(), l.NextOffset())
	}
	if r, err := l.Read(6, 1<<20, 8); err != nil || r.Len() == 0 {
		t.Fatalf("read of the new records: %v", err)
	}
}

// TestRetentionKeepingNothing: Kafka's retention.bytes=0 and retention.ms=0
// (negative in LogConfig) drop every segment, the last one too.
func TestRetentionKeepingNothing(t *testing.T) {
	now := time.Now()
	for name, cfg := range map[string]storage.LogConfig{
		"retention.bytes=0": {SegmentBytes: 500, RetentionBytes: -1},
		"retention.ms=0":    {SegmentBytes: 500, RetentionMs: -1},
	} {
		t.Run(name, func(t *testing.T) {
			l := New(cfg)
			appendN(t, l, 20, 100, now.Add(-time.Second).UnixMilli())
			if err := l.EnforceRetention(now); err != nil || l.StartOffset() != 20 || l.NextOffset() != 20 || l.Size() != 0 {
				t.Fatalf("%v, start %d next %d size %d", err, l.StartOffset(), l.NextOffset(), l.Size())
			}
			appendN(t, l, 1, 100, now.UnixMilli())
			if r, err := l.Read(20, 1<<20, 21); err != nil || r.Len() == 0 {
				t.Fatalf("read of a new record: %v", err)
			}
		})
	}
}

func TestDefaultCapBoundsMemory(t *testing.T) {
	l := New(storage.LogConfig{})
	l.defaultCap = 20 << 20
	appendN(t, l, 400, 100_000, 1) // ~40 MB
	_ = l.EnforceRetention(time.Now())
	if l.size > l.defaultCap+defaultSegmentBytes {
		t.Fatalf("in-memory log holds %d bytes, cap is %d", l.size, l.defaultCap)
	}
	if l.StartOffset() == 0 {
		t.Fatal("nothing was dropped")
	}
}

func TestStartOffsetAndEpochs(t *testing.T) {
	l := New(storage.LogConfig{})
	appendN(t, l, 5, 10, 1)
	if err := l.SetStartOffset(3); err != nil || l.StartOffset() != 3 {
		t.Fatalf("start offset: %v %d", err, l.StartOffset())
	}
	if err := l.SetStartOffset(9); err == nil {
		t.Fatal("start offset beyond the end accepted")
	}
	_ = l.AssignEpoch(1, 0)
	_ = l.AssignEpoch(2, 4)
	if err := l.AssignEpoch(1, 5); err == nil {
		t.Fatal("epoch went down")
	}
	if e := l.Epochs(); len(e) != 2 || e[1] != (storage.EpochEntry{Epoch: 2, StartOffset: 4}) {
		t.Fatalf("epochs %v", e)
	}
	var seen []int64
	_ = l.ScanHeaders(2, func(h batch.Header) error { seen = append(seen, h.BaseOffset); return nil })
	if len(seen) != 3 || seen[0] != 2 {
		t.Fatalf("scan from 2: %v", seen)
	}
}
