package actorsys

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// queuedRequest is an Undeliverable queuedRequest counting its answers.
type queuedRequest struct{ answered *atomic.Int32 }

func (r queuedRequest) Undelivered() { r.answered.Add(1) }

// failingChild blocks its Receive on a channel for the first queuedRequest, so that
// more queue behind it.
type failingChild struct{ release chan struct{} }

func (b *failingChild) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(queuedRequest); ok {
		<-b.release
		panic("boom")
	}
}

// healParent spawns the failingChild under StopOnFailure and reports its failures
// and its Terminated.
type healParent struct {
	child      func(Ref)
	release    chan struct{}
	failed     chan any
	terminated chan struct{}
}

// spawnHealParent spawns a healParent in sys and returns it with its
// child.
func spawnHealParent(t *testing.T, sys *System) (*healParent, Ref) {
	t.Helper()
	refs := make(chan Ref, 1)
	p := &healParent{child: func(r Ref) { refs <- r }, release: make(chan struct{}), failed: make(chan any, 1), terminated: make(chan struct{})}
	if _, err := sys.Spawn("parent", func() actor.Actor { return p }); err != nil {
		t.Fatal(err)
	}
	return p, <-refs
}

func (p *healParent) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason, msg any) {
	(&StopOnFailure{OnFailure: func(f Failed) { p.failed <- f.Reason }}).HandleFailure(sys, sup, child, rs, reason, msg)
}

func (p *healParent) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		ref, err := SpawnChild(ctx, "child", func() actor.Actor { return &failingChild{release: p.release} })
		if err != nil {
			panic(err)
		}
		p.child(ref)
	case *actor.Terminated:
		close(p.terminated)
	}
}

// A child that panics is stopped (not restarted in place), its healParent
// hears of the panic and of the Terminated, and every queuedRequest queued
// behind the failing one, and the failing one itself, gets its retriable
// answer instead of waiting forever in a suspended mailbox.
func TestFailedChildIsStoppedAndItsQueueAnswered(t *testing.T) {
	sys := NewSystem()
	defer sys.Shutdown()
	p, child := spawnHealParent(t, sys)
	var answered atomic.Int32
	const queued = 20
	for range queued + 1 {
		child.Send(queuedRequest{answered: &answered})
	}
	time.Sleep(50 * time.Millisecond) // the first queuedRequest is in Receive, the rest queued
	close(p.release)
	select {
	case r := <-p.failed:
		if r != "boom" {
			t.Errorf("failure reason %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the healParent never heard of the failure")
	}
	select {
	case <-p.terminated:
	case <-time.After(5 * time.Second):
		t.Fatal("the failed child was not stopped")
	}
	deadline := time.Now().Add(5 * time.Second)
	for answered.Load() < queued+1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := answered.Load(); n != queued+1 {
		t.Errorf("%d of %d requests answered", n, queued+1)
	}
}

// Crash panics its actor only once chaos is enabled.
func TestCrashNeedsChaos(t *testing.T) {
	sys := NewSystem()
	defer sys.Shutdown()
	p, child := spawnHealParent(t, sys)
	child.Send(&Crash{})
	time.Sleep(100 * time.Millisecond)
	select {
	case <-p.failed:
		t.Fatal("Crash panicked without chaos enabled")
	default:
	}
	EnableChaos()
	defer chaosEnabled.Store(false)
	child.Send(&Crash{})
	select {
	case <-p.failed:
	case <-time.After(5 * time.Second):
		t.Fatal("Crash did not panic with chaos enabled")
	}
	if r, ok := sys.ChaosTarget(func(id string) bool { return id == "parent" }); !ok || r.String() != "parent" {
		t.Errorf("ChaosTarget: %v %v", r, ok)
	}
	if ChaosKind("supervisor/partition/t/x/0/1/2") != "partition" || ChaosKind("conn/3") != "connection" ||
		ChaosKind("groups/group-1") != "group" || ChaosKind("supervisor/controller-3-$4") != "controller" || ChaosKind("supervisor") != "" {
		t.Error("ChaosKind")
	}
}

// A request sent to an actor that has stopped is answered through
// Undeliverable, also when it travels in a message envelope (a traced
// request).
func TestDeadLettersAnswered(t *testing.T) {
	sys := NewSystem()
	defer sys.Shutdown()
	ref, err := sys.Spawn("gone", func() actor.Actor { return &failingChild{release: make(chan struct{})} })
	if err != nil {
		t.Fatal(err)
	}
	ref.Stop()
	var answered atomic.Int32
	deadline := time.Now().Add(5 * time.Second)
	for sent := int32(0); answered.Load() < 2; {
		if sent == 0 || time.Now().After(deadline) {
			if sent > 0 {
				t.Fatalf("%d of 2 requests to a stopped actor answered", answered.Load())
			}
			time.Sleep(100 * time.Millisecond) // the stop has gone through
			ref.Send(queuedRequest{answered: &answered})
			ref.Send(&actor.MessageEnvelope{Header: map[string]string{"traceparent": "x"}, Message: queuedRequest{answered: &answered}})
			sent = 2
		}
		time.Sleep(10 * time.Millisecond)
	}
}
