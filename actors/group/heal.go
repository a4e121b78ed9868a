package group

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/kaas-project/kaas/actors/metrics"
)

// restartGroup ends the backoff of a group actor that panicked.
type restartGroup struct{ pid *actor.PID }

// HandleFailure implements actor.SupervisorStrategy for the group actors:
// one that panics is restarted in place after the backoff of heal.Groups.
// Its Restarting handler answers what it parked with a retriable error and
// closes its log; the new instance loads the group from the store, and the
// members rejoin (their next heartbeat or commit gets an error that makes
// them rejoin).
func (m *manager) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ any) {
	name := m.groupOf(child)
	d := m.restarts.Died(name, m.opts.Clock.Now())
	metrics.ActorRestarted("group", "panic")
	m.opts.Log.Warn().Str("group", name).Str("actor", child.Id).Interface("cause", reason).Dur("backoff", d.Delay).
		Int("recent_restarts", d.Recent).Msg("group actor panicked; restarting it")
	if d.Delay == 0 {
		sup.RestartChildren(child)
		m.onGroupRestarted(child)
		return
	}
	self, system := m.self, m.system
	m.opts.Clock.AfterFunc(d.Delay, func() { system.Root.Send(self, &restartGroup{pid: child}) })
}

// groupStopped forgets a group actor that stopped without a release (a
// Stop): the next call for the group spawns a new one, which loads it from
// the store.
func (m *manager) groupStopped(ctx actor.Context, who *actor.PID) {
	for name, e := range m.groups {
		if e.pid.Equal(who) {
			m.onGroupGone(name, e)
			delete(m.groups, name)
			metrics.ActorRestarted("group", "stopped")
			m.opts.Log.Warn().Str("group", name).Str("actor", who.Id).Msg("group actor stopped; the next call loads it again")
			m.count()
			m.answerLists(ctx)
			m.maybeStop(ctx)
			return
		}
	}
}

func (m *manager) groupOf(pid *actor.PID) string {
	for name, e := range m.groups {
		if e.pid.Equal(pid) {
			return name
		}
	}
	return pid.Id
}
