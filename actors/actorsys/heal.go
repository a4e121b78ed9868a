package actorsys

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/tracing"
)

// answeringMailbox is protoactor's unbounded mailbox with one change: the
// requests still queued when its actor stops (a panic, a Stop) are answered
// through Undeliverable instead of being dropped. protoactor discards the
// user messages of a stopped actor's mailbox, and a connection waiting for
// one of those answers would stall every response behind it.
func answeringMailbox() actor.Mailbox { return &answering{Mailbox: actor.Unbounded()()} }

type answering struct {
	actor.Mailbox
	// queued is the kaas_actor_mailbox_messages gauge of the actor's kind:
	// up on every user message posted, down as each is invoked.
	queued prometheus.Gauge
}

func (m *answering) RegisterHandlers(inv actor.MessageInvoker, d actor.Dispatcher) {
	kind, id := "other", ""
	if c, ok := inv.(interface{ Self() *actor.PID }); ok && c.Self() != nil {
		id = c.Self().Id
		if k := ChaosKind(id); k != "" {
			kind = k
		}
	}
	m.queued = mailboxGauges.of(kind)
	m.Mailbox.RegisterHandlers(&answeringInvoker{inner: inv, mb: m.Mailbox, queued: m.queued, id: id}, d)
}

// PostUserMessage counts the message queued before it can be invoked.
func (m *answering) PostUserMessage(msg any) {
	if m.queued != nil {
		m.queued.Inc()
	}
	m.Mailbox.PostUserMessage(msg)
}

type answeringInvoker struct {
	inner   actor.MessageInvoker
	mb      actor.Mailbox
	queued  prometheus.Gauge
	stopped atomic.Bool
	id      string // the actor's (Recovered names it)
}

// mailboxGauges resolves the queued-messages gauge of each kind once.
var mailboxGauges = gaugeCache{}

type gaugeCache struct{ m sync.Map }

func (c *gaugeCache) of(kind string) prometheus.Gauge {
	if g, ok := c.m.Load(kind); ok {
		return g.(prometheus.Gauge)
	}
	g, _ := c.m.LoadOrStore(kind, metrics.MailboxMessages(kind))
	return g.(prometheus.Gauge)
}

func (i *answeringInvoker) InvokeSystemMessage(msg any) {
	i.inner.InvokeSystemMessage(msg)
	if _, ok := msg.(*actor.Stop); ok && !i.stopped.Swap(true) {
		// An actor that failed has its mailbox suspended, and protoactor
		// never resumes it once the actor stops: what was queued would
		// wait forever. Resumed, it is answered here.
		i.mb.PostSystemMessage(&actor.ResumeMailbox{})
	}
}

func (i *answeringInvoker) InvokeUserMessage(msg any) {
	i.queued.Dec()
	m := actor.UnwrapEnvelopeMessage(msg)
	if i.stopped.Load() {
		if u, ok := m.(Undeliverable); ok {
			u.Undelivered()
			return
		}
	}
	if _, ok := m.(*Crash); ok && chaosEnabled.Load() {
		// Inside the mailbox's recover: the actor fails as it would on a
		// panic of its own.
		panic(fmt.Sprintf("chaos: crash injected into %T", m))
	}
	i.inner.InvokeUserMessage(msg)
}

// EscalateFailure answers the request whose handling panicked (retriable,
// as for a stopped actor: the client retries, and an idempotent producer's
// retry is de-duplicated), then reports the failure to the parent.
func (i *answeringInvoker) EscalateFailure(reason, message any) {
	Recovered(i.id, reason) // called in the mailbox's recover: the stack is the panic's
	if u, ok := actor.UnwrapEnvelopeMessage(message).(Undeliverable); ok {
		u.Undelivered()
	}
	i.inner.EscalateFailure(reason, message)
}

// props are the Props every actor of kaas is spawned with.
func props(producer func() actor.Actor, opts ...actor.PropsOption) *actor.Props {
	return actor.PropsFromProducer(producer, append([]actor.PropsOption{actor.WithMailbox(answeringMailbox), actor.WithDispatcher(dispatcher{})}, opts...)...)
}

// Props returns the Props kaas spawns its actors with (the mailbox that
// answers what a stopped actor leaves queued), for spawns made through the
// actor context directly.
func Props(producer func() actor.Actor, opts ...actor.PropsOption) *actor.Props {
	return props(producer, opts...)
}

