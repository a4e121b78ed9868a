package controller

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
)

// TestHubAnswersOnlyWithAFreshLease: a PONG lifts a broker's self-fence, so
// a controller that has not renewed its Lease recently (resumed from a
// pause) must not answer pings until it has. Every PONG names the newest
// assignment file the controller wrote.
func TestHubAnswersOnlyWithAFreshLease(t *testing.T) {
	sys := actorsys.NewSystem()
	t.Cleanup(sys.Shutdown)
	sink, err := sys.Spawn("sink", func() actor.Actor { return actor.ReceiveFunc(func(actor.Context) {}) })
	if err != nil {
		t.Fatal(err)
	}
	hub := NewHub()
	var fresh atomic.Bool
	fresh.Store(true)
	hub.SetController(sink, 4, fresh.Load)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	heartbeatpb.RegisterHeartbeatServer(srv, hub)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := heartbeatpb.NewHeartbeatClient(conn).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pongs := make(chan *heartbeatpb.Push, 16)
	go func() {
		for {
			p, err := stream.Recv()
			if err != nil {
				return
			}
			if p.Kind == heartbeatpb.Push_PONG {
				pongs <- p
			}
		}
	}()
	ping := func(seq uint64) {
		if err := stream.Send(&heartbeatpb.Ping{Name: "kaas-1", Seq: seq}); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(seq uint64, fileEpoch, fileVersion int64) {
		t.Helper()
		select {
		case got := <-pongs:
			if got.AckSeq != seq || got.AssignmentEpoch != fileEpoch || got.AssignmentVersion != fileVersion {
				t.Fatalf("PONG for %d naming file %d.%d, want %d naming %d.%d", got.AckSeq, got.AssignmentEpoch, got.AssignmentVersion, seq, fileEpoch, fileVersion)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("no PONG for ping %d", seq)
		}
	}
	ping(1)
	expect(1, 0, 0)
	fresh.Store(false)
	ping(2)
	select {
	case got := <-pongs:
		t.Fatalf("PONG %d while the lease was not fresh", got.AckSeq)
	case <-time.After(300 * time.Millisecond):
	}
	fresh.Store(true)
	hub.SetWritten(4, 12)
	ping(3)
	expect(3, 4, 12)
}
