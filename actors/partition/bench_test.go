package partition

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/disklog"
)

// BenchmarkGroupCommitUnderLoad runs a thousand partition actors on disk
// logs (one syncfs round per group commit) under acks=all load, and
// measures what the rest of the broker sees meanwhile: the round trip of a
// message to an unrelated actor, sampled every 2 ms (a partition move is a
// chain of such hops: supervisor, heartbeat, controller), besides the
// acknowledgement latency and the CPU per acknowledged batch. It compares
// protoactor's default dispatcher (a goroutine per mailbox activation) with
// the partition pool, at 16 workers and at the size kaas uses. One op is one
// acknowledged batch:
//
//	go test ./actors/partition -run '^$' -bench BenchmarkGroupCommitUnderLoad -benchtime 30000x
func BenchmarkGroupCommitUnderLoad(b *testing.B) {
	for _, v := range []struct {
		name string
		pool *actorsys.Pool
	}{{"goroutines", nil}, {"pool-16", actorsys.NewPool(16, 300)}, {"partition-pool", actorsys.PartitionPool()}} {
		b.Run(v.name, func(b *testing.B) { benchGroupCommit(b, v.pool) })
	}
}

// spawnOn spawns partition actors on request, on the pool or not.
type spawnOn struct {
	pool *actorsys.Pool
	cfg  Config
	refs chan actorsys.Ref
}

func (s *spawnOn) Receive(ctx actor.Context) {
	if p, ok := ctx.Message().(int32); ok {
		producer := New(storage.PartitionID{Topic: "bench", TopicID: "id", Partition: p}, s.cfg)
		name := fmt.Sprintf("p%d", p)
		var ref actorsys.Ref
		var err error
		if s.pool != nil {
			ref, err = actorsys.SpawnChildOn(ctx, name, producer, s.pool)
		} else {
			ref, err = actorsys.SpawnChild(ctx, name, producer)
		}
		if err != nil {
			panic(err)
		}
		s.refs <- ref
	}
}

// echo answers every func it gets by calling it.
type echo struct{}

func (echo) Receive(ctx actor.Context) {
	if f, ok := ctx.Message().(func()); ok {
		f()
	}
}

func benchGroupCommit(b *testing.B, pool *actorsys.Pool) {
	const partitions, inflight = 1000, 4
	syscall.Sync() // the previous variant's writeback is not this one's
	// No spare sets: their creation, 5 s after an open, would land inside
	// the measurement.
	o, err := disklog.NewOpener(b.TempDir(), zerolog.Nop(), disklog.Sync(disklog.SyncFilesystem), disklog.DeleteDelay(time.Hour),
		disklog.SpareDelay(-1))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { o.Close() })
	sys := actorsys.NewSystem()
	b.Cleanup(sys.Shutdown)
	sp := &spawnOn{pool: pool, cfg: Config{Opener: o, Log: zerolog.Nop()}, refs: make(chan actorsys.Ref, 1)}
	parent, err := sys.Spawn("parent", func() actor.Actor { return sp })
	if err != nil {
		b.Fatal(err)
	}
	refs := make([]actorsys.Ref, partitions)
	for p := range refs {
		parent.Send(int32(p))
		refs[p] = <-sp.refs
		refs[p].Send(&messages.TakeLeadership{TopicID: "id", LeaderEpoch: 1, Config: map[string]string{}})
	}
	ctl, err := sys.Spawn("control", func() actor.Actor { return echo{} })
	if err != nil {
		b.Fatal(err)
	}
	payload := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{make([]byte, 100)}})
	var acked, refused atomic.Int64
	var mu sync.Mutex
	var ackLat []time.Duration
	stop := make(chan struct{})
	var load sync.WaitGroup
	// Each partition keeps inflight batches outstanding; an ack sends the next.
	var send func(p int)
	send = func(p int) {
		select {
		case <-stop:
			load.Done()
			return
		default:
		}
		sent := time.Now()
		refs[p].Send(&messages.Produce{Batch: append([]byte(nil), payload...), Acks: -1, Reply: func(r messages.ProduceResult) {
			if r.ErrorCode != 0 {
				// Not open yet, or failing: try again a little later
				// rather than spin.
				refused.Add(1)
				time.AfterFunc(time.Millisecond, func() { send(p) })
				return
			}
			acked.Add(1)
			mu.Lock()
			ackLat = append(ackLat, time.Since(sent))
			mu.Unlock()
			send(p) // from the actor's goroutine: a post to its own mailbox
		}})
	}
	var hops []time.Duration
	var hopsFrom atomic.Bool // sampled only once the load runs
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			back := make(chan struct{})
			start := time.Now()
			ctl.Send(func() { close(back) })
			<-back
			if hopsFrom.Load() {
				hops = append(hops, time.Since(start))
			}
		}
	}()
	for p := range partitions {
		for range inflight {
			load.Add(1)
			go send(p)
		}
	}
	// Warm up: every partition open and acknowledging.
	for deadline := time.Now().Add(time.Minute); acked.Load() < 10*partitions; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("warm-up: %d acknowledged, %d refused", acked.Load(), refused.Load())
		}
	}
	mu.Lock()
	ackLat = ackLat[:0]
	mu.Unlock()
	hopsFrom.Store(true)
	b.ResetTimer()
	c0 := cpuTime()
	base := acked.Load()
	for deadline := time.Now().Add(5 * time.Minute); acked.Load()-base < int64(b.N); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d acknowledged in 5 min (%d refused)", acked.Load()-base, b.N, refused.Load())
		}
	}
	cpu := cpuTime() - c0
	b.StopTimer()
	close(stop)
	<-sampled
	load.Wait()
	// Release every log (and its descriptors) before the next variant.
	var released sync.WaitGroup
	released.Add(partitions)
	for _, r := range refs {
		r.Send(&messages.RelinquishLeadership{Done: func(error) { released.Done() }})
	}
	released.Wait()
	slices.Sort(hops)
	mu.Lock()
	slices.Sort(ackLat)
	mu.Unlock()
	q := func(ds []time.Duration, f float64) float64 {
		if len(ds) == 0 {
			return 0
		}
		return float64(ds[min(len(ds)-1, int(float64(len(ds))*f))].Microseconds()) / 1000
	}
	b.ReportMetric(q(hops, 0.5), "hop-p50-ms")
	b.ReportMetric(q(hops, 0.99), "hop-p99-ms")
	b.ReportMetric(q(ackLat, 0.5), "ack-p50-ms")
	b.ReportMetric(q(ackLat, 0.99), "ack-p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/ack")
}

// cpuTime is this process's CPU time (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
