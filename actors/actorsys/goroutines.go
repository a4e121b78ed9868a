package actorsys

import (
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// Goroutines runs functions each on a goroutine of its own, as `go fn()`
// does, but on a goroutine that finished an earlier function when one is
// idle. A fresh goroutine starts on a small stack and grows it again on
// the way down a handler (runtime.copystack: a fifth of the CPU of an
// in-memory offset commit); a reused one keeps the stack it grew, until
// the garbage collector shrinks it. Go never waits: with none idle it
// starts a new goroutine, which stays idle afterwards while fewer than
// maxIdle are.
type Goroutines struct {
	mu      sync.Mutex
	idle    []chan func()
	maxIdle int
	started int // goroutines started, ever
}

// NewGoroutines returns a set keeping at most maxIdle goroutines idle.
func NewGoroutines(maxIdle int) *Goroutines { return &Goroutines{maxIdle: maxIdle} }

// Go runs fn on an idle goroutine, or a new one.
func (g *Goroutines) Go(fn func()) {
	g.mu.Lock()
	if n := len(g.idle); n > 0 {
		ch := g.idle[n-1]
		g.idle[n-1] = nil
		g.idle = g.idle[:n-1]
		g.mu.Unlock()
		ch <- fn
		return
	}
	g.started++
	g.mu.Unlock()
	ch := make(chan func(), 1)
	ch <- fn
	go g.run(ch)
}

// run runs what ch is handed, idling between functions, and exits when
// maxIdle goroutines already idle.
func (g *Goroutines) run(ch chan func()) {
	for fn := range ch {
		fn()
		g.mu.Lock()
		if len(g.idle) >= g.maxIdle {
			g.mu.Unlock()
			return
		}
		g.idle = append(g.idle, ch)
		g.mu.Unlock()
	}
}

// shared is the process's set: the actors' mailboxes (Dispatcher) and the
// connections' per-request waits run on it.
var shared = NewGoroutines(4096)

// Go runs fn on the process's shared goroutines (Goroutines.Go).
func Go(fn func()) { shared.Go(fn) }

// dispatcher is protoactor's default dispatcher (a goroutine per mailbox
// run, the same throughput) over the shared goroutines.
type dispatcher struct{}

var _ actor.Dispatcher = dispatcher{}

// Schedule implements actor.Dispatcher. It never blocks.
func (dispatcher) Schedule(fn func()) { shared.Go(fn) }

// Throughput implements actor.Dispatcher: protoactor's default.
func (dispatcher) Throughput() int { return 300 }
