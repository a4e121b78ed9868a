package disklog

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/kaas-project/kaas/storage"
)

// TestFsyncHookFailsTheGroupCommit: a durability call failed through the
// FsyncHook fails Log.Sync as a failed fdatasync does: nothing new becomes
// durable, the log refuses further Syncs until it is reopened, and the
// reopened log holds everything a Sync confirmed. In both sync modes.
func TestFsyncHookFailsTheGroupCommit(t *testing.T) {
	injected := errors.New("injected")
	for name, mode := range map[string]SyncMode{"syncfs": SyncFilesystem, "file": SyncFiles} {
		t.Run(name, func(t *testing.T) {
			var fail atomic.Bool
			var calls, realCalls atomic.Int64
			hook := func(dir string, real func() error) error {
				calls.Add(1)
				if dir == "" {
					t.Error("the hook got no directory")
				}
				if fail.Load() {
					return injected
				}
				realCalls.Add(1)
				return real()
			}
			dir := t.TempDir()
			o := testOpener(t, dir, Sync(mode), WithFsyncHook(hook))
			cfg := storage.LogConfig{SegmentBytes: 4096, IndexInterval: 512}
			l := openLogT(t, o, cfg)
			if err := l.AssignEpoch(0, 0); err != nil {
				t.Fatal(err)
			}
			acked := appendN(t, l, 50, 2, 40, 1000)
			if d, err := l.Sync(); err != nil || d != 100 {
				t.Fatalf("sync: %d %v", d, err)
			}
			if realCalls.Load() == 0 {
				t.Fatal("Sync made no durability call through the hook")
			}
			fail.Store(true)
			appendN(t, l, 10, 2, 40, 5000)
			d, err := l.Sync()
			if !errors.Is(err, injected) || d != 100 {
				t.Fatalf("sync with a failing fsync: durable %d, err %v; want 100 and the injected error", d, err)
			}
			fail.Store(false)
			before := calls.Load()
			if _, err := l.Sync(); !errors.Is(err, injected) {
				t.Fatalf("a log whose fsync failed synced again: %v", err)
			}
			if calls.Load() != before {
				t.Fatal("a log whose fsync failed called fsync again (it must be reopened)")
			}
			if l.Durable() != 100 {
				t.Fatalf("durable %d after the failure, want 100", l.Durable())
			}
			if err := l.Close(); err != nil && !errors.Is(err, injected) {
				t.Fatalf("close: %v", err)
			}
			l = openLogT(t, o, cfg)
			defer l.Close()
			if l.NextOffset() < 100 {
				t.Fatalf("reopened log ends at %d, below the 100 confirmed durable", l.NextOffset())
			}
			if got := readAll(t, l, 0); !bytes.HasPrefix(got, concat(acked)) {
				t.Fatal("the reopened log does not start with the batches a Sync confirmed")
			}
			if err := l.AssignEpoch(1, l.NextOffset()); err != nil {
				t.Fatal(err)
			}
			appendN(t, l, 1, 1, 40, 9000)
			if _, err := l.Sync(); err != nil {
				t.Fatalf("sync after the reopen: %v", err)
			}
		})
	}
}
