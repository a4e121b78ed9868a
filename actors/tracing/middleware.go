package tracing

import (
	"context"
	"reflect"
	"strings"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Attributed is implemented by actors that name what they serve on their
// spans (a partition actor its topic and partition, a group actor its
// group).
type Attributed interface {
	TraceAttributes() []attribute.KeyValue
}

// Named is implemented by messages that name their span themselves (a
// wrapper named after what it carries).
type Named interface{ TraceName() string }

// Attribute keys on actor spans.
const (
	AttrActorKind   = attribute.Key("kaas.actor.kind")
	AttrActor       = attribute.Key("kaas.actor")
	AttrMessageType = attribute.Key("kaas.message.type")
	AttrTopic       = attribute.Key("messaging.destination.name")
	AttrPartition   = attribute.Key("messaging.destination.partition.id")
	AttrGroup       = attribute.Key("messaging.consumer.group.name")
)

// PropsOptions are the props options of an actor of kind ("conn",
// "partition", "group", "groups", "controller", "supervisor"): the tracing
// middleware while tracing is on, none while it is off.
//
// The sender middleware goes only on actors whose ctx.Send calls all run
// inside Receive (forwarders): it reads the message being received, and
// a connection actor's reply callbacks call ctx.Send from other
// goroutines.
func PropsOptions(kind string) []actor.PropsOption {
	if !On() {
		return nil
	}
	opts := []actor.PropsOption{actor.WithReceiverMiddleware(receiverMiddleware(kind))}
	if forwarders[kind] {
		opts = append(opts, actor.WithSenderMiddleware(senderMiddleware))
	}
	return opts
}

// forwarders are the actor kinds that get the sender middleware: the group
// manager hands each group call to its group's actor with ctx.Send.
var forwarders = map[string]bool{"groups": true}

// KindOf is the actor kind a spawn name starts with: its first segment
// before a '/' or '-' ("partition/t/..." is "partition", "controller-3-7"
// is "controller").
func KindOf(name string) string {
	if i := strings.IndexAny(name, "/-"); i > 0 {
		return name[:i]
	}
	return name
}

// receiverMiddleware starts a span for every message that carries a trace
// context in its envelope (Wrap, or the sender middleware of a traced
// actor), as a child of that context. The actor sees the new span's
// context through FromActor; the span ends when Receive returns. Messages
// without a trace context pass through untouched.
func receiverMiddleware(kind string) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			s := current.Load()
			if s == nil || len(env.Header) == 0 {
				next(c, env)
				return
			}
			parent := extract(map[string]string(env.Header))
			if !parent.IsValid() {
				next(c, env)
				return
			}
			msgType := typeName(env.Message)
			if n, ok := env.Message.(Named); ok {
				msgType = n.TraceName()
			}
			attrs := []attribute.KeyValue{AttrActorKind.String(kind), AttrMessageType.String(msgType)}
			if self := c.Self(); self != nil {
				attrs = append(attrs, AttrActor.String(self.Id))
			}
			if a, ok := c.Actor().(Attributed); ok {
				attrs = append(attrs, a.TraceAttributes()...)
			}
			ctx, span := s.tracer.Start(trace.ContextWithRemoteSpanContext(context.Background(), parent),
				kind+" "+msgType, trace.WithAttributes(attrs...), trace.WithLinks(messageLinks(env.Message)...))
			defer span.End()
			h := make(headerCarrier, 2)
			propagator.Inject(ctx, h)
			next(c, &actor.MessageEnvelope{Header: map[string]string(h), Message: env.Message, Sender: env.Sender})
		}
	}
}

// senderMiddleware carries the trace context of the message being received
// to what the actor sends while handling it (ctx.Send inside Receive).
func senderMiddleware(next actor.SenderFunc) actor.SenderFunc {
	return func(c actor.SenderContext, target *actor.PID, env *actor.MessageEnvelope) {
		if len(env.Header) == 0 && On() {
			if h := c.MessageHeader(); h != nil {
				if tp := h.Get(traceparent); tp != "" {
					env = &actor.MessageEnvelope{Header: map[string]string{traceparent: tp}, Message: env.Message, Sender: env.Sender}
				}
			}
		}
		next(c, target, env)
	}
}

var typeNames sync.Map // reflect.Type → string

// typeName is a message's type name without package or pointer ("Produce").
func typeName(msg any) string {
	t := reflect.TypeOf(msg)
	if t == nil {
		return "nil"
	}
	if n, ok := typeNames.Load(t); ok {
		return n.(string)
	}
	e := t
	for e.Kind() == reflect.Pointer {
		e = e.Elem()
	}
	n := e.Name()
	if n == "" {
		n = e.String()
	}
	typeNames.Store(t, n)
	return n
}
