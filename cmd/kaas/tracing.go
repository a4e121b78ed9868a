package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kaas-project/kaas/actors/tracing"
)

// startTracing turns OpenTelemetry tracing on when the OTEL_* environment
// asks for it (tracing.FromEnv) and returns the function that flushes the
// spans still buffered at shutdown.
func startTracing(ctx context.Context) (stop func(), on bool, err error) {
	shutdown, cfg, err := tracing.Setup(ctx)
	if err != nil {
		return func() {}, false, fmt.Errorf("tracing: %w", err)
	}
	return func() {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(fctx); err != nil {
			fmt.Fprintf(os.Stderr, "kaas: flush traces: %v\n", err)
		}
	}, cfg.Exporter != "none", nil
}
