package disklog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
)

// keyedBatch builds a batch of keyed records ("" value: a tombstone).
func keyedBatch(base, ts int64, kvs ...[2]string) []byte {
	s := batch.Spec{BaseOffset: base, ProducerID: -1, BaseSequence: -1, Timestamp: ts}
	for _, kv := range kvs {
		s.Keys = append(s.Keys, []byte(kv[0]))
		if kv[1] == "" {
			s.Values = append(s.Values, nil)
		} else {
			s.Values = append(s.Values, []byte(kv[1]))
		}
	}
	return batch.Build(s)
}

func appendBatch(t testing.TB, l *Log, b []byte) {
	t.Helper()
	batch.SetBaseOffset(b, l.NextOffset())
	h, err := batch.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(b, h); err != nil {
		t.Fatal(err)
	}
}

// readTable reads the log from its start and folds it into key -> value
// ("" for a tombstone read), checking offsets only go up; it returns the
// table and how many records it read.
func readTable(t testing.TB, l *Log) (map[string]string, int) {
	t.Helper()
	out := map[string]string{}
	n := 0
	last := int64(-1)
	for _, b := range splitAll(t, readAll(t, l, l.StartOffset())) {
		h, err := batch.Validate(b)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := compaction.Records(b, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			n++
			v := ""
			if !r.Tombstone {
				v = recordValue(r)
			}
			out[string(r.Key)] = v
		}
	}
	return out, n
}

func splitAll(t testing.TB, b []byte) [][]byte {
	bs, rest, err := batch.Split(b)
	if err != nil || len(rest) != 0 {
		t.Fatalf("split: %v, %d bytes left", err, len(rest))
	}
	return bs
}

// recordValue decodes a record's value from its raw bytes.
func recordValue(r compaction.Record) string {
	p := r.Raw
	_, n := varintLen(p)
	p = p[n+1:] // length, attributes
	for i := 0; i < 2; i++ {
		_, n = varintLen(p)
		p = p[n:]
	}
	kl, n := varintLen(p)
	p = p[n:]
	if kl > 0 {
		p = p[kl:]
	}
	vl, n := varintLen(p)
	return string(p[n : n+int(vl)])
}

func compactReq(now time.Time) storage.CompactRequest {
	return storage.CompactRequest{Now: now, Config: compaction.Config{MinDirtyRatio: 0, DeleteRetention: 1000}, MapBytes: 1 << 20}
}

