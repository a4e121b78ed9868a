package disklog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

// TestReadIndexFile reads the indexes a log wrote (every entry at a batch
// boundary with that batch's offset and the running max timestamp before
// it, the trailer covering the segment), the first layout's pair, and
// refuses damaged copies, leaving the files as they were.
func TestReadIndexFile(t *testing.T) {
	o := testOpener(t, t.TempDir())
	const interval = 600
	l := openLogT(t, o, storage.LogConfig{SegmentBytes: 3000, IndexInterval: interval})
	appendN(t, l, 30, 2, 100, 1000)
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logs := segFiles(t, dir, logSuffix)
	if len(logs) < 3 {
		t.Fatalf("want several segments, got %v", logs)
	}
	for i, segPath := range logs {
		seg, err := os.ReadFile(segPath)
		if err != nil {
			t.Fatal(err)
		}
		idxPath := segPath[:len(segPath)-len(logSuffix)] + indexSuffix
		before, err := os.ReadFile(idxPath)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadIndexFile(idxPath)
		if err != nil {
			t.Fatalf("%s: %v", idxPath, err)
		}
		// The segment's batches by position, with the max timestamp before each.
		type at struct{ base, maxTS, maxOff int64 }
		batches := map[int64]at{}
		maxTS, maxOff := int64(-1), int64(-1)
		var next int64
		for pos := int64(0); pos < int64(len(seg)); {
			h, err := batch.ParseHeader(seg[pos:])
			if err != nil {
				t.Fatal(err)
			}
			batches[pos] = at{h.BaseOffset, maxTS, maxOff}
			if h.MaxTimestamp > maxTS || maxOff < 0 {
				maxTS, maxOff = h.MaxTimestamp, h.BaseOffset
			}
			next = h.NextOffset()
			pos += int64(h.Size())
		}
		tr := f.Trailer
		if tr.FirstLayout || tr.Size != int64(len(seg)) || tr.NextOffset != next || tr.MaxTimestamp != maxTS || tr.MaxTimestampOffset != maxOff {
			t.Errorf("%s: trailer %+v; segment: %d bytes, next %d, max timestamp %d at %d", idxPath, tr, len(seg), next, maxTS, maxOff)
		}
		if len(f.Entries) < 2 {
			t.Fatalf("%s: %d entries, want several", idxPath, len(f.Entries))
		}
		for j, e := range f.Entries {
			b, ok := batches[e.Position]
			if !ok || b.base != e.Offset || b.maxTS != e.MaxTimestamp || b.maxOff != e.MaxTimestampOffset {
				t.Errorf("%s: entry %d %+v; batch there %+v (a boundary: %t)", idxPath, j, e, b, ok)
			}
			if j > 0 && e.Position-f.Entries[j-1].Position < interval {
				t.Errorf("%s: entries %d and %d closer than index.interval.bytes", idxPath, j-1, j)
			}
		}
		if i == 0 && (f.Entries[0].Position != 0 || f.Entries[0].Offset != 0 || tr.BaseOffset != 0) {
			t.Errorf("first segment's first entry %+v, trailer base %d", f.Entries[0], tr.BaseOffset)
		}
		if after, _ := os.ReadFile(idxPath); !bytes.Equal(before, after) {
			t.Errorf("%s changed by reading it", idxPath)
		}
	}

	// Damaged copies: an entry's byte, the trailer's, a cut file.
	good, err := os.ReadFile(logs[0][:len(logs[0])-len(logSuffix)] + indexSuffix)
	if err != nil {
		t.Fatal(err)
	}
	damage := func(name string, edit func([]byte) []byte) (IndexFile, error) {
		p := filepath.Join(t.TempDir(), "00000000-00000000000000000000.index")
		if err := os.WriteFile(p, edit(bytes.Clone(good)), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := ReadIndexFile(p)
		if !errors.Is(err, ErrIndexInvalid) {
			t.Errorf("%s: err %v, want ErrIndexInvalid", name, err)
		}
		return f, err
	}
	f, err := damage("entry byte", func(b []byte) []byte { b[idxEntrySize+5] ^= 1; return b })
	if !errors.Is(err, errEntriesCRC) || len(f.Entries) == 0 || f.Trailer.Size == 0 {
		t.Errorf("flipped entry: %v, trailer %+v, %d entries (want the decoded ones)", err, f.Trailer, len(f.Entries))
	}
	if _, err := damage("trailer byte", func(b []byte) []byte { b[len(b)-20] ^= 1; return b }); !errors.Is(err, errTrailerCRC) {
		t.Errorf("flipped trailer: %v", err)
	}
	if _, err := damage("cut", func(b []byte) []byte { return b[:len(b)-7] }); !errors.Is(err, errTrailerMagic) {
		t.Errorf("cut index: %v", err)
	}
	if _, err := damage("entry cut out", func(b []byte) []byte { return append(b[:idxEntrySize], b[2*idxEntrySize:]...) }); !errors.Is(err, errIndexLength) {
		t.Errorf("an entry cut out: %v", err)
	}

	// The first layout: the ".timeindex" path reads the pair.
	old := filepath.Join(t.TempDir(), "old")
	copyDir(t, filepath.Join("testdata", "layout1"), old)
	f, err = ReadIndexFile(filepath.Join(old, "00000001-00000000000000000010.timeindex"))
	if err != nil {
		t.Fatal(err)
	}
	// testdata/layout1: 5 batches of 2 records from offset 10, timestamps 1050 + 10 per batch.
	if !f.Trailer.FirstLayout || f.Trailer.BaseOffset != 10 || f.Trailer.NextOffset != 20 || len(f.Entries) != 3 ||
		f.Entries[0].Offset != 10 || f.Entries[0].MaxTimestamp != -1 || f.Entries[1].MaxTimestamp <= 1050 {
		t.Errorf("first layout: %+v", f)
	}
	if err := os.Truncate(filepath.Join(old, "00000001-00000000000000000010.timeindex"), 30); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadIndexFile(filepath.Join(old, "00000001-00000000000000000010.index")); !errors.Is(err, errTimeIndex) {
		t.Errorf("cut .timeindex: %v", err)
	}
}

// TestReadSnapshotFile reads back what WriteSnapshot framed and refuses a
// damaged copy.
func TestReadSnapshotFile(t *testing.T) {
	o := testOpener(t, t.TempDir())
	l := openLogT(t, o, storage.LogConfig{})
	if err := l.WriteSnapshot("producers", []byte(`{"offset":7}`)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(l.Dir(), "producers"+snapshotSuffix)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := ReadSnapshotFile(p)
	if err != nil || string(b) != `{"offset":7}` {
		t.Fatalf("read %q, %v", b, err)
	}
	flipBit(t, p, 3)
	if b, err := ReadSnapshotFile(p); err == nil {
		t.Fatalf("a damaged snapshot read as %q", b)
	}
}
