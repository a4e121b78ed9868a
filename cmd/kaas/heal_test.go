package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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
		body, err := chaosPost(httpAddr, "/debug/chaos/kill?kind=partition&how="+how+"&topic="+topic)
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
	if _, err := chaosPost(httpAddr, "/debug/chaos/kill?kind=partition&how=stop&topic=no-such-topic"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a topic without partitions here: %v", err)
	}
	load.stop()
	res := load.verify(c)
	restarts := scrapeRestarts(t, httpAddr)
	t.Logf("%d records acknowledged; restarts %v", res.acked, restarts)
	if restarts["partition"] < 6 || restarts["connection"] < 1 {
		t.Errorf("restarts counted %v, want at least 6 partition and 1 connection", restarts)
	}
	if v := b.views.Load(); v.TopicPartitionsLed() != parts {
		t.Errorf("%d partitions of topics routed after the kills, want %d", v.TopicPartitionsLed(), parts)
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

// TestControllerGiveUpReleasesLease: a controller actor killed until the
// broker gives up (five deaths within a minute) ends the process with
// status 70, and before it exits the broker releases its Lease, so the
// other broker takes over at once instead of after the Lease expires. The
// Lease duration is a minute: read right after the exit, the Lease must no
// longer name the broker that gave up (without the release it would, for a
// minute), and the survivor holds it at a higher epoch long before it
// could have expired.
func TestControllerGiveUpReleasesLease(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, "--lease-duration", "60s", "--renew-deadline", "40s", "--retry-period", "1s",
		"--heartbeat-interval", "250ms", "--fence-after", "2s", "--dead-after", "4s", "--debug-chaos")
	for _, n := range []string{"kaas-0", "kaas-1"} {
		c.start(n)
	}
	var ctrl string
	waitUntil(t, 30*time.Second, "a controller", func() bool { _, ctrl, _ = c.ledBy(); return ctrl != "" })
	holder, epoch := leaseHolder(t, c)
	if !strings.HasPrefix(holder, ctrl+"_") {
		t.Fatalf("the Lease names %q, the controller is %s", holder, ctrl)
	}
	b := c.brokers[ctrl]
	kills := 0
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		select {
		case <-b.exited:
		default:
			if time.Now().After(deadline) {
				t.Fatalf("%s still running after %d controller kills", ctrl, kills)
			}
			// 404 while the controller waits out its restart backoff.
			if _, err := chaosPost(b.http, "/debug/chaos/kill?kind=controller&how=panic"); err == nil {
				kills++
			}
			continue
		}
		break
	}
	if code := b.cmd.ProcessState.ExitCode(); code != essentialExitCode {
		t.Fatalf("%s exited with status %d after %d controller kills, want %d", ctrl, code, kills, essentialExitCode)
	}
	if now, _ := leaseHolder(t, c); now == holder {
		t.Fatalf("%s exited still named in the Lease (%q): it did not release it", ctrl, now)
	}
	other := "kaas-0"
	if ctrl == other {
		other = "kaas-1"
	}
	waitUntil(t, 30*time.Second, other+" holds the Lease at a higher epoch", func() bool {
		h, e := leaseHolder(t, c)
		return strings.HasPrefix(h, other+"_") && e > epoch
	})
	waitUntil(t, 30*time.Second, other+" runs the controller", func() bool { _, now, _ := c.ledBy(); return now == other })
	if !strings.Contains(b.log.String(), "lease released") {
		t.Errorf("%s's log has no \"lease released\"", ctrl)
	}
}

// leaseHolder reads the controller Lease of c's namespace: its holder
// ("" when released) and its epoch (leaseTransitions).
func leaseHolder(t testing.TB, c *kaasCluster) (string, int32) {
	t.Helper()
	var l struct {
		Spec struct {
			HolderIdentity   string `json:"holderIdentity"`
			LeaseTransitions int32  `json:"leaseTransitions"`
		} `json:"spec"`
	}
	out := c.api.kubectl(t, "-n", c.ns, "get", "lease", "kaas-controller", "-o", "json")
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("lease: %v\n%s", err, out)
	}
	return l.Spec.HolderIdentity, l.Spec.LeaseTransitions
}

