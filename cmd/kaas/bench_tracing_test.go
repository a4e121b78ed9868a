package main

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kaas-project/kaas/actors/tracing"
)

// BenchmarkProduceTracing compares acks=all produce throughput (the
// BenchmarkProduceAcksAll producer, 100-byte records) to in-process kaas,
// in memory and on --data-dir, with tracing off (the baseline) and on with
// 1 % and 100 % of the traces sampled (parent-based ratio sampler, batch
// span processor, spans exported to memory), in one run:
//
//	go test ./cmd/kaas -run '^$' -bench BenchmarkProduceTracing -benchtime 128x -count 3
func BenchmarkProduceTracing(b *testing.B) {
	const topic, partitions = "bench", 6
	for _, target := range []string{"kaas-memory", "kaas-disk"} {
		for _, mode := range []struct {
			name  string
			ratio float64 // < 0: tracing off
		}{{"off", -1}, {"sampled-1pct", 0.01}, {"sampled-100pct", 1}} {
			b.Run(target+"/"+mode.name, func(b *testing.B) {
				if mode.ratio >= 0 {
					exp := tracetest.NewInMemoryExporter()
					tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
						sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(mode.ratio))))
					tracing.Enable(tp)
					b.Cleanup(func() {
						tracing.Disable()
						_ = tp.Shutdown(context.Background())
					})
				}
				benchProduce(b, startBenchTarget(b, target, topic, partitions), topic, 100)
			})
		}
	}
}
