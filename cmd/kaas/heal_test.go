package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestLocalPartitionsHeal: in local mode with --data-dir, partition actors
// stopped, poisoned and made to panic (--debug-chaos) under an idempotent
// acks=all load are closed and spawned again: each serves again from its
// recovered log, the restarts are counted, and the checker finds nothing
// acknowledged lost, duplicated or reordered. A connection actor's panic
// closes that connection only.
func TestLocalPartitionsHeal(t *testing.T) {
	const topic, parts = "heal", 3
	httpAddr := freeAddr(t)
	b, addr := testBroker(t, "--data-dir", t.TempDir(), "--debug-chaos", "--http-addr", httpAddr)
	// The load and checker of the cluster tests, over this one broker.
	c := &kaasCluster{t: t, brokers: map[string]*clusterBroker{"local": {name: "local", kafka: addr, exited: make(chan struct{})}}}
	adm := kadm.NewClient(c.client())
	if resp, err := adm.CreateTopic(ctxFor(t, 10*time.Second), parts, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	all := map[int32]bool{0: true, 1: true, 2: true}
	load := startLoad(t, c, topic, parts, true)
	start := time.Now()
	waitUntil(t, 30*time.Second, "every partition acknowledges", func() bool { _, ok := load.firstAcks(start, all); return ok })
	killed := map[string]bool{}
	for _, how := range []string{"stop", "poison", "panic", "stop", "poison", "panic"} {
		body, err := chaosPost(httpAddr, "/debug/chaos/kill?kind=partition&how="+how)
		if err != nil {
			t.Fatalf("kill: %v", err)
		}
		killed[string(body)] = true
		at := time.Now()
		waitUntil(t, 30*time.Second, "every partition serves again after a "+how, func() bool { _, ok := load.firstAcks(at, all); return ok })
	}
	if _, err := chaosPost(httpAddr, "/debug/chaos/kill?kind=connection&how=panic"); err != nil {
		t.Fatalf("kill a connection: %v", err)
	}
	at := time.Now()
	waitUntil(t, 30*time.Second, "every partition serves again after a connection's panic", func() bool { _, ok := load.firstAcks(at, all); return ok })
	if _, err := chaosPost(httpAddr, "/debug/chaos/kill?kind=controller&how=stop"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("local mode has no controller actor to kill: %v", err)
	}
	if _, err := chaosPost(httpAddr, "/debug/chaos/kill?kind=partition&how=twice"); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("an unknown way to kill: %v", err)
	}
	load.stop()
	res := load.verify(c)
	restarts := scrapeRestarts(t, httpAddr)
	t.Logf("%d records acknowledged; restarts %v", res.acked, restarts)
	if restarts["partition"] < 6 || restarts["connection"] < 1 {
		t.Errorf("restarts counted %v, want at least 6 partition and 1 connection", restarts)
	}
	if v := b.views.Load(); len(v.Local) != parts {
		t.Errorf("%d partitions routed after the kills, want %d", len(v.Local), parts)
	}
}

// TestChaosEndpointsOffByDefault: without --debug-chaos nothing answers on
// /debug/chaos/.
func TestChaosEndpointsOffByDefault(t *testing.T) {
	httpAddr := freeAddr(t)
	testBroker(t, "--http-addr", httpAddr)
	waitUntil(t, 10*time.Second, "the HTTP listener", func() bool {
		_, err := chaosPost(httpAddr, "/healthz")
		return err == nil || !strings.Contains(err.Error(), "connection refused")
	})
	for _, p := range []string{"/debug/chaos/kill?kind=partition&how=stop", "/debug/chaos/fsync?fail=1"} {
		if _, err := chaosPost(httpAddr, p); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("%s without --debug-chaos: %v", p, err)
		}
	}
}

// TestEssentialActorDeathEndsProcess: the supervisor dying outside a
// shutdown ends the process with a non-zero status (Kubernetes restarts
// the pod) rather than leaving a broker that accepts connections and
// serves nothing; its shutdown does not.
func TestEssentialActorDeathEndsProcess(t *testing.T) {
	exited := make(chan int, 2)
	exitProcess = func(code int) { exited <- code }
	t.Cleanup(func() { exitProcess = os.Exit })
	b, _, stop := startTestBroker(t)
	b.groups.Ref().Stop()
	select {
	case code := <-exited:
		if code != essentialExitCode {
			t.Errorf("exit status %d, want %d", code, essentialExitCode)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the group coordinator stopped and the process did not exit")
	}
	b2, _, stop2 := startTestBroker(t)
	stop2()
	stop()
	_ = b2
	select {
	case code := <-exited:
		t.Errorf("a shutdown exited the process with %d", code)
	case <-time.After(500 * time.Millisecond):
	}
}
