package supervisor

import (
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/storage/assignment"
)

// HandleFailure implements actor.SupervisorStrategy for the supervisor's
// children (partition actors, the controller): a child that panics is
// stopped, its Stopping handler closes what it holds, and the Terminated
// that follows decides its respawn (PartitionDied, ControllerDied).
func (s *Cluster) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason, msg any) {
	s.failed[child.Id] = reason
	(&actorsys.StopOnFailure{}).HandleFailure(sys, sup, child, rs, reason, msg)
}

// deathReason is why child stopped: "panic" (with the panic logged) or
// "stopped".
func deathReason(failed map[string]any, id string) (string, any) {
	if r, ok := failed[id]; ok {
		delete(failed, id)
		return "panic", r
	}
	return "stopped", nil
}

// terminated handles a child's Terminated.
func (s *Cluster) terminated(ctx actor.Context, who *actor.PID) {
	reason, cause := deathReason(s.failed, who.Id)
	if s.stopping {
		return
	}
	if s.ctrl.Valid() && s.ctrl.PID().Equal(who) {
		s.cfg.Log.Error().Str("actor", who.Id).Str("reason", reason).Interface("cause", cause).Msg("controller actor died")
		s.cfg.Hub.SetController(actorsys.Ref{}, 0, nil)
		s.ctrl = actorsys.Ref{}
		s.step(ctx, ControllerDied{Seq: s.ctrlRunning, Reason: reason})
		return
	}
	for gen, pa := range s.refs {
		if pa.ref.PID().Equal(who) {
			delete(s.refs, gen)
			s.cfg.Log.Warn().Str("actor", who.Id).Str("reason", reason).Interface("cause", cause).Msg("partition actor died")
			s.step(ctx, PartitionDied{TP: pa.tp, Gen: gen, Reason: reason})
			return
		}
	}
}

// execHeal runs the supervision effects.
func (s *Cluster) execHeal(e Effect, send func(Event)) {
	switch e := e.(type) {
	case Restarted:
		metrics.ActorRestarted(e.Kind, e.Reason)
		s.cfg.Log.Warn().Str("kind", e.Kind).Str("key", e.Key).Str("reason", e.Reason).Dur("backoff", e.Delay).
			Int("recent_restarts", e.Recent).Msg("restarting actor")
	case ReloadController:
		seq, path := e.Seq, assignment.Path(s.cfg.DataDir)
		go func() {
			prev, err := assignment.ReadFile(path)
			if err != nil {
				s.cfg.Log.Warn().Err(err).Msg("no usable assignment on the volume for the controller's restart")
				prev = nil
			}
			send(ControllerReloaded{Seq: seq, Prev: prev})
		}()
	case GiveUp:
		s.cfg.Log.Error().Str("kind", e.Kind).Str("reason", e.Reason).Msg("giving up: ending the process")
		if s.cfg.Fatal != nil {
			reason := fmt.Sprintf("%s: %s", e.Kind, e.Reason)
			s.releaseLeaseThen(func() { s.cfg.Fatal(reason) })
		}
	}
}

// giveUpReleaseWait bounds how long a broker that gives up waits for its
// Lease to be released before it exits (an apiserver that does not answer
// must not keep a broken broker alive).
const giveUpReleaseWait = 3 * time.Second

// releaseLeaseThen stops the election, which releases the Lease if this
// process still holds it (only then: the release is holder-scoped), and
// runs then once that is done or giveUpReleaseWait has passed, off the
// actor's goroutine. Another broker then takes over at once (candidates
// watch for the release) rather than a lease duration later.
func (s *Cluster) releaseLeaseThen(then func()) {
	if s.stopElect == nil {
		then()
		return
	}
	s.stopElect()
	var once sync.Once
	t := s.clock.AfterFunc(giveUpReleaseWait, func() {
		once.Do(func() {
			s.cfg.Log.Warn().Dur("waited", giveUpReleaseWait).Msg("lease release unconfirmed; exiting anyway")
			then()
		})
	})
	done := s.electDone
	go func() {
		<-done
		t.Stop()
		once.Do(then)
	}()
}
