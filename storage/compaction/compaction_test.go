package compaction

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage/batch"
)

// kv is one record to build: a nil key is a null key, a nil value a tombstone.
type kv struct{ k, v []byte }

func rec(k, v string) kv { return kv{[]byte(k), []byte(v)} }
func tomb(k string) kv   { return kv{k: []byte(k)} }

// mk builds an uncompressed batch at base with the records, producer pid
// (-1: none) and timestamp ts.
func mk(base int64, pid int64, ts int64, recs ...kv) ([]byte, batch.Header) {
	s := batch.Spec{BaseOffset: base, ProducerID: pid, ProducerEpoch: 0, BaseSequence: -1, Timestamp: ts}
	if pid >= 0 {
		s.BaseSequence = 0
	}
	for _, r := range recs {
		s.Keys = append(s.Keys, r.k)
		s.Values = append(s.Values, r.v)
	}
	b := batch.Build(s)
	h, err := batch.Validate(b)
	if err != nil {
		panic(err)
	}
	return b, h
}

func setAttr(b []byte, attr int16) batch.Header {
	binary.BigEndian.PutUint16(b[21:], uint16(attr))
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	h, err := batch.Validate(b)
	if err != nil {
		panic(err)
	}
	return h
}

// contents lists a batch's records as "offset:key=value" ("key=<nil>" for
// a tombstone).
func contents(t *testing.T, b []byte) []string {
	t.Helper()
	h, err := batch.Validate(b)
	if err != nil {
		t.Fatalf("rewritten batch invalid: %v", err)
	}
	rs, err := Records(b, h)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		v := "<nil>"
		if !r.Tombstone {
			v = value(t, r)
		}
		out = append(out, fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, v))
	}
	return out
}

