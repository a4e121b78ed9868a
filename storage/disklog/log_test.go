package disklog

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/memlog"
)

func TestAppendReadReopen(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, dir)
	cfg := storage.LogConfig{SegmentBytes: 4096, IndexInterval: 512}
	l := openLogT(t, o, cfg)
	if err := l.AssignEpoch(0, 0); err != nil {
		t.Fatal(err)
	}
	bs := appendN(t, l, 200, 3, 40, 1000)
	if got, want := l.NextOffset(), int64(600); got != want {
		t.Fatalf("next %d want %d", got, want)
	}
	if d, err := l.Sync(); err != nil || d != 600 {
		t.Fatalf("sync %d %v", d, err)
	}
	if !bytes.Equal(readAll(t, l, 0), concat(bs)) {
		t.Fatal("read back differs")
	}
	// Every offset resolves to the batch containing it.
	for off := int64(0); off < 600; off += 7 {
		r, err := l.Read(off, 1, 600)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := r.AppendTo(nil)
		r.Close()
		if !bytes.Equal(b, bs[off/3]) {
			t.Fatalf("offset %d: wrong batch", off)
		}
	}
	// limit: never a batch whose base is >= limit.
	r, _ := l.Read(0, 1<<20, 31)
	b, _ := r.AppendTo(nil)
	r.Close()
	if !bytes.Equal(b, concat(bs[:11])) {
		t.Fatalf("limit 31: got %d bytes", len(b))
	}
	if r, _ := l.Read(600, 100, 600); r.Len() != 0 {
		t.Fatal("read at end not empty")
	}
	if _, err := l.Read(601, 100, 700); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("read past end: %v", err)
	}
	if n := len(segFiles(t, l.Dir(), logSuffix)); n < 5 {
		t.Fatalf("%d segments, want rolling", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLogT(t, o, cfg)
	defer l2.Close()
	if l2.NextOffset() != 600 || l2.Durable() != 600 || l2.StartOffset() != 0 {
		t.Fatalf("reopened: next %d durable %d start %d", l2.NextOffset(), l2.Durable(), l2.StartOffset())
	}
	if !bytes.Equal(readAll(t, l2, 0), concat(bs)) {
		t.Fatal("read back after reopen differs")
	}
	more := appendN(t, l2, 10, 1, 10, 5000)
	if !bytes.Equal(readAll(t, l2, 600), concat(more)) {
		t.Fatal("appends after reopen")
	}
}

// TestMatchesMemlog drives disklog and memlog with the same random
// operations and compares every answer.
func TestMatchesMemlog(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	o := testOpener(t, t.TempDir())
	cfg := storage.LogConfig{SegmentBytes: 3000, IndexInterval: 300}
	d := openLogT(t, o, cfg)
	defer d.Close()
	m := memlog.New(cfg)
	ts := int64(1_000_000)
	for i := 0; i < 300; i++ {
		n := 1 + rng.Intn(5)
		ts += int64(rng.Intn(100)) - 30
		b := mkBatch(d.NextOffset(), n, ts, rng.Intn(200))
		h, _ := batch.Validate(b)
		if err := d.Append(b, h); err != nil {
			t.Fatal(err)
		}
		if err := m.Append(append([]byte(nil), b...), h); err != nil {
			t.Fatal(err)
		}
	}
	next := d.NextOffset()
	if d.StartOffset() != m.StartOffset() {
		t.Fatal("start differs")
	}
	check := func() {
		t.Helper()
		for k := 0; k < 300; k++ {
			off := d.StartOffset() + rng.Int63n(next-d.StartOffset())
			limit := off + 1 + rng.Int63n(next-off) // offset >= limit is empty by contract
			maxB := rng.Intn(3000)
			rd, err1 := d.Read(off, maxB, limit)
			rm, err2 := m.Read(off, maxB, limit)
			if (err1 == nil) != (err2 == nil) {
				t.Fatalf("read %d: %v vs %v", off, err1, err2)
			}
			bd, _ := rd.AppendTo(nil)
			bm, _ := rm.AppendTo(nil)
			rd.Close()
			// disklog never crosses a segment: its answer is a prefix of
			// memlog's, and holds at least the first batch.
			if !bytes.HasPrefix(bm, bd) || (len(bm) > 0 && len(bd) == 0) {
				t.Fatalf("read off=%d max=%d limit=%d: disk %d bytes, mem %d bytes", off, maxB, limit, len(bd), len(bm))
			}
			q := ts - int64(rng.Intn(20000))
			b1, ok1, _ := d.FindTimestamp(q, off, limit)
			b2, ok2, _ := m.FindTimestamp(q, off, limit)
			if ok1 != ok2 || !bytes.Equal(b1, b2) {
				t.Fatalf("FindTimestamp(%d, %d, %d): %v/%v", q, off, limit, ok1, ok2)
			}
			if h, err := batch.ParseHeader(b1); ok1 && (err != nil || h.NextOffset() <= off || h.MaxTimestamp < q) {
				t.Fatalf("FindTimestamp(%d, %d, %d): a batch ending at %d stamped up to %d", q, off, limit, h.NextOffset(), h.MaxTimestamp)
			}
			t1, o1, _ := d.MaxTimestamp(limit)
			t2, o2, _ := m.MaxTimestamp(limit)
			if t1 != t2 || o1 != o2 {
				t.Fatalf("MaxTimestamp(%d): disk %d@%d mem %d@%d", limit, t1, o1, t2, o2)
			}
		}
		var hd, hm []int64
		from := d.StartOffset() + 13
		_ = d.ScanHeaders(from, func(h batch.Header) error { hd = append(hd, h.BaseOffset); return nil })
		_ = m.ScanHeaders(from, func(h batch.Header) error { hm = append(hm, h.BaseOffset); return nil })
		// memlog lists whole in-memory segments from the one holding from;
		// disklog starts at the batch holding from.
		if len(hd) == 0 || !int64sSuffix(hm, hd) || hd[0] > from {
			t.Fatalf("ScanHeaders differ: %v vs %v", hd, hm)
		}
	}
	check()
	if err := d.SetStartOffset(437); err != nil {
		t.Fatal(err)
	}
	_ = m.SetStartOffset(437)
	check()
}

func int64sSuffix(all, suf []int64) bool {
	if len(suf) > len(all) {
		return false
	}
	off := len(all) - len(suf)
	for i := range suf {
		if all[off+i] != suf[i] {
			return false
		}
	}
	return true
}

func TestRollBySegmentMs(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	o := testOpener(t, t.TempDir(), Clock(clock))
	l := openLogT(t, o, storage.LogConfig{SegmentMs: time.Minute})
	defer l.Close()
	appendN(t, l, 3, 1, 10, now.UnixMilli())
	now = now.Add(30 * time.Second)
	if err := l.EnforceRetention(now); err != nil {
		t.Fatal(err)
	}
	if n := len(segFiles(t, l.Dir(), logSuffix)); n != 1 {
		t.Fatalf("%d segments before segment.ms", n)
	}
	now = now.Add(31 * time.Second)
	if err := l.EnforceRetention(now); err != nil {
		t.Fatal(err)
	}
	if n := len(segFiles(t, l.Dir(), logSuffix)); n != 2 {
		t.Fatalf("%d segments after segment.ms, want 2", n)
	}
	// An empty active segment never rolls.
	now = now.Add(time.Hour)
	_ = l.EnforceRetention(now)
	if n := len(segFiles(t, l.Dir(), logSuffix)); n != 2 {
		t.Fatalf("%d segments, empty active rolled", n)
	}
	// Appending after segment.ms rolls as well.
	appendN(t, l, 1, 1, 10, now.UnixMilli())
	now = now.Add(2 * time.Minute)
	appendN(t, l, 1, 1, 10, now.UnixMilli())
	if n := len(segFiles(t, l.Dir(), logSuffix)); n != 3 {
		t.Fatalf("%d segments, want a roll on append", n)
	}
}

// TestRollBySegmentJitter: a segment rolls by time segment.ms less its
// share of segment.jitter.ms (the jitter capped at segment.ms, as Kafka
// caps it), whether the roll comes from the retention check or an append.
func TestRollBySegmentJitter(t *testing.T) {
	for _, tc := range []struct {
		name          string
		jitter        time.Duration
		frac          float64
		want          time.Duration
		rollsOnAppend bool
	}{
		{"no jitter", 0, 0.5, time.Minute, false},
		{"half of 20s", 20 * time.Second, 0.5, 50 * time.Second, false},
		{"none drawn", 20 * time.Second, 0, time.Minute, false},
		{"capped at segment.ms", 10 * time.Minute, 0.5, 30 * time.Second, false},
		{"on append", 20 * time.Second, 0.5, 50 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(1_700_000_000, 0)
			now := start
			o := testOpener(t, t.TempDir(), Clock(func() time.Time { return now }), RollJitter(func() float64 { return tc.frac }))
			l := openLogT(t, o, storage.LogConfig{SegmentMs: time.Minute, SegmentJitter: tc.jitter})
			defer l.Close()
			appendN(t, l, 1, 1, 10, now.UnixMilli())
			step := func(at time.Duration) int {
				now = start.Add(at)
				if tc.rollsOnAppend {
					appendN(t, l, 1, 1, 10, now.UnixMilli())
				} else if err := l.EnforceRetention(now); err != nil {
					t.Fatal(err)
				}
				return len(segFiles(t, l.Dir(), logSuffix))
			}
			if n := step(tc.want - time.Second); n != 1 {
				t.Fatalf("%d segments a second before %v", n, tc.want)
			}
			if n := step(tc.want); n != 2 {
				t.Fatalf("%d segments at %v, want 2", n, tc.want)
			}
		})
	}
}

