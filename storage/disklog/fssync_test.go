package disklog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kaas-project/kaas/storage"
)

// TestSyncFilesystemCoalesces: logs that sync at the same time share
// syncfs rounds, and each is durable up to what it appended when its Sync
// returns; the data reads back after a reopen.
func TestSyncFilesystemCoalesces(t *testing.T) {
	const logs = 64
	o := testOpener(t, t.TempDir(), Sync(SyncFilesystem))
	cfg := storage.LogConfig{SegmentBytes: 4096}
	ls := make([]*Log, logs)
	written := make([][]byte, logs)
	for i := range ls {
		id := testID
		id.Partition = int32(i)
		sl, err := o.Open(id, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = sl.(*Log)
		for _, b := range appendN(t, ls[i], 30, 2, 100, 1) { // rolls segments: pending seals and directory entries
			written[i] = append(written[i], b...)
		}
	}
	before := Fsyncs()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, logs)
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var d int64
			d, errs[i] = l.Sync()
			if errs[i] == nil && d != l.NextOffset() {
				errs[i] = fmt.Errorf("durable %d after Sync, next %d", d, l.NextOffset())
			}
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("log %d: %v", i, err)
		}
	}
	rounds := Fsyncs() - before
	if rounds < 1 || rounds > logs/2 {
		t.Fatalf("%d logs syncing at once took %d syncfs rounds, want 1..%d", logs, rounds, logs/2)
	}
	for i, l := range ls {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		id := testID
		id.Partition = int32(i)
		sl, err := o.Open(id, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, sl.(*Log), 0); !bytes.Equal(got, written[i]) {
			t.Fatalf("log %d: read back %d bytes, want %d", i, len(got), len(written[i]))
		}
		sl.Close()
	}
}

func TestParseSyncMode(t *testing.T) {
	for in, want := range map[string]SyncMode{"file": SyncFiles, "syncfs": SyncFilesystem} {
		if got, err := ParseSyncMode(in); err != nil || got != want {
			t.Errorf("ParseSyncMode(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseSyncMode("fsync"); err == nil {
		t.Error("ParseSyncMode accepted an unknown mode")
	}
}

// TestReadNumber: the small numeric files (leader claim, start offset) read
// back, and a missing, damaged or oversized file reads as absent.
func TestReadNumber(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok", encodeNumber(-9223372036854775808))
	write("damaged", append(encodeNumber(7)[:3], "9\ncrc 00000000\n"...))
	write("large", append(encodeNumber(7), bytes.Repeat([]byte("x"), 200)...))
	for name, want := range map[string]struct {
		n  int64
		ok bool
	}{"ok": {-9223372036854775808, true}, "damaged": {0, false}, "large": {0, false}, "missing": {0, false}} {
		if n, ok := readNumber(dir, name); n != want.n || ok != want.ok {
			t.Errorf("%s: readNumber = %d, %v; want %d, %v", name, n, ok, want.n, want.ok)
		}
	}
}
