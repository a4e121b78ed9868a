package main

import (
	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/storage/compaction"
)

// cleanerThrottle is the broker's one log cleaner throttle for every
// partition, so --cleaner-io-rate bounds the broker's total.
func (c *serveConfig) cleanerThrottle() *compaction.Throttle {
	if c.throttle == nil {
		c.throttle = compaction.NewThrottle(c.CleanerIORate, nil, nil)
	}
	return c.throttle
}

// cleaner is the partitions' log cleaner configuration: the broker's
// throttle, and the key map bound and check interval in force (the
// dynamic broker configs over the flags), read at each pass and wait.
func (b *broker) cleaner(cfg *serveConfig) partition.CleanerConfig {
	return partition.CleanerConfig{Throttle: cfg.cleanerThrottle(), MapBytes: b.dynCfgs.CleanerMapBytes, Interval: b.dynCfgs.CleanerInterval}
}