// TestChaosFailingFsyncRestartsPartitions: fsyncs failed at the disk log's
// own fsync seam (--debug-chaos) fail the group commit of the partitions
// writing then, under an idempotent acks=all load: each such partition
// stops (its log refuses further writes), is reopened from the volume and
// serves again once the faults end, and the checker finds nothing
// acknowledged lost, duplicated or reordered.
func TestChaosFailingFsyncRestartsPartitions(t *testing.T) {
	const topic, parts = "fsyncfail", 3
	httpAddr := freeAddr(t)
	_, addr := testBroker(t, "--data-dir", t.TempDir(), "--debug-chaos", "--http-addr", httpAddr)
	c := &kaasCluster{t: t, brokers: map[string]*clusterBroker{"local": {name: "local", kafka: addr, exited: make(chan struct{})}}}
	adm := kadm.NewClient(c.client())
	if resp, err := adm.CreateTopic(ctxFor(t, 10*time.Second), parts, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	all := map[int32]bool{0: true, 1: true, 2: true}
	load := startLoad(t, c, topic, parts, true)
	start := time.Now()
	waitUntil(t, 30*time.Second, "every partition acknowledges", func() bool { _, ok := load.firstAcks(start, all); return ok })
	before := scrapeRestarts(t, httpAddr)["partition"]
	const faultsFor = 500 * time.Millisecond
	if _, err := chaosPost(httpAddr, "/debug/chaos/fsync?fail=1&for="+faultsFor.String()); err != nil {
		t.Fatalf("fsync faults: %v", err)
	}
	over := time.Now().Add(faultsFor)
	waitUntil(t, 60*time.Second, "every partition serves again after the failed fsyncs", func() bool {
		_, ok := load.firstAcks(over, all)
		return ok
	})
	body, err := chaosPost(httpAddr, "/debug/chaos/fsync") // no faults; answers the counts
	if err != nil {
		t.Fatalf("fsync counts: %v", err)
	}
	var counts struct{ Failed int64 }
	if err := json.Unmarshal(body, &counts); err != nil {
		t.Fatalf("fsync counts %q: %v", body, err)
	}
	if counts.Failed == 0 {
		t.Errorf("no fsync failed through the disk log's seam under load")
	}
	load.stop()
	res := load.verify(c)
	after := scrapeRestarts(t, httpAddr)["partition"]
	t.Logf("%d fsyncs failed; partition restarts %v -> %v; %d records acknowledged", counts.Failed, before, after, res.acked)
	if after <= before {
		t.Errorf("no partition restarted after its fsync failed (restarts %v -> %v)", before, after)
	}
}

// TestShareKeeperHeals: the share-partition keeper made to panic
// (--debug-chaos) while a franz-go share consumer reads and accepts records
// is restarted empty and every request to it is answered: the consumer
// opens a new share session and goes on, the keeper loads each
// share-partition's state again (from the volume with --data-dir, from
// the memory its earlier incarnation flushed to without), every record is
// delivered and in the end accepted (each share-partition's start reaches
// its end offset), and the panics are counted. The group starts at the
// latest offset, so a keeper that forgot a share-partition's state would
// start it again at the high watermark and the records after the start
// would never be delivered.
func TestShareKeeperHeals(t *testing.T) {
	for _, withDir := range []bool{false, true} {
		name := "memory"
		httpAddr := freeAddr(t)
		args := []string{"--debug-chaos", "--http-addr", httpAddr}
		if withDir {
			name = "data-dir"
			args = append(args, "--data-dir", t.TempDir())
		}
		t.Run(name, func(t *testing.T) { shareKeeperHeals(t, httpAddr, args) })
	}
}

func shareKeeperHeals(t *testing.T, httpAddr string, args []string) {
	_, addr := testBroker(t, args...)
	const topic, group, n, panics = "share-heal", "sg-heal", 300, 5
	createTopic(t, addr, topic, 3, nil)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 120*time.Second)
	// At most 10 records a fetch: most are not yet acquired when the
	// keeper panics.
	cl := shareConsumer(t, addr, group, topic, kgo.ShareMaxRecords(10), kgo.ShareMaxRecordsStrict())
	seen := map[string]bool{}
	kills := 0
	consume := func() {
		pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		fs := cl.PollRecords(pollCtx, 20)
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)] = true })
		cl.MarkAcks(kgo.AckAccept)
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Every share-partition starts (at the latest offset, 0) before the
	// records are produced.
	for started := false; !started; {
		consume()
		if ctx.Err() != nil {
			t.Fatalf("share-partitions never started: %v", ctx.Err())
		}
		offs, err := adm.DescribeShareGroupOffsets(ctx, group)
		started = err == nil && len(offs[group].Offsets[topic]) == 3
	}
	produceKeys(t, addr, topic, 0, n)
	before := scrapeRestarts(t, httpAddr)["share"] // the counter is the process's
	for len(seen) < n {
		consume()
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records delivered after %d panics: %v", len(seen), n, kills, ctx.Err())
		}
		if kills < panics && len(seen) >= (kills+1)*n/(panics+1) {
			if _, err := chaosPost(httpAddr, "/debug/chaos/kill?kind=share&how=panic"); err != nil {
				t.Fatalf("make the keeper panic: %v", err)
			}
			kills++
		}
	}
	if kills != panics {
		t.Fatalf("%d panics, want %d", kills, panics)
	}
	// Acceptances the panics lost are delivered again, and accepted.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets: %v %v", err, ends.Error())
	}
	for done := false; !done; {
		consume()
		if ctx.Err() != nil {
			t.Fatalf("share-partitions never all done: %v", ctx.Err())
		}
		offs, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			continue
		}
		done = true
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := offs[group].Offsets[topic][e.Partition]; !ok || o.StartOffset != e.Offset {
				done = false
			}
		})
	}
	if r := scrapeRestarts(t, httpAddr)["share"] - before; r != panics {
		t.Errorf("share keeper restarts counted %v, want %d", r, panics)
	}
}
