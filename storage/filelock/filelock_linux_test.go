//go:build linux

package filelock

import (
	"path/filepath"
	"testing"
	"time"
)

// A second holder waits for the first and gets the lock once it is
// released; while it is held, the second gives up after its timeout.
func TestAcquireExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claim.lock")
	unlock, locked, err := Acquire(path, 0o644, time.Second)
	if err != nil || !locked {
		t.Fatalf("first: locked %v, %v", locked, err)
	}
	unlock2, locked2, err := Acquire(path, 0o644, 20*time.Millisecond)
	if err != nil || locked2 {
		t.Fatalf("second while held: locked %v, %v", locked2, err)
	}
	unlock2()
	unlock()
	unlock3, locked3, err := Acquire(path, 0o644, time.Second)
	if err != nil || !locked3 {
		t.Fatalf("after the release: locked %v, %v", locked3, err)
	}
	unlock3()
}
