package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTransactions measures transactional produce against idempotent
// produce in the same run, on each benchmark target (kfake, kaas in memory,
// kaas on disk). One op is one batch: 100 records of 100 bytes to one
// partition, flushed (acks=all). "idempotent" flushes batches with no
// transaction; "txn-N" commits a transaction every N batches, so its cost
// over idempotent is the coordinator round trips (AddPartitionsToTxn,
// EndTxn) and the markers, amortized over N batches.
//
//	go test ./cmd/kaas -run '^$' -bench '^BenchmarkTransactions$' -benchtime 300x
func BenchmarkTransactions(b *testing.B) {
	const recordsPerBatch, valueSize = 100, 100
	value := make([]byte, valueSize)
	for _, target := range benchTargets {
		for _, mode := range []int{0, 1, 10, 100} {
			name := "idempotent"
			if mode > 0 {
				name = fmt.Sprintf("txn-%d", mode)
			}
			b.Run(target+"/"+name, func(b *testing.B) {
				addr := startBenchTarget(b, target, "bench-txn", 1)
				opts := []kgo.Opt{kgo.DefaultProduceTopic("bench-txn"), kgo.ProducerLinger(0)}
				if mode > 0 {
					opts = append(opts, kgo.TransactionalID("bench-"+name))
				}
				cl := newClient(b, addr, opts...)
				ctx := context.Background()
				flush := func() {
					for i := 0; i < recordsPerBatch; i++ {
						cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
							if err != nil {
								b.Error(err)
							}
						})
					}
					if err := cl.Flush(ctx); err != nil {
						b.Fatal(err)
					}
				}
				// Warm up: metadata, producer id, the first transaction.
				if mode > 0 {
					if err := cl.BeginTransaction(); err != nil {
						b.Fatal(err)
					}
				}
				flush()
				if mode > 0 {
					if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if mode > 0 && i%mode == 0 {
						if err := cl.BeginTransaction(); err != nil {
							b.Fatal(err)
						}
					}
					flush()
					if mode > 0 && (i%mode == mode-1 || i == b.N-1) {
						if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N*recordsPerBatch)/b.Elapsed().Seconds(), "records/s")
			})
		}
	}
}
