// Package tracing is kaas's OpenTelemetry tracing: its switch, the W3C trace
// context carried in protoactor message envelopes, the actor middleware
// that starts a span per traced message, and the zerolog hook that stamps
// trace and span ids on log lines.
//
// Tracing is off unless the process configures an exporter (Setup, from
// the standard OTEL_* environment variables). Off, every helper here is one
// atomic load and a branch: no middleware is installed on the actors and
// messages travel as the plain structs they are.
package tracing

import (
	"context"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names kaas's tracer.
const InstrumentationName = "github.com/kaas-project/kaas"

// state is what Enable installs; nil while tracing is off.
type state struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
}

var current atomic.Pointer[state]

// propagator is the W3C trace context format (traceparent, tracestate).
var propagator = propagation.TraceContext{}

// Enable turns tracing on with tp for actors spawned from now on.
func Enable(tp trace.TracerProvider) {
	current.Store(&state{provider: tp, tracer: tp.Tracer(InstrumentationName)})
}

// Disable turns tracing off (actors spawned while it was on keep their
// middleware; it starts spans with a no-op tracer from then on).
func Disable() { current.Store(nil) }

// On reports whether tracing is on.
func On() bool { return current.Load() != nil }

// Tracer is kaas's tracer: a no-op one while tracing is off.
func Tracer() trace.Tracer {
	if s := current.Load(); s != nil {
		return s.tracer
	}
	return noop.Tracer{}
}

// Provider is the tracer provider in force (a no-op one while off); the
// gRPC instrumentation of the heartbeat uses it.
func Provider() trace.TracerProvider {
	if s := current.Load(); s != nil {
		return s.provider
	}
	return noop.NewTracerProvider()
}

// headerCarrier adapts an envelope header to the propagator.
type headerCarrier map[string]string

func (h headerCarrier) Get(k string) string { return h[k] }
func (h headerCarrier) Set(k, v string)     { h[k] = v }
func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// Wrap returns msg to send with ctx's span as the parent of the span its
// receiver starts: msg itself while tracing is off or ctx carries no
// sampled span (no allocation), else msg in an envelope whose header holds
// the traceparent. Receivers see the message unchanged (ctx.Message()
// unwraps envelopes), and so do dead letters.
func Wrap(ctx context.Context, msg any) any {
	if !On() || ctx == nil {
		return msg
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return msg
	}
	h := make(headerCarrier, 2)
	propagator.Inject(ctx, h)
	return &actor.MessageEnvelope{Header: map[string]string(h), Message: msg}
}

// extract returns the span context a header carries (invalid when none).
func extract(h map[string]string) trace.SpanContext {
	if len(h) == 0 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(propagator.Extract(context.Background(), headerCarrier(h)))
}

// FromActor returns the context of the span the actor's middleware started
// for the message being received (context.Background while tracing is off
// or the message is not traced). Call it inside Receive only.
func FromActor(ctx actor.Context) context.Context {
	if !On() {
		return context.Background()
	}
	h := ctx.MessageHeader()
	if h == nil {
		return context.Background()
	}
	tp := h.Get(traceparent)
	if tp == "" {
		return context.Background()
	}
	sc := extract(map[string]string{traceparent: tp, tracestate: h.Get(tracestate)})
	if !sc.IsValid() {
		return context.Background()
	}
	return trace.ContextWithSpanContext(context.Background(), sc)
}

const (
	traceparent = "traceparent"
	tracestate  = "tracestate"
)

// Traceparent is the W3C traceparent of ctx's span ("" when it has none):
// for trace context carried in a field of a message that leaves the
// process (the heartbeat's Push).
func Traceparent(ctx context.Context) string {
	if ctx == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	h := make(headerCarrier, 2)
	propagator.Inject(ctx, h)
	return h[traceparent]
}

// ContextFromTraceparent is the context of the span tp names (Background
// when tp is empty or malformed, or tracing is off).
func ContextFromTraceparent(tp string) context.Context {
	if tp == "" || !On() {
		return context.Background()
	}
	sc := extract(map[string]string{traceparent: tp})
	if !sc.IsValid() {
		return context.Background()
	}
	return trace.ContextWithRemoteSpanContext(context.Background(), sc)
}
