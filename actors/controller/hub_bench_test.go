package controller

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage/assignment"
)

// processCPU is this process's user+system time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHeartbeatHub measures the controller's heartbeat hub with 100
// simulated brokers, each on its own gRPC connection over loopback, pinging
// once a second with the partitions the controller's assignment gives it
// (KAAS_HUB_BENCH_PARTITIONS in all, default 10,000, in topics of 100).
// One op is a 10 s window of two runs in turn, in one process: the hub
// forwarding pings to an actor that drops them (the baseline: gRPC, the
// hub and the simulated brokers) and the hub forwarding them to the real
// controller actor. The process's CPU per second (getrusage) of each, the
// difference (what the controller's handling of the pings costs) and the
// ping-to-PONG p99 seen by the brokers are reported.
//
//	go test ./actors/controller -run '^$' -bench BenchmarkHeartbeatHub -benchtime 1x
func BenchmarkHeartbeatHub(b *testing.B) {
	const brokers, perTopic, window = 100, 100, 10 * time.Second
	total := 10000
	if n, err := strconv.Atoi(os.Getenv("KAAS_HUB_BENCH_PARTITIONS")); err == nil && n > 0 {
		total = n
	}
	dir := dataDir(b)
	sys := actorsys.NewSystem()
	b.Cleanup(sys.Shutdown)
	hub := NewHub()
	ctrl, err := sys.Spawn("controller", New(Config{
		Self: "kaas-0", SelfHost: "127.0.0.1", SelfPort: 9092, HeartbeatAddr: "127.0.0.1:9094",
		Epoch: 5, DataDir: dir, DeadAfter: 30 * time.Second, Hub: hub, Log: zerolog.Nop(),
	}, nil))
	if err != nil {
		b.Fatal(err)
	}
	sink, err := sys.Spawn("sink", func() actor.Actor { return actor.ReceiveFunc(func(actor.Context) {}) })
	if err != nil {
		b.Fatal(err)
	}
	topics := map[string]balancer.TopicSpec{}
	for i := 0; i*perTopic < total; i++ {
		topics[fmt.Sprintf("t%03d", i)] = balancer.TopicSpec{ID: fmt.Sprintf("id-%d", i), Partitions: min(perTopic, total-i*perTopic), Config: map[string]string{}}
	}
	ctrl.Send(&TopicsChanged{Topics: topics})

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	heartbeatpb.RegisterHeartbeatServer(srv, hub)
	go srv.Serve(lis)
	b.Cleanup(srv.Stop)

	// The simulated brokers: each pings every second with what the newest
	// file gives it, and records each ping's time to its PONG.
	var (
		mu    sync.Mutex
		file  *assignment.Assignment
		waits []time.Duration
	)
	// What each broker leads in the file, computed once per file (the
	// brokers' own cost stays out of the figures as far as it can).
	var led map[string][]*heartbeatpb.PartitionLed
	setFile := func(a *assignment.Assignment) {
		byID := map[int32]string{}
		for _, br := range a.Brokers {
			byID[br.ID] = br.Name
		}
		l := map[string][]*heartbeatpb.PartitionLed{}
		for t, tp := range a.Topics {
			for p, part := range tp.Partitions {
				name := byID[part.Leader]
				l[name] = append(l[name], &heartbeatpb.PartitionLed{Topic: t, Partition: int32(p), LeaderEpoch: part.LeaderEpoch})
			}
		}
		mu.Lock()
		file, led = a, l
		mu.Unlock()
	}
	ledBy := func(name string) (parts []*heartbeatpb.PartitionLed, epoch, version int64) {
		mu.Lock()
		defer mu.Unlock()
		if file == nil {
			return nil, 0, 0
		}
		return led[name], file.ControllerEpoch, file.AssignmentVersion
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	var wg sync.WaitGroup
	b.Cleanup(wg.Wait)
	for i := 0; i < brokers; i++ {
		name := fmt.Sprintf("kaas-%d", i)
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stream heartbeatpb.Heartbeat_StreamClient
			for stream == nil && ctx.Err() == nil {
				// The hub refuses streams while the controller is not set yet.
				if s, err := heartbeatpb.NewHeartbeatClient(conn).Stream(ctx); err == nil {
					stream = s
				}
			}
			sent := map[uint64]time.Time{}
			var smu sync.Mutex
			go func() {
				for {
					p, err := stream.Recv()
					if err != nil {
						return
					}
					if p.Kind != heartbeatpb.Push_PONG {
						continue
					}
					smu.Lock()
					at, ok := sent[p.AckSeq]
					delete(sent, p.AckSeq)
					smu.Unlock()
					if ok {
						mu.Lock()
						waits = append(waits, time.Since(at))
						mu.Unlock()
					}
				}
			}()
			// Spread the brokers over the second, as independent brokers are.
			time.Sleep(time.Duration(i) * time.Second / brokers)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for seq := uint64(1); ctx.Err() == nil; seq++ {
				parts, epoch, version := ledBy(name)
				smu.Lock()
				sent[seq] = time.Now()
				smu.Unlock()
				if stream.Send(&heartbeatpb.Ping{BrokerId: int32(i), Name: name, KafkaHost: "127.0.0.1", KafkaPort: int32(9092 + i), Healthy: true,
					Partitions: parts, ControllerEpoch: epoch, AssignmentVersion: version, Seq: seq}) != nil {
					return
				}
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
		}()
	}
	hub.SetController(ctrl, 5, nil)
	// Warm up: the controller places every partition over the 100 brokers
	// and the brokers report them.
	deadline := time.Now().Add(5 * time.Minute)
	for {
		// The simulated brokers apply every file, as brokers do: moves
		// wait for their reports.
		a, err := assignment.ReadFile(assignment.Path(dir))
		if a != nil {
			setFile(a)
			err = fmt.Errorf("%d brokers in version %d", len(a.Brokers), a.AssignmentVersion)
		}
		if a != nil && len(a.Brokers) == brokers {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the controller did not place the partitions over %d brokers within 5 minutes (%v)", brokers, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	// The brokers' reports may have moved partitions meanwhile: take the
	// file in force.
	if a, err := assignment.ReadFile(assignment.Path(dir)); err == nil {
		setFile(a)
	}
	time.Sleep(2 * time.Second)

	type result struct {
		cpu   time.Duration
		took  time.Duration
		waits []time.Duration
	}
	measure := func(target actorsys.Ref) result {
		hub.SetController(target, 5, nil)
		mu.Lock()
		waits = nil
		mu.Unlock()
		c0, t0 := processCPU(), time.Now()
		time.Sleep(window)
		c1, took := processCPU(), time.Since(t0)
		mu.Lock()
		w := slices.Clone(waits)
		mu.Unlock()
		slices.Sort(w)
		return result{cpu: c1 - c0, took: took, waits: w}
	}
	p99 := func(w []time.Duration) time.Duration {
		if len(w) == 0 {
			return 0
		}
		return w[len(w)*99/100]
	}
	for i := 0; i < b.N; i++ {
		// The same epoch: the open streams forward to the new target
		// (the controller stays under dead-after while the sink has them).
		base := measure(sink)
		real := measure(ctrl)
		perSec := func(r result) float64 { return r.cpu.Seconds() / r.took.Seconds() }
		b.Logf("hub only (baseline): %.1f%% of a core, %d pongs, p99 %v; hub and controller: %.1f%% of a core, %d pongs, p99 %v; the controller's pings: %.1f ms CPU per second",
			100*perSec(base), len(base.waits), p99(base.waits), 100*perSec(real), len(real.waits), p99(real.waits), 1000*(perSec(real)-perSec(base)))
		b.ReportMetric(1000*perSec(base), "baseline-cpu-ms/s")
		b.ReportMetric(1000*perSec(real), "controller-cpu-ms/s")
		b.ReportMetric(float64(p99(base.waits).Microseconds())/1000, "baseline-p99-ms")
		b.ReportMetric(float64(p99(real.waits).Microseconds())/1000, "controller-p99-ms")
	}
}
