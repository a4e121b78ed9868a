package group

import (
	"time"

	"github.com/kaas-project/kaas/storage/groupconfig"
)

// WithGroupConfigs is base with a group's GROUP config overrides applied:
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms (KIP-848
// consumer groups), share.session.timeout.ms and
// share.heartbeat.interval.ms (share groups), streams.session.timeout.ms,
// streams.heartbeat.interval.ms, streams.initial.rebalance.delay.ms and
// streams.num.standby.replicas (streams groups). set is already within
// the broker's bounds (groupconfig.Store.Bounded). The other configs are
// the share-partitions' (share.WithGroupConfigs).
func WithGroupConfigs(base Config, set map[string]string) Config {
	cfg := base
	millis := func(name string, d *time.Duration) {
		if n, ok := groupconfig.Int(set, name); ok {
			*d = time.Duration(n) * time.Millisecond
		}
	}
	millis("consumer.session.timeout.ms", &cfg.ConsumerSessionTimeout)
	millis("consumer.heartbeat.interval.ms", &cfg.ConsumerHeartbeatInterval)
	millis("share.session.timeout.ms", &cfg.Share.SessionTimeout)
	millis("share.heartbeat.interval.ms", &cfg.Share.HeartbeatInterval)
	millis("streams.session.timeout.ms", &cfg.Streams.SessionTimeout)
	millis("streams.heartbeat.interval.ms", &cfg.Streams.HeartbeatInterval)
	if n, ok := groupconfig.Int(set, "streams.initial.rebalance.delay.ms"); ok {
		cfg.Streams.InitialRebalanceDelay = time.Duration(n) * time.Millisecond
		if n == 0 {
			cfg.Streams.InitialRebalanceDelay = -1 // no delay
		}
	}
	if n, ok := groupconfig.Int(set, "streams.num.standby.replicas"); ok {
		cfg.Streams.NumStandbyReplicas = int(n)
	}
	return cfg
}

// SetGroupConfigs applies the group's configs over the broker's settings;
// members take them at their next heartbeat (the interval it answers, the
// session deadline it sets).
func (g *Group) SetGroupConfigs(set map[string]string) {
	g.cfg = WithGroupConfigs(g.base, set)
	if g.share != nil {
		g.share.SetConfig(g.cfg.Share)
	}
	if g.streams != nil {
		g.streams.SetConfig(g.cfg.Streams)
	}
}

// readConfigs reads the group's configs on a goroutine; configsRead
// brings them back.
func (a *groupActor) readConfigs() {
	configs, id := a.opts.Configs, a.id
	if configs == nil {
		return
	}
	self, system := a.self, a.system
	go func() {
		set, err := configs.Load(id)
		system.Root.Send(self, &configsRead{set: configs.Bounded(set), err: err})
	}()
}

// applyConfigs applies configs read; unreadable ones are logged and the
// group keeps what it had.
func (a *groupActor) applyConfigs(m configsRead) {
	if m.err != nil {
		a.log.Error().Err(m.err).Msg("group configs unreadable; the group keeps its settings")
		return
	}
	a.g.SetGroupConfigs(m.set)
}
