package tracing

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// StartRequest starts the span of one Kafka request, the root of its trace,
// dated from when its frame was read. The connection actor ends it once
// the response is written to the socket (or, for acks=0, dropped).
func StartRequest(key, version int16, clientID, peer string, read time.Time) (context.Context, trace.Span) {
	name := kmsg.NameForKey(key)
	if name == "Unknown" {
		name += strconv.Itoa(int(key))
	}
	return Tracer().Start(context.Background(), "conn "+name, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(read),
		trace.WithAttributes(AttrActorKind.String("conn"), attribute.String("rpc.system", "kafka"), attribute.String("rpc.method", name),
			attribute.Int("kafka.api.key", int(key)), attribute.Int("kafka.api.version", int(version)),
			attribute.String("kafka.client.id", clientID), attribute.String("network.peer.address", peer)))
}

// StartWait starts the span of a wait (a Fetch's long poll) under ctx; a
// nil ctx (tracing off) gives a nil context and a no-op span.
func StartWait(ctx context.Context, name string, max time.Duration) (context.Context, trace.Span) {
	if ctx == nil || !On() {
		return nil, trace.SpanFromContext(context.Background())
	}
	return Tracer().Start(ctx, name, trace.WithAttributes(attribute.Int64("kaas.wait.max_ms", max.Milliseconds())))
}

// Event adds a named event to span.
func Event(span trace.Span, name string) {
	if span.IsRecording() {
		span.AddEvent(name)
	}
}

// EndWait ends a wait span with the bytes it ended with.
func EndWait(span trace.Span, bytes int) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("kaas.fetch.bytes", bytes))
		span.End()
	}
}

// Fail marks span as failed with err (nothing when err is nil).
func Fail(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}
