package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// BenchmarkTransactions measures transactional produce against idempotent
// produce in the same run, on each benchmark target (kfake, kaas in memory,
// kaas on disk). One op is one batch: 100 records of 100 bytes to one
// partition, flushed (acks=all). "idempotent" flushes batches with no
// transaction; "txn-N" commits a transaction every N batches, so its cost
// over idempotent is the coordinator's work (the partition added, EndTxn)
// and the markers, amortized over N batches. franz-go runs the
// transaction protocol v2 where the target offers it (KIP-890 part 2: the
// leader adds the partition, no AddPartitionsToTxn round trip); the
// "-v1" modes cap it at Kafka 3.9's versions, the classic protocol.
//
//	go test ./cmd/kaas -run '^$' -bench '^BenchmarkTransactions$' -benchtime 300x
func BenchmarkTransactions(b *testing.B) {
	const recordsPerBatch, valueSize = 100, 100
	value := make([]byte, valueSize)
	type txnMode struct {
		every int // batches per transaction; 0: idempotent
		v1    bool
	}
	for _, target := range benchTargets {
		for _, mode := range []txnMode{{0, false}, {1, false}, {1, true}, {10, false}, {10, true}, {100, false}} {
			name := "idempotent"
			if mode.every > 0 {
				name = fmt.Sprintf("txn-%d", mode.every)
			}
			if mode.v1 {
				name += "-v1"
			}
			b.Run(target+"/"+name, func(b *testing.B) {
				addr := startBenchTarget(b, target, "bench-txn", 1)
				opts := []kgo.Opt{kgo.DefaultProduceTopic("bench-txn"), kgo.ProducerLinger(0)}
				if mode.every > 0 {
					opts = append(opts, kgo.TransactionalID("bench-"+name))
				}
				if mode.v1 {
					opts = append(opts, kgo.MaxVersions(kversion.V3_9_0()))
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
				if mode.every > 0 {
					if err := cl.BeginTransaction(); err != nil {
						b.Fatal(err)
					}
				}
				flush()
				if mode.every > 0 {
					if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
						b.Fatal(err)
					}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if mode.every > 0 && i%mode.every == 0 {
						if err := cl.BeginTransaction(); err != nil {
							b.Fatal(err)
						}
					}
					flush()
					if mode.every > 0 && (i%mode.every == mode.every-1 || i == b.N-1) {
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
