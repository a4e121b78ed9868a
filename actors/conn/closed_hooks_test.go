package conn

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/routing"
)

// TestConnectionClosedHooks: each connection's requests carry its own id,
// and the hooks hear that id when the client closes it, and only then.
func TestConnectionClosedHooks(t *testing.T) {
	system := actorsys.NewSystem()
	defer system.Shutdown()
	views := &routing.Store{}
	views.Publish(&routing.View{})
	srv := NewServer(Config{Log: zerolog.New(zerolog.NewTestWriter(t))}, system, views, actorsys.Ref{})
	seen := make(chan int64, 4)
	srv.Register(API{Key: kmsg.ListGroups.Int16(), MinVersion: 0, MaxVersion: 5, Handle: func(r *Request) Pending {
		seen <- r.Conn
		return Ready(r.Body.(*kmsg.ListGroupsRequest).ResponseKind())
	}})
	closed := make(chan int64, 4)
	srv.OnConnectionClosed(func(c int64) { closed <- c })
	addr, ctx := serveLoopback(t, srv)

	connOf := func(cl *kgo.Client) int64 {
		if _, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}
		select {
		case c := <-seen:
			return c
		case <-ctx.Done():
			t.Fatal("no request seen")
			return 0
		}
	}
	a, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	b, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ca, cb := connOf(a), connOf(b)
	if ca == cb || connOf(a) != ca {
		t.Fatalf("connection ids: a %d, b %d (a again: its own)", ca, cb)
	}
	a.Close()
	select {
	case c := <-closed:
		if c != ca {
			t.Fatalf("closed connection %d, want a's %d", c, ca)
		}
	case <-ctx.Done():
		t.Fatal("closing a's connection was not reported")
	}
	select {
	case c := <-closed:
		t.Fatalf("connection %d reported closed while b keeps it", c)
	case <-time.After(100 * time.Millisecond):
	}
}

// serveLoopback serves srv on a loopback port for 20 s at most (the
// context, ended with the test) and returns its address.
func serveLoopback(t *testing.T, srv *Server) (string, context.Context) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	go func() { _ = srv.Serve(ctx, ln) }()
	return ln.Addr().String(), ctx
}
