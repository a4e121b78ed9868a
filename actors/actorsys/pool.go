package actorsys

import (
	"runtime"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/kaas-project/kaas/actors/tracing"
)

// Pool is a dispatcher that runs mailboxes on a set of long-lived
// goroutines, in the order they became ready.
//
// protoactor's default dispatcher starts a goroutine every time an idle
// mailbox gets a message. With a thousand partitions under load that is
// thousands of goroutines a second per broker, each starting on a small
// stack and growing it again on the way down Receive; the pool's workers
// keep theirs (BenchmarkGroupCommitUnderLoad in actors/partition compares
// the two).
//
// A worker runs a mailbox until it is empty (yielding the CPU every
// Throughput messages, as with the default dispatcher). When no worker has
// taken anything from the queue for a stuckAfter while work waits (every
// worker blocked: a partition actor appends inside Receive, and a storage
// stall blocks every append), what waits runs on goroutines of its own, as
// with the default dispatcher: the stall must not also stop the partitions
// that are not writing (a drain's releases, fetches served from the page
// cache). Workers that are merely waiting for a CPU keep taking work, so
// that does not happen under load.
type Pool struct {
	throughput int
	stuckAfter time.Duration
	mu         sync.Mutex
	ready      sync.Cond
	queue      []func() // FIFO from head
	head       int
	taken      uint64 // functions taken from the queue, ever
}

// stuckAfter is how long queued work may wait with no worker taking any
// before it runs on goroutines of its own (NewPool).
const stuckAfter = 10 * time.Millisecond

var _ actor.Dispatcher = (*Pool)(nil)

// NewPool starts a pool of workers goroutines; they run for the life of the
// process.
func NewPool(workers, throughput int) *Pool {
	return newPool(workers, throughput, stuckAfter)
}

func newPool(workers, throughput int, stuck time.Duration) *Pool {
	p := &Pool{throughput: throughput, stuckAfter: stuck}
	p.ready.L = &p.mu
	for range max(workers, 1) {
		go p.work()
	}
	go p.watch()
	return p
}

// Schedule implements actor.Dispatcher. It never blocks.
func (p *Pool) Schedule(fn func()) {
	p.mu.Lock()
	p.queue = append(p.queue, fn)
	p.mu.Unlock()
	p.ready.Signal()
}

// watch runs the queue on goroutines of their own when the workers have
// been stuck for stuckAfter.
func (p *Pool) watch() {
	t := time.NewTicker(p.stuckAfter)
	defer t.Stop()
	var seen uint64
	for range t.C {
		p.mu.Lock()
		var stuck []func()
		if p.head < len(p.queue) && p.taken == seen {
			stuck = append(stuck, p.queue[p.head:]...)
			clear(p.queue)
			p.queue, p.head = p.queue[:0], 0
			p.taken += uint64(len(stuck))
		}
		seen = p.taken
		p.mu.Unlock()
		for _, fn := range stuck {
			go fn()
		}
	}
}

// Throughput implements actor.Dispatcher.
func (p *Pool) Throughput() int { return p.throughput }

func (p *Pool) work() {
	p.mu.Lock()
	for {
		for p.head == len(p.queue) {
			p.ready.Wait()
		}
		fn := p.queue[p.head]
		p.queue[p.head] = nil
		p.head++
		p.taken++
		if p.head == len(p.queue) {
			p.queue, p.head = p.queue[:0], 0 // drained: reuse the array
		}
		p.mu.Unlock()
		fn()
		p.mu.Lock()
	}
}

var (
	partitionPoolOnce sync.Once
	partitionPool     *Pool
)

// PartitionPool is the process's pool for partition actors, with the
// default dispatcher's throughput per turn: 32 workers per CPU (a few
// blocked in a write leave the others running).
func PartitionPool() *Pool {
	partitionPoolOnce.Do(func() { partitionPool = NewPool(32*runtime.GOMAXPROCS(0), 300) })
	return partitionPool
}

var (
	handoffPoolOnce sync.Once
	handoffPool     *Pool
)

// HandoffPool runs the partitions' opens and closes: 4 workers per CPU,
// in the order they were asked for. A drain hands a broker a thousand
// closes at once (a receiver a thousand opens); on a goroutine each, every
// other goroutine of the process would wait behind all of them for a CPU,
// the supervisor that reports the first releases included, so the
// controller would hear of nearly every release only once the last close
// is done. In order, a few at a time, the first releases are reported
// while the rest close, and the first opens finish first
// (TestHandoffPoolRunsInOrderAFewAtATime). Work that waits 200 ms with no
// worker free (storage stalled under every worker, or opens of a fenced
// broker waiting for its next heartbeat exchange before they stamp their
// epoch) runs on goroutines of its own, so a close is never held longer
// than that.
func HandoffPool() *Pool {
	handoffPoolOnce.Do(func() { handoffPool = newPool(4*runtime.GOMAXPROCS(0), 1, 200*time.Millisecond) })
	return handoffPool
}

// SpawnChildOn is SpawnChild with the child's mailbox run by d (a Pool).
func SpawnChildOn(ctx actor.Context, name string, producer func() actor.Actor, d actor.Dispatcher) (Ref, error) {
	pid, err := ctx.SpawnNamed(props(producer, append(tracing.PropsOptions(tracing.KindOf(name)), actor.WithDispatcher(d))...), name)
	if err != nil {
		return Ref{}, err
	}
	return Ref{pid: pid, sys: &System{as: ctx.ActorSystem()}}, nil
}
