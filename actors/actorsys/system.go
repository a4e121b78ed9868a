// Package actorsys keeps protoactor-go behind the project's own small types:
// everything outside actor implementations holds a Ref and calls Send, so the
// actor library can be swapped without touching connections or handlers.
package actorsys

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/kaas-project/kaas/actors/tracing"
)

// System is one process's actor system.
type System struct {
	as *actor.ActorSystem
}

// Undeliverable is implemented by requests that must be answered even when
// their actor is gone: a connection that looked a partition up just before
// it was released would otherwise wait for a reply that never comes, and
// stall every response behind it on that connection. Undelivered answers
// with a retriable error; it must not block.
type Undeliverable interface{ Undelivered() }

// NewSystem starts an actor system whose own (slog) logging is discarded:
// kaas logs through zerolog at the actors themselves. Requests sent to an
// actor that has stopped are answered through Undeliverable.
func NewSystem() *System {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	as := actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }),
		actor.WithDeadLetterThrottleCount(0),
	)
	as.EventStream.Subscribe(func(evt any) {
		if dl, ok := evt.(*actor.DeadLetterEvent); ok {
			if u, ok := dl.Message.(Undeliverable); ok {
				u.Undelivered()
			}
		}
	})
	return &System{as: as}
}

// Spawn starts a top-level actor.
func (s *System) Spawn(name string, producer func() actor.Actor) (Ref, error) {
	pid, err := s.as.Root.SpawnNamed(props(producer, tracing.PropsOptions(tracing.KindOf(name))...), name)
	if err != nil {
		return Ref{}, err
	}
	return Ref{pid: pid, sys: s}, nil
}

// SpawnChild starts an actor under a parent (the parent supervises it).
func SpawnChild(ctx actor.Context, name string, producer func() actor.Actor) (Ref, error) {
	pid, err := ctx.SpawnNamed(props(producer, tracing.PropsOptions(tracing.KindOf(name))...), name)
	if err != nil {
		return Ref{}, err
	}
	return Ref{pid: pid, sys: &System{as: ctx.ActorSystem()}}, nil
}

// SpawnChildPrefix starts an actor under a parent with a name that starts
// with prefix and is never reused: a child stopped a moment ago keeps its
// name until its mailbox has drained (a controller stopped while an
// apiserver call blocks its Receive), and a successor spawned under that
// same name would fail.
func SpawnChildPrefix(ctx actor.Context, prefix string, producer func() actor.Actor) (Ref, error) {
	return SpawnChild(ctx, prefix+ctx.ActorSystem().ProcessRegistry.NextId(), producer)
}

// Shutdown stops the system.
func (s *System) Shutdown() { s.as.Shutdown() }

// Ref addresses one actor.
type Ref struct {
	pid *actor.PID
	sys *System
}

// Valid reports whether the Ref points at an actor.
func (r Ref) Valid() bool { return r.pid != nil }

// Send enqueues msg in the actor's mailbox; it never blocks.
func (r Ref) Send(msg any) {
	if r.pid == nil {
		return
	}
	r.sys.as.Root.Send(r.pid, msg)
}

// Stop stops the actor after its current message.
func (r Ref) Stop() {
	if r.pid == nil {
		return
	}
	r.sys.as.Root.Stop(r.pid)
}

// Poison stops the actor after the messages already in its mailbox.
func (r Ref) Poison() {
	if r.pid == nil {
		return
	}
	r.sys.as.Root.Poison(r.pid)
}

// PID exposes the underlying PID to actor implementations (watching).
func (r Ref) PID() *actor.PID { return r.pid }

// String names the actor in logs.
func (r Ref) String() string {
	if r.pid == nil {
		return "<nil>"
	}
	return r.pid.Id
}

// PoisonWait stops the actor after its mailbox drains and waits (up to
// timeout) for it and its children to stop. For shutdown only: it uses a
// protoactor future, which is kept off hot paths.
func (r Ref) PoisonWait(timeout time.Duration) error {
	if r.pid == nil {
		return nil
	}
	f := r.sys.as.Root.PoisonFuture(r.pid)
	done := make(chan error, 1)
	go func() { done <- f.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("actor %s did not stop within %s", r.pid.Id, timeout)
	}
}
