package actorsys

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// waited reports whether wg finished within d.
func waited(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// goroutineID is the running goroutine's number (from its stack header).
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return strings.Fields(string(buf))[1]
}

// Work scheduled while a worker is free runs on the pool's goroutines, not
// on new ones: they keep their grown stacks. (A worker starved of a CPU for
// the stuck interval has its queue moved to a goroutine of its own, so a
// few may run elsewhere on a busy machine.)
func TestPoolRunsOnItsWorkers(t *testing.T) {
	const workers, n = 3, 500
	p := NewPool(workers, 10)
	// The workers are up: each holds one function until all have one.
	var up sync.WaitGroup
	up.Add(workers)
	for range workers {
		p.Schedule(func() { up.Done(); up.Wait() })
	}
	if !waited(&up, 10*time.Second) {
		t.Fatal("the workers never started")
	}
	ran := map[string]int{}
	for range n {
		done := make(chan string)
		p.Schedule(func() { done <- goroutineID() })
		ran[<-done]++
	}
	counts := slices.Sorted(maps.Values(ran))
	onWorkers := 0
	for _, c := range counts[max(0, len(counts)-workers):] {
		onWorkers += c
	}
	if onWorkers < n*9/10 {
		t.Fatalf("of %d functions scheduled one after another, %d ran on the %d busiest goroutines (%d goroutines in all), want at least 90 %%",
			n, onWorkers, workers, len(ran))
	}
}

// When every worker is busy (here blocked, as in a storage stall), what is
// scheduled still runs, and everything scheduled runs once.
func TestPoolRunsWhenEveryWorkerIsBlocked(t *testing.T) {
	p := NewPool(2, 10)
	stuck := make(chan struct{})
	defer close(stuck)
	for range 2 {
		p.Schedule(func() { <-stuck })
	}
	var wg sync.WaitGroup
	var runs atomic.Int32
	const n = 200
	wg.Add(n)
	for range n {
		p.Schedule(func() { runs.Add(1); wg.Done() })
	}
	if !waited(&wg, 10*time.Second) {
		t.Fatalf("%d of %d functions ran while every worker was blocked", runs.Load(), n)
	}
	if r := runs.Load(); r != n {
		t.Fatalf("%d runs of %d functions", r, n)
	}
}

// counter records the messages it receives, in order.
type counter struct {
	mu   *sync.Mutex
	got  map[string][]int
	done *sync.WaitGroup
}

type numbered struct {
	to string
	n  int
}

func (c *counter) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(numbered); ok {
		c.mu.Lock()
		c.got[m.to] = append(c.got[m.to], m.n)
		c.mu.Unlock()
		c.done.Done()
	}
}

// spawner spawns pooled children on request.
type spawner struct {
	pool *Pool
	make func() actor.Actor
	refs chan Ref
}

func (s *spawner) Receive(ctx actor.Context) {
	if name, ok := ctx.Message().(string); ok {
		ref, err := SpawnChildOn(ctx, name, s.make, s.pool)
		if err != nil {
			panic(err)
		}
		s.refs <- ref
	}
}

// Actors on a pool much smaller than their number each see their messages
// once and in the order sent.
func TestPooledActorsKeepTheirOrder(t *testing.T) {
	sys := NewSystem()
	t.Cleanup(sys.Shutdown)
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := map[string][]int{}
	sp := &spawner{pool: NewPool(2, 5), refs: make(chan Ref, 1),
		make: func() actor.Actor { return &counter{mu: &mu, got: got, done: &wg} }}
	parent, err := sys.Spawn(t.Name(), func() actor.Actor { return sp })
	if err != nil {
		t.Fatal(err)
	}
	const actors, msgs = 50, 100
	var refs []Ref
	names := make([]string, actors)
	for i := range actors {
		names[i] = fmt.Sprintf("counter-%d", i)
		parent.Send(names[i])
		refs = append(refs, <-sp.refs)
	}
	wg.Add(actors * msgs)
	for n := range msgs {
		for i, r := range refs {
			r.Send(numbered{to: names[i], n: n})
		}
	}
	if !waited(&wg, 10*time.Second) {
		t.Fatal("not every message was handled")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range names {
		if len(got[name]) != msgs {
			t.Fatalf("%s handled %d messages, want %d", name, len(got[name]), msgs)
		}
		for i, n := range got[name] {
			if n != i {
				t.Fatalf("%s handled message %d %dth", name, n, i)
			}
		}
	}
}

// TestHandoffPoolRunsInOrderAFewAtATime: a pool like HandoffPool starts
// its work in the order asked, never more at once than it has workers, and
// runs what waits on goroutines of its own only after its longer stuck
// delay (a slow open is not a stall).
func TestHandoffPoolRunsInOrderAFewAtATime(t *testing.T) {
	p := newPool(3, 1, 150*time.Millisecond)
	const n = 60
	var mu sync.Mutex
	var order []int
	var running, most atomic.Int32
	var wg sync.WaitGroup
	begun := make(chan int, n)
	finish := make([]chan struct{}, n)
	for i := range n {
		wg.Add(1)
		finish[i] = make(chan struct{})
		p.Schedule(func() {
			defer wg.Done()
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			begun <- i
			<-finish[i]
			running.Add(-1)
		})
	}
	// Each function runs until three have started (every worker busy, so
	// that a fourth at once would show), then the oldest finishes.
	var held []int
	for k := range n {
		select {
		case i := <-begun:
			held = append(held, i)
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d functions started within 5s", k, n)
		}
		if len(held) == 3 || k == n-1 {
			close(finish[held[0]])
			held = held[1:]
		}
	}
	for _, i := range held {
		close(finish[i])
	}
	if !waited(&wg, 5*time.Second) {
		t.Fatal("work not done within 5s")
	}
	if most.Load() > 3 {
		t.Fatalf("%d ran at once on 3 workers", most.Load())
	}
	// Three workers take from one FIFO: a function starts at most two
	// places before one asked for earlier.
	for k, i := range order {
		if i < k-2 || i > k+2 {
			t.Fatalf("start order %v: %d started %dth", order, i, k)
		}
	}

	// Every worker blocked: what waits runs once no worker has taken
	// anything for the stuck delay, not before.
	block := make(chan struct{})
	defer close(block)
	started := make(chan time.Time, 3)
	for range 3 {
		p.Schedule(func() { started <- time.Now(); <-block })
	}
	var last time.Time
	for range 3 {
		last = <-started
	}
	ran := make(chan time.Time, 1)
	p.Schedule(func() { ran <- time.Now() })
	select {
	case at := <-ran:
		if d := at.Sub(last); d < 140*time.Millisecond {
			t.Fatalf("queued work ran %v after the last worker took its work, before the stuck delay", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("queued work never ran with every worker blocked")
	}
}
