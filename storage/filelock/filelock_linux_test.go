//go:build linux

package filelock

import (
	"os"
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

// A holder that removes the lock file lets a waiter that opened the removed
// file go on to the file at the path, so the waiter and a newcomer that
// created a new file never both hold a lock.
func TestAcquireFollowsARemovedLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claim.lock")
	unlock, locked, err := Acquire(path, 0o644, time.Second)
	if err != nil || !locked {
		t.Fatalf("first: locked %v, %v", locked, err)
	}
	type result struct {
		unlock func()
		locked bool
		err    error
	}
	waiter := make(chan result)
	go func() {
		u, l, err := Acquire(path, 0o644, 5*time.Second)
		waiter <- result{u, l, err}
	}()
	// The waiter opens the file and waits for its lock.
	time.Sleep(50 * time.Millisecond)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	newcomer, locked, err := Acquire(path, 0o644, time.Second)
	if err != nil || !locked {
		t.Fatalf("newcomer on the new file: locked %v, %v", locked, err)
	}
	unlock()
	select {
	case r := <-waiter:
		r.unlock()
		t.Fatalf("the waiter got a lock (%v, %v) while the newcomer holds the file at the path", r.locked, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	newcomer()
	r := <-waiter
	if r.err != nil || !r.locked {
		t.Fatalf("waiter after the newcomer: locked %v, %v", r.locked, r.err)
	}
	r.unlock()
}
