package main

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/kaas-project/kaas/actors/tracing/tracingtest"
)

// recordSpans turns tracing on for the rest of the test with an in-memory
// span recorder (every span sampled); brokers started afterwards get the
// tracing middleware.
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	sr, _ := tracingtest.Record(t)
	return sr
}

// spanTree indexes ended spans by span id.
type spanTree struct {
	byID map[trace.SpanID]sdktrace.ReadOnlySpan
}

func newSpanTree(spans []sdktrace.ReadOnlySpan) spanTree {
	st := spanTree{byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}}
	for _, s := range spans {
		st.byID[s.SpanContext().SpanID()] = s
	}
	return st
}

// parent is s's parent span (nil for a root or an unknown parent).
func (st spanTree) parent(s sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	if !s.Parent().IsValid() {
		return nil
	}
	return st.byID[s.Parent().SpanID()]
}

// path is the names from the root down to s ("conn Produce > partition Produce").
func (st spanTree) path(s sdktrace.ReadOnlySpan) string {
	var names []string
	for ; s != nil; s = st.parent(s) {
		names = append([]string{s.Name()}, names...)
	}
	return strings.Join(names, " > ")
}

// find returns the ended spans whose path is path.
func (st spanTree) find(path string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range st.byID {
		if st.path(s) == path {
			out = append(out, s)
		}
	}
	return out
}

func (st spanTree) paths() string {
	seen := map[string]bool{}
	var out []string
	for _, s := range st.byID {
		if p := st.path(s); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n")
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// TestTraceProduceAndFetch produces to a disk-backed broker with tracing on
// and checks the span tree: the request span of the connection actor, the
// partition actor's span of the append under it, the group commit (fsync)
// under that, and a span link (not a parent) to the trace a record names in
// its traceparent header; then a long-polling fetch: its wait span, and
// the partition reads under it once a produce wakes it.
func TestTraceProduceAndFetch(t *testing.T) {
	sr := recordSpans(t)
	_, addr := testBroker(t, "--data-dir", t.TempDir(), "--default-partitions", "1")
	const topic = "traced"
	ctx := ctxT(t, 30*time.Second)
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.AllISRAcks()))
	appTrace := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte(appTrace)}}}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var produce, commit sdktrace.ReadOnlySpan
	waitUntil(t, 10*time.Second, "produce spans", func() bool {
		st := newSpanTree(sr.Ended())
		for _, s := range st.find("conn Produce > partition Produce") {
			if attr(s, "messaging.destination.name") == topic && len(s.Links()) == 1 {
				produce = s
			}
		}
		for _, s := range st.find("conn Produce > partition Produce > partition group commit") {
			if produce != nil && s.Parent().SpanID() == produce.SpanContext().SpanID() {
				commit = s
			}
		}
		return produce != nil && commit != nil
	})
	if got := produce.Links()[0].SpanContext.TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("produce span links trace %s, want the record's", got)
	}
	if produce.SpanContext().TraceID().String() == "0af7651916cd43dd8448eb211c80319c" {
		t.Error("the record's traceparent became the produce span's parent; want a link only")
	}
	if attr(produce, "kaas.actor.kind") != "partition" || attr(produce, "kaas.message.type") != "Produce" ||
		attr(produce, "messaging.destination.partition.id") != "0" {
		t.Errorf("produce span attributes %v", produce.Attributes())
	}
	if attr(commit, "kaas.group_commit.produces") == "" {
		t.Errorf("group commit span attributes %v", commit.Attributes())
	}

	// A fetch that waits: nothing past the end until a produce lands.
	consumer := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(1)}}),
		kgo.FetchMaxWait(5*time.Second))
	got := make(chan error, 1)
	go func() {
		fs := consumer.PollFetches(ctx)
		got <- fs.Err0()
	}()
	time.Sleep(300 * time.Millisecond) // the consumer is in its long poll
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("w")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "fetch wait spans", func() bool {
		st := newSpanTree(sr.Ended())
		return len(st.find("conn Fetch > conn Fetch wait > partition WatchHighWatermark")) > 0 &&
			len(st.find("conn Fetch > conn Fetch wait > partition Fetch")) > 0 &&
			len(st.find("conn Fetch > partition Fetch")) > 0
	})
	t.Log(newSpanTree(sr.Ended()).paths())
}

// TestTraceJoinSyncGroup joins a consumer group with tracing on and checks
// that the JoinGroup and SyncGroup requests' traces run from the
// connection actor through the group manager to the group's actor, with
// the group named on the group actor's span.
func TestTraceJoinSyncGroup(t *testing.T) {
	sr := recordSpans(t)
	_, addr := testBroker(t)
	ctx := ctxT(t, 30*time.Second)
	cl := newClient(t, addr, kgo.DefaultProduceTopic("grouped"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumer := newClient(t, addr, kgo.ConsumerGroup("traced-group"), kgo.ConsumeTopics("grouped"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if fs := consumer.PollFetches(ctx); fs.Err0() != nil {
		t.Fatal(fs.Err0())
	}
	defer func() {
		if t.Failed() {
			t.Log(newSpanTree(sr.Ended()).paths())
		}
	}()
	waitUntil(t, 10*time.Second, "group spans", func() bool {
		st := newSpanTree(sr.Ended())
		ok := func(path string) bool {
			for _, s := range st.find(path) {
				if attr(s, "messaging.consumer.group.name") == "traced-group" {
					return true
				}
			}
			return false
		}
		return ok("conn JoinGroup > groups GroupCall > group JoinGroup") && ok("conn SyncGroup > groups GroupCall > group SyncGroup")
	})
}
