package supervisor

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
)

// respawnLocal is the end of a dead partition actor's backoff.
type respawnLocal struct {
	topic string
	id    [16]byte
	part  int32
	dead  *actor.PID
}

// HandleFailure implements actor.SupervisorStrategy: a partition actor
// that panics is stopped (its Stopping handler closes its log) and spawned
// again once Terminated (Cluster.HandleFailure).
func (s *Local) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason, msg any) {
	s.failed[child.Id] = reason
	(&actorsys.StopOnFailure{}).HandleFailure(sys, sup, child, rs, reason, msg)
}

// terminated respawns a partition actor of a topic that still exists.
func (s *Local) terminated(ctx actor.Context, who *actor.PID) {
	reason, cause := deathReason(s.failed, who.Id)
	if s.stopping {
		return
	}
	for _, ts := range s.topics {
		for p, ref := range ts.actors {
			if !ref.PID().Equal(who) {
				continue
			}
			key := fmt.Sprintf("%s/%d", ts.rec.Name, p)
			d := s.heal.Died(key, s.clock.Now())
			metrics.ActorRestarted("partition", reason)
			s.cfg.Log.Warn().Str("actor", who.Id).Str("key", key).Str("reason", reason).Interface("cause", cause).
				Dur("backoff", d.Delay).Int("recent_restarts", d.Recent).Msg("partition actor died; restarting it")
			self, system := ctx.Self(), ctx.ActorSystem()
			m := &respawnLocal{topic: ts.rec.Name, id: ts.id, part: int32(p), dead: who}
			s.clock.AfterFunc(d.Delay, func() { system.Root.Send(self, m) })
			return
		}
	}
}

// respawn spawns the new incarnation of a dead partition actor, unless its
// topic was deleted (or re-created) meanwhile.
func (s *Local) respawn(ctx actor.Context, m *respawnLocal) {
	ts, ok := s.topics[m.topic]
	if !ok || ts.id != m.id || int(m.part) >= len(ts.actors) || !ts.actors[m.part].PID().Equal(m.dead) {
		return
	}
	s.incarnations++
	pid := storage.PartitionID{Topic: ts.rec.Name, TopicID: FormatUUID(ts.id), Partition: m.part}
	name := fmt.Sprintf("partition/%s/%s/%d/r%d", ts.rec.Name, FormatUUID(ts.id), m.part, s.incarnations)
	ref, err := actorsys.SpawnChildOn(ctx, name, partition.New(pid, s.cfg.Partition), actorsys.PartitionPool())
	if err != nil {
		s.cfg.Log.Error().Err(err).Str("topic", ts.rec.Name).Int32("partition", m.part).Msg("respawn partition actor")
		return
	}
	ref.Send(&messages.TakeLeadership{TopicID: pid.TopicID, LeaderEpoch: 0, Config: withDefaults(s.cfg.TopicDefaults, ts.rec.Config)})
	ts.actors[m.part] = ref
	s.publish(ctx)
}
