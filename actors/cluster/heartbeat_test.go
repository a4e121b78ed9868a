package cluster

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage/assignment"
)

// heartbeatServer is a controller stand-in over real gRPC: it either
// answers every ping with a PONG, or (stuck) never reads its streams, like
// a controller too busy to keep up: the broker's Send then blocks on flow
// control once the window is full.
type heartbeatServer struct {
	heartbeatpb.UnimplementedHeartbeatServer
	stuck   bool
	streams atomic.Int32
	pings   atomic.Int32
	addr    string
	// fileEpoch, fileVersion: the assignment file every PONG names.
	fileEpoch, fileVersion int64
}

func (h *heartbeatServer) Stream(s heartbeatpb.Heartbeat_StreamServer) error {
	h.streams.Add(1)
	if h.stuck {
		<-s.Context().Done()
		return s.Context().Err()
	}
	for {
		p, err := s.Recv()
		if err != nil {
			return err
		}
		h.pings.Add(1)
		if err := s.Send(&heartbeatpb.Push{Kind: heartbeatpb.Push_PONG, AckSeq: p.Seq, AssignmentEpoch: h.fileEpoch, AssignmentVersion: h.fileVersion}); err != nil {
			return err
		}
	}
}

func startHeartbeatServer(t *testing.T, stuck bool) *heartbeatServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &heartbeatServer{stuck: stuck, addr: ln.Addr().String()}
	srv := grpc.NewServer()
	heartbeatpb.RegisterHeartbeatServer(srv, h)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return h
}

// bigPing lists 3,000 partitions (~40 KB): two fill a stream's initial
// flow-control window.
func bigPing() *heartbeatpb.Ping {
	p := &heartbeatpb.Ping{Name: "kaas-1"}
	for i := range 3000 {
		p.Partitions = append(p.Partitions, &heartbeatpb.PartitionLed{Topic: strings.Repeat("t", 8), Partition: int32(i), LeaderEpoch: 7})
	}
	return p
}

func runHeartbeatsTo(t *testing.T, target *atomic.Value) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ping := bigPing()
	go func() {
		defer close(done)
		RunHeartbeats(ctx, HeartbeatConfig{
			Target:   func() string { return target.Load().(string) },
			Ping:     func() *heartbeatpb.Ping { return ping },
			OnPush:   func(*heartbeatpb.Push) {},
			Interval: 50 * time.Millisecond,
			Log:      zerolog.Nop(),
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond) // waits on real gRPC streams
	}
}

// TestHeartbeatLeavesAStuckController: a broker whose pings are blocked by
// a controller that stopped reading reaches the controller the file names
// next, well inside dead-after, and redials a stream stuck on its own.
func TestHeartbeatLeavesAStuckController(t *testing.T) {
	stuck, next := startHeartbeatServer(t, true), startHeartbeatServer(t, false)
	var target atomic.Value
	target.Store(stuck.addr)
	runHeartbeatsTo(t, &target)
	waitFor(t, "stream to the stuck controller", 5*time.Second, func() bool { return stuck.streams.Load() >= 1 })
	// Stalled sends end the stream (two intervals) and the broker redials.
	waitFor(t, "redial after a stalled send", 2*time.Second, func() bool { return stuck.streams.Load() >= 2 })
	target.Store(next.addr)
	waitFor(t, "pings reach the next controller", time.Second, func() bool { return next.pings.Load() >= 3 })
}

func TestCaughtUp(t *testing.T) {
	applied := func(epoch, version int64) func() assignment.Position {
		return func() assignment.Position { return assignment.Position{Epoch: epoch, Version: version} }
	}
	cases := []struct {
		name           string
		applied        func() assignment.Position
		epoch, version int64
		want           bool
	}{
		{"no condition", nil, 4, 9, true},
		{"an older controller names no file", applied(0, 0), 0, 0, true},
		{"the same file", applied(4, 9), 4, 9, true},
		{"a later version", applied(4, 10), 4, 9, true},
		{"a later epoch", applied(5, 1), 4, 9, true},
		{"an older version", applied(4, 8), 4, 9, false},
		{"an older epoch", applied(3, 50), 4, 9, false},
		{"nothing applied yet", applied(0, 0), 4, 9, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := caughtUp(tc.applied, &heartbeatpb.Push{AssignmentEpoch: tc.epoch, AssignmentVersion: tc.version}); got != tc.want {
				t.Fatalf("caughtUp = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestExchangeWaitsForTheNamedFile: PONGs naming an assignment file the
// broker has not applied complete no exchange (its fence stays closed),
// however many arrive; once it has applied that file, the next one does.
func TestExchangeWaitsForTheNamedFile(t *testing.T) {
	srv := startHeartbeatServer(t, false)
	srv.fileEpoch, srv.fileVersion = 2, 7
	var applied atomic.Int64 // version at epoch 2
	applied.Store(6)
	fence := NewFence(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunHeartbeats(ctx, HeartbeatConfig{
			Target:     func() string { return srv.addr },
			Ping:       func() *heartbeatpb.Ping { return &heartbeatpb.Ping{Name: "kaas-1"} },
			OnPush:     func(*heartbeatpb.Push) {},
			OnExchange: func(at time.Time, _ *heartbeatpb.Push) { fence.Exchanged(at) },
			Applied:    func() assignment.Position { return assignment.Position{Epoch: 2, Version: applied.Load()} },
			Interval:   10 * time.Millisecond,
			Log:        zerolog.Nop(),
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "pings answered", 5*time.Second, func() bool { return srv.pings.Load() >= 10 })
	if !fence.Fenced() {
		t.Fatalf("fence lifted by %d PONGs naming file 2.7 while 2.6 is applied", srv.pings.Load())
	}
	applied.Store(7)
	waitFor(t, "fence lifted once the named file is applied", 5*time.Second, func() bool { return !fence.Fenced() })
}

// TestExchangesAreDatedOnTheClock: an exchange counts from the clock's
// reading when its ping was sent, so a fence on the same clock closes
// fence-after later in virtual time, and a ping sent after that opens it.
func TestExchangesAreDatedOnTheClock(t *testing.T) {
	srv := startHeartbeatServer(t, false)
	clk := clock.NewFake(time.Now())
	fence := NewFenceOn(clk, time.Second)
	kick := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunHeartbeats(ctx, HeartbeatConfig{
			Target:     func() string { return srv.addr },
			Ping:       func() *heartbeatpb.Ping { return &heartbeatpb.Ping{Name: "kaas-1"} },
			OnPush:     func(*heartbeatpb.Push) {},
			OnExchange: func(at time.Time, _ *heartbeatpb.Push) { fence.Exchanged(at) },
			Kick:       kick,
			Interval:   time.Hour, // pings go out at the stream's start and when kicked
			Log:        zerolog.Nop(),
			Clock:      clk,
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the first exchange", 5*time.Second, func() bool { return !fence.Fenced() })
	clk.Advance(time.Second)
	if fence.Fenced() {
		t.Fatal("fenced at fence_after after the exchanged ping was sent")
	}
	clk.Advance(time.Millisecond)
	if !fence.Fenced() {
		t.Fatal("not fenced past fence_after after the exchanged ping was sent")
	}
	select {
	case kick <- struct{}{}:
	case <-time.After(5 * time.Second):
		t.Fatal("the ping loop took no kick")
	}
	waitFor(t, "an exchange for the kicked ping", 5*time.Second, func() bool { return !fence.Fenced() })
	if srv.pings.Load() != 2 {
		t.Fatalf("%d pings, want the first and the kicked one", srv.pings.Load())
	}
}