// value decodes a record's value from its raw bytes.
func value(t *testing.T, r Record) string {
	t.Helper()
	_, n := binary.Varint(r.Raw)
	p := r.Raw[n+1:]
	_, p, _ = varint(p)
	_, p, _ = varint(p)
	_, _, p, _ = field(p)
	v, _, _, err := field(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

func TestRebuildKeepsHeaderAndRecomputesCRC(t *testing.T) {
	b, h := mk(100, 7, 1000, rec("a", "1"), rec("b", "2"), rec("a", "3"))
	rs, err := Records(b, h)
	if err != nil || len(rs) != 3 {
		t.Fatalf("records: %v %d", err, len(rs))
	}
	out := Rebuild(b, h, rs[1:2])
	oh, err := batch.Validate(out)
	if err != nil {
		t.Fatal(err)
	}
	if oh.BaseOffset != 100 || oh.LastOffsetDelta != 2 || oh.NumRecords != 1 || oh.ProducerID != 7 ||
		oh.BaseSequence != h.BaseSequence || oh.FirstTimestamp != h.FirstTimestamp || oh.MaxTimestamp != h.MaxTimestamp {
		t.Fatalf("header changed: %+v from %+v", oh, h)
	}
	if got := contents(t, out); len(got) != 1 || got[0] != "101:b=2" {
		t.Fatalf("contents %v", got)
	}
	empty := Rebuild(b, h, nil)
	eh, err := batch.Validate(empty)
	if err != nil || eh.NumRecords != 0 || eh.NextOffset() != 103 || len(empty) != batch.HeaderSize {
		t.Fatalf("empty batch: %v %+v len %d", err, eh, len(empty))
	}
}

func TestPassBatch(t *testing.T) {
	const now = 1_000_000
	type step struct {
		b      func() ([]byte, batch.Header)
		keepHd bool
		want   []string // nil: the batch goes whole; "same": unchanged
	}
	same := []string{"same"}
	cases := []struct {
		name  string
		dirty [][2]any // (key, offset) the map holds
		steps []step
	}{
		{"superseded record dropped, latest kept", [][2]any{{"a", int64(2)}}, []step{
			{b: func() ([]byte, batch.Header) { return mk(0, -1, now, rec("a", "1"), rec("b", "1")) }, want: []string{"1:b=1"}},
			{b: func() ([]byte, batch.Header) { return mk(2, -1, now, rec("a", "2")) }, want: same},
		}},
		{"whole batch superseded goes", [][2]any{{"a", int64(5)}}, []step{
			{b: func() ([]byte, batch.Header) { return mk(0, -1, now, rec("a", "1")) }},
		}},
		{"segment end keeps an empty batch", [][2]any{{"a", int64(5)}}, []step{
			{b: func() ([]byte, batch.Header) { return mk(0, -1, now, rec("a", "1")) }, keepHd: true, want: []string{}},
		}},
		{"producer's last batch kept empty", [][2]any{{"a", int64(5)}}, []step{
			{b: func() ([]byte, batch.Header) { return mk(0, 9, now, rec("a", "1")) }, want: []string{}},
		}},
		{"young tombstone kept", nil, []step{
			{b: func() ([]byte, batch.Header) { return mk(0, -1, now-10, tomb("a")) }, want: same},
		}},
		{"old tombstone removed", nil, []step{
			{b: func() ([]byte, batch.Header) { return mk(0, -1, now-5000, tomb("a"), rec("b", "x")) }, want: []string{"1:b=x"}},
		}},
		{"null key removed", nil, []step{
			{b: func() ([]byte, batch.Header) { return mk(0, -1, now, kv{nil, []byte("x")}, rec("b", "y")) }, want: []string{"1:b=y"}},
		}},
		{"batch at the map end untouched", [][2]any{{"a", int64(9)}}, []step{
			{b: func() ([]byte, batch.Header) { return mk(10, -1, now, rec("a", "1")) }, want: same},
		}},
		{"control batch kept", [][2]any{{"a", int64(9)}}, []step{
			{b: func() ([]byte, batch.Header) {
				b, _ := mk(0, 4, now, rec("a", "1"))
				return b, setAttr(b, batch.AttrControl|batch.AttrTransactional)
			}, want: same},
		}},
		{"undecided transactional data kept and protects later tombstones", [][2]any{{"a", int64(9)}}, []step{
			{b: func() ([]byte, batch.Header) {
				b, _ := mk(0, 4, now, rec("a", "1"))
				return b, setAttr(b, batch.AttrTransactional)
			}, want: same},
			{b: func() ([]byte, batch.Header) { return mk(1, -1, now-5000, tomb("z")) }, want: same},
		}},
		{"undecided transactional data kept", [][2]any{{"a", int64(9)}}, []step{
			{b: func() ([]byte, batch.Header) {
				b, _ := mk(0, 4, now, rec("a", "1"))
				return b, setAttr(b, batch.AttrTransactional)
			}, want: same},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &Pass{Map: NewKeyMap(1 << 20), MapEnd: 10, Horizon: now - 1000, LastOfProducer: map[int64]int64{9: 0}}
			for _, d := range c.dirty {
				p.Map.m[p.Map.hash([]byte(d[0].(string)))] = d[1].(int64)
			}
			for i, s := range c.steps {
				b, h := s.b()
				out, err := p.Batch(b, h, s.keepHd)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case s.want == nil:
					if out != nil {
						t.Fatalf("step %d: kept %v, want the batch removed", i, contents(t, out))
					}
				case len(s.want) == 1 && s.want[0] == "same":
					if len(out) != len(b) || &out[0] != &b[0] {
						t.Fatalf("step %d: batch rewritten, want it unchanged", i)
					}
				default:
					if out == nil {
						t.Fatalf("step %d: batch removed, want %v", i, s.want)
					}
					got := contents(t, out)
					if fmt.Sprint(got) != fmt.Sprint(s.want) {
						t.Fatalf("step %d: got %v, want %v", i, got, s.want)
					}
				}
			}
		})
	}
}

func TestKeyMapFillsThenRefuses(t *testing.T) {
	m := NewKeyMap(3 * EntryBytes)
	b, h := mk(0, -1, 0, rec("a", "1"), rec("b", "1"))
	if ok, err := m.AddBatch(b, h); !ok || err != nil {
		t.Fatal(ok, err)
	}
	b, h = mk(2, -1, 0, rec("c", "1"), rec("d", "1"))
	if ok, _ := m.AddBatch(b, h); ok {
		t.Fatal("a batch that may not fit was added")
	}
	if m.Len() != 2 {
		t.Fatalf("len %d", m.Len())
	}
	if off, ok := m.Latest([]byte("b")); !ok || off != 1 {
		t.Fatal(off, ok)
	}
}

func TestDecide(t *testing.T) {
	segs := []Segment{{0, 10, 100, 1000}, {10, 20, 100, 2000}, {20, 30, 100, 3000}}
	cfg := Config{MinDirtyRatio: 0.5}
	cases := []struct {
		name       string
		firstDirty int64
		now        int64
		cfg        Config
		want       Plan
	}{
		{"all dirty", 0, 5000, cfg, Plan{Clean: true, DirtyEnd: 30, DirtyBytes: 300, DirtyRatio: 1}},
		{"ratio below", 20, 5000, cfg, Plan{DirtyEnd: 30, DirtyBytes: 100, CleanBytes: 200, DirtyRatio: 1.0 / 3}},
		{"ratio reached", 10, 5000, cfg, Plan{Clean: true, DirtyEnd: 30, DirtyBytes: 200, CleanBytes: 100, DirtyRatio: 2.0 / 3}},
		{"min lag holds back young segments", 0, 3500, Config{MinDirtyRatio: 0.5, MinLagMs: 1000}, Plan{Clean: true, DirtyEnd: 20, DirtyBytes: 200, DirtyRatio: 1}},
		{"min lag holds back everything", 0, 1500, Config{MinDirtyRatio: 0.5, MinLagMs: 1000}, Plan{DirtyEnd: 0}},
		{"max lag forces a clean", 20, 10000, Config{MinDirtyRatio: 0.9, MaxLagMs: 5000}, Plan{Clean: true, Overdue: true, DirtyEnd: 30, DirtyBytes: 100, CleanBytes: 200, DirtyRatio: 1.0 / 3}},
		{"nothing dirty", 30, 10000, cfg, Plan{DirtyEnd: 30, CleanBytes: 300}},
	}
	for _, c := range cases {
		if got := Decide(segs, c.firstDirty, c.now, c.cfg); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestPassProperty: random histories of keyed records and tombstones,
// cleaned in passes with a small key map; reading the result gives every
// key's latest value (or nothing for a tombstone past the horizon), offsets
// only go up, and the last batch of each "segment" still ends it.
func TestPassProperty(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		const now = 1_000_000
		nkeys := 1 + r.IntN(20)
		var log [][]byte
		latest := map[string]string{} // "" = tombstone
		off := int64(0)
		for i, n := 0, 1+r.IntN(40); i < n; i++ {
			var recs []kv
			for j, m := 0, 1+r.IntN(5); j < m; j++ {
				k := fmt.Sprintf("k%d", r.IntN(nkeys))
				if r.IntN(5) == 0 {
					recs = append(recs, tomb(k))
					latest[k] = ""
				} else {
					v := fmt.Sprintf("v%d", off+int64(j))
					recs = append(recs, rec(k, v))
					latest[k] = v
				}
			}
			ts := int64(now - r.IntN(3000))
			b, _ := mk(off, int64(r.IntN(3))-1, ts, recs...)
			log = append(log, b)
			off += int64(len(recs))
		}
		end := off
		// Segments: cut the batch list at random points.
		segEnd := map[int]bool{len(log) - 1: true}
		for i := range log {
			if r.IntN(4) == 0 {
				segEnd[i] = true
			}
		}
		// Passes: a small map, so several passes run.
		firstDirty := int64(0)
		mapBytes := int64(1+r.IntN(8)) * 5 * EntryBytes
		for firstDirty < end {
			p := &Pass{Map: NewKeyMap(mapBytes), MapEnd: end, Horizon: now - 1000}
			if err := scanAll(t, p, log, firstDirty); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if p.MapEnd <= firstDirty {
				t.Fatalf("seed %d: no progress at %d", seed, firstDirty)
			}
			log, segEnd = rewrite(t, p, log, segEnd)
			firstDirty = p.MapEnd
		}
		got := map[string]string{}
		seen := map[string]bool{}
		last := int64(-1)
		for _, b := range log {
			h, err := batch.Validate(b)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			rs, _ := Records(b, h)
			for _, rr := range rs {
				if rr.Offset <= last {
					t.Fatalf("seed %d: offset %d after %d", seed, rr.Offset, last)
				}
				last = rr.Offset
				if seen[string(rr.Key)] {
					t.Fatalf("seed %d: key %s appears twice after cleaning", seed, rr.Key)
				}
				seen[string(rr.Key)] = true
				if rr.Tombstone {
					got[string(rr.Key)] = ""
				} else {
					got[string(rr.Key)] = value(t, rr)
				}
			}
		}
		for k, v := range latest {
			g, ok := got[k]
			if v != "" && (!ok || g != v) {
				t.Fatalf("seed %d: key %s reads %q (present %v), latest is %q", seed, k, g, ok, v)
			}
			if v == "" && ok && g != "" {
				t.Fatalf("seed %d: tombstoned key %s reads %q", seed, k, g)
			}
		}
	}
}

// rewrite runs a pass's rewrite walk over log, whose batches segEnd marks
// as ending a segment: it returns the batches kept and their segment ends,
// checking each segment still ends at the same offset.
func rewrite(t *testing.T, p *Pass, log [][]byte, segEnd map[int]bool) ([][]byte, map[int]bool) {
	t.Helper()
	var out [][]byte
	ends := map[int]bool{}
	for i, b := range log {
		h, _ := batch.ParseHeader(b)
		nb, err := p.Batch(b, h, segEnd[i])
		if err != nil {
			t.Fatal(err)
		}
		if nb == nil {
			continue
		}
		if segEnd[i] {
			ends[len(out)] = true
			if nh, _ := batch.ParseHeader(nb); nh.NextOffset() != h.NextOffset() {
				t.Fatalf("segment ending at %d now ends at %d", h.NextOffset(), nh.NextOffset())
			}
		}
		out = append(out, nb)
	}
	return out, ends
}

// compressed rebuilds an uncompressed batch with codec c.
func compressed(t *testing.T, b []byte, h batch.Header, c int16) ([]byte, batch.Header) {
	t.Helper()
	z, ok := batch.Compress(c, b[batch.HeaderSize:])
	if !ok {
		t.Fatalf("codec %d unavailable", c)
	}
	out := append(append([]byte(nil), b[:batch.HeaderSize]...), z...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-batch.LengthPrefix))
	binary.BigEndian.PutUint16(out[21:], uint16(h.Attributes|c))
	binary.BigEndian.PutUint32(out[17:], batch.Checksum(out))
	oh, err := batch.Validate(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, oh
}

// TestPassCompressedBatches: a compressed batch (each of Kafka's codecs),
// plain or of a committed transaction, is decompressed, compacted and
// recompressed with its own codec, with its attributes (transactional
// included), producer fields, offsets and timestamps.
func TestPassCompressedBatches(t *testing.T) {
	const now = 1_000_000
	for _, txn := range []bool{false, true} {
		for c := int16(1); c <= 4; c++ {
			b, h := mk(0, 4, now, rec("a", "1"), rec("b", "2"), rec("a", "3"), rec("c", "4"))
			log := [][]byte{b, plain(4, -1, now, rec("d", "5"))}
			want := "[1:b=2 2:a=3 3:c=4]"
			if txn {
				h = setAttr(b, batch.AttrTransactional)
				log = [][]byte{b, marker(4, 4, now, true), plain(5, -1, now, rec("c", "5"))}
				want = "[1:b=2 2:a=3]"
			}
			zb, zh := compressed(t, b, h, c)
			log[0] = zb
			p := &Pass{Map: NewKeyMap(1 << 20), MapEnd: 10, Horizon: now - 1000}
			if err := scanAll(t, p, log, 0); err != nil {
				t.Fatal(err)
			}
			out, err := p.Batch(zb, zh, false)
			if err != nil {
				t.Fatalf("codec %d: %v", c, err)
			}
			oh, err := batch.Validate(out)
			if err != nil {
				t.Fatalf("codec %d: rewritten batch: %v", c, err)
			}
			if oh.Attributes != zh.Attributes || oh.LastOffsetDelta != 3 || oh.ProducerID != 4 || oh.ProducerEpoch != zh.ProducerEpoch ||
				oh.BaseSequence != zh.BaseSequence || oh.FirstTimestamp != zh.FirstTimestamp || oh.MaxTimestamp != zh.MaxTimestamp {
				t.Fatalf("codec %d (transactional %v): header %+v from %+v", c, txn, oh, zh)
			}
			if got := fmt.Sprint(contents(t, out)); got != want {
				t.Fatalf("codec %d (transactional %v): %s, want %s", c, txn, got, want)
			}
		}
	}
}

// TestThrottlePacesToRate: waits reserve bytes on one timeline, so n
// bytes at rate r take n/r seconds whoever asks.
func TestThrottlePacesToRate(t *testing.T) {
	now := time.Unix(1000, 0)
	var slept time.Duration
	th := NewThrottle(1000, func() time.Time { return now }, func(d time.Duration) { slept += d; now = now.Add(d) })
	for i := 0; i < 4; i++ {
		th.Wait(500)
	}
	// 2,000 bytes at 1,000 B/s: the fourth wait starts at 1.5 s.
	if slept != 1500*time.Millisecond {
		t.Fatalf("slept %v, want 1.5s", slept)
	}
	var none *Throttle
	none.Wait(1 << 30) // nil: unthrottled
	NewThrottle(0, nil, func(time.Duration) { t.Fatal("slept unthrottled") }).Wait(1 << 30)
}
