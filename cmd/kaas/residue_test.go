package main

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/wire/sasl"
	"github.com/kaas-project/kaas/wire/tlsfiles/tlstest"
)

// residue is what a broker process holds that a finished lifecycle should
// have given back.
type residue struct {
	goroutines int // idle workers of the actor goroutine pool left out
	idle       int // idle workers of the actor goroutine pool
	fds        int
	heap       int64          // bytes in use after a forced collection
	memfd      int64          // bytes allocated to in-memory files (the in-memory arena)
	stacks     map[string]int // goroutines per stack, to name what grew
	files      map[string]int // open fds per target, to name what grew
}

// grownStacks lists the stacks holding more goroutines in r than in base.
func (r residue) grownStacks(base residue) string {
	return grown(r.stacks, base.stacks, "goroutines")
}

// grownFiles lists the files open more often in r than in base.
func (r residue) grownFiles(base residue) string {
	return grown(r.files, base.files, "fds")
}

func grown(now, before map[string]int, what string) string {
	var b strings.Builder
	for key, n := range now {
		if n > before[key] {
			fmt.Fprintf(&b, "%d more %s (%d) on\n%s\n", n-before[key], what, n, key)
		}
	}
	return b.String()
}

func (r residue) String() string {
	return fmt.Sprintf("%d goroutines (and %d idle pool workers), %d fds, %.1f MiB heap, %.1f MiB in memfds", r.goroutines, r.idle, r.fds, mib(r.heap), mib(r.memfd))
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// measureResidue reads a broker's goroutines from /debug/pprof, its heap
// (after a collection forced through /debug/pprof/heap?gc=1) from
// /metrics, and its open fds and the bytes allocated to its in-memory
// files from /proc. Idle workers of the actor goroutine pool are counted
// apart: the pool keeps up to actorsys's maxIdle of them by design, as
// many as the busiest moment needed, so they measure load, not a leak.
func measureResidue(t testing.TB, httpAddr string, pid int) residue {
	t.Helper()
	get := func(path string) string {
		resp, err := scrapeHTTP.Get("http://" + httpAddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %v", path, resp.Status, err)
		}
		return string(b)
	}
	get("/debug/pprof/heap?gc=1")
	r := residue{stacks: map[string]int{}, files: map[string]int{}}
	// debug=1: "N @ pcs" and the frames, one block per distinct stack.
	for _, block := range strings.Split(get("/debug/pprof/goroutine?debug=1"), "\n\n") {
		head, frames, ok := strings.Cut(block, "\n")
		if n, _, found := strings.Cut(head, " @ "); ok && found {
			if count, err := strconv.Atoi(n); err == nil {
				if idlePoolWorker(frames) {
					r.idle += count
					continue
				}
				r.stacks[frames] += count
				r.goroutines += count
			}
		}
	}
	_, families := scrape(t, httpAddr)
	r.heap = int64(sample(families, "go_memstats_heap_inuse_bytes"))
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.fds = len(fds)
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue
		}
		r.files[target]++
		if !strings.HasPrefix(target, "/memfd:") {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, fd.Name()), &st); err == nil {
			r.memfd += st.Blocks * 512
		}
	}
	return r
}

// idlePoolWorker tells whether frames (a stack of /debug/pprof/goroutine?debug=1)
// are those of an actor pool worker waiting for work: in the pool's run
// loop, with nothing but the runtime above it.
func idlePoolWorker(frames string) bool {
	var own []string
	for _, line := range strings.Split(frames, "\n") {
		// "#\t0x4711b1\truntime.gopark+0x..\t/usr/lib/go/src/runtime/proc.go:424"
		fields := strings.Split(strings.TrimSpace(line), "\t")
		if len(fields) < 3 || fields[0] != "#" {
			continue
		}
		if fn := fields[2]; !strings.HasPrefix(fn, "runtime.") {
			own = append(own, fn)
		}
	}
	return len(own) == 1 && strings.Contains(own[0], "actorsys.(*Goroutines).run")
}

