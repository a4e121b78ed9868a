package partition

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/kaas-project/kaas/actors/tracing"
)

// traced is the partition actor's tracing state; it stays empty while
// tracing is off.
type traced struct {
	// ctx is the span of the message being received (tracing on).
	ctx context.Context
	// waiting are the spans of the acks=all produces appended since the
	// last group commit started: the next one makes them durable.
	waiting []trace.SpanContext
	// queued are the spans of traced requests that arrived while the log
	// was opening: the core serves them later, in another Receive.
	queued map[any]context.Context
}

// maxWaitingSpans bounds the produce spans one group commit's span names.
const maxWaitingSpans = 128

// TraceAttributes implements tracing.Attributed.
func (a *Actor) TraceAttributes() []attribute.KeyValue {
	return []attribute.KeyValue{tracing.AttrTopic.String(a.id.Topic), tracing.AttrPartition.Int(int(a.id.Partition))}
}

// received notes the span of the message Receive handles.
func (a *Actor) received(ctx context.Context) { a.traced.ctx = ctx }

// queue notes the span of request m when the core will hold it (the log is
// not open yet), so that serving it later stays in its trace.
func (a *Actor) queue(m any) {
	if a.core.Leading() || a.traced.ctx == nil || !trace.SpanContextFromContext(a.traced.ctx).IsValid() {
		return
	}
	if a.traced.queued == nil {
		a.traced.queued = map[any]context.Context{}
	}
	a.traced.queued[m] = a.traced.ctx
}

// serving makes the span of a held request the current one while the core
// serves it.
func (a *Actor) serving(m any) {
	if ctx, ok := a.traced.queued[m]; ok {
		delete(a.traced.queued, m)
		a.traced.ctx = ctx
	}
}

// forget drops the spans of held requests answered without being served.
func (a *Actor) forget(msgs []any) {
	for _, m := range msgs {
		delete(a.traced.queued, m)
	}
}

// appended notes a produce that waits for the next group commit.
func (a *Actor) appended(acksAll bool) {
	if a.traced.ctx == nil || !acksAll {
		return
	}
	if sc := trace.SpanContextFromContext(a.traced.ctx); sc.IsSampled() && len(a.traced.waiting) < maxWaitingSpans {
		a.traced.waiting = append(a.traced.waiting, sc)
	}
}

// startGroupCommit starts the span of a group commit: a child of the first
// produce it makes durable, linked from the others. A no-op span when no
// traced produce waits for it.
func (a *Actor) startGroupCommit() trace.Span {
	w := a.traced.waiting
	if len(w) == 0 {
		return trace.SpanFromContext(context.Background())
	}
	links := make([]trace.Link, 0, len(w)-1)
	for _, sc := range w[1:] {
		links = append(links, trace.Link{SpanContext: sc})
	}
	_, span := tracing.Tracer().Start(trace.ContextWithSpanContext(context.Background(), w[0]), "partition group commit",
		trace.WithLinks(links...), trace.WithAttributes(append(a.TraceAttributes(),
			tracing.AttrActorKind.String("partition"), attribute.Int("kaas.group_commit.produces", len(w)))...))
	clear(w)
	a.traced.waiting = w[:0]
	return span
}

// startSpan starts a span under the message being received (a no-op span
// when it is not traced): an open or close of the log, which runs off the
// actor.
func (a *Actor) startSpan(name string) trace.Span {
	if a.traced.ctx == nil || !trace.SpanContextFromContext(a.traced.ctx).IsValid() {
		return trace.SpanFromContext(context.Background())
	}
	_, span := tracing.Tracer().Start(a.traced.ctx, name, trace.WithAttributes(a.TraceAttributes()...))
	return span
}
