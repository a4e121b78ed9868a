package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kaas-project/kaas/cmd/kaas/internal/bench"
)

// TestBenchCommand runs "kaas bench --json" through the binary's code path
// for a second in each mode against a real in-process broker over TCP and
// checks the result adds up: every record sent is acknowledged, every
// acknowledged record of the e2e run arrives, the consume run reads what
// was produced, and percentiles are ordered.
func TestBenchCommand(t *testing.T) {
	_, addr := testBroker(t)
	runBenchJSON := func(args ...string) bench.Result {
		t.Helper()
		var stdout, stderr bytes.Buffer
		all := append([]string{"bench", "--brokers", addr, "--topic", "bench-it", "--partitions", "3", "--json"}, args...)
		if code := run(all, &stdout, &stderr); code != 0 {
			t.Fatalf("kaas %s exited %d; stderr:\n%s", strings.Join(all, " "), code, stderr.String())
		}
		var res bench.Result
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("kaas bench --json printed %q: %v", stdout.String(), err)
		}
		return res
	}
	checkLatency := func(name string, l *bench.Latency, count int64) {
		t.Helper()
		if l == nil {
			t.Fatalf("%s: no latency summary", name)
		}
		if l.Count != uint64(count) {
			t.Errorf("%s: %d latency samples, want %d", name, l.Count, count)
		}
		if !(0 <= l.Min && l.Min <= l.P50 && l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max && l.Max < 60_000) {
			t.Errorf("%s: percentiles out of order or absurd: %+v", name, *l)
		}
	}

	prod := runBenchJSON("--mode", "produce", "--duration", "1s", "--record-size", "200", "--compression", "lz4", "--quiet")
	if prod.Sent == 0 || prod.Acked != prod.Sent || prod.Failed != 0 || prod.Records != prod.Acked || prod.FirstError != "" {
		t.Fatalf("produce: sent %d, acked %d, failed %d, counted %d, error %q", prod.Sent, prod.Acked, prod.Failed, prod.Records, prod.FirstError)
	}
	if prod.Bytes != prod.Records*200 || prod.RecordsPerSec <= 0 || prod.MBPerSec <= 0 {
		t.Errorf("produce: %d bytes for %d records, %g records/s, %g MB/s", prod.Bytes, prod.Records, prod.RecordsPerSec, prod.MBPerSec)
	}
	checkLatency("produce", prod.Latency, prod.Acked)

	e2e := runBenchJSON("--mode", "e2e", "--duration", "1s", "--rate", "2000", "--acks", "1")
	if e2e.Idempotent || e2e.Sent == 0 || e2e.Acked != e2e.Sent || e2e.Consumed != e2e.Acked || e2e.Records != e2e.Consumed {
		t.Fatalf("e2e: idempotent %t, sent %d, acked %d, consumed %d, counted %d, error %q", e2e.Idempotent, e2e.Sent, e2e.Acked, e2e.Consumed, e2e.Records, e2e.FirstError)
	}
	if e2e.Sent > 2000*3 {
		t.Errorf("e2e: %d records sent in about a second at --rate 2000", e2e.Sent)
	}
	checkLatency("e2e", e2e.Latency, e2e.Consumed)
	checkLatency("e2e acknowledgements", e2e.AckLatency, e2e.Acked)

	want := prod.Acked + e2e.Acked
	// One more than was produced: the run reads everything, then stops at
	// the duration.
	cons := runBenchJSON("--mode", "consume", "--count", strconv.FormatInt(want+1, 10), "--duration", "4s", "--quiet")
	if cons.Consumed != want || cons.Latency != nil {
		t.Fatalf("consume: read %d records (latency %v), want the %d produced", cons.Consumed, cons.Latency, want)
	}
}

