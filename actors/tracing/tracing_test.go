package tracing

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kmsg"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/batch"
)

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		want    Config
		wantErr bool
	}{
		{env: nil, want: Config{Exporter: "none"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: Config{Exporter: "otlp", Protocol: "http/protobuf"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: Config{Exporter: "otlp", Protocol: "grpc"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, want: Config{Exporter: "none"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, want: Config{Exporter: "otlp", Protocol: "grpc"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: true},
	} {
		got, err := FromEnv(func(k string) string { return tc.env[k] })
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("FromEnv(%v) = %+v, %v; want %+v (error %v)", tc.env, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestRecordTraceparents(t *testing.T) {
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	var recs []byte
	for _, r := range []kmsg.Record{
		{Value: []byte("a"), Headers: []kmsg.Header{{Key: "other", Value: []byte("x")}, {Key: "traceparent", Value: []byte(tp)}}},
		{Value: []byte("b"), OffsetDelta: 1},
	} {
		body := r.AppendTo(nil)[1:] // drop the zero Length varint
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := append(batch.Build(batch.Spec{Values: [][]byte{nil, nil}})[:batch.HeaderSize], recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12)) // batch length after base offset and length
	got := RecordTraceparents(b, 8)
	if len(got) != 1 || got[0] != tp {
		t.Errorf("RecordTraceparents = %q, want [%q]", got, tp)
	}
	if got := RecordTraceparents(b[:len(b)-3], 8); got != nil {
		t.Errorf("truncated batch gave %q", got)
	}
}

// TestOffAllocatesNothing: with tracing off, Wrap hands back the message
// itself and PropsOptions installs nothing.
func TestOffAllocatesNothing(t *testing.T) {
	Disable()
	msg := &messages.Produce{}
	if n := testing.AllocsPerRun(100, func() {
		if Wrap(context.Background(), msg) != any(msg) {
			t.Fatal("Wrap changed the message while off")
		}
	}); n != 0 {
		t.Errorf("Wrap allocates %v times per message while off", n)
	}
	if len(PropsOptions("partition")) != 0 {
		t.Error("PropsOptions installs middleware while off")
	}
}

// spanReceiver records the span context it sees in Receive.
type spanReceiver struct{ got chan context.Context }

func (r *spanReceiver) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*messages.Produce); ok {
		r.got <- FromActor(ctx)
	}
}

// TestMiddlewareStartsChildSpan sends a wrapped message to an actor with
// the middleware and checks the span it started: a child of the sender's,
// named after the actor kind and message, visible to Receive.
func TestMiddlewareStartsChildSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	Enable(tp)
	t.Cleanup(Disable)
	as := actor.NewActorSystem()
	defer as.Shutdown()
	r := &spanReceiver{got: make(chan context.Context, 1)}
	pid := as.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return r }, PropsOptions("partition")...))
	ctx, parent := Tracer().Start(context.Background(), "conn Produce")
	as.Root.Send(pid, Wrap(ctx, &messages.Produce{}))
	inner := <-r.got
	parent.End()
	// Receive hands the context over before the middleware ends its span:
	// wait for the span to end.
	var child sdktrace.ReadOnlySpan
	var spans []sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(5 * time.Second); child == nil && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		spans = sr.Ended()
		for _, s := range spans {
			if s.Name() == "partition Produce" {
				child = s
			}
		}
	}
	if child == nil {
		t.Fatalf("no partition Produce span among %d", len(spans))
	}
	if child.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Error("the actor's span is not the sender's child")
	}
	if got := Traceparent(inner); got == "" || got == Traceparent(ctx) {
		t.Errorf("Receive saw %q, want the actor's own span", got)
	}
}

// FuzzRecordTraceparents: the traceparent headers are read from a
// produced batch before the partition validates it, so any bytes a client
// sends go through here: nothing may panic, and no more than max values
// come back.
func FuzzRecordTraceparents(f *testing.F) {
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	r := kmsg.Record{Value: []byte("a"), Headers: []kmsg.Header{{Key: "traceparent", Value: []byte(tp)}}}
	body := r.AppendTo(nil)[1:]
	recs := append(binary.AppendVarint(nil, int64(len(body))), body...)
	b := append(batch.Build(batch.Spec{Values: [][]byte{nil}})[:batch.HeaderSize], recs...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	f.Add(b, 2)
	f.Add(b[:batch.HeaderSize+3], 1)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		max = max & 63
		if got := RecordTraceparents(b, max); len(got) > max {
			t.Fatalf("%d values, max %d", len(got), max)
		}
	})
}
