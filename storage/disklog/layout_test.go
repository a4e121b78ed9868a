package disklog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/storage"
)

// layout1Batches are the batches in testdata/layout1, a partition directory
// written by kaas's first layout (a ".index" and a ".timeindex" per segment,
// three spare files): epoch 1 appended 12 batches of 2 records (timestamps
// from 1000) and closed cleanly; epoch 2 appended 12 more (from 2000),
// synced, appended one (3000) and released without syncing it.
func layout1Batches() [][]byte {
	var out [][]byte
	off := int64(0)
	for _, r := range []struct{ n, ts int64 }{{12, 1000}, {12, 2000}, {1, 3000}} {
		for i := range r.n {
			out = append(out, mkBatch(off, 2, r.ts+i*10, 100))
			off += 2
		}
	}
	return out
}

// recoveredScan is the scanned_bytes of the last "log recovered" line.
func recoveredScan(t *testing.T, logs []byte) int64 {
	t.Helper()
	var rec struct {
		Scanned *int64 `json:"scanned_bytes"`
	}
	for _, line := range bytes.Split(logs, []byte("\n")) {
		if bytes.Contains(line, []byte(`"log recovered"`)) {
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if rec.Scanned == nil {
		t.Fatalf("no log recovered line in %s", logs)
	}
	return *rec.Scanned
}

// TestOpensFirstLayout: a directory written by the first layout opens with
// its index trailers trusted (only the released tail is scanned), reads back
// every batch, finds timestamps through the ".timeindex" files, sets the
// third spare aside, and then takes new segments with one index file each.
func TestOpensFirstLayout(t *testing.T) {
	root := t.TempDir()
	name := "t-0-" + testID.TopicID
	dir := filepath.Join(root, name)
	copyDir(t, filepath.Join("testdata", "layout1"), dir)
	want := layout1Batches()
	open := func(epoch int32) (*Log, *syncBuffer) {
		logs := &syncBuffer{}
		o, err := NewOpener(root, zerolog.New(logs).Level(zerolog.DebugLevel), SpareDelay(0), SpareRate(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		l, err := o.Open(testID, storage.LogConfig{SegmentBytes: 1500, IndexInterval: 300, Claim: true, ClaimEpoch: epoch})
		if err != nil {
			t.Fatal(err)
		}
		return l.(*Log), logs
	}

	l, logs := open(3)
	if l.NextOffset() != 50 {
		t.Fatalf("next offset %d, want 50", l.NextOffset())
	}
	if got, tail := recoveredScan(t, logs.b.Bytes()), int64(len(want[len(want)-1])); got != tail {
		t.Fatalf("scanned %d bytes, want only the released tail's %d", got, tail)
	}
	if got := readAll(t, l, 0); !bytes.Equal(got, concat(want)) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(concat(want)))
	}
	for _, tc := range []struct {
		ts   int64
		want int // index in want
	}{{1000, 0}, {1055, 6}, {1111, 11}, {1112, 12}, {2001, 12}, {2052, 18}, {3000, 24}} {
		b, ok, err := l.FindTimestamp(tc.ts, 0, l.NextOffset())
		if err != nil || !ok || !bytes.Equal(b, want[tc.want]) {
			t.Fatalf("FindTimestamp(%d): ok %v err %v, want batch %d", tc.ts, ok, err, tc.want)
		}
	}
	// Each sealed segment's pair of index files loads whole, timestamps
	// included.
	for _, seg := range []string{segName(1, 0), segName(1, 10), segName(1, 20), segName(2, 24), segName(2, 34)} {
		entries, sum, ok := loadIndex(filepath.Join(dir, seg))
		if !ok || len(entries) == 0 || sum.maxTS < 1000 {
			t.Fatalf("%s: index of the first layout not loaded: ok %v, %d entries, %+v", seg, ok, len(entries), sum)
		}
		for i, e := range entries[1:] {
			if e.maxTS < entries[i].maxTS || e.maxTS < 1000 || e.maxRel < 0 {
				t.Fatalf("%s: entry %d has time %d (rel %d) after %d", seg, i+1, e.maxTS, e.maxRel, entries[i].maxTS)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, spareTimeIndex)); !os.IsNotExist(err) {
		t.Fatalf("the first layout's %s was not set aside: %v", spareTimeIndex, err)
	}
	if snap, err := l.ReadSnapshot("producers"); err != nil || string(snap) != "state of epoch 1" {
		t.Fatalf("producer snapshot %q, %v", snap, err)
	}

	// The new epoch takes the spare set written by the first layout, and
	// its segment gets one index file.
	if err := l.AssignEpoch(3, l.NextOffset()); err != nil {
		t.Fatal(err)
	}
	more := appendN(t, l, 8, 2, 100, 4000)
	want = append(want, more...)
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, logs = open(4)
	defer l.Close()
	if got := recoveredScan(t, logs.b.Bytes()); got != 0 {
		t.Fatalf("a clean reopen scanned %d bytes", got)
	}
	if got := readAll(t, l, 0); !bytes.Equal(got, concat(want)) {
		t.Fatalf("after the new epoch: read back %d bytes, want %d", len(got), len(concat(want)))
	}
	if b, ok, err := l.FindTimestamp(4031, 0, l.NextOffset()); err != nil || !ok || !bytes.Equal(b, more[3]) {
		t.Fatalf("FindTimestamp(4031) in the new segments: ok %v err %v", ok, err)
	}
	for _, p := range segFiles(t, dir, indexSuffix) {
		ep, _, _ := parseSegName(filepath.Base(p[:len(p)-len(indexSuffix)]))
		if ep < 3 {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) < trailerSize || string(b[len(b)-trailerSize:][:8]) != idxMagic {
			t.Fatalf("%s: not an index of the current layout (%v)", filepath.Base(p), err)
		}
		if _, err := os.Stat(p[:len(p)-len(indexSuffix)] + timeIndexSuffix); !os.IsNotExist(err) {
			t.Fatalf("%s has a .timeindex beside it: %v", filepath.Base(p), err)
		}
	}
}
