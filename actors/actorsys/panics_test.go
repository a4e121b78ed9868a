package actorsys

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchPanicsSeesActorPanics: a panic in an actor's Receive reaches the
// watchers with the actor's id, the reason and the stack it was raised on,
// until the watch stops.
func TestWatchPanicsSeesActorPanics(t *testing.T) {
	var mu sync.Mutex
	var seen []Panic
	stop := WatchPanics(func(p Panic) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p)
	})
	defer stop()
	sys := NewSystem()
	defer sys.Shutdown()
	p, child := spawnHealParent(t, sys)
	close(p.release)
	child.Send(queuedRequest{answered: new(atomic.Int32)})
	select {
	case <-p.failed:
	case <-time.After(5 * time.Second):
		t.Fatal("the child never failed")
	}
	mu.Lock()
	got := append([]Panic(nil), seen...)
	mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("watchers saw %d panics, want 1", len(got))
	}
	if got[0].Where != child.String() || got[0].Reason != "boom" || !bytes.Contains(got[0].Stack, []byte("failingChild).Receive")) {
		t.Fatalf("watchers saw %s: %v, stack:\n%s", got[0].Where, got[0].Reason, got[0].Stack)
	}
	stop()
	Recovered("elsewhere", "late")
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("a stopped watch still saw %v", seen[1:])
	}
}
