package partition

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/actors/tracing/tracingtest"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/memlog"
)

// gatedSlowOpener opens log once gate is closed.
type gatedSlowOpener struct {
	log  *slowLog
	gate chan struct{}
}

func (o gatedSlowOpener) Open(storage.PartitionID, storage.LogConfig) (storage.Log, error) {
	<-o.gate
	return o.log, nil
}
func (o gatedSlowOpener) Remove(storage.PartitionID) error { return nil }
func (o gatedSlowOpener) Persistent() bool                 { return true }

// TestProduceHeldWhileOpeningStaysInItsTrace: a traced acks=all produce
// that arrives while the log is still opening (a topic's first produce) is
// held and served once the log is open, in another Receive; the group
// commit that makes it durable is still a child of the produce's span.
func TestProduceHeldWhileOpeningStaysInItsTrace(t *testing.T) {
	sr, tp := tracingtest.Record(t)
	sl := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{})}
	close(sl.release) // a Sync returns at once; Durable lags until it does
	gate := make(chan struct{})
	ref := spawn(t, gatedSlowOpener{log: sl, gate: gate}, 5*time.Second)

	ctx, client := tp.Tracer("test").Start(context.Background(), "client produce")
	out := make(chan messages.ProduceResult, 1)
	ref.Send(tracing.Wrap(ctx, &messages.Produce{Batch: batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("v")}}),
		Acks: -1, Reply: func(r messages.ProduceResult) { out <- r }}))
	barrier(t, ref) // held: the log is still opening
	select {
	case r := <-out:
		t.Fatalf("produce answered before the log opened: %+v", r)
	default:
	}
	close(gate)
	if r := within(t, out, 5*time.Second, "produce"); r.ErrorCode != 0 {
		t.Fatalf("produce: error %d", r.ErrorCode)
	}
	client.End()

	deadline := time.Now().Add(5 * time.Second)
	for {
		var produce, commit sdktrace.ReadOnlySpan
		for _, s := range sr.Ended() {
			if strings.HasSuffix(s.Name(), " Produce") && s.Parent().SpanID() == client.SpanContext().SpanID() {
				produce = s
			}
		}
		for _, s := range sr.Ended() {
			if s.Name() == "partition group commit" && produce != nil && s.Parent().SpanID() == produce.SpanContext().SpanID() {
				commit = s
			}
		}
		if commit != nil {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range sr.Ended() {
				names = append(names, s.Name()+" (parent "+s.Parent().SpanID().String()+", id "+s.SpanContext().SpanID().String()+")")
			}
			t.Fatalf("no group commit under the held produce's span (found produce: %v); spans: %v", produce != nil, names)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
