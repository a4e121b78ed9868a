package main

import (
	"context"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testBroker starts an in-process broker on loopback ports and returns its
// bootstrap address. Extra args are parsed as command-line flags.
func testBroker(t testing.TB, args ...string) (*broker, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	all := append([]string{"--kafka-addr", addr, "--http-addr", "", "--log-level", "warn"}, args...)
	cfg, err := parseServe(all, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var logOut io.Writer = io.Discard
	if os.Getenv("KAAS_TEST_LOGS") != "" {
		logOut = os.Stderr
	}
	b, err := startBroker(ctx, cfg, logOut)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		b.shutdown()
	})
	return b, addr
}

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t testing.TB, addr string) *kadm.Client {
	return kadm.NewClient(newClient(t, addr))
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
