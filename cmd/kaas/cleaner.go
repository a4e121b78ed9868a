package main

import (
	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/storage/compaction"
)

// cleaner is the broker's log cleaner configuration; one throttle for
// every partition, so --cleaner-io-rate bounds the broker's total.
func (c *serveConfig) cleaner() partition.CleanerConfig {
	if c.cleanerThrottle == nil {
		c.cleanerThrottle = compaction.NewThrottle(c.CleanerIORate, nil, nil)
	}
	return partition.CleanerConfig{MapBytes: c.CleanerBufferSize, Throttle: c.cleanerThrottle, Interval: c.CleanerInterval}
}
