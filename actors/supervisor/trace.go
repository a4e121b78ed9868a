package supervisor

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage/assignment"
)

// pushedTraces remembers the trace context of the newest ASSIGNMENT_CHANGED
// push (heartbeat goroutine) until the follower hands the file it names
// to the supervisor (actor): the apply joins the controller's trace. The
// push is what makes a broker read the file on a shared volume without
// change notifications (NFS); where the file watch sees the file first (a
// local volume), the apply starts a trace of its own, and the push, when
// it arrives, records a "supervisor push received" span in the
// controller's trace that links to that apply.
type pushedTraces struct {
	mu          sync.Mutex
	epoch       int64
	version     int64
	traceparent string
	// unjoined is the newest apply that found no push for its file.
	unjoined struct {
		epoch, version int64
		span           trace.SpanContext
	}
}

func (p *pushedTraces) note(push *heartbeatpb.Push) {
	if push.Traceparent == "" {
		return
	}
	p.mu.Lock()
	p.epoch, p.version, p.traceparent = push.ControllerEpoch, push.AssignmentVersion, push.Traceparent
	u := p.unjoined
	p.mu.Unlock()
	if u.span.IsValid() && u.epoch == push.ControllerEpoch && u.version == push.AssignmentVersion {
		_, span := tracing.Tracer().Start(tracing.ContextFromTraceparent(push.Traceparent), "supervisor push received",
			trace.WithLinks(trace.Link{SpanContext: u.span}), trace.WithAttributes(
				attribute.Int64("kaas.controller.epoch", push.ControllerEpoch), attribute.Int64("kaas.assignment.version", push.AssignmentVersion)))
		span.End()
	}
}

// applied notes an apply that found no push for its file.
func (p *pushedTraces) applied(a *assignment.Assignment, sc trace.SpanContext) {
	p.mu.Lock()
	p.unjoined.epoch, p.unjoined.version, p.unjoined.span = a.ControllerEpoch, a.AssignmentVersion, sc
	p.mu.Unlock()
}

// of returns the traceparent pushed for a's version ("" when none was).
func (p *pushedTraces) of(a *assignment.Assignment) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a == nil || p.epoch != a.ControllerEpoch || p.version != a.AssignmentVersion {
		return ""
	}
	return p.traceparent
}

// startApply starts the span of this broker applying assignment next,
// under the controller's push of it when one was traced (a root span
// otherwise). A nil context and a no-op span while tracing is off.
func startApply(pushed *pushedTraces, next *assignment.Assignment, self int32, changes int) (context.Context, trace.Span) {
	if !tracing.On() || next == nil {
		return nil, trace.SpanFromContext(context.Background())
	}
	tp := pushed.of(next)
	if tp == "" && changes == 0 {
		return nil, trace.SpanFromContext(context.Background())
	}
	ctx, span := tracing.Tracer().Start(tracing.ContextFromTraceparent(tp), "supervisor apply", trace.WithAttributes(
		tracing.AttrActorKind.String("supervisor"), attribute.Int("kaas.broker.id", int(self)),
		attribute.Int64("kaas.controller.epoch", next.ControllerEpoch), attribute.Int64("kaas.assignment.version", next.AssignmentVersion),
		attribute.Int("kaas.assignment.changes", changes), attribute.Bool("kaas.assignment.pushed", tp != "")))
	if tp == "" {
		pushed.applied(next, span.SpanContext())
	}
	return ctx, span
}