// TestBenchCommandRejectsBadFlags checks bad flags get a clear error before
// any connection is tried.
func TestBenchCommandRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "sideways"}, "mode"},
		{[]string{"--compression", "brotli"}, "compression"},
		{[]string{"--acks", "1", "--idempotent"}, "needs acks all"},
		{[]string{"--mode", "e2e", "--record-size", "4"}, "at least 16"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"bench", "--brokers", "127.0.0.1:1"}, tc.args...)
		if code := run(args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("kaas %s: exit %d, stderr %q; want 2 and %q", strings.Join(args, " "), code, stderr.String(), tc.want)
		}
	}
}

// TestBenchCompare runs the built binary's "kaas bench compare" for a
// second per broker at two record sizes and checks it ran all three child
// brokers at each, counted their CPU, consumed every acknowledged record
// back, and wrote the tables and plots --out asks for.
func TestBenchCompare(t *testing.T) {
	bin := kaasBinary(t)
	out := filepath.Join(t.TempDir(), "report")
	cmd := exec.Command(bin, "bench", "compare", "--duration", "1s", "--rate", "3000", "--record-sizes", "100,512",
		"--out", out, "--json", "--quiet")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kaas bench compare: %v; stderr:\n%s", err, stderr.String())
	}
	var rows []bench.CompareRow
	if err := json.Unmarshal(stdout.Bytes(), &rows); err != nil {
		t.Fatalf("kaas bench compare --json printed %q: %v", stdout.String(), err)
	}
	targets := []string{"kfake", "kaas in memory", "kaas --data-dir"}
	sizes := []int{100, 512}
	if len(rows) != len(targets)*len(sizes) {
		t.Fatalf("%d rows, want %d: %s", len(rows), len(targets)*len(sizes), stdout.String())
	}
	for i, r := range rows {
		target, size := targets[i%len(targets)], sizes[i/len(targets)]
		res, cons := r.Result, r.Consume
		if r.Target != target || r.RecordSize != size || res == nil || res.RecordSize != size || res.Sent == 0 || res.Acked != res.Sent || res.Failed != 0 {
			t.Errorf("row %d: %+v, result %+v; want %s at %d bytes with every record acknowledged", i, r, res, target, size)
			continue
		}
		if r.CPUSeconds <= 0 || res.Latency == nil || res.Latency.P50 > res.Latency.P99 {
			t.Errorf("%s, %d B: broker CPU %g s, latency %+v", r.Target, size, r.CPUSeconds, res.Latency)
		}
		// A consume run of a few thousand records may take less than the
		// 10 ms tick /proc counts CPU in: its CPU may read 0, never less.
		if cons == nil || cons.Mode != bench.ModeConsume || cons.Consumed != res.Acked || cons.Bytes != res.Bytes || r.ConsumeCPUSeconds < 0 {
			t.Errorf("%s, %d B: consume run %+v (broker CPU %g s); want the %d records, %d bytes produced",
				r.Target, size, cons, r.ConsumeCPUSeconds, res.Acked, res.Bytes)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, bench.ReportTables))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 100 B records | produce MB/s", "| 512 B records | produce MB/s", "| kfake (baseline) |", "| kaas --data-dir |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("%s lacks %q:\n%s", bench.ReportTables, want, md)
		}
	}
	for _, name := range []string{bench.ReportThroughput, bench.ReportLatencyCDF(100), bench.ReportLatencyCDF(512)} {
		raw, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestBenchCompareRejectsBadFlags checks the flags only compare has get a
// clear error before any broker is started.
func TestBenchCompareRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--record-sizes", "100,abc"}, "not a number"},
		{[]string{"--record-sizes", "100,100"}, "given twice"},
		{[]string{"--mode", "e2e", "--record-sizes", "8,1024"}, "at least 16"},
		{[]string{"--mode", "consume"}, "compare runs produce or e2e"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"bench", "compare"}, tc.args...)
		if code := run(args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("kaas %s: exit %d, stderr %q; want 2 and %q", strings.Join(args, " "), code, stderr.String(), tc.want)
		}
	}
}
