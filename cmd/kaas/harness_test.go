package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/kaas-project/kaas/wire/wiretest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// startTestBroker starts an in-process broker on a free loopback port with
// extra command-line flags; stop shuts it down (idempotent, also run at
// cleanup).
func startTestBroker(t testing.TB, args ...string) (b *broker, addr string, stop func()) {
	t.Helper()
	return startTestBrokerAt(t, freeAddr(t), args...)
}

// startTestBrokerAt is startTestBroker listening on addr.
func startTestBrokerAt(t testing.TB, addr string, args ...string) (b *broker, _ string, stop func()) {
	t.Helper()
	b, stop = startBrokerArgs(t, append([]string{"--kafka-addr", addr, "--http-addr", "", "--log-level", "warn"}, args...)...)
	return b, addr, stop
}

// startBrokerArgs starts an in-process broker with exactly args (its
// listeners among them), stopped when the test ends.
func startBrokerArgs(t testing.TB, args ...string) (b *broker, stop func()) {
	t.Helper()
	cfg, err := parseServe(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var logOut io.Writer = io.Discard
	if os.Getenv("KAAS_TEST_LOGS") != "" {
		logOut = os.Stderr
	}
	b, err = startBroker(ctx, cfg, logOut)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stop = func() {
		cancel()
		b.shutdown()
	}
	t.Cleanup(stop)
	return b, stop
}

// testBroker starts an in-memory in-process broker and returns it and its
// bootstrap address.
func testBroker(t testing.TB, args ...string) (*broker, string) {
	b, addr, _ := startTestBroker(t, args...)
	return b, addr
}

// freeAddr returns a loopback address for a broker to listen on.
var freeAddr = wiretest.FreeAddr

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// producesByName caps Produce at v12, the last version that names topics
// (v13 names them by id): for clients that send ProduceRequests built by
// hand with topic names.
func producesByName() kgo.Opt {
	v := kversion.Tip()
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), 12)
	return kgo.MaxVersions(v)
}

func newAdmin(t testing.TB, addr string) *kadm.Client {
	return kadm.NewClient(newClient(t, addr))
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// goroutinesIn counts the goroutines whose stack holds frame.
func goroutinesIn(t testing.TB, frame string) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	return strings.Count(b.String(), frame)
}

// TestStopEndsShareStateWriter: a stopped broker stops its share-partition
// keeper, whose state writer goroutine then ends; left running, it kept
// the stopped broker's actor system reachable, and brokers started and
// stopped in one process (these tests, the request fuzzer) added up.
func TestStopEndsShareStateWriter(t *testing.T) {
	const writer = "share.(*writer).run("
	before := goroutinesIn(t, writer)
	_, _, stop := startTestBroker(t, "--data-dir", t.TempDir())
	waitUntil(t, 10*time.Second, "the share state writer running", func() bool { return goroutinesIn(t, writer) == before+1 })
	stop()
	waitUntil(t, 10*time.Second, "the share state writer gone", func() bool { return goroutinesIn(t, writer) == before })
}

// TestStopWaitsForPartitionOpens: a broker on a data dir stopped at once,
// while its partitions (the 50 of __consumer_offsets) are still opening,
// creates nothing after its stop returned: the directory removed right
// after stays removed.
func TestStopWaitsForPartitionOpens(t *testing.T) {
	for i := range 10 {
		dir, err := os.MkdirTemp("", "kaas-stop-")
		if err != nil {
			t.Fatal(err)
		}
		_, _, stop := startTestBroker(t, "--data-dir", dir)
		stop()
		if err := os.RemoveAll(dir); err != nil {
			t.Fatalf("start %d: removing the data dir after the stop: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond) // what a late open would write
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("start %d: the data dir is back after the stop (%v)", i, err)
		}
	}
}