func TestCompactKeepsLatestPerKey(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, dir)
	l := openLogT(t, o, storage.LogConfig{SegmentBytes: 600})
	now := time.Now()
	for i := 0; i < 60; i++ {
		appendBatch(t, l, keyedBatch(0, now.UnixMilli(), [2]string{fmt.Sprintf("k%d", i%5), fmt.Sprintf("v%d", i)}, [2]string{fmt.Sprintf("k%d", (i+1)%5), fmt.Sprintf("w%d", i)}))
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	before, nBefore := readTable(t, l)
	sizeBefore := l.Size()
	res, err := l.Compact(compactReq(now))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cleaned || res.Segments == 0 {
		t.Fatalf("nothing cleaned: %+v", res)
	}
	after, nAfter := readTable(t, l)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("table changed: %v, was %v", after, before)
	}
	if nAfter >= nBefore || l.Size() >= sizeBefore {
		t.Fatalf("records %d -> %d, bytes %d -> %d: nothing removed", nBefore, nAfter, sizeBefore, l.Size())
	}
	// A fetch inside a removed range returns the next batch.
	for off := l.StartOffset(); off < l.NextOffset(); off++ {
		r, err := l.Read(off, 1, l.NextOffset())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := r.AppendTo(nil)
		_ = r.Close()
		h, err := batch.ParseHeader(b)
		if err != nil || h.NextOffset() <= off {
			t.Fatalf("read at %d: %v, batch ends at %d", off, err, h.NextOffset())
		}
	}
	// A read with room for more than one batch returns a record at or past
	// the offset whenever the log holds one (an empty batch ending a
	// segment is followed by the next segment's batches).
	var recOffs []int64
	for _, b := range splitAll(t, readAll(t, l, l.StartOffset())) {
		h, _ := batch.Validate(b)
		rs, _ := compaction.Records(b, h)
		for _, r := range rs {
			recOffs = append(recOffs, r.Offset)
		}
	}
	for off := l.StartOffset(); off < l.NextOffset(); off++ {
		r, err := l.Read(off, 1<<20, l.NextOffset())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := r.AppendTo(nil)
		_ = r.Close()
		found := false
		for _, bb := range splitAll(t, b) {
			h, _ := batch.Validate(bb)
			rs, _ := compaction.Records(bb, h)
			for _, rr := range rs {
				found = found || rr.Offset >= off
			}
		}
		exists := recOffs[len(recOffs)-1] >= off
		if found != exists {
			t.Fatalf("read at %d: a record at or past it returned %v, in the log %v", off, found, exists)
		}
	}
	// Reopen after a crash (no clean close): recovery accepts the cleaned
	// segments, then again after a clean close.
	l.crash()
	l = openLogT(t, o, storage.LogConfig{SegmentBytes: 600})
	if got, _ := readTable(t, l); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after recovery: %v", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLogT(t, o, storage.LogConfig{SegmentBytes: 600})
	if got, _ := readTable(t, l); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after a clean reopen: %v", got)
	}
	// A second pass with nothing new to clean does nothing.
	res, err = l.Compact(compactReq(now))
	if err != nil || res.Segments != 0 {
		t.Fatalf("second pass: %+v %v", res, err)
	}
	_ = l.Close()
}

// overwrite3 appends 40 one-record batches overwriting three keys in turn,
// and syncs them.
func overwrite3(t *testing.T, l *Log, now time.Time) {
	t.Helper()
	for i := 0; i < 40; i++ {
		appendBatch(t, l, keyedBatch(0, now.UnixMilli(), [2]string{fmt.Sprintf("k%d", i%3), fmt.Sprintf("v%d", i)}))
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestCompactCrashAtEachStep stops a pass at each step of a segment swap,
// as a crash would, and reopens: recovery accepts the log and every key
// reads its latest value.
func TestCompactCrashAtEachStep(t *testing.T) {
	for _, step := range []string{"written", "index-cleared", "renamed", "swapped"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			o := testOpener(t, dir)
			cfg := storage.LogConfig{SegmentBytes: 600, Claim: true, ClaimEpoch: 1}
			l := openLogT(t, o, cfg)
			now := time.Now()
			overwrite3(t, l, now)
			want, _ := readTable(t, l)
			stop := errors.New("crash")
			cleanHook = func(s string) error {
				if s == step {
					return stop
				}
				return nil
			}
			defer func() { cleanHook = nil }()
			if _, err := l.Compact(compactReq(now)); !errors.Is(err, stop) {
				t.Fatalf("compact: %v, want the crash", err)
			}
			cleanHook = nil
			l.crash()
			cfg.ClaimEpoch = 2
			l = openLogT(t, o, cfg)
			if got, _ := readTable(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after a crash at %s: %v, want %v", step, got, want)
			}
			// The next pass finishes the job.
			if _, err := l.Compact(compactReq(now)); err != nil {
				t.Fatal(err)
			}
			if got, _ := readTable(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after the next pass: %v", got)
			}
			_ = l.Close()
		})
	}
}