// TestSegmentJitterSpreadsRolls: with the default random source, logs
// opened together with segment.jitter.ms equal to segment.ms roll at
// different ages, each within segment.ms.
func TestSegmentJitterSpreadsRolls(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	now := start
	o := testOpener(t, t.TempDir(), Clock(func() time.Time { return now }))
	var logs []*Log
	for i := range 16 {
		l, err := o.Open(storage.PartitionID{Topic: testID.Topic, TopicID: testID.TopicID, Partition: int32(i)}, storage.LogConfig{SegmentMs: time.Minute, SegmentJitter: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		logs = append(logs, l.(*Log))
		appendN(t, logs[i], 1, 1, 10, now.UnixMilli())
	}
	ages := map[time.Duration]bool{}
	rolled := make([]bool, len(logs))
	for at := time.Second; at <= time.Minute; at += time.Second {
		now = start.Add(at)
		for i, l := range logs {
			if rolled[i] {
				continue
			}
			if err := l.EnforceRetention(now); err != nil {
				t.Fatal(err)
			}
			if len(segFiles(t, l.Dir(), logSuffix)) == 2 {
				rolled[i], ages[at] = true, true
			}
		}
	}
	for i, r := range rolled {
		if !r {
			t.Fatalf("log %d did not roll within segment.ms", i)
		}
	}
	if len(ages) < 2 {
		t.Fatalf("all %d logs rolled at the same age: %v", len(logs), ages)
	}
}

func TestRetentionAndDeleteRecords(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_700_000_000, 0)
	o := testOpener(t, dir, Clock(func() time.Time { return now }), DeleteDelay(50*time.Millisecond))
	cfg := storage.LogConfig{SegmentBytes: 1000, RetentionBytes: 3000}
	l := openLogT(t, o, cfg)
	bs := appendN(t, l, 100, 1, 100, now.UnixMilli()) // ~170 B each: ~5 per segment
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	before := len(segFiles(t, l.Dir(), logSuffix))
	if err := l.EnforceRetention(now); err != nil {
		t.Fatal(err)
	}
	after := len(segFiles(t, l.Dir(), logSuffix))
	if after >= before || after > 5 {
		t.Fatalf("segments %d -> %d", before, after)
	}
	var total int64
	for _, p := range segFiles(t, l.Dir(), logSuffix) {
		fi, _ := os.Stat(p)
		total += fi.Size()
	}
	if total > 3000+1000 {
		t.Fatalf("%d bytes kept", total)
	}
	start := l.StartOffset()
	if start == 0 {
		t.Fatal("start offset did not move")
	}
	if !bytes.Equal(readAll(t, l, start), concat(bs[start:])) {
		t.Fatal("kept data differs")
	}
	if _, err := l.Read(start-1, 100, 100); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if len(segFiles(t, l.Dir(), logSuffix+deletedSuffix)) == 0 {
		t.Fatal("no segment renamed aside")
	}
	// DeleteRecords: inside a segment, then persisted across a crash.
	if err := l.SetStartOffset(start + 7); err != nil {
		t.Fatal(err)
	}
	if err := l.SetStartOffset(l.NextOffset() + 1); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("start beyond end: %v", err)
	}
	if l.StartOffset() != start+7 {
		t.Fatal("start not moved")
	}
	time.Sleep(200 * time.Millisecond) // janitor: start offset file, unlinks
	if n := len(segFiles(t, l.Dir(), deletedSuffix)); n != 0 {
		t.Fatalf("%d .deleted files left after the delete delay", n)
	}
	l.crash()
	l2 := openLogT(t, o, cfg)
	defer l2.Close()
	if l2.StartOffset() != start+7 || l2.NextOffset() != 100 {
		t.Fatalf("after crash: start %d (want %d) next %d", l2.StartOffset(), start+7, l2.NextOffset())
	}
	// Retention by time: every segment expires, the active one too (rolled
	// first): one empty segment is left.
	l2.SetConfig(storage.LogConfig{SegmentBytes: 1000, RetentionMs: time.Hour})
	now = now.Add(2 * time.Hour)
	if _, err := l2.Sync(); err != nil { // the recovered tail known durable
		t.Fatal(err)
	}
	if err := l2.EnforceRetention(now); err != nil {
		t.Fatal(err)
	}
	if n := len(segFiles(t, l2.Dir(), logSuffix)); n != 1 {
		t.Fatalf("%d segments after retention.ms, want only a new active one", n)
	}
	if l2.NextOffset() != 100 || l2.StartOffset() != 100 {
		t.Fatalf("after retention.ms start %d next %d", l2.StartOffset(), l2.NextOffset())
	}
}

