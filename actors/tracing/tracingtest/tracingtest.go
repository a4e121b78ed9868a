// Package tracingtest turns tracing on for one test, every span sampled
// into an in-memory recorder.
package tracingtest

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kaas-project/kaas/actors/tracing"
)

// Record enables tracing with a span recorder until the test ends; actors
// and brokers started afterwards get the tracing middleware.
func Record(t testing.TB) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	tracing.Enable(tp)
	t.Cleanup(func() {
		tracing.Disable()
		_ = tp.Shutdown(context.Background())
	})
	return sr, tp
}
