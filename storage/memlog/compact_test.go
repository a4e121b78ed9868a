package memlog

import (
	"bytes"
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

// TestCompactFreesReplacedChunks: the batches a pass rewrites go into chunks
// of their own and the chunks of what they replace go back to the arena,
// so compaction bounds a compacted topic's memory; the latest value of
// every key still reads back.
func TestCompactFreesReplacedChunks(t *testing.T) {
	o, l := openLog(t, storage.LogConfig{SegmentBytes: 1 << 20})
	now := time.Now()
	want := map[string][]byte{}
	for i := 0; i < 120; i++ { // ~12 MB over 3 keys
		k, v := fmt.Sprintf("k%d", i%3), value(i, 100_000)
		b := batch.Build(batch.Spec{BaseOffset: l.NextOffset(), ProducerID: -1, BaseSequence: -1, Timestamp: now.UnixMilli(),
			Keys: [][]byte{[]byte(k)}, Values: [][]byte{v}})
		h, _ := batch.Validate(b)
		if err := l.Append(b, h); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	chunksBefore, _ := o.ar.stats()
	res, err := l.Compact(storage.CompactRequest{Now: now, Config: compaction.Config{DeleteRetention: 1000}, MapBytes: 1 << 20})
	if err != nil || !res.Cleaned || res.Segments == 0 {
		t.Fatalf("compact: %+v %v", res, err)
	}
	chunks, free := o.ar.stats()
	if free < 1 || chunks-int64(free) >= chunksBefore {
		t.Fatalf("%d chunks before the pass, %d after with %d free: nothing was freed", chunksBefore, chunks, free)
	}
	r, err := l.Read(l.StartOffset(), 64<<20, l.NextOffset())
	if err != nil {
		t.Fatal(err)
	}
	bs, _, err := batch.Split(readAll(t, r))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, b := range bs {
		h, err := batch.Validate(b)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := compaction.Records(b, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range rs {
			got[string(rec.Key)] = rec.Raw
		}
	}
	for k, v := range want {
		if !bytes.Contains(got[k], v) {
			t.Fatalf("key %s does not read its latest value", k)
		}
	}
}