// TestLifecyclesLeaveNoResidue runs one broker process (on a data dir,
// then another in memory) through rounds of everything that comes and
// goes in a broker's life: a topic created, written by an idempotent and a
// transactional producer, read by a classic group, a KIP-848 group and a
// share group, its groups and the topic deleted; connections that close
// at once, after a request, in the middle of a frame and with a Fetch
// waiting; and on a SASL_SSL listener, sessions that authenticate,
// re-authenticate and close, logins refused (answered after the
// failed-authentication delay), TLS handshakes abandoned and connections
// with no client certificate. After the first rounds (what is started
// once, and kept, is started then), further rounds must leave the
// process's goroutines, open files, heap and in-memory arena where they
// were: a leak of one goroutine or file per round, or of a round's
// records, shows.
func TestLifecyclesLeaveNoResidue(t *testing.T) {
	for _, mode := range []struct {
		name  string
		flags []string
	}{{"disk", []string{"--data-dir", t.TempDir()}}, {"memory", nil}} {
		t.Run(mode.name, func(t *testing.T) {
			sec := newResidueSecurity(t)
			k := startKaas(t, append(append([]string{"--debug-pprof", "--group-initial-rebalance-delay", "0",
				"--share-auto-offset-reset", "earliest"}, sec.flags...), mode.flags...)...)
			ctx := ctxT(t, 4*time.Minute)
			const warmup, rounds = 3, 8
			var base, full residue
			for r := 0; r < warmup+rounds; r++ {
				lifecycleRound(t, ctx, k.Addr, r, func() { full = measureResidue(t, k.HTTPAddr, k.cmd.Process.Pid) })
				sec.round(t, ctx)
				if r == warmup-1 {
					base = settledResidue(t, k.HTTPAddr, k.cmd.Process.Pid, residue{})
					t.Logf("after %d rounds: %v", warmup, base)
				}
			}
			end := settledResidue(t, k.HTTPAddr, k.cmd.Process.Pid, base)
			t.Logf("after %d more rounds: %v (before the last round's deletions: %v)", rounds, end, full)
			if mode.flags == nil && full.memfd < 1<<20 {
				t.Fatalf("in-memory files: %.1f MiB before the last round's deletions, want its records' 1.1 MiB or more", mib(full.memfd))
			}
			if end.goroutines > base.goroutines+rounds/2 {
				t.Errorf("goroutines: %d after %d more rounds, %d before; %s", end.goroutines, rounds, base.goroutines, end.grownStacks(base))
			}
			if end.fds > base.fds+rounds/2 {
				t.Errorf("open files: %d after %d more rounds, %d before; %s", end.fds, rounds, base.fds, end.grownFiles(base))
			}
			// Each round writes 1.1 MiB of records (incompressible) to the
			// log, in memory to the arena: keeping a round's would grow the
			// heap or the arena by 9 MiB or more over the rounds.
			if end.heap > base.heap+4<<20 {
				t.Errorf("heap: %.1f MiB after %d more rounds, %.1f MiB before", mib(end.heap), rounds, mib(base.heap))
			}
			if end.memfd > base.memfd+4<<20 {
				t.Errorf("in-memory files: %.1f MiB after %d more rounds, %.1f MiB before", mib(end.memfd), rounds, mib(base.memfd))
			}
		})
	}
}

// settledResidue measures a broker until two measures a second apart agree (what
// a closed connection or a stopped actor gives back, it gives back within
// moments), or, with a baseline, until they are at or below it; it
// returns the last.
func settledResidue(t testing.TB, httpAddr string, pid int, base residue) residue {
	t.Helper()
	prev := measureResidue(t, httpAddr, pid)
	for i := 0; i < 20; i++ {
		time.Sleep(time.Second)
		cur := measureResidue(t, httpAddr, pid)
		if base.goroutines > 0 && cur.goroutines <= base.goroutines && cur.fds <= base.fds {
			return cur
		}
		if cur.goroutines == prev.goroutines && cur.fds == prev.fds {
			return cur
		}
		prev = cur
	}
	return prev
}

