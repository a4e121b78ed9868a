package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// TestBrokerAtOpenFileLimitKeepsServing: a broker whose descriptors run
// out (its open-file limit lowered to a few more than it holds, then
// clients connecting past it) keeps its Kafka listener, and once the
// connections go it accepts clients again and creates and serves a topic
// on disk.
func TestBrokerAtOpenFileLimitKeepsServing(t *testing.T) {
	k := startKaas(t, "--data-dir", t.TempDir())
	pid := k.cmd.Process.Pid
	_, fds, err := procFootprint(pid)
	if err != nil {
		t.Fatal(err)
	}
	limit := uint64(fds + 20)
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	// Connect until the broker holds every descriptor it may, then a few
	// more (the kernel completes the handshakes the broker cannot accept,
	// so every dial succeeds).
	extra := 0
	for deadline := time.Now().Add(2 * time.Minute); extra < 5; {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections and the broker is not at its limit of %d descriptors; broker log:\n%s", len(conns), limit, k.Log())
		}
		if _, fds, err = procFootprint(pid); err != nil {
			t.Fatal(err)
		}
		if uint64(fds) >= limit {
			extra++
		}
		c, err := net.DialTimeout("tcp", k.Addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		time.Sleep(10 * time.Millisecond)
	}
	// Accept fails for want of descriptors while they are all taken.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(k.Log(), "too many open files"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("at the limit and no error for want of descriptors logged; broker log:\n%s", k.Log())
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
	conns = nil

	cl := newClient(t, k.Addr, kgo.DefaultProduceTopic("after-limit"), kgo.RetryTimeout(time.Minute))
	ctx := ctxT(t, 2*time.Minute)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, nil, "after-limit"); err != nil {
		t.Fatalf("create topic after the limit was hit: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("still here")}).FirstErr(); err != nil {
		t.Fatalf("produce after the limit was hit: %v", err)
	}
	if strings.Contains(k.Log(), "kafka listener stopped") {
		t.Fatalf("the listener stopped; broker log:\n%s", k.Log())
	}
}
