package actorsys

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// blocker blocks its Receive on a message until released, so a Stop sent
// meanwhile cannot complete and the child keeps its name.
type blocker struct{ release, blocked chan struct{} }

func (b *blocker) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(string); ok {
		b.blocked <- struct{}{}
		<-b.release
	}
}

// parent spawns children on request, with a fixed name or a prefix, and
// stops them.
type parent struct {
	release chan struct{}
	blocked chan struct{} // told as each child blocks
	results chan error
	last    *Ref
}

type spawnFixed struct{}
type spawnPrefixed struct{}

func (p *parent) Receive(ctx actor.Context) {
	var (
		ref Ref
		err error
	)
	producer := func() actor.Actor { return &blocker{release: p.release, blocked: p.blocked} }
	switch ctx.Message().(type) {
	case spawnFixed:
		ref, err = SpawnChild(ctx, "controller-1", producer)
	case spawnPrefixed:
		ref, err = SpawnChildPrefix(ctx, "controller-1-", producer)
	default:
		return
	}
	if p.last != nil {
		p.last.Stop()
	}
	if err == nil {
		ref.Send("work") // blocks the child: its Stop waits behind it
		p.last = &ref
	}
	p.results <- err
}

// A successor spawned while its predecessor is still stopping (a
// controller stopped while an apiserver call blocks its Receive, then
// started again at the same epoch) fails under a fixed name and succeeds
// under SpawnChildPrefix.
func TestSpawnChildPrefixNeverReusesAName(t *testing.T) {
	for _, tc := range []struct {
		name    string
		msg     any
		wantErr bool
	}{{"fixed name", spawnFixed{}, true}, {"prefix", spawnPrefixed{}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			sys := NewSystem()
			defer sys.Shutdown()
			p := &parent{release: make(chan struct{}), blocked: make(chan struct{}, 2), results: make(chan error, 2)}
			defer close(p.release)
			ref, err := sys.Spawn("parent", func() actor.Actor { return p })
			if err != nil {
				t.Fatal(err)
			}
			wait := func() error {
				select {
				case err := <-p.results:
					return err
				case <-time.After(5 * time.Second):
					t.Fatal("no answer from the parent")
					return nil
				}
			}
			ref.Send(tc.msg)
			if err := wait(); err != nil {
				t.Fatalf("first spawn: %v", err)
			}
			select {
			case <-p.blocked: // the child is now blocked in Receive
			case <-time.After(5 * time.Second):
				t.Fatal("the child never blocked")
			}
			p.last.Stop()
			ref.Send(tc.msg)
			err = wait()
			if tc.wantErr && err == nil {
				t.Fatal("a second child under the name of one still stopping was spawned: the hazard this test documents is gone")
			}
			if !tc.wantErr && err != nil {
				t.Fatalf("second spawn while the first child is stopping: %v", err)
			}
		})
	}
}