// lifecycleRound is one round of TestLifecyclesLeaveNoResidue: everything
// it creates, it deletes or closes; beforeDelete runs before the deletions.
func lifecycleRound(t *testing.T, ctx context.Context, addr string, r int, beforeDelete func()) {
	t.Helper()
	topic := fmt.Sprintf("residue-%d", r)
	classic, kip848, share := topic+"-classic", topic+"-kip848", topic+"-share"
	admCl := newClient(t, addr)
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	value := func() []byte { return []byte(hex.EncodeToString(randomBytes(512))) }
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	for i := 0; i < 1000; i++ {
		prod.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i % 7)), Value: value()}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	// One transactional id for every round: the coordinator keeps an id's
	// state for transactional.id.expiration.ms, as Kafka does.
	txn := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.TransactionalID("residue-txn"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		txn.Produce(ctx, &kgo.Record{Value: value()}, nil)
	}
	if err := txn.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	txn.Close()

	for _, g := range []struct {
		name string
		opts []kgo.Opt
	}{{classic, nil}, {kip848, []kgo.Opt{kgo.ServerSideBalancer()}}} {
		cons := newClient(t, addr, append([]kgo.Opt{kgo.ConsumerGroup(g.name), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted())}, g.opts...)...)
		n := 0
		for n < 1100 {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: read %d of 1100 records", g.name, n)
			}
			n += fs.NumRecords()
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		cons.Close() // leaves the group
	}
	sc := shareConsumer(t, addr, share, topic)
	for n := 0; n < 1100; {
		fs := sc.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: read %d of 1100 records", share, n)
		}
		n += fs.NumRecords()
	}
	sc.Close()

	// Connections: closed at once, after a request, in the middle of a
	// frame, and with a Fetch waiting on the broker.
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	apiVersions := frame(kmsg.ApiVersions.Int16(), 0, 1, nil)
	for i := 0; i < 10; i++ {
		dial().Close()
		c := dial()
		if _, err := c.Write(apiVersions); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 4)); err != nil {
			t.Fatalf("ApiVersions: %v", err)
		}
		c.Close()
		c = dial()
		if _, err := c.Write(apiVersions[:len(apiVersions)/2]); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	waiting := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtEnd()}}),
		kgo.FetchMaxWait(5*time.Second))
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	waiting.PollFetches(pctx)
	cancel()
	waiting.Close()

	beforeDelete()
	dg, err := adm.DeleteGroups(ctx, classic, kip848, share)
	if err != nil {
		t.Fatal(err)
	}
	for name, res := range dg {
		if res.Err != nil {
			t.Fatalf("delete group %s: %v", name, res.Err)
		}
	}
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
}

// TestHandoffsLeaveNoResidue: two brokers hand six partitions back and
// forth (AlterPartitionAssignments), with records produced to them
// between moves. Each move closes the partitions' files, stops their
// actors and ends their producers' state on one broker and opens and
// recovers them on the other; after two rounds, six more must leave each
// broker's goroutines and open files where they were.
func TestHandoffsLeaveNoResidue(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, append(slices.Clone(clusterFlags), "--debug-pprof")...)
	c.startAll("kaas-0", "kaas-1")
	ctx := ctxFor(t, 4*time.Minute)
	const topic, parts = "residue-moving", 6
	cl := c.client()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := c.client(kgo.DefaultProduceTopic(topic))
	ledBy := func(broker int32) bool {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil || len(td[topic].Partitions) != parts {
			return false
		}
		for _, p := range td[topic].Partitions {
			if p.Leader != broker {
				return false
			}
		}
		return true
	}
	moveAll := func(to int32) {
		var move kadm.AlterPartitionAssignmentsReq
		for p := int32(0); p < parts; p++ {
			move.Assign(topic, p, []int32{to})
		}
		if res, err := adm.AlterPartitionAssignments(ctx, move); err != nil || res.Error() != nil {
			t.Fatalf("reassign to %d: %v %v", to, err, res.Error())
		}
		waitUntil(t, 60*time.Second, fmt.Sprintf("every partition led by broker %d", to), func() bool { return ledBy(to) })
		for i := 0; i < 200; i++ {
			prod.Produce(ctx, &kgo.Record{Value: randomBytes(512)}, nil)
		}
		if err := prod.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	brokers := []*clusterBroker{c.brokers["kaas-0"], c.brokers["kaas-1"]}
	measure := func(base []residue) []residue {
		out := make([]residue, len(brokers))
		for i, b := range brokers {
			var bb residue
			if base != nil {
				bb = base[i]
			}
			out[i] = settledResidue(t, b.http, b.cmd.Process.Pid, bb)
		}
		return out
	}
	const warmup, rounds = 2, 6
	var base []residue
	for r := 0; r < warmup+rounds; r++ {
		moveAll(0)
		moveAll(1)
		if r == warmup-1 {
			base = measure(nil)
		}
	}
	end := measure(base)
	for i, b := range brokers {
		t.Logf("%s: after %d rounds %v, after %d more %v", b.name, warmup, base[i], rounds, end[i])
		if end[i].goroutines > base[i].goroutines+rounds/2 {
			t.Errorf("%s: goroutines: %d after %d more rounds, %d before; %s", b.name, end[i].goroutines, rounds, base[i].goroutines, end[i].grownStacks(base[i]))
		}
		if end[i].fds > base[i].fds+rounds/2 {
			t.Errorf("%s: open files: %d after %d more rounds, %d before; %s", b.name, end[i].fds, rounds, base[i].fds, end[i].grownFiles(base[i]))
		}
	}
}

