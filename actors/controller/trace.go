package controller

import (
	"context"
	"reflect"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/storage/assignment"
)

// Attribute keys of the controller's spans.
const (
	attrEpoch   = attribute.Key("kaas.controller.epoch")
	attrVersion = attribute.Key("kaas.assignment.version")
	attrCause   = attribute.Key("kaas.controller.event")
)

// startRecompute starts the root span of a recompute whose effects write a
// new assignment file (recomputes that change nothing start none). It
// returns a nil context and a no-op span otherwise, and while tracing is
// off.
func (a *Actor) startRecompute(parent context.Context, ev Event, effects []Effect) (context.Context, trace.Span) {
	if !tracing.On() {
		return nil, trace.SpanFromContext(context.Background())
	}
	var next *assignment.Assignment
	for _, e := range effects {
		if w, ok := e.(WriteFile); ok {
			next = w.A
		}
	}
	if next == nil {
		return parent, trace.SpanFromContext(context.Background())
	}
	if parent == nil {
		parent = context.Background()
	}
	return tracing.Tracer().Start(parent, "controller recompute", trace.WithAttributes(
		tracing.AttrActorKind.String("controller"), attrEpoch.Int64(a.cfg.Epoch),
		attrVersion.Int64(next.AssignmentVersion), attrCause.String(eventName(ev))))
}

// eventName is an event's type name ("RecomputeNow").
func eventName(ev Event) string {
	t := reflect.TypeOf(ev)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "nil"
	}
	return t.Name()
}

// startWrite starts the span of one assignment file write under the
// recompute's (a no-op span when ctx is nil).
func startWrite(ctx context.Context, next *assignment.Assignment) (context.Context, trace.Span) {
	if ctx == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return nil, trace.SpanFromContext(context.Background())
	}
	return tracing.Tracer().Start(ctx, "controller assignment write", trace.WithAttributes(
		attrEpoch.Int64(next.ControllerEpoch), attrVersion.Int64(next.AssignmentVersion)))
}

// pushTraceparent starts and ends the span of an ASSIGNMENT_CHANGED push
// under ctx and returns its traceparent for the push ("" when not traced):
// each broker's apply of the file is its child.
func pushTraceparent(ctx context.Context, e PushChanged) string {
	if ctx == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	pctx, span := tracing.Tracer().Start(ctx, "controller heartbeat push", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attrEpoch.Int64(e.Epoch), attrVersion.Int64(e.Version)))
	defer span.End()
	return tracing.Traceparent(pctx)
}