// TestRetentionDeletesAnExpiredActiveSegment: as Kafka, a quiet partition
// keeps nothing older than retention.ms, the active segment included (it is
// rolled, then deleted), but only once all of it is durable; the log goes
// on at its end and its start survives a crash.
func TestRetentionDeletesAnExpiredActiveSegment(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	o := testOpener(t, t.TempDir(), Clock(func() time.Time { return now }))
	cfg := storage.LogConfig{RetentionMs: time.Hour}
	l := openLogT(t, o, cfg)
	appendN(t, l, 10, 1, 100, now.UnixMilli())
	if err := l.EnforceRetention(now.Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 0 {
		t.Fatalf("records not yet durable deleted: start %d", l.StartOffset())
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.EnforceRetention(now.Add(30 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 0 || len(segFiles(t, l.Dir(), logSuffix)) != 1 {
		t.Fatalf("within retention.ms: start %d, %d segments", l.StartOffset(), len(segFiles(t, l.Dir(), logSuffix)))
	}
	if err := l.EnforceRetention(now.Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 10 || l.NextOffset() != 10 || len(segFiles(t, l.Dir(), logSuffix)) != 1 {
		t.Fatalf("after retention.ms: start %d next %d, %d segments", l.StartOffset(), l.NextOffset(), len(segFiles(t, l.Dir(), logSuffix)))
	}
	if _, err := l.Read(9, 1<<20, 10); !errors.Is(err, storage.ErrOffsetOutOfRange) {
		t.Fatalf("read of a deleted offset: %v", err)
	}
	if r, err := l.Read(10, 1<<20, 10); err != nil || r.Len() != 0 {
		t.Fatalf("read at the end: %v", err)
	}
	// The new, empty active segment is not rolled again.
	if err := l.EnforceRetention(now.Add(3 * time.Hour)); err != nil || len(segFiles(t, l.Dir(), logSuffix)) != 1 {
		t.Fatalf("an empty active segment: %v, %d segments", err, len(segFiles(t, l.Dir(), logSuffix)))
	}
	bs := appendN(t, l, 1, 1, 100, now.Add(3*time.Hour).UnixMilli())
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // janitor: the start-offset file
	l.crash()
	l2 := openLogT(t, o, cfg)
	defer l2.Close()
	if l2.StartOffset() != 10 || l2.NextOffset() != 11 || !bytes.Equal(readAll(t, l2, 10), bs[0]) {
		t.Fatalf("after a crash: start %d next %d", l2.StartOffset(), l2.NextOffset())
	}
}

// TestRetentionKeepingNothing: Kafka's retention.bytes=0 and retention.ms=0
// (negative in LogConfig) delete every segment, the active one too once it
// is durable, and the partition goes on at its end.
func TestRetentionKeepingNothing(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for name, cfg := range map[string]storage.LogConfig{
		"retention.bytes=0": {SegmentBytes: 1000, RetentionBytes: -1},
		"retention.ms=0":    {SegmentBytes: 1000, RetentionMs: -1},
	} {
		t.Run(name, func(t *testing.T) {
			o := testOpener(t, t.TempDir(), Clock(func() time.Time { return now }))
			l := openLogT(t, o, cfg)
			defer l.Close()
			appendN(t, l, 30, 1, 100, now.Add(-time.Second).UnixMilli()) // ~170 B each: several segments
			if err := l.EnforceRetention(now); err != nil {
				t.Fatal(err)
			}
			if l.StartOffset() != 0 {
				t.Fatalf("records not yet durable deleted: start %d", l.StartOffset())
			}
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := l.EnforceRetention(now); err != nil {
				t.Fatal(err)
			}
			if l.StartOffset() != 30 || l.NextOffset() != 30 || len(segFiles(t, l.Dir(), logSuffix)) != 1 {
				t.Fatalf("after the sync: start %d next %d, %d segments", l.StartOffset(), l.NextOffset(), len(segFiles(t, l.Dir(), logSuffix)))
			}
			bs := appendN(t, l, 1, 1, 100, now.UnixMilli())
			if r, err := l.Read(30, 1<<20, 31); err != nil || r.Len() != len(bs[0]) {
				t.Fatalf("read of a new record: %v", err)
			}
		})
	}
}

// TestFileDeleteDelay: the files of a segment retention or DeleteRecords
// deletes are unlinked after the log's own file.delete.delay.ms, not the
// Opener's DeleteDelay, which only a config without one (a partner log
// built by hand here) falls back on; a changed config applies to the
// segments deleted after the change.
func TestFileDeleteDelay(t *testing.T) {
	const short, long = 20 * time.Millisecond, time.Hour
	cfg := func(d time.Duration) storage.LogConfig {
		return storage.LogConfig{SegmentBytes: 1000, RetentionBytes: 3000, FileDeleteDelay: d}
	}
	// deleteSome fills l and has retention delete its oldest segments; it
	// returns the files renamed aside so far.
	deleteSome := func(t *testing.T, l *Log) []string {
		t.Helper()
		appendN(t, l, 50, 1, 100, 1) // ~170 B each: ~5 per segment
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := l.EnforceRetention(time.Now()); err != nil {
			t.Fatal(err)
		}
		aside := segFiles(t, l.Dir(), deletedSuffix)
		if len(aside) == 0 {
			t.Fatal("no segment renamed aside")
		}
		return aside
	}
	// waitAside polls until exactly want are renamed aside in l.
	waitAside := func(t *testing.T, l *Log, want []string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := segFiles(t, l.Dir(), deletedSuffix)
			if slices.Equal(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("renamed aside: %v, want %v", got, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	partner := storage.PartitionID{Topic: testID.Topic, TopicID: testID.TopicID, Partition: 1}

	t.Run("shorter than the opener's", func(t *testing.T) {
		o := testOpener(t, t.TempDir(), DeleteDelay(long))
		l := openLogT(t, o, cfg(short))
		defer l.Close()
		deleteSome(t, l)
		waitAside(t, l, nil)
	})
	t.Run("zero unlinks at once", func(t *testing.T) {
		o := testOpener(t, t.TempDir(), DeleteDelay(long))
		l := openLogT(t, o, cfg(-1)) // topicconfig's file.delete.delay.ms=0
		defer l.Close()
		// The unlink may come before a look for the files renamed aside:
		// retention deleted segments, and none stays aside.
		appendN(t, l, 50, 1, 100, 1)
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := l.EnforceRetention(time.Now()); err != nil {
			t.Fatal(err)
		}
		if l.StartOffset() == 0 {
			t.Fatal("retention deleted no segment")
		}
		waitAside(t, l, nil)
	})
	t.Run("longer than the opener's", func(t *testing.T) {
		o := testOpener(t, t.TempDir(), DeleteDelay(short))
		l := openLogT(t, o, cfg(long))
		defer l.Close()
		p, err := o.Open(partner, cfg(0))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		kept := deleteSome(t, l)
		deleteSome(t, p.(*Log))
		// The partner's files go after the opener's delay; by then the
		// log's own are still there.
		waitAside(t, p.(*Log), nil)
		waitAside(t, l, kept)
	})
	t.Run("changed config", func(t *testing.T) {
		o := testOpener(t, t.TempDir(), DeleteDelay(long))
		l := openLogT(t, o, cfg(long))
		defer l.Close()
		kept := deleteSome(t, l)
		l.SetConfig(cfg(short))
		if n := len(deleteSome(t, l)); n <= len(kept) {
			t.Fatalf("%d files renamed aside after %d: none more deleted", n, len(kept))
		}
		waitAside(t, l, kept)
	})
}

func TestLazyLRUReads(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, dir, MaxOpenFiles(2))
	cfg := storage.LogConfig{SegmentBytes: 600}
	l := openLogT(t, o, cfg)
	bs := appendN(t, l, 60, 1, 100, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLogT(t, o, cfg)
	defer l.Close()
	if n := o.OpenFiles(); n != 0 {
		t.Fatalf("%d descriptors cached right after open, want lazy", n)
	}
	// Hold records of the first segment while reading all the others.
	held, err := l.Read(0, 1, 60)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, l, 0), concat(bs)) {
		t.Fatal("read back differs")
	}
	if n := o.OpenFiles(); n > 2 {
		t.Fatalf("%d cached descriptors, bound is 2", n)
	}
	b, err := held.AppendTo(nil)
	if err != nil || !bytes.Equal(b, bs[0]) {
		t.Fatalf("held records after eviction: %v", err)
	}
	held.Close()
}

func TestConcurrentSyncReadAppend(t *testing.T) {
	o := testOpener(t, t.TempDir(), MaxOpenFiles(3))
	l := openLogT(t, o, storage.LogConfig{SegmentBytes: 8 << 10, IndexInterval: 256, RetentionBytes: 256 << 10})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var bad error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		if bad == nil {
			bad = err
		}
		mu.Unlock()
	}
	wg.Add(3)
	go func() { // group commit
		defer wg.Done()
		last := int64(0)
		for {
			select {
			case <-stop:
				return
			default:
			}
			d, err := l.Sync()
			if err != nil {
				fail(err)
				return
			}
			if d < last || l.Durable() < d {
				fail(errors.New("durable went backwards"))
			}
			last = d
			if err := l.WriteSnapshot("producers", []byte{byte(d)}); err != nil {
				fail(err)
				return
			}
		}
	}()
	for r := 0; r < 2; r++ {
		go func() { // fetchers below the durable offset
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(r)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				hw, start := l.Durable(), l.StartOffset()
				if hw <= start {
					continue
				}
				off := start + rng.Int63n(hw-start)
				recs, err := l.Read(off, 1+rng.Intn(4000), hw)
				if errors.Is(err, storage.ErrOffsetOutOfRange) {
					continue // retention moved the start meanwhile
				}
				if err != nil {
					fail(err)
					return
				}
				b, err := recs.AppendTo(nil)
				recs.Close()
				if err != nil {
					fail(err)
					return
				}
				bs, rest, err := batch.Split(b)
				if err != nil || len(rest) > 0 || len(bs) == 0 {
					fail(errors.New("torn read"))
					return
				}
				for _, x := range bs {
					h, err := batch.Validate(x)
					if err != nil || h.BaseOffset >= hw {
						fail(errors.New("bad batch in read"))
						return
					}
				}
				_, _, _ = l.MaxTimestamp(hw)
				_, _, _ = l.FindTimestamp(int64(off), 0, hw)
			}
		}()
	}
	for i := 0; i < 30; i++ { // the owner: appends, retention, DeleteRecords
		appendN(t, l, 100, 2, 50, 1)
		if err := l.EnforceRetention(time.Now()); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			if err := l.SetStartOffset(l.StartOffset() + 5); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	if bad != nil {
		t.Fatal(bad)
	}
	if d, err := l.Sync(); err != nil || d != 6000 {
		t.Fatalf("final sync %d %v", d, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// openFDs lists this process's descriptors whose target is under dir.
func openFDs(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("list /proc/self/fd: %v", err)
	}
	var out []string
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		// The Opener's own descriptor on the data directory (syncfs) is
		// not a log's.
		if err == nil && strings.HasPrefix(target, dir+"/") {
			out = append(out, target)
		}
	}
	return out
}

func TestNoDescriptorsAfterClose(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, dir, DeleteDelay(time.Millisecond))
	cfg := storage.LogConfig{SegmentBytes: 500, RetentionBytes: 2000}
	l := openLogT(t, o, cfg)
	appendN(t, l, 50, 1, 100, 1)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = l.WriteSnapshot("producers", []byte("{}"))
	readAll(t, l, 0)
	_ = l.EnforceRetention(time.Now())
	r, _ := l.Read(l.StartOffset(), 1, l.NextOffset())
	if len(openFDs(t, dir)) == 0 {
		t.Fatal("expected open descriptors while the log is open")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Records handed out before Close keep their descriptor until closed.
	if _, err := r.AppendTo(nil); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if fds := openFDs(t, dir); len(fds) != 0 {
		t.Fatalf("descriptors still open after Close: %v", fds)
	}
	// Reopen, read lazily, close again.
	l = openLogT(t, o, cfg)
	readAll(t, l, l.StartOffset())
	_ = l.Close()
	if fds := openFDs(t, dir); len(fds) != 0 {
		t.Fatalf("descriptors still open after the second Close: %v", fds)
	}
	if err := o.Remove(testID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(o.PartitionDir(testID)); !os.IsNotExist(err) {
		t.Fatal("partition directory still in place after Remove")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*"+deletedSuffix)); len(m) != 1 {
		t.Fatalf("want the directory renamed aside, got %v", m)
	}
}

// TestRemoveDeletesAfterDelay: Remove renames a closed partition's
// directory aside and deletes it after the delay in force when it was
// removed (DeleteDelay, then SetDeleteDelay's).
func TestRemoveDeletesAfterDelay(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, dir, DeleteDelay(time.Hour))
	l := openLogT(t, o, storage.LogConfig{})
	appendN(t, l, 3, 1, 10, 1)
	if err := o.Remove(testID); err == nil {
		t.Fatal("Remove of an open log succeeded")
	}
	_ = l.Close()
	if err := o.Remove(testID); err != nil {
		t.Fatal(err)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, "*"+deletedSuffix))
	if len(aside) != 1 {
		t.Fatalf("renamed aside: %v, want the removed directory kept for the hour", aside)
	}
	// A recreated topic (new id) starts empty; the same id too after Remove.
	l = openLogT(t, o, storage.LogConfig{})
	if l.NextOffset() != 0 {
		t.Fatal("data survived Remove")
	}
	appendN(t, l, 3, 1, 10, 1)
	_ = l.Close()
	o.SetDeleteDelay(20 * time.Millisecond)
	if err := o.Remove(testID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ents, _ := os.ReadDir(dir)
		if len(ents) == 1 && filepath.Join(dir, ents[0].Name()) == aside[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a Remove with a 20 ms delay: %v, want only %s", ents, aside[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEpochsAndSnapshots(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, dir)
	l := openLogT(t, o, storage.LogConfig{})
	if err := l.AssignEpoch(3, 0); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 5, 2, 10, 1)
	if err := l.AssignEpoch(2, 10); err == nil {
		t.Fatal("lower epoch accepted")
	}
	if err := l.AssignEpoch(5, 10); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(5, 10); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 5, 2, 10, 1)
	// A new epoch rolls to a fresh segment stamped with it.
	names := segFiles(t, l.Dir(), logSuffix)
	if len(names) != 2 || !strings.HasSuffix(names[1], segName(5, 10)+logSuffix) {
		t.Fatalf("segments %v", names)
	}
	if got, _ := l.ReadSnapshot("producers"); got != nil {
		t.Fatal("absent snapshot not nil")
	}
	if err := l.WriteSnapshot("producers", []byte("state-1")); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteSnapshot("producers", []byte("state-2")); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteSnapshot("../x", nil); err == nil {
		t.Fatal("bad snapshot name accepted")
	}
	want := []storage.EpochEntry{{Epoch: 3, StartOffset: 0}, {Epoch: 5, StartOffset: 10}}
	l.crash()
	l = openLogT(t, o, storage.LogConfig{})
	defer l.Close()
	if got := l.Epochs(); !equalEpochs(got, want) {
		t.Fatalf("epochs %v want %v", got, want)
	}
	if got, _ := l.ReadSnapshot("producers"); string(got) != "state-2" {
		t.Fatalf("snapshot %q", got)
	}
	// An empty active segment is replaced, never reused, by a new epoch.
	if err := l.AssignEpoch(6, 20); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(7, 20); err != nil {
		t.Fatal(err)
	}
	names = segFiles(t, l.Dir(), logSuffix)
	if len(names) != 3 || !strings.HasSuffix(names[2], segName(7, 20)+logSuffix) {
		t.Fatalf("segments %v", names)
	}
}

func equalEpochs(a, b []storage.EpochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestZeroCopyWriteTo(t *testing.T) {
	dir := t.TempDir()
	o := testOpener(t, dir, DeleteDelay(time.Millisecond))
	cfg := storage.LogConfig{SegmentBytes: 64 << 10, RetentionBytes: 1}
	l := openLogT(t, o, cfg)
	defer l.Close()
	bs := appendN(t, l, 400, 10, 100, 1) // ~1 MiB over many segments
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	r, err := l.Read(0, 1<<20, l.NextOffset())
	if err != nil {
		t.Fatal(err)
	}
	n := r.Len()
	// Retention deletes the segment the records point into.
	if err := l.EnforceRetention(time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(c)
		c.Close()
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	wn, err := r.WriteTo(c.(*net.TCPConn))
	if err != nil || wn != int64(n) {
		t.Fatalf("WriteTo %d %v", wn, err)
	}
	c.Close()
	r.Close()
	b := <-got
	if !bytes.Equal(b, concat(bs)[:n]) {
		t.Fatalf("sendfile delivered %d bytes, differing", len(b))
	}
	if l.StartOffset() == 0 {
		t.Fatal("retention did not run")
	}
}

// TestScanLastHeaderReadsLittle: every open checks that the producer
// snapshot's last batch is in the log with one ScanHeaders from that batch;
// its buffer is sized to what is left to read, not to the 1 MiB window a
// long scan uses (a 1,000-partition move opens a thousand logs at once).
func TestScanLastHeaderReadsLittle(t *testing.T) {
	l := openLogT(t, testOpener(t, t.TempDir()), storage.LogConfig{SegmentBytes: 64 << 20})
	defer l.Close()
	appendN(t, l, 200, 10, 1000, 1) // ~2 MiB in one segment
	last := l.NextOffset() - 10
	scan := func() {
		n := 0
		if err := l.ScanHeaders(last, func(h batch.Header) error { n++; return nil }); err != nil || n != 1 {
			t.Fatalf("scan from the last batch: %d headers, %v", n, err)
		}
	}
	scan()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 20
	for range runs {
		scan()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 64<<10 {
		t.Fatalf("a scan of the last batch allocated %d bytes, want well under the 1 MiB window", per)
	}
}

// TestEpochCheckpointSealedLine: the checkpoint's optional sealed offset
// round-trips, a checkpoint without it (Kafka's lines) reads as 0 (every
// trailer is read at the next open), and a damaged one is refused.
func TestEpochCheckpointSealedLine(t *testing.T) {
	eps := []storage.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 40}}
	for _, tc := range []struct {
		name   string
		file   []byte
		sealed int64
		bad    bool
	}{
		{"with sealed", encodeEpochs(eps, 35), 35, false},
		{"without", encodeEpochs(eps, 0), 0, false},
		{"kafka lines", checksummed([]byte("0\n2\n1 0\n3 40\n")), 0, false},
		{"negative sealed", checksummed([]byte("0\n2\n1 0\n3 40\nsealed -1\n")), 0, true},
		{"sealed not last", checksummed([]byte("0\n2\nsealed 35\n1 0\n3 40\n")), 0, true},
		{"crc wrong", append(encodeEpochs(eps, 35)[:10:10], "9 9\ncrc 00000000\n"...), 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, sealed, err := decodeEpochs(tc.file)
			if tc.bad {
				if err == nil {
					t.Fatalf("accepted %q", tc.file)
				}
				return
			}
			if err != nil || sealed != tc.sealed || len(got) != 2 || got[1] != eps[1] {
				t.Fatalf("decode %q: %v sealed %d err %v", tc.file, got, sealed, err)
			}
		})
	}
}

// TestParseDirName: the names dirName gives partition directories parse
// back; anything else in the data directory does not.
func TestParseDirName(t *testing.T) {
	const uuid = "0123abcd-0000-4000-8000-00000000000f"
	for _, tc := range []struct {
		name string
		want storage.PartitionID
		ok   bool
	}{
		{"orders-3-" + uuid, storage.PartitionID{Topic: "orders", Partition: 3, TopicID: uuid}, true},
		{"a-b-c-12-" + uuid, storage.PartitionID{Topic: "a-b-c", Partition: 12, TopicID: uuid}, true},
		{"-3-" + uuid, storage.PartitionID{}, false},
		{"orders--" + uuid, storage.PartitionID{}, false},
		{"orders-03-" + uuid, storage.PartitionID{}, false},
		{"orders-3-" + strings.ToUpper(uuid), storage.PartitionID{}, false},
		{"orders-3-" + uuid + ".1700000000" + deletedSuffix, storage.PartitionID{}, false},
		{"orders-3-id-1", storage.PartitionID{}, false},
		{"__groups", storage.PartitionID{}, false},
		{"__cluster", storage.PartitionID{}, false},
	} {
		got, ok := ParseDirName(tc.name)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseDirName(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
		if ok && dirName(got) != tc.name {
			t.Errorf("dirName(%+v) = %q, want %q", got, dirName(got), tc.name)
		}
	}
}

// TestLongTopicName: a partition of a topic whose name has Kafka's longest
// length (249) and a partition number of ten digits gets a directory whose
// name, set aside too, fits a file name (255 bytes): its log opens, keeps
// what it was given across a reopen, is listed by its topic id, and is
// removed through the listed id.
func TestLongTopicName(t *testing.T) {
	o := testOpener(t, t.TempDir(), DeleteDelay(time.Hour))
	id := storage.PartitionID{Topic: strings.Repeat("x", 249), TopicID: "0123abcd-0000-4000-8000-00000000000f", Partition: 2147483647}
	name := dirName(id)
	if len(name) > maxDirName || len(name+".-9223372036854775808"+deletedSuffix) > 255 {
		t.Fatalf("dirName is %d bytes", len(name))
	}
	if got, ok := ParseDirName(name); !ok || got.TopicID != id.TopicID || got.Partition != id.Partition || !strings.HasPrefix(id.Topic, got.Topic) || dirName(got) != name {
		t.Fatalf("ParseDirName(dirName) = %+v, %v", got, ok)
	}
	l := openID(t, o, id)
	bs := appendN(t, l, 3, 1, 10, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openID(t, o, id)
	if l.NextOffset() != 3 || !bytes.Equal(readAll(t, l, 0), concat(bs)) {
		t.Fatalf("reopened: next %d", l.NextOffset())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ids, err := o.Partitions()
	if err != nil || len(ids) != 1 || ids[0].TopicID != id.TopicID || ids[0].Partition != id.Partition {
		t.Fatalf("Partitions() = %+v, %v", ids, err)
	}
	if err := o.Remove(ids[0]); err != nil {
		t.Fatal(err)
	}
	if ids, err := o.Partitions(); err != nil || len(ids) != 0 {
		t.Fatalf("after Remove: %+v, %v", ids, err)
	}
}

func openID(t *testing.T, o *Opener, id storage.PartitionID) *Log {
	t.Helper()
	l, err := o.Open(id, storage.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return l.(*Log)
}
