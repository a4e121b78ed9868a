package main

import (
	"time"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/diskspace"
)

// partitionScrapeTimeout bounds how long a scrape waits for the partitions
// this broker leads to report their offsets and sizes; the ones that have
// not answered by then (busy or stalled) are left out of that scrape.
const partitionScrapeTimeout = 250 * time.Millisecond

// committedOffsets is what the lag series read of the group coordinator.
func committedOffsets(b *broker) []metrics.CommittedOffset {
	if b.groups != nil {
		return b.groups.CommittedOffsets()
	}
	return nil
}

// ledPartitionStats asks every partition led here for its offsets and size
// and gathers the answers that arrive within timeout.
func ledPartitionStats(v *routing.View, timeout time.Duration) map[metrics.TopicPartition]metrics.PartitionStats {
	type answer struct {
		tp routing.TP
		st messages.PartitionStatusResult
	}
	answers := make(chan answer, len(v.Local)) // late answers never block
	for tp, ref := range v.Local {
		ref.Send(&messages.PartitionStatus{MeasureSize: true, Reply: func(st messages.PartitionStatusResult) { answers <- answer{tp, st} }})
	}
	out := make(map[metrics.TopicPartition]metrics.PartitionStats, len(v.Local))
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for range v.Local {
		select {
		case a := <-answers:
			if a.st.Leading {
				out[metrics.TopicPartition{Topic: a.tp.Topic, Partition: a.tp.Partition}] = metrics.PartitionStats{
					HighWatermark: a.st.HighWatermark, LogStartOffset: a.st.LogStartOffset, SizeBytes: a.st.Size}
			}
		case <-deadline.C:
			return out
		}
	}
	return out
}

// dataVolume measures the file system holding the data directory for the
// volume gauges; nil (no gauges) when partitions live in memory.
func dataVolume(dir string) func() (capacity, available int64) {
	if dir == "" {
		return nil
	}
	return func() (int64, int64) { return diskspace.Of(dir) }
}
