package tracing

import (
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
