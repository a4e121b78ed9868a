package main

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kaas-project/kaas/storage/groupconfig"
)

// groupBound is one of Kafka's group.*.min/max.* broker configs, a flag
// here: the least or the most a GROUP config may be set to, and the range
// its broker default (the flag of groupDefaults) must be in. Its name and
// Kafka's default are groupconfig.Keys' (MinConfig, MaxConfig, Min, Max).
type groupBound struct {
	key    string // the GROUP config bounded
	upper  bool   // the maximum (else the minimum)
	lo, hi int64  // Kafka's range for the bound itself
	value  int64  // in force: milliseconds or a count
}

// newGroupBounds are the bounds with Kafka's defaults and ranges.
func newGroupBounds() []*groupBound {
	const most = math.MaxInt32
	bs := []*groupBound{
		{key: "consumer.session.timeout.ms", lo: 1, hi: most}, {key: "consumer.session.timeout.ms", upper: true, lo: 1, hi: most},
		{key: "consumer.heartbeat.interval.ms", lo: 1, hi: most}, {key: "consumer.heartbeat.interval.ms", upper: true, lo: 1, hi: most},
		{key: "share.session.timeout.ms", lo: 1, hi: most}, {key: "share.session.timeout.ms", upper: true, lo: 1, hi: most},
		{key: "share.heartbeat.interval.ms", lo: 1, hi: most}, {key: "share.heartbeat.interval.ms", upper: true, lo: 1, hi: most},
		{key: "share.record.lock.duration.ms", lo: 1000, hi: 30000}, {key: "share.record.lock.duration.ms", upper: true, lo: 30000, hi: 3600000},
		{key: "share.delivery.count.limit", lo: 2, hi: 5}, {key: "share.delivery.count.limit", upper: true, lo: 5, hi: 25},
		{key: "share.partition.max.record.locks", lo: 100, hi: 2000}, {key: "share.partition.max.record.locks", upper: true, lo: 2000, hi: 10000},
		{key: "streams.session.timeout.ms", lo: 1, hi: most}, {key: "streams.session.timeout.ms", upper: true, lo: 1, hi: most},
		{key: "streams.heartbeat.interval.ms", lo: 1, hi: most}, {key: "streams.heartbeat.interval.ms", upper: true, lo: 1, hi: most},
		{key: "streams.num.standby.replicas", upper: true, lo: 0, hi: most},
	}
	for _, b := range bs {
		k := groupconfig.Keys[b.key]
		b.value = k.Min
		if b.upper {
			b.value = k.Max
		}
	}
	return bs
}

// config is the Kafka broker config b stands for.
func (b *groupBound) config() string {
	if b.upper {
		return groupconfig.Keys[b.key].MaxConfig
	}
	return groupconfig.Keys[b.key].MinConfig
}

// flagName is b's flag: the Kafka name's words, without the unit of a
// duration (group.share.min.record.lock.duration.ms is
// --group-share-min-record-lock-duration).
func (b *groupBound) flagName() string {
	return strings.ReplaceAll(strings.TrimSuffix(b.config(), ".ms"), ".", "-")
}

func (b *groupBound) millis() bool { return strings.HasSuffix(b.key, ".ms") }

// show is v as the flag spells it.
func (b *groupBound) show(v int64) string {
	if b.millis() {
		return (time.Duration(v) * time.Millisecond).String()
	}
	return strconv.FormatInt(v, 10)
}

// String and Set make b a flag.Value: a duration for the configs Kafka
// counts in milliseconds, an int for the others.
func (b *groupBound) String() string { return b.show(b.value) }

func (b *groupBound) Set(s string) error {
	if !b.millis() {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return fmt.Errorf("want an int: %w", err)
		}
		b.value = n
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d%time.Millisecond != 0 {
		return fmt.Errorf("%s: want whole milliseconds", s)
	}
	b.value = d.Milliseconds()
	return nil
}

// addGroupBoundFlags registers one flag per bound.
func addGroupBoundFlags(fs *flag.FlagSet, bounds []*groupBound) {
	for _, b := range bounds {
		kind, _, _ := strings.Cut(b.key, ".")
		which := "lowest"
		if b.upper {
			which = "highest"
		}
		unit := "an `int`"
		if b.millis() {
			unit = "a `duration`"
		}
		fs.Var(b, b.flagName(), fmt.Sprintf("%s groups: the %s value a group's %s may be set to, %s (GROUP config); also bounds its broker default (Kafka's %s)",
			kind, which, b.key, unit, b.config()))
	}
}

