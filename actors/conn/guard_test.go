package conn

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/routing"
)

// TestStoppedServerIsReleased: once its listener and connections are
// closed, nothing of the process keeps a Server (and through it its
// actor system) alive; brokers started and stopped in one process (tests,
// the request fuzzer) must not add up.
func TestStoppedServerIsReleased(t *testing.T) {
	released := serveOnce(t)
	deadline := time.Now().Add(10 * time.Second)
	for released.Value() != nil {
		if time.Now().After(deadline) {
			t.Fatal("a stopped Server is still reachable")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// serveOnce serves one request on a new Server, stops it, and returns a
// weak pointer to it.
func serveOnce(t *testing.T) weak.Pointer[Server] {
	system := actorsys.NewSystem()
	defer system.Shutdown()
	views := &routing.Store{}
	views.Publish(&routing.View{})
	srv := NewServer(Config{Log: zerolog.Nop()}, system, views, actorsys.Ref{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ctx, ln)
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	cancel()
	<-served
	srv.CloseConnections()
	srv.Wait()
	return weak.Make(srv)
}