// residueSecurity is a SASL_SSL listener (SCRAM-SHA-256, client
// certificates requested, sessions re-authenticated every second) for
// TestLifecyclesLeaveNoResidue's rounds.
type residueSecurity struct {
	addr  string
	flags []string
	tls   *tls.Config // trusts the test CA, presents a client certificate
}

func newResidueSecurity(t testing.TB) *residueSecurity {
	t.Helper()
	ca := tlstest.NewCA(t, "residue CA")
	dir := t.TempDir()
	ca.WriteDir(t, dir, ca.Issue(t, pkix.Name{CommonName: "kaas-0"}, time.Time{}))
	cred, err := sasl.NewScramCredential(sasl.ScramSHA256, "alice-secret", 4096)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(sasl.Credentials{Users: map[string]map[string]sasl.ScramCredential{"alice": {sasl.ScramSHA256: cred}}})
	creds := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(creds, b, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	client := ca.Issue(t, pkix.Name{CommonName: "alice"}, time.Time{}).TLS(t)
	return &residueSecurity{
		addr: addr,
		flags: []string{
			"--listeners", "PLAINTEXT://{kafka},SASL_SSL://" + addr,
			"--advertised-listeners", "PLAINTEXT://{kafka},SASL_SSL://" + addr,
			"--tls-dir", dir, "--ssl-client-auth", "requested",
			"--sasl-enabled-mechanisms", "SCRAM-SHA-256", "--sasl-credentials-file", creds,
			"--connections-max-reauth", "1s", "--sasl-max-failures", "0",
		},
		tls: &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{client}},
	}
}

// round opens and closes the listener's kinds of connection: a client
// that authenticates, is re-authenticated and closes; a refused login; a
// TLS handshake abandoned half way; and a TLS connection closed before
// SASL.
func (s *residueSecurity) round(t *testing.T, ctx context.Context) {
	t.Helper()
	good := newClient(t, s.addr, kgo.DialTLSConfig(s.tls), kgo.SASL(scramMech("alice", "alice-secret", false)))
	if err := good.Ping(ctx); err != nil {
		t.Fatalf("SASL_SSL: %v", err)
	}
	time.Sleep(1200 * time.Millisecond) // past --connections-max-reauth: the next request re-authenticates
	if _, err := kadm.NewClient(good).ListTopics(ctx); err != nil {
		t.Fatalf("SASL_SSL after re-authentication: %v", err)
	}
	good.Close()
	bad := newClient(t, s.addr, kgo.DialTLSConfig(s.tls), kgo.SASL(scramMech("alice", "wrong", false)),
		kgo.RetryTimeout(time.Second))
	if err := bad.Ping(ctx); err == nil {
		t.Fatal("SASL_SSL with a wrong password: no error")
	}
	bad.Close()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	// The start of a TLS ClientHello record, then nothing.
	if _, err := c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	tc, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: s.tls.RootCAs, ServerName: "localhost", MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS without a client certificate: %v", err)
	}
	tc.Close()
}
