package actorsys

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Every function runs once; Go never waits, even while every goroutine
// started so far is blocked; finished goroutines are reused, and at most
// maxIdle stay.
func TestGoroutines(t *testing.T) {
	g := NewGoroutines(4)
	var ran atomic.Int64
	release := make(chan struct{})
	var started sync.WaitGroup
	for range 10 {
		started.Add(1)
		g.Go(func() { started.Done(); <-release; ran.Add(1) })
	}
	started.Wait() // ten running at once: Go did not wait for any to finish
	close(release)
	waitFor(t, func() bool { return ran.Load() == 10 })
	waitFor(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.idle) == 4 })
	if g.started != 10 {
		t.Fatalf("%d goroutines started for ten running at once", g.started)
	}

	// Run one at a time, each on an idle goroutine: no new ones start.
	idle := func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.idle) == 4 }
	g.mu.Lock()
	before := g.started
	g.mu.Unlock()
	for range 100 {
		done := make(chan struct{})
		g.Go(func() { ran.Add(1); close(done) })
		<-done
		waitFor(t, idle)
	}
	g.mu.Lock()
	if g.started != before {
		t.Fatalf("%d goroutines started for 100 runs one at a time, with 4 idle", g.started-before)
	}
	g.mu.Unlock()
	if ran.Load() != 110 {
		t.Fatalf("%d runs, want 110", ran.Load())
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 100000 {
		if cond() {
			return
		}
		runtime.Gosched()
	}
	t.Fatal("condition not reached")
}
