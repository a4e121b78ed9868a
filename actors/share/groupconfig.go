package share

import (
	"time"

	"github.com/kaas-project/kaas/storage/groupconfig"
)

// WithGroupConfigs is base with a share group's config overrides applied:
// share.record.lock.duration.ms, share.delivery.count.limit,
// share.partition.max.record.locks, share.auto.offset.reset,
// share.isolation.level, share.renew.acknowledge.enable and the
// dead-letter queue's
// errors.deadletterqueue.topic.name and
// errors.deadletterqueue.copy.record.enable (the others are the
// coordinator's). Values are the validated ones the group config store
// keeps, within the broker's bounds (groupconfig.Store.Bounded).
func WithGroupConfigs(base Config, set map[string]string) Config {
	cfg := base
	if n, ok := groupconfig.Int(set, "share.record.lock.duration.ms"); ok {
		cfg.LockDuration = time.Duration(n) * time.Millisecond
	}
	if n, ok := groupconfig.Int(set, "share.delivery.count.limit"); ok {
		cfg.DeliveryLimit = int16(n)
	}
	if n, ok := groupconfig.Int(set, "share.partition.max.record.locks"); ok {
		cfg.MaxInFlight = n
	}
	if v, ok := set["share.auto.offset.reset"]; ok {
		cfg.ResetLatest = v != "earliest"
	}
	if v, ok := set["share.isolation.level"]; ok {
		cfg.ReadCommitted = v == "read_committed"
	}
	if v, ok := set["errors.deadletterqueue.topic.name"]; ok {
		cfg.DeadLetterTopic = v
	}
	if b, ok := groupconfig.Bool(set, "share.renew.acknowledge.enable"); ok {
		cfg.RenewDisabled = !b
	}
	if b, ok := groupconfig.Bool(set, "errors.deadletterqueue.copy.record.enable"); ok {
		cfg.CopyRecord = b
	}
	return cfg
}
