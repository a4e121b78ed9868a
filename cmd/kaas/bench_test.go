package main

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduceAcksAll measures acks=all produce throughput of a
// franz-go idempotent producer (linger 5ms, up to 5 requests in flight per
// broker, no compression) to
// a 6-partition topic, against franz-go's in-process kfake cluster (the
// baseline), in-process kaas in memory, and in-process kaas on --data-dir
// (every acknowledgement after an fdatasync). One op is 1 MiB of record
// values; MB/s and records/s are reported so ratios can be taken:
//
//	go test ./cmd/kaas -run '^$' -bench BenchmarkProduceAcksAll -benchtime 256x
func BenchmarkProduceAcksAll(b *testing.B) {
	const topic, partitions = "bench", 6
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1024}, {"100B", 100}} {
		for _, target := range benchTargets {
			b.Run(size.name+"/"+target, func(b *testing.B) {
				benchProduce(b, startBenchTarget(b, target, topic, partitions), topic, size.n)
			})
		}
	}
}

func benchProduce(b *testing.B, addr, topic string, size int, extra ...kgo.Opt) {
	cl := newClient(b, addr, append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5 * time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1 << 20), kgo.MaxBufferedBytes(64 << 20), kgo.MaxBufferedRecords(1 << 20),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}, extra...)...)
	ctx := context.Background()
	perOp := (1 << 20) / size
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(i*7 + i/13)
	}
	var failed atomic.Int64
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	// Warm up: metadata, producer id, connections.
	for i := 0; i < 1000; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(perOp * size))
	b.ResetTimer()
	start, cpuStart := time.Now(), processCPU(b)
	for i := 0; i < b.N; i++ {
		for j := 0; j < perOp; j++ {
			cl.Produce(ctx, &kgo.Record{Value: value}, done)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start).Seconds()
	cpu := processCPU(b) - cpuStart
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d records failed", n)
	}
	recs := float64(b.N * perOp)
	b.ReportMetric(recs*float64(size)/el/1e6, "MB/s")
	b.ReportMetric(recs/el, "records/s")
	// CPU time of the whole process (client and in-process broker) per
	// record: steadier than throughput when other work shares the cores.
	b.ReportMetric(float64(cpu.Nanoseconds())/recs, "cpu-ns/record")
}

// processCPU is the user+system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFetch measures consume throughput of a franz-go consumer reading
// a 6-partition topic from the start (1 KiB records, 64 MiB in all) from
// kfake (baseline), kaas in memory and kaas on --data-dir (page cache,
// sendfile). One op reads the whole topic once:
//
//	go test ./cmd/kaas -run '^$' -bench BenchmarkFetch -benchtime 5x
func BenchmarkFetch(b *testing.B) {
	const topic, partitions, size, total = "fetch", 6, 1024, 64 << 20
	for _, target := range benchTargets {
		b.Run(target, func(b *testing.B) {
			addr := startBenchTarget(b, target, topic, partitions)
			prod := newClient(b, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
				kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
			value := make([]byte, size)
			n := total / size
			for i := 0; i < n; i++ {
				prod.Produce(context.Background(), &kgo.Record{Value: value}, nil)
			}
			if err := prod.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(total)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				cons := newClient(b, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
					kgo.FetchMaxBytes(32<<20), kgo.FetchMaxPartitionBytes(8<<20))
				got := 0
				for got < n {
					fs := cons.PollFetches(context.Background())
					if err := fs.Err0(); err != nil {
						b.Fatal(err)
					}
					got += fs.NumRecords()
				}
				cons.Close()
			}
			el := time.Since(start).Seconds()
			b.StopTimer()
			b.ReportMetric(float64(b.N)*total/el/1e6, "MB/s")
		})
	}
}

// benchTargets are what every benchmark compares, in one run: franz-go's
// in-process kfake cluster (the baseline), kaas in memory, kaas on disk.
var benchTargets = []string{"kfake", "kaas-memory", "kaas-disk"}

// startBenchTarget starts target with a topic of the given partitions and
// returns its bootstrap address.
func startBenchTarget(b *testing.B, target, topic string, partitions int32) string {
	var addr string
	switch target {
	case "kfake":
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		return c.ListenAddrs()[0]
	case "kaas-memory":
		_, addr = testBroker(b)
	case "kaas-disk":
		addr, _ = startDiskBroker(b, b.TempDir())
	default:
		b.Fatalf("unknown benchmark target %q", target)
	}
	adm := kadm.NewClient(newClient(b, addr))
	if _, err := adm.CreateTopic(context.Background(), partitions, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	return addr
}
