package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/actors/metrics/metricstest"
)

// startDiskBroker starts an in-process broker on dir; stop shuts it down
// cleanly (idempotent).
func startDiskBroker(t testing.TB, dir string, args ...string) (addr string, stop func()) {
	t.Helper()
	_, addr, stop = startTestBroker(t, append([]string{"--data-dir", dir}, args...)...)
	return addr, stop
}

// fdsUnder lists this process's descriptors open on files under dir.
func fdsUnder(dir string) []string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(target, dir) {
			out = append(out, target)
		}
	}
	return out
}

// TestDataDirSurvivesRestart: topics (with their ids and configs) and
// acknowledged records survive a clean restart on the same --data-dir;
// fetches are served from the files; nothing stays open after shutdown;
// DeleteTopics sets the data aside.
func TestDataDirSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startDiskBroker(t, dir)
	ctx := ctxT(t, 60*time.Second)
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"segment.bytes": kadm.StringPtr("65536")}, "durable"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "doomed"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.DefaultProduceTopic("durable"), kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 3000
	for i := 0; i < n; i++ {
		prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 11)), Value: []byte(fmt.Sprintf("v-%05d-%s", i, strings.Repeat("x", 100)))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	prod.Close()
	adm.Close()
	stop()
	if fds := fdsUnder(dir); len(fds) != 0 {
		t.Fatalf("descriptors open under the data dir after shutdown: %v", fds)
	}
	if _, err := os.Stat(filepath.Join(dir, "__cluster", "topics.json")); err != nil {
		t.Fatal(err)
	}

	addr, stop = startDiskBroker(t, dir)
	adm = newAdmin(t, addr)
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := td["durable"]; !ok || len(td["durable"].Partitions) != 3 {
		t.Fatalf("topics after restart: %v", td.Names())
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "durable")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.On("durable", nil); err != nil || !hasConfig(v, "segment.bytes", "65536") {
		t.Fatalf("config lost: %+v %v", v, err)
	}
	cons := newClient(t, addr, kgo.ConsumeTopics("durable"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(256<<10))
	got := map[string]bool{}
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v (got %d of %d)", err, len(got), n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if got[string(r.Value)] {
				t.Errorf("duplicate %.7s", r.Value)
			}
			got[string(r.Value)] = true
		})
	}
	// DeleteTopics: the partition directory is renamed aside at once.
	if _, err := adm.DeleteTopic(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		live, _ := filepath.Glob(filepath.Join(dir, "doomed-0-*"))
		aside := 0
		for _, p := range live {
			if strings.HasSuffix(p, ".deleted") {
				aside++
			}
		}
		if aside == 1 && len(live) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("doomed topic directory not set aside: %v", live)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cons.Close()
	adm.Close()
	stop()
	if fds := fdsUnder(dir); len(fds) != 0 {
		t.Fatalf("descriptors open under the data dir after shutdown: %v", fds)
	}
}

func hasConfig(rc kadm.ResourceConfig, key, value string) bool {
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

// TestMetricsCountFsyncs: /metrics reports the broker's device flushes
// (kaas_disk_fsyncs_total), which acks=all produce to a disk log raises.
func TestMetricsCountFsyncs(t *testing.T) {
	httpAddr := freeAddr(t)
	_, addr, _ := startTestBroker(t, "--data-dir", t.TempDir(), "--http-addr", httpAddr)
	fsyncs := func() int64 {
		t.Helper()
		resp, err := http.Get("http://" + httpAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "kaas_disk_fsyncs_total "); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("metric line %q", line)
				}
				return n
			}
		}
		t.Fatalf("no kaas_disk_fsyncs_total in /metrics:\n%s", body)
		return 0
	}
	before := fsyncs()
	ctx := ctxT(t, 30*time.Second)
	prod := newClient(t, addr, kgo.DefaultProduceTopic("metered"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation())
	for i := 0; i < 3; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if after := fsyncs(); after < before+3 {
		t.Fatalf("kaas_disk_fsyncs_total went from %d to %d over three acks=all produces", before, after)
	}
}

