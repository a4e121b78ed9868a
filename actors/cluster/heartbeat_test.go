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

	"github.com/kaas-project/kaas/proto/heartbeatpb"
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
		if err := s.Send(&heartbeatpb.Push{Kind: heartbeatpb.Push_PONG, AckSeq: p.Seq}); err != nil {
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
		time.Sleep(10 * time.Millisecond)
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
