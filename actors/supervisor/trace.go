package supervisor

import (
	"context"
	"slices"
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
// local volume), the apply starts a trace of its own, and a "supervisor
// push received" span in the controller's trace links to that apply:
// recorded by the push when it comes later, or by the apply when the push
// came while it started.
type pushedTraces struct {
	mu          sync.Mutex
	epoch       int64
	version     int64
	traceparent string
	// unjoined are the newest applies that found no push for their file
	// (oldest first; the file watch may apply several files before their
	// pushes arrive).
	unjoined []unjoinedApply
}

type unjoinedApply struct {
	epoch, version int64
	span           trace.SpanContext
}

// maxUnjoined bounds the applies kept waiting for their pushes: a push
// comes within a heartbeat exchange, or was dropped (a full stream).
const maxUnjoined = 8

func (p *pushedTraces) note(push *heartbeatpb.Push) {
	if push.Traceparent == "" {
		return
	}
	p.mu.Lock()
	p.epoch, p.version, p.traceparent = push.ControllerEpoch, push.AssignmentVersion, push.Traceparent
	var joined []trace.SpanContext
	p.unjoined = slices.DeleteFunc(p.unjoined, func(u unjoinedApply) bool {
		if u.epoch == push.ControllerEpoch && u.version == push.AssignmentVersion {
			joined = append(joined, u.span)
			return true
		}
		return false
	})
	p.mu.Unlock()
	for _, sc := range joined {
		linkPush(push.Traceparent, push.ControllerEpoch, push.AssignmentVersion, sc)
	}
}

// applied notes an apply that found no push for its file; a push for it
// noted since the apply looked is linked at once.
func (p *pushedTraces) applied(a *assignment.Assignment, sc trace.SpanContext) {
	p.mu.Lock()
	tp := ""
	if p.epoch == a.ControllerEpoch && p.version == a.AssignmentVersion {
		tp = p.traceparent
	} else {
		if len(p.unjoined) == maxUnjoined {
			p.unjoined = slices.Delete(p.unjoined, 0, 1)
		}
		p.unjoined = append(p.unjoined, unjoinedApply{epoch: a.ControllerEpoch, version: a.AssignmentVersion, span: sc})
	}
	p.mu.Unlock()
	if tp != "" {
		linkPush(tp, a.ControllerEpoch, a.AssignmentVersion, sc)
	}
}

// linkPush records, in the push's trace, the span linking it to the apply
// of its file that started a trace of its own.
func linkPush(traceparent string, epoch, version int64, apply trace.SpanContext) {
	_, span := tracing.Tracer().Start(tracing.ContextFromTraceparent(traceparent), "supervisor push received",
		trace.WithLinks(trace.Link{SpanContext: apply}), trace.WithAttributes(
			attribute.Int64("kaas.controller.epoch", epoch), attribute.Int64("kaas.assignment.version", version)))
	span.End()
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
