package conn

import (
	"bytes"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/routing"
)

// TestHandlerPanicsAnsweredAndReported: a panic in a handler or in its
// Pending is answered UNKNOWN_SERVER_ERROR, the connection keeps serving,
// and the panic reaches actorsys.WatchPanics with the API's name and the
// panicking stack.
func TestHandlerPanicsAnsweredAndReported(t *testing.T) {
	var mu sync.Mutex
	var seen []actorsys.Panic
	defer actorsys.WatchPanics(func(p actorsys.Panic) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p)
	})()
	system := actorsys.NewSystem()
	defer system.Shutdown()
	views := &routing.Store{}
	views.Publish(&routing.View{})
	srv := NewServer(Config{Log: zerolog.Nop()}, system, views, actorsys.Ref{})
	srv.Register(API{Key: kmsg.ListGroups.Int16(), MinVersion: 0, MaxVersion: 5, Handle: panicInHandler})
	srv.Register(API{Key: kmsg.DescribeCluster.Int16(), MinVersion: 0, MaxVersion: 2, Handle: panicInPending})
	addr, ctx := serveLoopback(t, srv)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	for _, c := range []struct {
		req   kmsg.Request
		where string
		frame string
	}{
		{kmsg.NewPtrListGroupsRequest(), "ListGroups", "conn.panicInHandler"},
		{kmsg.NewPtrDescribeClusterRequest(), "DescribeCluster", "conn.panicInPending.func1"},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		resp, err := cl.Request(ctx, c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		var code int16
		switch r := resp.(type) {
		case *kmsg.ListGroupsResponse:
			code = r.ErrorCode
		case *kmsg.DescribeClusterResponse:
			code = r.ErrorCode
		}
		if code != kerr.UnknownServerError.Code {
			t.Errorf("%s answered %d, want UNKNOWN_SERVER_ERROR", c.where, code)
		}
		mu.Lock()
		got := append([]actorsys.Panic(nil), seen...)
		mu.Unlock()
		if len(got) != 1 || got[0].Where != c.where || got[0].Reason != "boom" || !bytes.Contains(got[0].Stack, []byte(c.frame)) {
			t.Errorf("%s: watchers saw %+v", c.where, got)
		}
	}
}

func panicInHandler(*Request) Pending { panic("boom") }

func panicInPending(*Request) Pending { return func() kmsg.Response { panic("boom") } }