// TestCompactFencedByNewerClaim: a leader deposed mid-pass (a newer epoch
// claimed the partition) swaps nothing.
func TestCompactFencedByNewerClaim(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, dir)
	cfg := storage.LogConfig{SegmentBytes: 600, Claim: true, ClaimEpoch: 1}
	l := openLogT(t, o, cfg)
	now := time.Now()
	for i := 0; i < 40; i++ {
		appendBatch(t, l, keyedBatch(0, now.UnixMilli(), [2]string{fmt.Sprintf("k%d", i%3), fmt.Sprintf("v%d", i)}))
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	names := map[string]int64{}
	for _, p := range segFiles(t, l.Dir(), logSuffix) {
		fi, _ := os.Stat(p)
		names[p] = fi.Size()
	}
	cleanHook = func(s string) error {
		if s == "written" {
			// The next leader claims while this pass writes.
			return claim(l.Dir(), 2, 0o644, l.log)
		}
		return nil
	}
	defer func() { cleanHook = nil }()
	if _, err := l.Compact(compactReq(now)); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("compact: %v, want ErrSuperseded", err)
	}
	for p, size := range names {
		if fi, err := os.Stat(p); err != nil || fi.Size() != size {
			t.Fatalf("%s changed under the next leader", p)
		}
	}
	if m := segFiles(t, l.Dir(), cleanedSuffix); len(m) != 0 {
		t.Fatalf("cleaned files left: %v", m)
	}
	_ = l.Close()
}

// TestCompactProperty: random produce/tombstone histories with appends,
// passes (a small key map: several passes), crashes and reopens
// interleaved; the log always reads as every key's latest value, or
// nothing once a tombstone is past delete.retention.ms.
func TestCompactProperty(t *testing.T) {
	for seed := uint64(0); seed < 5; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		dir := t.TempDir()
		o := testOpener(t, dir)
		cfg := storage.LogConfig{SegmentBytes: int64(800 + r.IntN(3000))}
		l := openLogT(t, o, cfg)
		latest := map[string]string{}
		now := time.Now()
		for round := 0; round < 5; round++ {
			for i, n := 0, r.IntN(80); i < n; i++ {
				var kvs [][2]string
				for j, m := 0, 1+r.IntN(4); j < m; j++ {
					k := fmt.Sprintf("k%d", r.IntN(30))
					v := fmt.Sprintf("v%d-%d", round, i)
					if r.IntN(6) == 0 {
						v = ""
					}
					kvs = append(kvs, [2]string{k, v})
					latest[k] = v
				}
				appendBatch(t, l, keyedBatch(0, now.UnixMilli()-int64(r.IntN(3000)), kvs...))
			}
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			req := compactReq(now)
			req.MapBytes = int64(5+r.IntN(40)) * compaction.EntryBytes
			for pass := 0; pass < 3; pass++ {
				if _, err := l.Compact(req); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
			got, _ := readTable(t, l)
			for k, v := range latest {
				g, ok := got[k]
				if (v != "" && g != v) || (v == "" && ok && g != "") {
					t.Fatalf("seed %d round %d: key %s reads %q (present %v), latest %q", seed, round, k, g, ok, v)
				}
			}
			switch r.IntN(3) {
			case 0:
				l.crash()
				l = openLogT(t, o, cfg)
			case 1:
				_ = l.Close()
				l = openLogT(t, o, cfg)
			}
		}
		_ = l.Close()
	}
}

func varintLen(b []byte) (int64, int) { return binary.Varint(b) }

