package interbroker

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

func brokerAt(t *testing.T, addr string) routing.Broker {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return routing.Broker{ID: 1, Host: host, Port: int32(p)}
}

// TestClients: a request reaches the broker named, synchronously and
// asynchronously over one client per address; after Close the next
// request opens a new one; a broker that does not answer is an error
// within the timeout, never a hang.
func TestClients(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	b := brokerAt(t, kf.ListenAddrs()[0])
	c := &Clients{Timeout: 2 * time.Second}
	defer c.Close()
	ctx := context.Background()

	meta := func() kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		name := "t"
		rt.Topic = &name
		r.Topics = append(r.Topics, rt)
		return r
	}
	kr, err := c.Do(ctx, b, meta())
	if err != nil || len(kr.(*kmsg.MetadataResponse).Topics) != 1 {
		t.Fatalf("Do: %v %+v", err, kr)
	}
	done := make(chan error, 1)
	c.Request(b, meta(), func(kr kmsg.Response, err error) {
		if err == nil && len(kr.(*kmsg.MetadataResponse).Topics) != 1 {
			err = context.Canceled
		}
		done <- err
	})
	if err := <-done; err != nil {
		t.Fatalf("Request: %v", err)
	}
	if len(c.clients) != 1 {
		t.Fatalf("%d clients for one broker", len(c.clients))
	}
	c.Close()
	if _, err := c.Do(ctx, b, meta()); err != nil || len(c.clients) != 1 {
		t.Fatalf("after Close: %v, %d clients", err, len(c.clients))
	}

	// A listener that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	if _, err := c.Do(ctx, brokerAt(t, ln.Addr().String()), meta()); err == nil {
		t.Fatal("a silent broker answered")
	}
}
