package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// procFootprint is a process's resident memory (KiB, VmRSS) and open
// descriptors, from /proc (Linux).
func procFootprint(pid int) (rssKiB int64, fds int, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rssKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0, err
	}
	return rssKiB, len(ents), nil
}

// BenchmarkLeadPartitions measures what one kaas process on --data-dir
// holds per partition it leads: it creates KAAS_SCALE_PARTITIONS
// partitions (default 10,000, in topics of 1,000), produces one record
// (acks=all) to each, and reports the process's RSS and open descriptors
// per partition, against the same process before the topics existed (the
// baseline, measured in the same run). The process's open-file limit is
// logged beside them.
//
//	go test ./cmd/kaas -run '^$' -bench BenchmarkLeadPartitions -benchtime 1x
func BenchmarkLeadPartitions(b *testing.B) {
	total := 10000
	if n, err := strconv.Atoi(os.Getenv("KAAS_SCALE_PARTITIONS")); err == nil && n > 0 {
		total = n
	}
	const perTopic = 1000
	for i := 0; i < b.N; i++ {
		k := startKaas(b, "--data-dir", b.TempDir())
		pid := k.cmd.Process.Pid
		cl := newClient(b, k.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1<<20))
		adm := kadm.NewClient(cl)
		rss0, fds0, err := procFootprint(pid)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		var topics []string
		for left := total; left > 0; left -= perTopic {
			n := min(left, perTopic)
			topic := fmt.Sprintf("scale-%d", len(topics))
			ctx := ctxT(b, 10*time.Minute)
			if _, err := adm.CreateTopic(ctx, int32(n), 1, nil, topic); err != nil {
				b.Fatal(err)
			}
			topics = append(topics, topic)
			for p := 0; p < n; p++ {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte("touch")}, func(_ *kgo.Record, err error) {
					if err != nil {
						b.Error(err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		took := time.Since(start)
		rss1, fds1, err := procFootprint(pid)
		if err != nil {
			b.Fatal(err)
		}
		limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
		var nofile string
		for _, line := range strings.Split(string(limits), "\n") {
			if strings.HasPrefix(line, "Max open files") {
				nofile = strings.Join(strings.Fields(line)[3:5], "/")
			}
		}
		perFD := float64(fds1-fds0) / float64(total)
		perKiB := float64(rss1-rss0) / float64(total)
		b.Logf("%d partitions created and touched in %v; baseline %d KiB RSS, %d fds; after %d KiB RSS, %d fds: %.2f fds and %.1f KiB RSS per partition (open-file limit soft/hard %s; GOMAXPROCS here %d)",
			total, took.Round(time.Millisecond), rss0, fds0, rss1, fds1, perFD, perKiB, nofile, runtime.GOMAXPROCS(0))
		b.ReportMetric(perFD, "fds/partition")
		b.ReportMetric(perKiB, "RSS-KiB/partition")
		b.ReportMetric(float64(took.Milliseconds())/float64(total), "ms/partition")
	}
}

// BenchmarkIdleConnections measures what one kaas process holds per idle
// client connection: it opens KAAS_IDLE_CONNECTIONS connections (default
// 2,000), each left after an ApiVersions exchange as a client leaves it
// between requests, and reports goroutines, heap (after a collection),
// RSS and descriptors per connection against the same process before they
// were opened (the baseline, measured in the same run). plaintext
// connects to a PLAINTEXT listener, sasl_ssl to a SASL_SSL one (a TLS
// session; ApiVersions comes before SASL).
//
//	go test ./cmd/kaas -run '^$' -bench BenchmarkIdleConnections -benchtime 1x
func BenchmarkIdleConnections(b *testing.B) {
	total := 2000
	if n, err := strconv.Atoi(os.Getenv("KAAS_IDLE_CONNECTIONS")); err == nil && n > 0 {
		total = n
	}
	sec := newResidueSecurity(b)
	for _, listener := range []string{"plaintext", "sasl_ssl"} {
		b.Run(listener, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				k := startKaas(b, append([]string{"--debug-pprof"}, sec.flags...)...)
				pid := k.cmd.Process.Pid
				dial := func() net.Conn {
					c, err := net.Dial("tcp", k.Addr)
					if err != nil {
						b.Fatal(err)
					}
					return c
				}
				if listener == "sasl_ssl" {
					dial = func() net.Conn {
						c, err := tls.Dial("tcp", sec.addr, sec.tls)
						if err != nil {
							b.Fatal(err)
						}
						return c
					}
				}
				exchange := func(c net.Conn) {
					req := kmsg.NewPtrApiVersionsRequest()
					req.Version = 3
					req.ClientSoftwareName, req.ClientSoftwareVersion = "bench", "1"
					resp := rawExchange(b, c, req, 3, 1)
					if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
						b.Fatalf("ApiVersions: error %d", code)
					}
				}
				warm := dial()
				exchange(warm)
				base := settledResidue(b, k.HTTPAddr, pid, residue{})
				rss0, _, err := procFootprint(pid)
				if err != nil {
					b.Fatal(err)
				}
				conns := make([]net.Conn, 0, total)
				for j := 0; j < total; j++ {
					c := dial()
					exchange(c)
					conns = append(conns, c)
				}
				held := settledResidue(b, k.HTTPAddr, pid, residue{})
				rss1, _, err := procFootprint(pid)
				if err != nil {
					b.Fatal(err)
				}
				n := float64(total)
				b.ReportMetric(float64(held.goroutines-base.goroutines)/n, "goroutines/conn")
				b.ReportMetric(float64(held.heap-base.heap)/n/1024, "heap-KiB/conn")
				b.ReportMetric(float64(rss1-rss0)/n, "rss-KiB/conn")
				b.ReportMetric(float64(held.fds-base.fds)/n, "fds/conn")
				b.Logf("%s: %d connections: %v, RSS %d KiB; before: %v, RSS %d KiB", listener, total, held, rss1, base, rss0)
				for _, c := range append(conns, warm) {
					c.Close()
				}
			}
		})
	}
}