// Crash makes the actor it is sent to panic, when chaos is enabled
// (EnableChaos); otherwise it is passed on like any message (and ignored).
type Crash struct{}

var chaosEnabled atomic.Bool

// EnableChaos lets Crash messages panic their actors (--debug-chaos).
func EnableChaos() { chaosEnabled.Store(true) }

// Failed is a child's failure as its parent's strategy sees it.
type Failed struct {
	Child  *actor.PID
	Reason any
}

// StopOnFailure is a supervisor strategy that stops a failed child (its
// Stopping handler closes what it holds) and reports the failure: the
// parent decides, when the Terminated arrives, whether and when to spawn a
// new incarnation. protoactor's default restarts the child in place, which
// keeps nothing of what the old instance held (a partition's open log).
type StopOnFailure struct{ OnFailure func(Failed) }

// HandleFailure implements actor.SupervisorStrategy.
func (s *StopOnFailure) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ any) {
	if s.OnFailure != nil {
		s.OnFailure(Failed{Child: child, Reason: reason})
	}
	sup.StopChildren(child)
}

// SpawnGuarded starts a top-level actor under the guardian of strategy
// (one guardian per strategy value: pass the same pointer for every actor
// of a kind), instead of protoactor's default of restarting it in place.
func (s *System) SpawnGuarded(name string, producer func() actor.Actor, strategy *StopOnFailure) (Ref, error) {
	root := actor.NewRootContext(s.as, nil).WithGuardian(strategy)
	pid, err := root.SpawnNamed(props(producer), name)
	if err != nil {
		return Ref{}, err
	}
	return Ref{pid: pid, sys: s}, nil
}

// SpawnRestarting starts a top-level actor that a panic restarts in place:
// a new instance from producer, its mailbox kept (the request it panicked
// on is answered through Undeliverable), onPanic told of the reason. Past
// maxRestarts panics within window it is stopped instead (WatchEssential
// sees it die).
func (s *System) SpawnRestarting(name string, producer func() actor.Actor, maxRestarts int, window time.Duration, onPanic func(reason any)) (Ref, error) {
	strategy := actor.NewOneForOneStrategy(maxRestarts, window, func(reason any) actor.Directive {
		if onPanic != nil {
			onPanic(reason)
		}
		return actor.RestartDirective
	})
	root := actor.NewRootContext(s.as, nil).WithGuardian(strategy)
	pid, err := root.SpawnNamed(props(producer, tracing.PropsOptions(tracing.KindOf(name))...), name)
	if err != nil {
		return Ref{}, err
	}
	return Ref{pid: pid, sys: s}, nil
}

// WatchEssential calls onDeath (from an actor's goroutine) when the actor
// ref stops: for the actors the process cannot run without.
func (s *System) WatchEssential(ref Ref, onDeath func()) error {
	_, err := s.as.Root.SpawnNamed(props(func() actor.Actor { return &watcher{target: ref.pid, onDeath: onDeath} }), "watch/"+ref.pid.Id)
	return err
}

type watcher struct {
	target  *actor.PID
	onDeath func()
}

func (w *watcher) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.Watch(w.target)
	case *actor.Terminated:
		if m.Who.Equal(w.target) {
			w.onDeath()
		}
	}
}

// ChaosTarget picks, at random, a running actor whose id matches match
// (debug chaos endpoint). It returns false when none does.
func (s *System) ChaosTarget(match func(id string) bool) (Ref, bool) {
	var ids []string
	for _, bucket := range s.as.ProcessRegistry.LocalPIDs.LocalPIDs {
		for _, id := range bucket.Keys() {
			if match(id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return Ref{}, false
	}
	id := ids[rand.IntN(len(ids))]
	return Ref{pid: actor.NewPID(s.as.ProcessRegistry.Address, id), sys: s}, true
}

// ChaosKind names the kind of actor an id belongs to ("" for none).
func ChaosKind(id string) string {
	switch {
	case strings.HasPrefix(id, "conn/"):
		return "connection"
	case strings.Contains(id, "/partition/"):
		return "partition"
	case strings.HasPrefix(id, "groups/group-"):
		return "group"
	case strings.Contains(id, "/controller-"):
		return "controller"
	case id == "share":
		return "share"
	}
	return ""
}
