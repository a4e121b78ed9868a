package supervisor

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/actors/tracing/tracingtest"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage/assignment"
)

// Every apply the file watch made before its push is linked from that
// push's trace exactly once, whichever order they come in.
func TestPushedTracesLinkEveryApply(t *testing.T) {
	sr, _ := tracingtest.Record(t)
	file := func(v int64) *assignment.Assignment {
		return &assignment.Assignment{ControllerEpoch: 3, AssignmentVersion: v}
	}
	push := func(v int64) *heartbeatpb.Push {
		ctx, span := tracing.Tracer().Start(context.Background(), "controller heartbeat push")
		defer span.End()
		return &heartbeatpb.Push{Kind: heartbeatpb.Push_ASSIGNMENT_CHANGED, ControllerEpoch: 3, AssignmentVersion: v,
			Traceparent: tracing.Traceparent(ctx)}
	}
	var p pushedTraces
	apply := func(v int64) trace.SpanID {
		_, span := startApply(&p, file(v), 0, 1)
		span.End()
		return span.SpanContext().SpanID()
	}
	countLinks := func() map[trace.SpanID]int {
		n := map[trace.SpanID]int{}
		for _, s := range sr.Ended() {
			if s.Name() == "supervisor push received" {
				for _, l := range s.Links() {
					n[l.SpanContext.SpanID()]++
				}
			}
		}
		return n
	}

	// Two files applied before either push (a two-phase move's release and
	// take): the first push still finds its apply.
	a5, a6 := apply(5), apply(6)
	p.note(push(5))
	p.note(push(6))
	// A push noted after the apply looked for it but before the apply was
	// recorded as unjoined: the apply links it.
	if p.of(file(7)) != "" {
		t.Fatal("a push for version 7 before any was noted")
	}
	p.note(push(7))
	_, span7 := tracing.Tracer().Start(context.Background(), "supervisor apply")
	span7.End()
	p.applied(file(7), span7.SpanContext())
	// A push that did come before the apply is its parent, not a link.
	p.note(push(8))
	a8 := apply(8)

	n := countLinks()
	for name, id := range map[string]trace.SpanID{"v5": a5, "v6": a6, "v7": span7.SpanContext().SpanID()} {
		if n[id] != 1 {
			t.Errorf("apply of %s linked %d times, want once", name, n[id])
		}
	}
	if n[a8] != 0 {
		t.Errorf("apply under its push also linked %d times", n[a8])
	}
}
