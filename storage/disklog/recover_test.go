package disklog

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

var crashCfg = storage.LogConfig{SegmentBytes: 1024, IndexInterval: 256}

// golden is a crashed partition directory and what was appended to it.
type golden struct {
	dir     string
	batches [][]byte
	segs    []string // segment files, oldest first
}

func (g *golden) bases() []int64 {
	out := make([]int64, len(g.batches))
	for i, b := range g.batches {
		h, _ := batch.ParseHeader(b)
		out[i] = h.BaseOffset
	}
	return out
}

// upTo returns the bytes of every batch with base offset < off.
func (g *golden) upTo(off int64) []byte {
	var out []byte
	for i, b := range g.batches {
		if g.bases()[i] < off {
			out = append(out, b...)
		}
	}
	return out
}

// buildGolden writes three sealed segments (synced, indexes written when
// synced is true) and an active segment holding the batches in tail,
// then crashes.
func buildGolden(t *testing.T, synced bool, tail int) *golden {
	t.Helper()
	root := t.TempDir()
	o := testOpener(t, root)
	l := openLogT(t, o, crashCfg)
	if err := l.AssignEpoch(0, 0); err != nil {
		t.Fatal(err)
	}
	g := &golden{dir: l.Dir()}
	for len(segFiles(t, l.Dir(), logSuffix)) < 4 {
		g.batches = append(g.batches, appendN(t, l, 1, 2, 60, int64(1000+len(g.batches)*10))...)
	}
	// the batch that rolled to the 4th segment is its first one
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if synced {
		if err := l.chores(true); err != nil {
			t.Fatal(err)
		}
	} else {
		// The janitor must not write index trailers behind our back: the
		// golden wants rolled segments that never got theirs.
		l.stopJanitor()
		l.jmu.Lock()
		l.needIndex = nil
		l.jmu.Unlock()
		for _, p := range segFiles(t, l.Dir(), indexSuffix) {
			os.Remove(p)
		}
	}
	for i := 0; i < tail; i++ {
		g.batches = append(g.batches, appendN(t, l, 1, 1, 20, int64(5000+i))...)
	}
	l.crash()
	g.segs = segFiles(t, g.dir, logSuffix)
	if len(g.segs) != 4 {
		t.Fatalf("%d segments", len(g.segs))
	}
	return g
}

