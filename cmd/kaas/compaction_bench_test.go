package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/actors/metrics"
)

// BenchmarkProduceLatencyUnderCleaning measures the latency of acks=all
// produce requests (one 100-byte record each, one at a time, franz-go) to
// a plain topic on a disk broker at the default --cleaner-io-rate, first
// with the log cleaner idle, then while it cleans a compacted partition of
// KAAS_CLEANING_BENCH_MB MiB (default 128; 1 KiB records over 10,000 keys,
// 16 MiB segments), in the same run. The big partition is held back from
// cleaning by min.compaction.lag.ms until the first idle phase ends; the
// cleaning phase runs from the config change to the end of the pass; a
// second idle phase follows. The baseline is both idle phases together
// (the filled partition is sync(2)'ed first, so its writeback does not
// land in the first). It reports p50 and p99 of each and their ratios
// (cleaning / idle):
//
//	go test ./cmd/kaas -run '^$' -bench BenchmarkProduceLatencyUnderCleaning -benchtime 1x
func BenchmarkProduceLatencyUnderCleaning(b *testing.B) {
	mb, _ := strconv.Atoi(os.Getenv("KAAS_CLEANING_BENCH_MB"))
	if mb <= 0 {
		mb = 128
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		_, addr, stop := startTestBroker(b, "--data-dir", b.TempDir(), "--cleaner-interval", "100ms")
		ctx := context.Background()
		adm := kadm.NewClient(newClient(b, addr))
		// The cleaner's state is process-wide: each run cleans a topic of its own.
		big, hot := fmt.Sprintf("cleaned-%d", cleaningBenchRuns.Add(1)), "hot"
		held := map[string]*string{"cleanup.policy": sp("compact"), "segment.bytes": sp(fmt.Sprint(16 << 20)),
			"min.cleanable.dirty.ratio": sp("0.01"), "min.compaction.lag.ms": sp(fmt.Sprint(time.Hour.Milliseconds()))}
		if r, err := adm.CreateTopics(ctx, 1, 1, held, big); err != nil || r[big].Err != nil {
			b.Fatalf("create %s: %v %v", big, err, r[big].Err)
		}
		if r, err := adm.CreateTopics(ctx, 1, 1, nil, hot); err != nil || r[hot].Err != nil {
			b.Fatalf("create %s: %v %v", hot, err, r[hot].Err)
		}
		fillCompacted(b, addr, big, int64(mb)<<20)
		syscall.Sync()

		cl := newClient(b, addr, kgo.DefaultProduceTopic(hot), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
		value := make([]byte, 100)
		produce := func() time.Duration {
			start := time.Now()
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			return time.Since(start)
		}
		for j := 0; j < 100; j++ { // warm up: metadata, producer id, connection
			produce()
		}
		b.StartTimer()
		var idle []time.Duration
		for j := 0; j < 1000; j++ {
			idle = append(idle, produce())
		}
		if cleanedOnce(big) {
			b.Fatal("the cleaner ran in the idle phase")
		}
		if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "min.compaction.lag.ms", Value: sp("0")}}, big); err != nil || r[0].Err != nil {
			b.Fatalf("release the cleaner: %v %+v", err, r)
		}
		var cleaning []time.Duration
		passStart := time.Now()
		for !cleanedOnce(big) {
			cleaning = append(cleaning, produce())
			if time.Since(passStart) > 10*time.Minute {
				b.Fatal("the cleaner did not finish within 10 minutes")
			}
		}
		pass := time.Since(passStart)
		for j := 0; j < 1000; j++ {
			idle = append(idle, produce())
		}
		b.StopTimer()
		var readBytes float64
		for _, s := range metrics.Cleaners() {
			if s.Topic == big {
				readBytes = float64(s.CleanedBytesSum)
			}
		}
		stop()
		if len(cleaning) < 100 {
			b.Fatalf("only %d produces during the pass (%v): too few for a p99", len(cleaning), pass)
		}
		ip50, ip99 := quantile(idle, 0.50), quantile(idle, 0.99)
		cp50, cp99 := quantile(cleaning, 0.50), quantile(cleaning, 0.99)
		b.ReportMetric(float64(ip50.Microseconds())/1000, "idle-p50-ms")
		b.ReportMetric(float64(ip99.Microseconds())/1000, "idle-p99-ms")
		b.ReportMetric(float64(cp50.Microseconds())/1000, "cleaning-p50-ms")
		b.ReportMetric(float64(cp99.Microseconds())/1000, "cleaning-p99-ms")
		b.ReportMetric(float64(cp50)/float64(ip50), "p50-ratio")
		b.ReportMetric(float64(cp99)/float64(ip99), "p99-ratio")
		b.ReportMetric(pass.Seconds(), "pass-s")
		b.ReportMetric(float64(len(cleaning)), "cleaning-samples")
		b.ReportMetric(readBytes/(1<<20), "cleaner-read-MiB")
	}
}

var cleaningBenchRuns atomic.Int64

// fillCompacted produces about total bytes of 1 KiB records over 10,000
// keys to partition 0 of topic.
func fillCompacted(b *testing.B, addr, topic string, total int64) {
	b.Helper()
	cl := newClient(b, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedBytes(64<<20))
	ctx := context.Background()
	value := make([]byte, 1000)
	for i := range value {
		value[i] = byte(i*7 + i/13)
	}
	var failed error
	done := func(_ *kgo.Record, err error) {
		if err != nil && failed == nil {
			failed = err
		}
	}
	for n := int64(0); n*1024 < total; n++ {
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("key-%05d", n*7919%10000)), Value: value}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if failed != nil {
		b.Fatal(failed)
	}
}

// quantile returns the q-quantile of ds (sorted in place).
func quantile(ds []time.Duration, q float64) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}
