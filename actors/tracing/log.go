package tracing

import (
	"context"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
)

// LogHook adds trace_id and span_id to every log line written with a
// context that carries a span (zerolog's Event.Ctx or a logger from
// Logger). Installed on the process logger by Setup's caller; lines
// without a span context are left as they are.
type LogHook struct{}

// Run implements zerolog.Hook.
func (LogHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	ctx := e.GetCtx()
	if ctx == nil {
		return
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		e.Str("trace_id", sc.TraceID().String()).Str("span_id", sc.SpanID().String())
	}
}

// Logger returns log bound to ctx: its lines carry ctx's trace and span ids
// (through LogHook). While tracing is off it returns log itself.
func Logger(ctx context.Context, log zerolog.Logger) zerolog.Logger {
	if !On() || !trace.SpanContextFromContext(ctx).IsValid() {
		return log
	}
	return log.With().Ctx(ctx).Logger()
}
