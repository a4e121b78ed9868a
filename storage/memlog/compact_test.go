package memlog

import (
	"fmt"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
)

// TestCompactKeepsLatestPerKey: the in-memory log compacts like the disk
// log: every key reads its latest value, fewer records remain, and a read
// at any offset returns a batch that ends past it.
func TestCompactKeepsLatestPerKey(t *testing.T) {
	l := New(storage.LogConfig{SegmentBytes: 500})
	now := time.Now()
	want := map[string]string{}
	for i := 0; i < 80; i++ {
		k, v := fmt.Sprintf("k%d", i%7), fmt.Sprintf("v%d", i)
		b := batch.Build(batch.Spec{BaseOffset: l.NextOffset(), ProducerID: -1, BaseSequence: -1, Timestamp: now.UnixMilli(),
			Keys: [][]byte{[]byte(k)}, Values: [][]byte{[]byte(v)}})
		h, _ := batch.Validate(b)
		if err := l.Append(b, h); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	sizeBefore := l.Size()
	res, err := l.Compact(storage.CompactRequest{Now: now, Config: compaction.Config{DeleteRetention: 1000}, MapBytes: 1 << 20})
	if err != nil || !res.Cleaned || res.Segments == 0 {
		t.Fatalf("compact: %+v %v", res, err)
	}
	if l.Size() >= sizeBefore {
		t.Fatalf("size %d -> %d", sizeBefore, l.Size())
	}
	got := map[string]string{}
	for off := l.StartOffset(); off < l.NextOffset(); {
		r, err := l.Read(off, 1, l.NextOffset())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := r.AppendTo(nil)
		bs, _, _ := batch.Split(b)
		h, _ := batch.Validate(bs[0])
		if h.NextOffset() <= off {
			t.Fatalf("read at %d returned a batch ending at %d", off, h.NextOffset())
		}
		rs, err := compaction.Records(bs[0], h)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range rs {
			got[string(rec.Key)] = string(rec.Raw[len(rec.Raw)-1-len(want[string(rec.Key)]) : len(rec.Raw)-1])
		}
		off = h.NextOffset()
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %s reads %q, want %q (all %v)", k, got[k], v, got)
		}
	}
}
