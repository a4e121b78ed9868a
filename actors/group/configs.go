package group

import (
	"time"

	"github.com/kaas-project/kaas/storage/groupconfig"
)

// WithGroupConfigs is base with a group's GROUP config overrides applied:
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms (KIP-848
// consumer groups), share.session.timeout.ms and
// share.heartbeat.interval.ms (share groups), streams.session.timeout.ms,
// streams.heartbeat.interval.ms and streams.num.standby.replicas (streams
// groups), each bounded by the broker's limits for it (Kafka's
// group.consumer.min/max.*, group.share.min/max.* and group.streams.*
// defaults, the ranges groupconfig validates against). The other configs
// are the share-partitions' (share.WithGroupConfigs).
func WithGroupConfigs(base Config, set map[string]string) Config {
	cfg := base
	if d, ok := boundedMillis(set, "consumer.session.timeout.ms"); ok {
		cfg.ConsumerSessionTimeout = d
	}
	if d, ok := boundedMillis(set, "consumer.heartbeat.interval.ms"); ok {
		cfg.ConsumerHeartbeatInterval = d
	}
	if d, ok := boundedMillis(set, "share.session.timeout.ms"); ok {
		cfg.Share.SessionTimeout = d
	}
	if d, ok := boundedMillis(set, "share.heartbeat.interval.ms"); ok {
		cfg.Share.HeartbeatInterval = d
	}
	if d, ok := boundedMillis(set, "streams.session.timeout.ms"); ok {
		cfg.Streams.SessionTimeout = d
	}
	if d, ok := boundedMillis(set, "streams.heartbeat.interval.ms"); ok {
		cfg.Streams.HeartbeatInterval = d
	}
	if n, ok := groupconfig.Int(set, "streams.initial.rebalance.delay.ms"); ok {
		cfg.Streams.InitialRebalanceDelay = time.Duration(n) * time.Millisecond
		if n == 0 {
			cfg.Streams.InitialRebalanceDelay = -1 // no delay
		}
	}
	if n, ok := groupconfig.Int(set, "streams.num.standby.replicas"); ok {
		k := groupconfig.Keys["streams.num.standby.replicas"]
		cfg.Streams.NumStandbyReplicas = int(min(max(n, k.Min), k.Max))
	}
	return cfg
}

// boundedMillis is the config name of set as a duration, within the
// broker's bounds for it.
func boundedMillis(set map[string]string, name string) (time.Duration, bool) {
	n, ok := groupconfig.Int(set, name)
	if !ok {
		return 0, false
	}
	k := groupconfig.Keys[name]
	return time.Duration(min(max(n, k.Min), k.Max)) * time.Millisecond, true
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
		system.Root.Send(self, &configsRead{set: set, err: err})
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
