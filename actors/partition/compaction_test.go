package partition

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
	"github.com/kaas-project/kaas/storage/disklog"
	"github.com/kaas-project/kaas/storage/memlog"
)

// TestProducerStateSurvivesCompaction: an idempotent producer's batches
// are compacted away except its last one (kept, empty if need be); the
// producer state rebuilt from the compacted log (a new leader's open)
// still accepts the producer's next sequence and recognises a retry of its
// last batch as a duplicate, on both log engines.
func TestProducerStateSurvivesCompaction(t *testing.T) {
	do, err := disklog.NewOpener(t.TempDir(), zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = do.Close() })
	for _, o := range []storage.Opener{memlog.NewOpener(), do} {
		l, err := o.Open(storage.PartitionID{Topic: "t", TopicID: "00000000-0000-4000-8000-000000000009"}, storage.LogConfig{SegmentBytes: 300})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		var last []byte
		const batches = 40
		for i := 0; i < batches; i++ {
			// Every batch overwrites the same key: only the last survives
			// by its records, and the producer's last batch is the one a
			// pass of the sealed segments keeps empty.
			last = batch.Build(batch.Spec{BaseOffset: l.NextOffset(), ProducerID: 7, ProducerEpoch: 0, BaseSequence: int32(i),
				Timestamp: now.UnixMilli(), Keys: [][]byte{[]byte("k")}, Values: [][]byte{[]byte(fmt.Sprint(i))}})
			h, _ := batch.Validate(last)
			if err := l.Append(last, h); err != nil {
				t.Fatal(err)
			}
		}
		// A batch of another producer rolls the log so the first one's
		// last batch is in a sealed segment.
		for i := 0; i < 10; i++ {
			b := batch.Build(batch.Spec{BaseOffset: l.NextOffset(), ProducerID: -1, BaseSequence: -1, Timestamp: now.UnixMilli(),
				Keys: [][]byte{[]byte(fmt.Sprint("other", i))}, Values: [][]byte{make([]byte, 100)}})
			h, _ := batch.Validate(b)
			if err := l.Append(b, h); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		res, err := l.(storage.Compactor).Compact(storage.CompactRequest{Now: now, Config: compaction.Config{DeleteRetention: 1000}, MapBytes: 1 << 20})
		if err != nil || !res.Cleaned || res.Segments == 0 {
			t.Fatalf("%T: compact %+v %v", l, res, err)
		}
		prods, _, err := recoverProducers(l)
		if err != nil {
			t.Fatal(err)
		}
		next := batch.Build(batch.Spec{ProducerID: 7, BaseSequence: batches, Timestamp: now.UnixMilli(), Values: [][]byte{[]byte("x")}})
		nh, _ := batch.Validate(next)
		if r := prods.Check(nh); r.ErrorCode != 0 || r.Duplicate != nil {
			t.Fatalf("%T: next sequence after compaction: %+v", l, r)
		}
		lh, _ := batch.Validate(last)
		if r := prods.Check(lh); r.Duplicate == nil {
			t.Fatalf("%T: retry of the last batch not seen as a duplicate: %+v", l, r)
		}
		_ = l.Close()
	}
}