// TestCompactDuringLeadershipMove: two brokers (two openers on one
// volume). The first leader's pass is in flight when the second opens the
// partition (claiming a higher epoch) and starts appending: the first
// swaps nothing, the second reads every record, cleans the log itself,
// and a third open (after a crash of the second) reads the same table.
func TestCompactDuringLeadershipMove(t *testing.T) {
	root := t.TempDir()
	oa, ob := testOpener(t, root), testOpener(t, root)
	cfg := storage.LogConfig{SegmentBytes: 600, Claim: true, ClaimEpoch: 1}
	a := openLogT(t, oa, cfg)
	if err := a.AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	want := map[string]string{}
	for i := 0; i < 50; i++ {
		k, v := fmt.Sprintf("k%d", i%4), fmt.Sprintf("v%d", i)
		appendBatch(t, a, keyedBatch(0, now.UnixMilli(), [2]string{k, v}))
		want[k] = v
	}
	if _, err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	var b *Log
	cleanHook = func(step string) error {
		if step == "written" && b == nil {
			// The move: the next leader opens while this pass runs.
			bcfg := cfg
			bcfg.ClaimEpoch = 2
			b = openLogT(t, ob, bcfg)
			if err := b.AssignEpoch(2, b.NextOffset()); err != nil {
				return err
			}
		}
		return nil
	}
	defer func() { cleanHook = nil }()
	if _, err := a.Compact(compactReq(now)); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("deposed leader's pass: %v, want ErrSuperseded", err)
	}
	cleanHook = nil
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	for i := 50; i < 60; i++ {
		k, v := fmt.Sprintf("k%d", i%4), fmt.Sprintf("v%d", i)
		appendBatch(t, b, keyedBatch(0, now.UnixMilli(), [2]string{k, v}))
		want[k] = v
	}
	if _, err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, _ := readTable(t, b); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("next leader reads %v, want %v", got, want)
	}
	if res, err := b.Compact(compactReq(now)); err != nil || !res.Cleaned {
		t.Fatalf("next leader's pass: %+v %v", res, err)
	}
	if got, _ := readTable(t, b); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the next leader's pass: %v", got)
	}
	b.crash()
	ccfg := cfg
	ccfg.ClaimEpoch = 3
	c := openLogT(t, oa, ccfg)
	if got, _ := readTable(t, c); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("third leader reads %v", got)
	}
	_ = c.Close()
}

// TestCompactConcurrentWithOwner runs passes while the owner appends,
// syncs, reads and applies retention (go test -race checks the locking);
// readers always see a valid log and the table stays right.
func TestCompactConcurrentWithOwner(t *testing.T) {
	o := testOpener(t, t.TempDir())
	l := openLogT(t, o, storage.LogConfig{SegmentBytes: 800})
	now := time.Now()
	want := map[string]string{}
	done := make(chan error)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := l.Compact(compactReq(now)); err != nil {
				done <- err
				return
			}
		}
	}()
	for i := 0; i < 400; i++ {
		k, v := fmt.Sprintf("k%d", i%9), fmt.Sprintf("v%d", i)
		appendBatch(t, l, keyedBatch(0, now.UnixMilli(), [2]string{k, v}))
		want[k] = v
		if i%20 == 0 {
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			readTable(t, l)
			if err := l.EnforceRetention(now); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Compact(compactReq(now)); err != nil {
		t.Fatal(err)
	}
	if got, _ := readTable(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("table %v, want %v", got, want)
	}
	_ = l.Close()
}

// TestCompactIgnoresOldCleanerOffset: the offset recorded under the old
// name (by passes that never compacted committed transactions) is
// ignored: the first pass cleans the log from its start, records its
// offset under the new name and removes the old file.
func TestCompactIgnoresOldCleanerOffset(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, dir)
	l := openLogT(t, o, storage.LogConfig{SegmentBytes: 600})
	now := time.Now()
	overwrite3(t, l, now)
	_, nBefore := readTable(t, l)
	if err := overwriteFile(filepath.Join(l.dir, oldCleanerFile), encodeNumber(l.NextOffset()), l.fileMode); err != nil {
		t.Fatal(err)
	}
	res, err := l.Compact(compactReq(now))
	if err != nil || !res.Cleaned || res.Segments == 0 {
		t.Fatalf("compact: %+v %v", res, err)
	}
	if _, n := readTable(t, l); n >= nBefore {
		t.Fatalf("%d records read after cleaning, %d before", n, nBefore)
	}
	if _, err := os.Stat(filepath.Join(l.dir, oldCleanerFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old cleaner offset left: %v", err)
	}
	if n, ok := readNumber(l.dir, cleanerFile); !ok || n != res.CleanedTo {
		t.Fatalf("cleaner offset %d (%v), want %d", n, ok, res.CleanedTo)
	}
}