// groupDefault is a flag that sets a GROUP config's broker default.
type groupDefault struct{ key, flag, value string }

// groupDefaults are the flags that set GROUP configs' defaults, with
// their values (milliseconds or counts, as the configs).
func groupDefaults(cfg *serveConfig) []groupDefault {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return []groupDefault{
		{"share.record.lock.duration.ms", "share-record-lock-duration", ms(cfg.ShareRecordLockDuration)},
		{"share.delivery.count.limit", "share-delivery-count-limit", strconv.Itoa(cfg.ShareDeliveryCountLimit)},
		{"share.auto.offset.reset", "share-auto-offset-reset", cfg.ShareAutoOffsetReset},
		{"share.partition.max.record.locks", "group-share-partition-max-record-locks", strconv.Itoa(cfg.GroupSharePartitionMaxRecordLocks)},
		{"share.session.timeout.ms", "group-share-session-timeout", ms(cfg.GroupShareSessionTimeout)},
		{"share.heartbeat.interval.ms", "group-share-heartbeat-interval", ms(cfg.GroupShareHeartbeatInterval)},
		{"consumer.heartbeat.interval.ms", "group-consumer-heartbeat-interval", ms(cfg.GroupConsumerHeartbeatInterval)},
		{"consumer.session.timeout.ms", "group-consumer-session-timeout", ms(cfg.GroupConsumerSessionTimeout)},
		{"streams.heartbeat.interval.ms", "group-streams-heartbeat-interval", ms(cfg.GroupStreamsHeartbeatInterval)},
		{"streams.session.timeout.ms", "group-streams-session-timeout", ms(cfg.GroupStreamsSessionTimeout)},
		{"streams.num.standby.replicas", "group-streams-num-standby-replicas", strconv.Itoa(cfg.GroupStreamsNumStandbyReplicas)},
		{"streams.initial.rebalance.delay.ms", "group-streams-initial-rebalance-delay", ms(cfg.GroupStreamsInitialDelay)},
	}
}

// groupConfigBounds are the bounds in force, by GROUP config.
func groupConfigBounds(bounds []*groupBound) map[string]groupconfig.Bound {
	out := map[string]groupconfig.Bound{}
	for _, b := range bounds {
		r, ok := out[b.key]
		if !ok {
			k := groupconfig.Keys[b.key]
			r = groupconfig.Bound{Min: k.Min, Max: k.Max}
		}
		if b.upper {
			r.Max = b.value
		} else {
			r.Min = b.value
		}
		out[b.key] = r
	}
	return out
}

// validateGroupBounds checks what Kafka's group coordinator checks at
// start: each bound in its range, each minimum at most its maximum, and
// each broker default within its config's bounds.
func validateGroupBounds(cfg *serveConfig) error {
	flags := map[string][2]string{} // GROUP config -> its min and max flags
	for _, b := range cfg.GroupBounds {
		if b.value < b.lo || b.value > b.hi {
			return fmt.Errorf("--%s %s: must be %s to %s (Kafka's %s)", b.flagName(), b, b.show(b.lo), b.show(b.hi), b.config())
		}
		f := flags[b.key]
		if b.upper {
			f[1] = "--" + b.flagName()
		} else {
			f[0] = "--" + b.flagName()
		}
		flags[b.key] = f
	}
	bounds := groupConfigBounds(cfg.GroupBounds)
	for _, d := range groupDefaults(cfg) {
		r, ok := bounds[d.key]
		if !ok {
			continue
		}
		f := flags[d.key]
		if r.Min > r.Max {
			return fmt.Errorf("%s must be at least %s", f[1], f[0])
		}
		n, err := strconv.ParseInt(d.value, 10, 64)
		if err != nil {
			return fmt.Errorf("--%s %q: %w", d.flag, d.value, err)
		}
		if n < r.Min || n > r.Max {
			b := &groupBound{key: d.key}
			return fmt.Errorf("--%s %s: must be %s to %s (%s)", d.flag, b.show(n), b.show(r.Min), b.show(r.Max),
				strings.Join(slices.DeleteFunc(f[:], func(s string) bool { return s == "" }), ", "))
		}
	}
	return nil
}