// TestFullVolumeHeals: the broker's --data-dir is a small tmpfs, which an
// idempotent acks=all producer fills. The broker stays up and serves what
// it acknowledged, refusing the records past the full point with
// KAFKA_STORAGE_ERROR, which the producer retries; once the volume is
// grown (remount) the partition takes writes again, without a restart, and
// every record is acknowledged. All are read back once each, in order. kaas_partitions_unhealthy counts the partition while
// the volume is full. A transactional producer started while it is full
// (its coordinator cannot write the transaction's state: clients retry
// COORDINATOR_NOT_AVAILABLE) commits once it has grown.
func TestFullVolumeHeals(t *testing.T) {
	unhealthy := func() float64 { v, _ := metricstest.Value(t, "kaas_partitions_unhealthy"); return v }
	unhealthy0 := unhealthy()
	vol := filepath.Join(t.TempDir(), "vol")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	mount := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v\n%s (the test needs root)", args, err, out)
		}
	}
	mount("-t", "tmpfs", "-o", "size=3m", "tmpfs", vol)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", vol).Run() })
	addr, _ := startDiskBroker(t, vol)
	const topic, total = "full-volume", 6000
	ctx := ctxT(t, 120*time.Second)
	if r, err := newAdmin(t, addr).CreateTopics(ctx, 1, 1, nil, topic); err != nil || r[topic].Err != nil {
		t.Fatalf("create: %v %v", err, r[topic].Err)
	}
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(total),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	var acked atomic.Int64
	var failed atomic.Value
	for i := 0; i < total; i++ {
		v := make([]byte, 1000)
		_, _ = rand.Read(v)
		v = append([]byte(fmt.Sprintf("%06d-", i)), v...)
		cl.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, err)
				return
			}
			acked.Add(1)
		})
	}
	// Full: no record acknowledged for two seconds, short of all (3 MiB
	// holds about half of them, give or take the indexes and spare files).
	last, still := int64(-1), time.Now()
	for time.Since(still) < 2*time.Second {
		if n := acked.Load(); n != last {
			last, still = n, time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last == 0 || last >= total {
		t.Fatalf("%d of %d records acknowledged before the volume filled", last, total)
	}
	waitUntil(t, 10*time.Second, "the partition counted unhealthy", func() bool { return unhealthy() == unhealthy0+1 })
	// Still serving: what was acknowledged reads back.
	if got := readAllFrom(t, addr, topic); int64(len(got)) < last {
		t.Fatalf("%d records read with the volume full, %d acknowledged", len(got), last)
	}
	// The last few KiB a 1 KB record does not fit in go to a file, so
	// that the coordinator's small writes fail too.
	pad, err := os.Create(filepath.Join(vol, "pad"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err = pad.Write(make([]byte, 4096)); err == nil; _, err = pad.Write(make([]byte, 4096)) {
	}
	_ = pad.Close()
	refused := func() float64 {
		v, _ := metricstest.Value(t, "kaas_requests_total", "api", "InitProducerID", "error", "COORDINATOR_NOT_AVAILABLE")
		return v
	}
	refused0 := refused()
	txn := newClient(t, addr, kgo.TransactionalID("full-volume"), kgo.DefaultProduceTopic(topic))
	committed := make(chan error, 1)
	go func() {
		if err := txn.BeginTransaction(); err != nil {
			committed <- err
			return
		}
		if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("in a transaction")}).FirstErr(); err != nil {
			committed <- err
			return
		}
		committed <- txn.EndTransaction(ctx, kgo.TryCommit)
	}()
	waitUntil(t, 20*time.Second, "the transaction coordinator refusing while full", func() bool { return refused() > refused0 })
	mount("-o", "remount,size=64m", vol)
	if err := <-committed; err != nil {
		t.Fatalf("the transaction started while the volume was full: %v", err)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush after the volume grew (%d of %d acknowledged): %v", acked.Load(), total, err)
	}
	if err, _ := failed.Load().(error); err != nil || acked.Load() != total {
		t.Fatalf("%d of %d acknowledged; first failure: %v", acked.Load(), total, err)
	}
	waitUntil(t, 10*time.Second, "the partition counted healthy again", func() bool { return unhealthy() == unhealthy0 })
	var got []*kgo.Record
	inTxn := 0
	// The log ends with the commit marker, which the reader keeps to see
	// the end.
	for _, r := range readAllFrom(t, addr, topic, kgo.KeepControlRecords()) {
		if r.Attrs.IsControl() {
			continue
		}
		if string(r.Value) == "in a transaction" {
			inTxn++
			continue
		}
		got = append(got, r)
	}
	if len(got) != total || inTxn != 1 {
		t.Fatalf("%d records read back, %d acknowledged; the transaction's read %d times", len(got), total, inTxn)
	}
	for i, r := range got {
		if i > 0 && r.Offset <= got[i-1].Offset || !strings.HasPrefix(string(r.Value), fmt.Sprintf("%06d-", i)) {
			t.Fatalf("record %d: offset %d, value %.7q", i, r.Offset, r.Value)
		}
	}
}

// TestFileDeleteDelayOnDisk: the segments DeleteRecords deletes stay
// renamed aside (*.deleted) for their topic's file.delete.delay.ms: a topic
// with 100 ms loses them at once while one with the default (60 s) keeps
// them, and a topic created under the cluster-wide broker default
// log.segment.delete.delay.ms=100 loses them too; deleted, its partition
// directory goes after that delay as well, not the default minute
// (TestDataDirSurvivesRestart sees a deleted topic's directory kept by default).
func TestFileDeleteDelayOnDisk(t *testing.T) {
	dir := t.TempDir()
	addr, _ := startDiskBroker(t, dir)
	ctx := ctxT(t, 60*time.Second)
	cl := newClient(t, addr, kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	files := func(pdir, pattern string) []string {
		m, _ := filepath.Glob(filepath.Join(pdir, pattern))
		return m
	}
	// deleteSegments produces a few segments' worth of batches to topic
	// (segment.bytes 1024) and deletes them all but the active segment;
	// it returns the partition directory.
	deleteSegments := func(topic string) string {
		t.Helper()
		const n = 40
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strings.Repeat("x", 200))}).FirstErr(); err != nil {
				t.Fatalf("produce to %s: %v", topic, err)
			}
		}
		var pdir string
		for _, p := range files(dir, topic+"-0-*") {
			if !strings.HasSuffix(p, ".deleted") {
				pdir = p
			}
		}
		if segs := files(pdir, "*.log"); len(segs) < 2 {
			t.Fatalf("%s: segments %v, want several", topic, segs)
		}
		dr, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: n}}})
		if err != nil || dr.Error() != nil {
			t.Fatalf("delete records of %s: %v %v", topic, err, dr.Error())
		}
		if segs := files(pdir, "*.log"); len(segs) != 1 {
			t.Fatalf("%s: segments %v after DeleteRecords, want the active one", topic, segs)
		}
		return pdir
	}
	gone := func(pdir string) func() bool {
		return func() bool { return len(files(pdir, "*.deleted")) == 0 }
	}

	createTopic(t, addr, "kept", 1, map[string]*string{"segment.bytes": sp("1024")})
	createTopic(t, addr, "quick", 1, map[string]*string{"segment.bytes": sp("1024"), "file.delete.delay.ms": sp("100")})
	kept := deleteSegments("kept")
	waitUntil(t, 10*time.Second, "quick's deleted segments unlinked", gone(deleteSegments("quick")))
	if aside := files(kept, "*.deleted"); len(aside) == 0 {
		t.Fatal("the default file.delete.delay.ms (60 s) did not keep kept's deleted segments")
	}

	if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.segment.delete.delay.ms", Value: sp("100")}}); err != nil || res[0].Err != nil {
		t.Fatalf("alter the cluster default: %v %+v", err, res)
	}
	createTopic(t, addr, "inherits", 1, map[string]*string{"segment.bytes": sp("1024")})
	waitUntil(t, 10*time.Second, "inherits' deleted segments unlinked", gone(deleteSegments("inherits")))
	if _, err := adm.DeleteTopic(ctx, "inherits"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the deleted topic's directory deleted", func() bool { return len(files(dir, "inherits-0-*")) == 0 })
}