// reopen copies the golden directory (after mutate edits the copy) and
// opens it; it returns the log or the Open error, and the log output.
func reopen(t *testing.T, g *golden, mutate func(dir string)) (*Log, error, *bytes.Buffer) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, filepath.Base(g.dir))
	copyDir(t, g.dir, dir)
	if mutate != nil {
		mutate(dir)
	}
	logs := &syncBuffer{}
	o, err := NewOpener(root, zerolog.New(logs).Level(zerolog.DebugLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	l, err := o.Open(testID, crashCfg)
	if err != nil {
		return nil, err, &logs.b
	}
	t.Cleanup(func() { l.Close() })
	return l.(*Log), nil, &logs.b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func inDir(dir, path string) string { return filepath.Join(dir, filepath.Base(path)) }

func flipBit(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// expectKept asserts the log holds exactly the golden batches below next.
func expectKept(t *testing.T, l *Log, g *golden, next int64) {
	t.Helper()
	// Recovery keeps the tail it found valid but may not know it durable:
	// the first Sync makes it so.
	if l.NextOffset() != next || l.Durable() > next {
		t.Fatalf("next %d durable %d, want %d", l.NextOffset(), l.Durable(), next)
	}
	if d, err := l.Sync(); err != nil || d != next || l.Durable() != next {
		t.Fatalf("first Sync: durable %d (%v), want %d", d, err, next)
	}
	if got := readAll(t, l, 0); !bytes.Equal(got, g.upTo(next)) {
		t.Fatalf("kept %d bytes, want %d", len(got), len(g.upTo(next)))
	}
	// The log accepts appends at its end again.
	b := mkBatch(next, 1, 9999, 5)
	h, _ := batch.Validate(b)
	if err := l.Append(b, h); err != nil {
		t.Fatal(err)
	}
}

// TestCrashTruncateLastBatchEveryByte cuts the last batch at every byte:
// recovery keeps exactly the batches before it.
func TestCrashTruncateLastBatchEveryByte(t *testing.T) {
	g := buildGolden(t, true, 3)
	last := g.batches[len(g.batches)-1]
	lastBase := g.bases()[len(g.batches)-1]
	active := g.segs[3]
	full := fileSize(t, active)
	for cut := 0; cut <= len(last); cut++ {
		l, err, _ := reopen(t, g, func(dir string) {
			if err := os.Truncate(inDir(dir, active), full-int64(len(last))+int64(cut)); err != nil {
				t.Fatal(err)
			}
		})
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		want := lastBase
		if cut == len(last) {
			want = lastBase + 1
		}
		expectKept(t, l, g, want)
		if sz := fileSize(t, inDir(l.Dir(), active)); cut < len(last) && sz != full-int64(len(last))+int64(len(mkBatch(lastBase, 1, 9999, 5))) {
			t.Fatalf("cut %d: active segment is %d bytes: torn tail not truncated", cut, sz)
		}
	}
}

// TestCrashBitFlipsInTail flips bits across the last batch (all of it but
// the leader epoch, which Kafka keeps outside the CRC) and in a middle
// batch of the unsynced tail.
func TestCrashBitFlipsInTail(t *testing.T) {
	g := buildGolden(t, true, 3)
	n := len(g.batches)
	bases := g.bases()
	active := g.segs[3]
	full := fileSize(t, active)
	lastLen := int64(len(g.batches[n-1]))
	for p := int64(0); p < lastLen; p++ {
		if p >= 12 && p < 16 {
			continue // partition leader epoch: outside the CRC, as in Kafka
		}
		l, err, logs := reopen(t, g, func(dir string) { flipBit(t, inDir(dir, active), full-lastLen+p) })
		if err != nil {
			t.Fatalf("flip at %d: %v", p, err)
		}
		expectKept(t, l, g, bases[n-1])
		if !strings.Contains(logs.String(), "truncating the torn tail") {
			t.Fatalf("flip at %d: no warning logged", p)
		}
	}
	// A flip in the second-to-last batch drops it and everything after.
	midLen := int64(len(g.batches[n-2]))
	l, err, _ := reopen(t, g, func(dir string) { flipBit(t, inDir(dir, active), full-lastLen-midLen+40) })
	if err != nil {
		t.Fatal(err)
	}
	expectKept(t, l, g, bases[n-2])
}

// TestCrashZeroFilledTail: after a power loss the file can be longer than
// what reached the disk, the rest reading as zeros.
func TestCrashZeroFilledTail(t *testing.T) {
	g := buildGolden(t, true, 2)
	n := len(g.batches)
	active := g.segs[3]
	full := fileSize(t, active)
	l, err, _ := reopen(t, g, func(dir string) {
		f, _ := os.OpenFile(inDir(dir, active), os.O_RDWR, 0)
		f.WriteAt(make([]byte, 8192), full)
		f.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	expectKept(t, l, g, g.bases()[n-1]+1)
	l, err, _ = reopen(t, g, func(dir string) {
		f, _ := os.OpenFile(inDir(dir, active), os.O_RDWR, 0)
		f.WriteAt(make([]byte, 30), full-30)
		f.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	expectKept(t, l, g, g.bases()[n-1])
}

// segRange returns the golden batches stored in segment file seg: the
// index of the first one and how many.
func segRange(t *testing.T, g *golden, seg string) (first, count int) {
	t.Helper()
	_, base, _ := parseSegName(strings.TrimSuffix(filepath.Base(seg), logSuffix))
	bases := g.bases()
	first = -1
	for i, b := range bases {
		if b >= base && first < 0 {
			first = i
		}
	}
	size := fileSize(t, seg)
	var pos int64
	for i := first; i < len(bases) && pos < size; i++ {
		pos += int64(len(g.batches[i]))
		count++
	}
	return first, count
}

// TestCrashCorruptSealedSegment: a sealed segment that was synced (index
// trailer written) and then damaged is never served past the damage.
func TestCrashCorruptSealedSegment(t *testing.T) {
	g := buildGolden(t, true, 2)
	bases := g.bases()
	seg := g.segs[1]
	first, count := segRange(t, g, seg)
	mid := first + count/2
	var pos int64
	for i := first; i < mid; i++ {
		pos += int64(len(g.batches[i]))
	}
	l, err, logs := reopen(t, g, func(dir string) { flipBit(t, inDir(dir, seg), pos+70) })
	if err != nil {
		t.Fatal(err)
	}
	last := int64(len(bases))
	if n := l.NextOffset(); n != bases[len(bases)-1]+1 {
		t.Fatalf("next %d (%d batches)", n, last)
	}
	// Below the damage: served. At it: refused, loudly.
	r, err := l.Read(bases[first], 1<<20, l.NextOffset())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.AppendTo(nil)
	r.Close()
	want := concat(g.batches[first:mid])
	if !bytes.Equal(b, want) {
		t.Fatalf("read before the damage: %d bytes, want %d", len(b), len(want))
	}
	if _, err := l.Read(bases[mid], 1<<20, l.NextOffset()); !isCorrupt(err) {
		t.Fatalf("read of the damaged batch: %v", err)
	}
	if _, err := l.Read(bases[mid+1], 1<<20, l.NextOffset()); !isCorrupt(err) {
		t.Fatalf("read past the damaged batch: %v", err)
	}
	if !strings.Contains(logs.String(), "CORRUPTION") || !strings.Contains(logs.String(), `"level":"error"`) {
		t.Fatalf("corruption not logged as an error: %s", logs.String())
	}
	// Later segments are intact and still served.
	next := g.segs[2]
	f2, _ := segRange(t, g, next)
	if _, err := l.Read(bases[f2], 100, l.NextOffset()); err != nil {
		t.Fatal(err)
	}
}

// TestCrashSealedTailLost: segments rolled but never synced (no index
// trailers): a bit flip or a lost tail in one of them truncates there and
// drops every later segment; but if a later segment is known synced, the
// damage is in the middle of the log and Open fails.
func TestCrashSealedTailLost(t *testing.T) {
	g := buildGolden(t, false, 2)
	bases := g.bases()
	seg := g.segs[1]
	first, count := segRange(t, g, seg)
	mid := first + count/2
	var pos int64
	for i := first; i < mid; i++ {
		pos += int64(len(g.batches[i]))
	}
	l, err, _ := reopen(t, g, func(dir string) { flipBit(t, inDir(dir, seg), pos+70) })
	if err != nil {
		t.Fatal(err)
	}
	expectKept(t, l, g, bases[mid])
	if n := len(segFiles(t, l.Dir(), logSuffix)); n != 2 {
		t.Fatalf("%d segments left, want 2", n)
	}
	// The tail of a sealed segment never reached the disk.
	l, err, _ = reopen(t, g, func(dir string) {
		os.Truncate(inDir(dir, seg), fileSize(t, seg)-int64(len(g.batches[first+count-1]))/2)
	})
	if err != nil {
		t.Fatal(err)
	}
	expectKept(t, l, g, bases[first+count-1])
	// Same damage, but the active segment carries a clean trailer: Open
	// refuses.
	_, err, logs := reopen(t, g, func(dir string) {
		flipBit(t, inDir(dir, seg), pos+70)
		p := strings.TrimSuffix(inDir(dir, g.segs[3]), logSuffix)
		ep, base, _ := parseSegName(filepath.Base(p))
		b, _ := os.ReadFile(p + logSuffix)
		s := &segment{base: base, epoch: ep, dir: dir, name: filepath.Base(p), maxTS: -1, maxOff: -1}
		ix := newIndexer(256)
		f, _ := os.Open(p + logSuffix)
		res, _ := scanSegment(f, int64(len(b)), 0, base, 1<<62, base, &ix, nil)
		f.Close()
		s.size, s.next, s.idx = res.size, res.next, res.entries
		os.WriteFile(p+indexSuffix, encodeIndex(s.idx, s.summary()), 0o644)
	})
	if !isCorrupt(err) || !strings.Contains(logs.String(), "CORRUPTION in the middle of the log") {
		t.Fatalf("open with mid-log damage: %v\n%s", err, logs.String())
	}
}

// TestCrashIndexesAndCheckpoint: deleted or damaged indexes and a lost
// leader-epoch checkpoint are rebuilt; the data is unchanged.
func TestCrashIndexesAndCheckpoint(t *testing.T) {
	g := buildGolden(t, true, 2)
	bases := g.bases()
	want := bases[len(bases)-1] + 1
	cases := map[string]func(dir string){
		"delete all indexes": func(dir string) {
			for _, p := range segFiles(t, dir, "index") {
				os.Remove(p)
			}
		},
		"flip a byte in an index body": func(dir string) {
			flipBit(t, strings.TrimSuffix(inDir(dir, g.segs[1]), logSuffix)+indexSuffix, 3)
		},
		"flip a byte in an index entry's timestamp": func(dir string) {
			flipBit(t, strings.TrimSuffix(inDir(dir, g.segs[0]), logSuffix)+indexSuffix, 12)
		},
		"truncate an index": func(dir string) {
			os.Truncate(strings.TrimSuffix(inDir(dir, g.segs[2]), logSuffix)+indexSuffix, 20)
		},
		"flip a byte in an index trailer": func(dir string) {
			p := strings.TrimSuffix(inDir(dir, g.segs[1]), logSuffix) + indexSuffix
			flipBit(t, p, fileSize(t, p)-30)
		},
		"delete the epoch checkpoint": func(dir string) { os.Remove(filepath.Join(dir, epochFile)) },
		"damage the epoch checkpoint": func(dir string) { flipBit(t, filepath.Join(dir, epochFile), 3) },
		"delete the start offset":     func(dir string) { os.Remove(filepath.Join(dir, startFile)) },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			l, err, _ := reopen(t, g, mutate)
			if err != nil {
				t.Fatal(err)
			}
			expectKept(t, l, g, want)
			if got := l.Epochs(); len(got) != 1 || got[0] != (storage.EpochEntry{Epoch: 0, StartOffset: 0}) {
				t.Fatalf("epochs %v", got)
			}
			for i := 0; i < len(bases); i += 3 {
				r, err := l.Read(bases[i], 1, want)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := r.AppendTo(nil)
				r.Close()
				if !bytes.Equal(b, g.batches[i]) {
					t.Fatalf("offset %d", bases[i])
				}
			}
			if _, err := os.Stat(filepath.Join(l.Dir(), epochFile)); err != nil {
				t.Fatal("epoch checkpoint not rewritten")
			}
		})
	}
}

// TestEpochRebuildAndStaleLeader: the epoch cache is rebuilt from
// epoch-stamped segment names, and what a deposed leader wrote after the
// takeover (bytes past a sealed segment's end, a new segment of its old
// epoch) is never served.
func TestEpochRebuildAndStaleLeader(t *testing.T) {
	root := t.TempDir()
	o := testOpener(t, root)
	l := openLogT(t, o, storage.LogConfig{})
	var all [][]byte
	for _, e := range []int32{0, 2, 4} {
		if err := l.AssignEpoch(e, l.NextOffset()); err != nil {
			t.Fatal(err)
		}
		all = append(all, appendN(t, l, 5, 2, 10, 1)...)
	}
	wantEpochs := l.Epochs()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	dir := l.Dir()
	// The deposed epoch-2 leader appends offset 20 to its old segment and
	// rolls to a segment of its own.
	old := filepath.Join(dir, segName(2, 10)+logSuffix)
	f, _ := os.OpenFile(old, os.O_WRONLY|os.O_APPEND, 0)
	stale := mkBatch(20, 3, 1, 10)
	binary.BigEndian.PutUint32(stale[12:], 2)
	f.Write(stale)
	f.Close()
	os.WriteFile(filepath.Join(dir, segName(2, 23)+logSuffix), mkBatch(23, 1, 1, 10), 0o644)
	os.Remove(filepath.Join(dir, epochFile))
	l = openLogT(t, o, storage.LogConfig{})
	if got := l.Epochs(); !equalEpochs(got, wantEpochs) {
		t.Fatalf("rebuilt epochs %v, want %v", got, wantEpochs)
	}
	if l.NextOffset() != 30 || !bytes.Equal(readAll(t, l, 0), concat(all)) {
		t.Fatalf("next %d", l.NextOffset())
	}
	l.Close()
	// With the checkpoint back, the stale segment is set aside too.
	l = openLogT(t, o, storage.LogConfig{})
	defer l.Close()
	if _, err := os.Stat(filepath.Join(dir, segName(2, 23)+logSuffix)); !os.IsNotExist(err) {
		t.Fatalf("stale segment still in place: %v", err)
	}
	if l.NextOffset() != 30 || !bytes.Equal(readAll(t, l, 0), concat(all)) {
		t.Fatalf("next %d", l.NextOffset())
	}
}

// TestCleanCloseSkipsScan: the index trailer written by Close is the clean
// marker; the next Open validates nothing.
func TestCleanCloseSkipsScan(t *testing.T) {
	root := t.TempDir()
	o := testOpener(t, root)
	l := openLogT(t, o, crashCfg)
	bs := appendN(t, l, 100, 2, 60, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	g := &golden{dir: l.Dir(), batches: bs}
	l2, err, logs := reopen(t, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"scanned_bytes":0`) {
		t.Fatalf("clean reopen scanned: %s", logs.String())
	}
	expectKept(t, l2, g, 200)
}

// TestCorruptionInCleanActiveSegment: bytes trusted from a clean-close
// trailer are CRC-checked on first read; damage there is refused.
func TestCorruptionInCleanActiveSegment(t *testing.T) {
	root := t.TempDir()
	o := testOpener(t, root)
	l := openLogT(t, o, crashCfg)
	bs := appendN(t, l, 20, 2, 60, 1)
	l.Close()
	g := &golden{dir: l.Dir(), batches: bs}
	segs := segFiles(t, g.dir, logSuffix)
	last := segs[len(segs)-1]
	first, count := segRange(t, g, last)
	if count < 3 {
		t.Fatalf("%d batches in the active segment", count)
	}
	pos := int64(len(bs[first]))
	l2, err, logs := reopen(t, g, func(dir string) { flipBit(t, inDir(dir, last), pos+80) })
	if err != nil {
		t.Fatal(err)
	}
	bases := g.bases()
	if l2.NextOffset() != 40 {
		t.Fatalf("next %d", l2.NextOffset())
	}
	r, err := l2.Read(bases[first], 1<<20, 40)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.AppendTo(nil)
	r.Close()
	if !bytes.Equal(b, bs[first]) {
		t.Fatalf("read before the damage: %d bytes", len(b))
	}
	if _, err := l2.Read(bases[first+1], 1<<20, 40); !isCorrupt(err) {
		t.Fatalf("damaged batch served: %v", err)
	}
	if !strings.Contains(logs.String(), "CORRUPTION") {
		t.Fatal("not logged")
	}
}

// TestHandoffFsyncs counts the device flushes of a leadership move: the old
// leader's close costs none when group commit already made the data
// durable, nor do the next leader's open and new epoch (its first Sync
// makes the new segment durable). A snapshot or checkpoint lost or damaged
// by a crash is rebuilt or ignored.
func TestHandoffFsyncs(t *testing.T) {
	// The first sync under a new epoch makes the new segment and its
	// directory entry durable: a file and a directory fsync, or one syncfs.
	for _, mode := range []struct {
		name      string
		sync      SyncMode
		firstSync int64
	}{{"file", SyncFiles, 2}, {"syncfs", SyncFilesystem, 1}} {
		t.Run(mode.name, func(t *testing.T) { testHandoffFsyncs(t, mode.sync, mode.firstSync) })
	}
}

// countFsyncs runs fn and fails unless it cost exactly want device flushes.
func countFsyncs(t *testing.T, what string, want int64, fn func() error) {
	t.Helper()
	before := Fsyncs()
	if err := fn(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got := Fsyncs() - before; got != want {
		t.Fatalf("%s: %d fsyncs, want %d", what, got, want)
	}
}

// syncedLog opens a log at epoch 1 with 20 batches of 2 records, synced.
func syncedLog(t *testing.T, o *Opener) *Log {
	t.Helper()
	l := openLogT(t, o, crashCfg)
	if err := l.AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 20, 2, 60, 1)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	return l
}

// openAtEpoch opens a log as the next leader does: open, then stamp epoch.
func openAtEpoch(o *Opener, id storage.PartitionID, epoch int32) (*Log, error) {
	sl, err := o.Open(id, crashCfg)
	if err != nil {
		return nil, err
	}
	l := sl.(*Log)
	return l, l.AssignEpoch(epoch, l.NextOffset())
}

// TestReleaseFsyncs: a handoff's Release with an unsynced tail costs no
// flush, nor does the next leader's open; that leader's first Sync makes
// the inherited tail durable with its own first batch: the sealed segment
// and the new one and the directory, or one syncfs round.
func TestReleaseFsyncs(t *testing.T) {
	for _, mode := range []struct {
		name      string
		sync      SyncMode
		firstSync int64
	}{{"file", SyncFiles, 3}, {"syncfs", SyncFilesystem, 1}} {
		t.Run(mode.name, func(t *testing.T) {
			o := testOpener(t, t.TempDir(), Sync(mode.sync))
			l := syncedLog(t, o)
			appendN(t, l, 1, 2, 60, 1) // not yet group committed
			count := func(what string, want int64, fn func() error) { t.Helper(); countFsyncs(t, what, want, fn) }
			count("release with an unsynced tail", 0, l.Release)
			var l2 *Log
			count("open of a released log + new epoch", 0, func() (err error) { l2, err = openAtEpoch(o, l.id, 2); return err })
			defer l2.Close()
			if l2.NextOffset() != 42 || l2.Durable() != 40 {
				t.Fatalf("next leader: next %d durable %d, want 42 and 40", l2.NextOffset(), l2.Durable())
			}
			appendN(t, l2, 1, 1, 60, 1)
			count("first sync under the new epoch", mode.firstSync, func() error { _, err := l2.Sync(); return err })
			if l2.Durable() != 43 {
				t.Fatalf("durable %d after the first sync, want 43", l2.Durable())
			}
		})
	}
}

func testHandoffFsyncs(t *testing.T, sync SyncMode, firstSync int64) {
	root := t.TempDir()
	o := testOpener(t, root, Sync(sync))
	l := syncedLog(t, o)
	count := func(what string, want int64, fn func() error) { t.Helper(); countFsyncs(t, what, want, fn) }
	snap := []byte("producer\nstate\x00with newlines\n")
	count("snapshot + close after group commit", 0, func() error {
		if err := l.WriteSnapshot("producers", snap); err != nil {
			return err
		}
		return l.Close()
	})
	var l2 *Log
	count("open of a cleanly closed log + new epoch", 0, func() (err error) { l2, err = openAtEpoch(o, l.id, 2); return err })
	if got, err := l2.ReadSnapshot("producers"); err != nil || !bytes.Equal(got, snap) {
		t.Fatalf("snapshot %q, %v", got, err)
	}
	appendN(t, l2, 1, 1, 60, 1)
	count("first sync under the new epoch", firstSync, func() error { _, err := l2.Sync(); return err })
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	// What the new epoch relies on is durable after that sync: a crash that
	// loses the (unsynced) checkpoint rebuilds it from the segment names.
	os.Remove(filepath.Join(l.Dir(), epochFile))
	flipBit(t, filepath.Join(l.Dir(), "producers"+snapshotSuffix), 4)
	l3 := openLogT(t, o, crashCfg)
	defer l3.Close()
	want := []storage.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 40}}
	if got := l3.Epochs(); !equalEpochs(got, want) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	if got, err := l3.ReadSnapshot("producers"); got != nil || err != nil {
		t.Fatalf("damaged snapshot read as %q, %v", got, err)
	}
	if l3.NextOffset() != 41 {
		t.Fatalf("next %d", l3.NextOffset())
	}
}

// TestDeposedLeaderCleanCloseAfterRoll: a deposed leader (a broker that
// stalled past dead-after with the log open) appends after the next leader
// rolled, then closes cleanly, so its index trailer claims the extra
// batches. The log stays readable and those batches are never served.
func TestDeposedLeaderCleanCloseAfterRoll(t *testing.T) {
	root := t.TempDir()
	zombie := openLogT(t, testOpener(t, root), storage.LogConfig{})
	if err := zombie.AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	want := appendN(t, zombie, 5, 2, 10, 1)
	if _, err := zombie.Sync(); err != nil {
		t.Fatal(err)
	}
	// Another broker (its own Opener) takes over at offset 10, epoch 2.
	next := openLogT(t, testOpener(t, root), storage.LogConfig{})
	if err := next.AssignEpoch(2, next.NextOffset()); err != nil {
		t.Fatal(err)
	}
	want = append(want, appendN(t, next, 1, 2, 10, 1)...)
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	// The deposed leader wakes up, appends at its own offset 10 and closes.
	appendN(t, zombie, 1, 2, 10, 1)
	if err := zombie.Close(); err != nil {
		t.Fatal(err)
	}
	l := openLogT(t, testOpener(t, root), storage.LogConfig{})
	defer l.Close()
	if l.NextOffset() != 12 || !bytes.Equal(readAll(t, l, 0), concat(want)) {
		t.Fatalf("next %d; the deposed leader's batch was served", l.NextOffset())
	}
}

// TestLeaderClaim: Open with a claim records the leader's epoch before it
// reads anything; a deposed leader sees the newer claim (Superseded), and
// an Open with a lower epoch than the claim fails.
func TestLeaderClaim(t *testing.T) {
	root := t.TempDir()
	old := openLogT(t, testOpener(t, root), storage.LogConfig{Claim: true, ClaimEpoch: 1})
	appendN(t, old, 2, 1, 10, 1)
	if _, err := old.Sync(); err != nil {
		t.Fatal(err)
	}
	if old.Superseded(1) {
		t.Fatal("superseded by its own claim")
	}
	next := openLogT(t, testOpener(t, root), storage.LogConfig{Claim: true, ClaimEpoch: 2})
	defer next.Close()
	if !old.Superseded(1) {
		t.Fatal("the deposed leader does not see the newer claim")
	}
	if next.Superseded(2) {
		t.Fatal("the claimant superseded by its own claim")
	}
	if next.NextOffset() != 2 {
		t.Fatalf("claimant's log ends at %d, want the deposed leader's 2 synced records", next.NextOffset())
	}
	old.Close()
	if _, err := testOpener(t, root).Open(testID, storage.LogConfig{Claim: true, ClaimEpoch: 1}); err == nil {
		t.Fatal("an open below the claimed epoch succeeded")
	}
}

// TestConcurrentClaims: brokers opening one partition at once with
// different epochs (one acting on a newer assignment, the others on older
// ones) never clobber each other's claim mid-write, and the highest epoch
// is the claim every one of them reads afterwards, its open never failing.
func TestConcurrentClaims(t *testing.T) {
	root := t.TempDir()
	const brokers = 6
	openers := make([]*Opener, brokers)
	for i := range openers {
		openers[i] = testOpener(t, root)
	}
	for round := range 20 {
		base := int32(round * brokers)
		var wg sync.WaitGroup
		logs := make([]storage.Log, brokers)
		errs := make([]error, brokers)
		for i := range brokers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				logs[i], errs[i] = openers[i].Open(testID, storage.LogConfig{Claim: true, ClaimEpoch: base + int32(i) + 1})
			}()
		}
		wg.Wait()
		top := base + brokers
		if errs[brokers-1] != nil {
			t.Fatalf("round %d: the highest epoch's open failed: %v", round, errs[brokers-1])
		}
		if e, ok := readClaim(openers[0].PartitionDir(testID)); !ok || e != top {
			t.Fatalf("round %d: claim reads %d (%v), want the highest epoch %d", round, e, ok, top)
		}
		// What the highest claimant appends after stamping its epoch (as a
		// partition does) lands in the log: no lower claimant set its file
		// aside as debris.
		high := logs[brokers-1].(*Log)
		if err := high.AssignEpoch(top, high.NextOffset()); err != nil {
			t.Fatalf("round %d: stamp the highest epoch: %v", round, err)
		}
		appendN(t, high, 1, 1, 10, 1)
		if _, err := high.Sync(); err != nil {
			t.Fatal(err)
		}
		want := high.NextOffset()
		for i, l := range logs {
			if l == nil {
				continue
			}
			if l.(*Log).Superseded(top) {
				t.Fatalf("round %d: the highest claimant is superseded", round)
			}
			if i < brokers-1 && !l.(*Log).Superseded(base+int32(i)+1) {
				t.Fatalf("round %d: stale claimant %d does not see the higher claim", round, i)
			}
			l.Close()
		}
		check := openLogT(t, openers[0], storage.LogConfig{})
		if got := check.NextOffset(); got != want {
			t.Fatalf("round %d: the log ends at %d after the highest claimant appended up to %d", round, got, want)
		}
		check.Close()
	}
	ents, _ := os.ReadDir(openers[0].PartitionDir(testID))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), tmpSuffix) {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// TestDamagedClaim: a claim that does not read as valid (a claimant's
// overwrite in flight, or torn by its crash) makes the leader checking it
// superseded, never free to acknowledge; a missing claim (a log from before
// claims) does not; the next claimant writes over a damaged claim.
func TestDamagedClaim(t *testing.T) {
	root := t.TempDir()
	l := openLogT(t, testOpener(t, root), storage.LogConfig{Claim: true, ClaimEpoch: 3})
	defer l.Close()
	path := filepath.Join(l.Dir(), claimFile)
	good, err := os.ReadFile(path)
	if err != nil || len(good) != len(encodeClaim(0)) {
		t.Fatalf("claim file %q (%v): want the fixed width of %d bytes", good, err, len(encodeClaim(0)))
	}
	for name, damaged := range map[string][]byte{
		"torn":    append(append([]byte(nil), good[:10]...), encodeClaim(7)[10:]...),
		"empty":   nil,
		"garbage": []byte("0\nseven\ncrc 00000000\n"),
	} {
		if err := os.WriteFile(path, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		if !l.Superseded(3) {
			t.Errorf("%s claim: the leader is not superseded", name)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if l.Superseded(3) {
		t.Error("missing claim: the leader is superseded")
	}
	if err := os.WriteFile(path, good[:5], 0o644); err != nil {
		t.Fatal(err)
	}
	next := openLogT(t, testOpener(t, root), storage.LogConfig{Claim: true, ClaimEpoch: 4})
	defer next.Close()
	if e, ok := readClaim(next.Dir()); !ok || e != 4 {
		t.Fatalf("claim over a damaged one reads %d (%v), want 4", e, ok)
	}
	if !l.Superseded(3) || next.Superseded(4) {
		t.Fatal("after the new claim: wrong leader superseded")
	}
}

// TestOverwriteFile: a shorter content written over a longer one leaves no
// stale tail; the file is created when missing.
func TestOverwriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	for _, content := range []string{"a longer first content", "short", "", "medium one"} {
		if err := overwriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			t.Fatalf("after writing %q the file holds %q (%v)", content, b, err)
		}
	}
}

// TestMoveCreatesFewFiles counts the inodes a planned leadership move
// creates: closing a log after group commit and opening it under the next
// epoch. Creating a file is a synchronous server round trip on NFS (and
// costs far more CPU than a rename or an overwrite on a local filesystem:
// BenchmarkLeadershipMove), and a drain moves a thousand partitions at once.
// The close creates nothing: the active segment's index files were made
// beforehand, off the path, and the claim, checkpoint and snapshot are
// overwritten in place. The open takes the directory's spare set by rename
// and creates nothing either; the janitor makes the next set after the
// spare delay. Without spares the open creates the new epoch's segment, and
// then, in the background, its two empty index files.
func TestMoveCreatesFewFiles(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spares bool
	}{{"spares", true}, {"no spares", false}} {
		t.Run(tc.name, func(t *testing.T) {
			delay := time.Duration(0)
			if !tc.spares {
				delay = -1
			}
			testMoveCreates(t, tc.spares, SpareDelay(delay))
		})
	}
}

func testMoveCreates(t *testing.T, spares bool, opt Option) {
	root := t.TempDir()
	l := openLogT(t, testOpener(t, root, opt), storage.LogConfig{Claim: true, ClaimEpoch: 1})
	if err := l.AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteSnapshot("producers", []byte("first")); err != nil {
		t.Fatal(err)
	}
	inodes := func() map[string]uint64 {
		out := map[string]uint64{}
		ents, err := os.ReadDir(l.Dir())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			out[e.Name()] = fi.Sys().(*syscall.Stat_t).Ino
		}
		return out
	}
	// created: the names in after whose inode existed nowhere in before.
	// A new spare set made in the background does not count.
	created := func(before, after map[string]uint64) []string {
		old := map[uint64]bool{}
		for _, ino := range before {
			old[ino] = true
		}
		var out []string
		for name, ino := range after {
			if !old[ino] && !strings.HasSuffix(name, ".spare") {
				out = append(out, name)
			}
		}
		sort.Strings(out)
		return out
	}
	// waitFor waits for the janitor to create files.
	waitFor := func(names ...string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var missing []string
			for _, n := range names {
				if _, err := os.Stat(filepath.Join(l.Dir(), n)); err != nil {
					missing = append(missing, n)
				}
			}
			if len(missing) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%v not created in the background", missing)
			}
			time.Sleep(time.Millisecond)
		}
	}
	spareSet := []string{spareIndex, spareLog}
	active := segName(1, 0)
	for epoch := int32(2); epoch <= 4; epoch++ {
		appendN(t, l, 3, 2, 10, 1)
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		waitFor(active + indexSuffix)
		if spares {
			waitFor(spareSet...)
		}
		before := inodes()
		if err := l.WriteSnapshot("producers", fmt.Appendf(nil, "state of epoch %d", epoch)); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if c := created(before, inodes()); len(c) > 0 {
			t.Fatalf("epoch %d: the close created %v", epoch, c)
		}
		if _, _, ok := loadIndex(filepath.Join(l.Dir(), active)); !ok {
			t.Fatalf("epoch %d: the close left no valid index for %s", epoch, active)
		}
		l = openLogT(t, testOpener(t, root, opt), storage.LogConfig{Claim: true, ClaimEpoch: epoch})
		if err := l.AssignEpoch(epoch, l.NextOffset()); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		active = segName(epoch, l.NextOffset())
		waitFor(active+indexSuffix, active+logSuffix)
		after := inodes()
		var want []string
		if spares {
			for i, n := range []string{active + indexSuffix, active + logSuffix} {
				if after[n] != before[spareSet[i]] {
					t.Fatalf("epoch %d: %s is not the spare %s", epoch, n, spareSet[i])
				}
			}
		} else {
			want = []string{active + indexSuffix, active + logSuffix}
		}
		if c := created(before, after); !slices.Equal(c, want) {
			t.Fatalf("epoch %d: the move created %v, want only %v", epoch, c, want)
		}
	}
	// The new segment works: appends after the move read back.
	appendN(t, l, 3, 2, 10, 1)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openLogT(t, testOpener(t, root, opt), storage.LogConfig{Claim: true, ClaimEpoch: 4})
	defer l.Close()
	if got, want := l.NextOffset(), int64(4*3*2); got != want {
		t.Fatalf("after the moves the log ends at %d, want %d", got, want)
	}
}

// TestClaimReplacedByRename: a leader holding its claim file open still
// sees a newer claim renamed over it (how brokers before in-place claims
// wrote it), and one written in place.
func TestClaimReplacedByRename(t *testing.T) {
	l := openLogT(t, testOpener(t, t.TempDir()), storage.LogConfig{Claim: true, ClaimEpoch: 5})
	defer l.Close()
	if localFilesystem(l.Dir()) && l.claim == nil {
		t.Fatal("the claim is not held open on a local filesystem")
	}
	if l.Superseded(5) {
		t.Fatal("superseded by its own claim")
	}
	path := filepath.Join(l.Dir(), claimFile)
	if err := os.WriteFile(path+".x.tmp", encodeNumber(6), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".x.tmp", path); err != nil {
		t.Fatal(err)
	}
	if !l.Superseded(5) {
		t.Fatal("a claim renamed over the held one is not seen")
	}
	if err := overwriteFile(path, encodeClaim(7), 0o644); err != nil {
		t.Fatal(err)
	}
	if !l.Superseded(6) || l.Superseded(7) {
		t.Fatal("a claim written in place over the renamed one is not seen")
	}
}

// TestKeptClaimsBounded: past the Opener's budget of kept claim files a
// log reads its claim by path, and still sees a newer claim; closing a log
// gives its place back to the next one opened.
func TestKeptClaimsBounded(t *testing.T) {
	root := t.TempDir()
	if !localFilesystem(root) {
		t.Fatalf("%s is not a local filesystem: claims are never held open there", root)
	}
	o := testOpener(t, root, MaxKeptClaims(2))
	open := func(p int32) *Log {
		id := testID
		id.Partition = p
		sl, err := o.Open(id, storage.LogConfig{Claim: true, ClaimEpoch: 5})
		if err != nil {
			t.Fatal(err)
		}
		return sl.(*Log)
	}
	logs := []*Log{open(0), open(1), open(2), open(3)}
	for i, l := range logs {
		if kept := l.claim != nil; kept != (i < 2) {
			t.Fatalf("log %d: claim held open %t; want only the first 2 of a budget of 2", i, kept)
		}
	}
	if got := o.keptClaims.Load(); got != 2 {
		t.Fatalf("%d claims counted as kept, want 2", got)
	}
	for i, l := range logs {
		if l.Superseded(5) {
			t.Fatalf("log %d: superseded by its own claim", i)
		}
		if err := overwriteFile(filepath.Join(l.Dir(), claimFile), encodeClaim(6), 0o644); err != nil {
			t.Fatal(err)
		}
		if !l.Superseded(5) {
			t.Fatalf("log %d (claim kept open %t): a newer claim is not seen", i, l.claim != nil)
		}
	}
	if err := logs[0].Close(); err != nil {
		t.Fatal(err)
	}
	if got := o.keptClaims.Load(); got != 1 {
		t.Fatalf("after a close %d claims counted as kept, want 1", got)
	}
	if l := open(4); l.claim == nil {
		t.Fatal("a log opened after a close does not get the freed place")
	}
	if d := testOpener(t, t.TempDir()); d.opts.keptClaims != int(openFileLimit()/keptClaimsShare) || d.opts.keptClaims < 1 {
		t.Fatalf("default budget %d kept claims, want a quarter of the open-file limit %d", d.opts.keptClaims, openFileLimit())
	}
	none := testOpener(t, t.TempDir(), MaxKeptClaims(0))
	if l := openLogT(t, none, storage.LogConfig{Claim: true, ClaimEpoch: 1}); l.claim != nil || l.Superseded(1) {
		t.Fatalf("budget 0: claim held open %t, or superseded by its own claim", l.claim != nil)
	}
}

// TestFailoverRecoveryDefersSync: after a kill, the next leader opens
// every partition of the dead broker at once, each with a tail that may
// never have reached the disk. Opening costs no flush: Durable stays below
// the unsynced tail until the first Sync, and in syncfs mode those first
// Syncs share rounds instead of an fdatasync each. What they recovered is
// served.
func TestFailoverRecoveryDefersSync(t *testing.T) {
	root := t.TempDir()
	dead := testOpener(t, root)
	const logs = 32
	for p := range logs {
		id := testID
		id.Partition = int32(p)
		sl, err := dead.Open(id, storage.LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		l := sl.(*Log)
		appendN(t, l, 1, 2, 10, 1)
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		appendN(t, l, 2, 2, 10, 1) // appended, never synced nor closed: the broker died
	}
	next := testOpener(t, root)
	opened := make([]*Log, logs)
	before := Fsyncs()
	for p := range logs {
		id := testID
		id.Partition = int32(p)
		l, err := next.Open(id, storage.LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		opened[p] = l.(*Log)
		if l.NextOffset() != 6 || l.Durable() != 0 {
			t.Errorf("partition %d: recovered to %d, durable %d; want 6, durable 0 (nothing was indexed)", p, l.NextOffset(), l.Durable())
		}
	}
	if got := Fsyncs() - before; got != 0 {
		t.Fatalf("opening %d unclean tails took %d device flushes, want none", logs, got)
	}
	var wg sync.WaitGroup
	for _, l := range opened {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if d, err := l.Sync(); err != nil || d != 6 {
				t.Errorf("first Sync: durable %d (%v), want 6", d, err)
			}
		}()
	}
	wg.Wait()
	if got := Fsyncs() - before; got < 1 || got >= logs {
		t.Fatalf("the first Syncs of %d recovered logs took %d device flushes, want at least one shared round and fewer than one each", logs, got)
	}
	for p, l := range opened {
		if got := len(readAll(t, l, 0)); got == 0 {
			t.Errorf("partition %d: nothing served after the first Sync", p)
		}
	}
}

// TestSpareNotEmpty: a spare segment holding bytes (nothing kaas writes
// makes one, so it is somebody else's debris) is set aside, never appended
// to; the new segment is created instead, and recovery does not read the
// spare set as segments.
func TestSpareNotEmpty(t *testing.T) {
	root := t.TempDir()
	opt := SpareDelay(time.Hour)
	l := openLogT(t, testOpener(t, root, opt), storage.LogConfig{Claim: true, ClaimEpoch: 1})
	if err := l.AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	want := appendN(t, l, 2, 2, 10, 1)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	junk := []byte("not a record batch")
	for _, n := range []string{spareIndex} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, spareLog), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLogT(t, testOpener(t, root, opt), storage.LogConfig{Claim: true, ClaimEpoch: 2})
	if err := l.AssignEpoch(2, l.NextOffset()); err != nil {
		t.Fatal(err)
	}
	want = append(want, appendN(t, l, 1, 2, 10, 100)...)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	active := filepath.Join(dir, segName(2, 4)+logSuffix)
	if b, err := os.ReadFile(active); err != nil || bytes.Contains(b, junk) {
		t.Fatalf("the new segment took the non-empty spare: %q (%v)", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, segName(2, 4)+logSuffix+deletedSuffix)); err != nil || !bytes.Equal(b, junk) {
		t.Fatalf("the non-empty spare was not set aside: %q (%v)", b, err)
	}
	l.Close()
	l = openLogT(t, testOpener(t, root, opt), storage.LogConfig{Claim: true, ClaimEpoch: 2})
	defer l.Close()
	if got := readAll(t, l, 0); !bytes.Equal(got, concat(want)) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(concat(want)))
	}
}

// TestReleaseLeavesTailToNextLeader: a handoff's Release flushes nothing
// and does not wait for a Sync in flight; its index trailer covers what
// the last Sync covered, so the next leader trusts that prefix, scans only
// the tail after it, keeps the tail, and makes it durable with its first
// Sync. If that tail never reached the disk (a crash in between), the next
// leader keeps the prefix.
func TestReleaseLeavesTailToNextLeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose bool // the machine crashed before the next leader's Sync: the tail is gone
	}{{"tail kept", false}, {"tail lost", true}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			l := openLogT(t, testOpener(t, root), storage.LogConfig{Claim: true, ClaimEpoch: 1})
			if err := l.AssignEpoch(1, 0); err != nil {
				t.Fatal(err)
			}
			synced := appendN(t, l, 3, 2, 100, 1)
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			tail := appendN(t, l, 2, 2, 100, 50)
			active := filepath.Join(l.Dir(), segName(1, 0))
			// A Sync in flight holds syncMu: Release must not wait for it.
			l.syncMu.Lock()
			before := Fsyncs()
			released := make(chan error, 1)
			go func() { released <- l.Release() }()
			select {
			case err := <-released:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Release waited for the Sync in flight")
			}
			l.syncMu.Unlock()
			if n := Fsyncs() - before; n != 0 {
				t.Fatalf("Release flushed %d times, want 0", n)
			}
			if l.Durable() != 6 {
				t.Fatalf("released with durable %d, want 6", l.Durable())
			}
			tr, ok := readTrailer(active + indexSuffix)
			if !ok || tr.next != 6 || tr.size != int64(len(concat(synced))) {
				t.Fatalf("trailer %+v (ok %v), want the synced prefix: next 6, size %d", tr, ok, len(concat(synced)))
			}
			if tc.lose {
				if err := os.Truncate(active+logSuffix, tr.size+30); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			o, err := NewOpener(root, zerolog.New(&logs).Level(zerolog.DebugLevel), DeleteDelay(time.Hour), Sync(SyncFilesystem))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = o.Close() })
			l = openLogT(t, o, storage.LogConfig{Claim: true, ClaimEpoch: 2})
			defer l.Close()
			want, end := concat(append(synced, tail...)), int64(10)
			if tc.lose {
				want, end = concat(synced), 6
			}
			if l.NextOffset() != end || l.Durable() != 6 {
				t.Fatalf("next leader: next %d durable %d, want %d and 6", l.NextOffset(), l.Durable(), end)
			}
			var rec struct {
				Scanned int64 `json:"scanned_bytes"`
			}
			for _, line := range bytes.Split(logs.Bytes(), []byte("\n")) {
				if bytes.Contains(line, []byte(`"log recovered"`)) {
					if err := json.Unmarshal(line, &rec); err != nil {
						t.Fatal(err)
					}
				}
			}
			if wantScan := int64(len(want)) - tr.size; rec.Scanned != wantScan {
				t.Fatalf("the next leader scanned %d bytes, want only the tail's %d", rec.Scanned, wantScan)
			}
			if err := l.AssignEpoch(2, l.NextOffset()); err != nil {
				t.Fatal(err)
			}
			if d, err := l.Sync(); err != nil || d != end {
				t.Fatalf("first Sync: durable %d (%v), want %d", d, err, end)
			}
			if got := readAll(t, l, 0); !bytes.Equal(got, want) {
				t.Fatalf("read back %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

// TestReleaseDuringSync: a Release racing a group commit in flight (the
// partition actor does not wait for it) leaves a consistent log: the Sync
// either finishes or reports the log closed, and the next leader reads
// every batch.
func TestReleaseDuringSync(t *testing.T) {
	for range 20 {
		root := t.TempDir()
		o := testOpener(t, root)
		l := syncedLog(t, o)
		want := readAll(t, l, 0)
		want = append(want, concat(appendN(t, l, 3, 2, 60, 1))...)
		done := make(chan error, 1)
		go func() { _, err := l.Sync(); done <- err }()
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil && !errors.Is(err, storage.ErrClosed) {
			t.Fatalf("Sync racing Release: %v", err)
		}
		next, err := openAtEpoch(testOpener(t, root), l.id, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, next, 0); !bytes.Equal(got, want) {
			t.Fatalf("next leader read %d bytes, want %d", len(got), len(want))
		}
		next.Close()
	}
}

func TestPacerSpacesSlots(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name  string
		every time.Duration
		at    []time.Duration // request times after t0
		want  []time.Duration // waits
	}{
		{"unpaced", 0, []time.Duration{0, 0, 0}, []time.Duration{0, 0, 0}},
		{"a burst queues", 10 * time.Millisecond, []time.Duration{0, 0, 0}, []time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond}},
		{"spaced requests wait for nothing", 10 * time.Millisecond, []time.Duration{0, 10 * time.Millisecond, 25 * time.Millisecond}, []time.Duration{0, 0, 0}},
		{"a late request waits only for the queue", 10 * time.Millisecond, []time.Duration{0, 0, 5 * time.Millisecond}, []time.Duration{0, 10 * time.Millisecond, 15 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &pacer{every: tc.every}
			for i, at := range tc.at {
				if got := p.reserve(t0.Add(at)); got != tc.want[i] {
					t.Fatalf("request %d at +%v waits %v, want %v", i, at, got, tc.want[i])
				}
			}
		})
	}
}

// TestSpareCreationIsPaced: logs that all need a spare set at once make
// them at the Opener's SpareRate, not in one burst, and all get one.
func TestSpareCreationIsPaced(t *testing.T) {
	root := t.TempDir()
	const logs, rate = 12, 20 // one set per 50 ms
	o := testOpener(t, root, SpareDelay(0), SpareRate(rate))
	start := time.Now()
	var dirs []string
	for p := range logs {
		id := testID
		id.Partition = int32(p)
		sl, err := o.Open(id, storage.LogConfig{})
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, sl.(*Log).Dir())
	}
	made := func() int {
		n := 0
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, spareLog)); err == nil {
				n++
			}
		}
		return n
	}
	time.Sleep(200 * time.Millisecond)
	// Slots are reserved in real time: by now at most one per 50 ms since
	// the first open (plus the first), however slow the machine.
	if n, most := made(), int(time.Since(start)/(time.Second/rate))+1; n > most {
		t.Fatalf("%d of %d logs made spares within %v; want at most %d", n, logs, time.Since(start), most)
	}
	deadline := time.Now().Add(10 * time.Second)
	for made() < logs {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d logs made spares", made(), logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOpenLeavesCleanSegmentsUnread: an open takes the sealed segments an
// earlier open found clean (below the checkpoint's sealed offset) without
// reading their trailers, so its cost does not grow with the partition's
// history; reads, timestamp lookups and retention still see every
// segment as it is.
func TestOpenLeavesCleanSegmentsUnread(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_700_000_000, 0)
	o := testOpener(t, dir, Clock(func() time.Time { return now }), SpareDelay(-1))
	cfg := storage.LogConfig{SegmentBytes: 1000}
	l := openLogT(t, o, cfg)
	bs := appendN(t, l, 100, 1, 100, now.UnixMilli()) // ~5 batches per segment: ~20 segments
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The first reopen reads every trailer and records the sealed offset
	// with its epoch; the next one reads none of those.
	reopen := func(epoch int32) (*Log, int64) {
		t.Helper()
		before := trailerReads.Load()
		l := openLogT(t, o, cfg)
		reads := trailerReads.Load() - before
		if err := l.AssignEpoch(epoch, l.NextOffset()); err != nil {
			t.Fatal(err)
		}
		return l, reads
	}
	l, first := reopen(1)
	sealed := int64(len(segFiles(t, l.Dir(), logSuffix)) - 1)
	if first < sealed {
		t.Fatalf("the first open read %d trailers of %d sealed segments", first, sealed)
	}
	_ = l.Close()
	l, second := reopen(2)
	if second > 2 {
		t.Fatalf("the second open read %d trailers; want at most two: the segment sealed since, and the active one", second)
	}
	if !bytes.Equal(readAll(t, l, 0), concat(bs)) {
		t.Fatal("data read after an open that left segments unread differs")
	}
	_ = l.Close()

	// Timestamp lookups and retention on a fresh open (nothing read yet).
	l, _ = reopen(3)
	defer l.Close()
	want := bs[57]
	wh, _ := batch.ParseHeader(want)
	got, found, err := l.FindTimestamp(wh.FirstTimestamp, 0, l.NextOffset())
	if err != nil || !found {
		t.Fatalf("find timestamp: found %v err %v", found, err)
	}
	if gh, _ := batch.ParseHeader(got); gh.BaseOffset != wh.BaseOffset {
		t.Fatalf("timestamp %d found at offset %d, want %d", wh.FirstTimestamp, gh.BaseOffset, wh.BaseOffset)
	}
	lh, _ := batch.ParseHeader(bs[len(bs)-1])
	if ts, off, err := l.MaxTimestamp(l.NextOffset()); err != nil || ts != lh.MaxTimestamp || off != lh.BaseOffset {
		t.Fatalf("max timestamp %d at %d (%v), want %d at %d", ts, off, err, lh.MaxTimestamp, lh.BaseOffset)
	}
	l.SetConfig(storage.LogConfig{SegmentBytes: 1000, RetentionBytes: 3000})
	if err := l.EnforceRetention(now); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range segFiles(t, l.Dir(), logSuffix) {
		fi, _ := os.Stat(p)
		total += fi.Size()
	}
	if total > 3000+1000 || l.StartOffset() == 0 {
		t.Fatalf("retention.bytes kept %d bytes, start offset %d", total, l.StartOffset())
	}
	if !bytes.Equal(readAll(t, l, l.StartOffset()), concat(bs[l.StartOffset():])) {
		t.Fatal("data kept by retention differs")
	}
}

// reopenedClean builds a log of batches one-record batches (about five to
// a 1,000-byte segment), closes it, opens it and stamps epoch 1 (which
// records the sealed offset), closes it and opens it once more: the open
// that leaves the clean segments unread.
func reopenedClean(t *testing.T, o *Opener, batches int) (*Log, [][]byte) {
	t.Helper()
	cfg := storage.LogConfig{SegmentBytes: 1000}
	l := openLogT(t, o, cfg)
	bs := appendN(t, l, batches, 1, 100, 1)
	_ = l.Close()
	l = openLogT(t, o, cfg)
	if err := l.AssignEpoch(1, l.NextOffset()); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	return openLogT(t, o, cfg), bs
}

// TestUnreadSegmentChangedSinceOpen: a segment left unread whose trailer
// no longer matches when it is first needed is validated from its bytes
// (and served when they are intact); one whose bytes are gone is reported
// corrupt, never served short.
func TestUnreadSegmentChangedSinceOpen(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, prefix string)
		corrupt bool
	}{
		{"trailer overwritten", func(t *testing.T, prefix string) {
			if err := os.WriteFile(prefix+indexSuffix, make([]byte, trailerSize), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"segment truncated", func(t *testing.T, prefix string) {
			fi, err := os.Stat(prefix + logSuffix)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(prefix+logSuffix, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, bs := reopenedClean(t, testOpener(t, t.TempDir(), SpareDelay(-1)), 60)
			defer l.Close()
			// Damage the fourth segment after the open that left it unread.
			segs := segFiles(t, l.Dir(), logSuffix)
			victim := strings.TrimSuffix(segs[3], logSuffix)
			_, base, _ := parseSegName(filepath.Base(victim))
			tc.damage(t, victim)
			r, err := l.Read(base, 1<<20, l.NextOffset())
			if tc.corrupt {
				if err != nil && !errors.Is(err, ErrCorruptSegment) {
					t.Fatal(err)
				}
				if err == nil {
					b, _ := r.AppendTo(nil)
					_ = r.Close()
					// What is served must be intact batches of the segment,
					// and the read past them fails.
					bss, _, serr := batch.Split(b)
					if serr != nil || len(bss) == 0 || !bytes.Equal(b, concat(bs[base:base+int64(len(bss))])) {
						t.Fatalf("served %d damaged bytes (split: %v)", len(b), serr)
					}
					if _, err = l.Read(base+int64(len(bss)), 1<<20, l.NextOffset()); !errors.Is(err, ErrCorruptSegment) {
						t.Fatalf("a read past the truncation: %v, want ErrCorruptSegment", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_ = r.Close()
			if !bytes.Equal(readAll(t, l, 0), concat(bs)) {
				t.Fatal("data differs after the trailer changed")
			}
		})
	}
}

// TestUnreadSegmentSetAsideMeanwhile: a segment left unread that retention
// renames aside before a read in flight loads it still reads its trailer
// (from the renamed index), not a damaged segment.
func TestUnreadSegmentSetAsideMeanwhile(t *testing.T) {
	l, bs := reopenedClean(t, testOpener(t, t.TempDir(), SpareDelay(-1)), 30)
	defer l.Close()
	l.mu.RLock()
	first := l.segments[0]
	l.mu.RUnlock()
	if !first.unread {
		t.Fatal("the oldest segment was read at open")
	}
	l.setAside(first)
	l.loadSealed(first)
	first.mu.RLock()
	size, next, corrupt, fromTrailer := first.size, first.next, first.corruptAt, first.indexOnDisk
	first.mu.RUnlock()
	var want int64
	for _, b := range bs[:next] {
		want += int64(len(b))
	}
	if corrupt >= 0 || size != want || !fromTrailer {
		t.Fatalf("set-aside segment loaded with size %d (want %d), corrupt at %d, from its trailer %v", size, want, corrupt, fromTrailer)
	}
}

// TestUnreadSegmentsAreReadInTheBackground: the segments an open left
// unread are read by the log itself after UnreadDelay, so the partition's
// first retention check (in its actor) finds them read.
func TestUnreadSegmentsAreReadInTheBackground(t *testing.T) {
	l, _ := reopenedClean(t, testOpener(t, t.TempDir(), SpareDelay(-1), UnreadDelay(10*time.Millisecond)), 60)
	defer l.Close()
	unread := func() int {
		l.mu.RLock()
		defer l.mu.RUnlock()
		n := 0
		for _, s := range l.segments {
			s.mu.RLock()
			if s.unread {
				n++
			}
			s.mu.RUnlock()
		}
		return n
	}
	if unread() == 0 {
		t.Fatal("the open read every segment")
	}
	deadline := time.Now().Add(5 * time.Second)
	for unread() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d segments still unread", unread())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOpenAfterTheDataDirIsGone: a partition opened after its data dir went
// from under the opener (a volume unmounted, the directory removed) fails,
// and the data dir is not made again, where nothing would be durable.
func TestOpenAfterTheDataDirIsGone(t *testing.T) {
	root := filepath.Join(t.TempDir(), "data")
	o := testOpener(t, root)
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if l, err := o.Open(testID, storage.LogConfig{}); err == nil {
		_ = l.Close()
		t.Fatal("a partition opened in a data dir that is gone")
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the data dir after the open: %v", err)
	}
}
