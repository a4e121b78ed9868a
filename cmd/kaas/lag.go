package main

import (
	"time"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// hwmScrapeTimeout bounds how long a scrape waits for the partitions this
// broker leads to report their high watermarks; the ones that have not
// answered by then (busy or stalled) are left out of that scrape.
const hwmScrapeTimeout = 250 * time.Millisecond

// committedOffsets is what the lag series read of the group coordinator.
func committedOffsets(b *broker) []metrics.CommittedOffset {
	if b.groups != nil {
		return b.groups.CommittedOffsets()
	}
	return nil
}

// ledHighWatermarks asks every partition led here for its high watermark
// and gathers the answers that arrive within timeout.
func ledHighWatermarks(v *routing.View, timeout time.Duration) map[metrics.TopicPartition]int64 {
	type answer struct {
		tp routing.TP
		st messages.PartitionStatusResult
	}
	answers := make(chan answer, len(v.Local)) // late answers never block
	for tp, ref := range v.Local {
		ref.Send(&messages.PartitionStatus{Reply: func(st messages.PartitionStatusResult) { answers <- answer{tp, st} }})
	}
	out := make(map[metrics.TopicPartition]int64, len(v.Local))
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for range v.Local {
		select {
		case a := <-answers:
			if a.st.Leading {
				out[metrics.TopicPartition{Topic: a.tp.Topic, Partition: a.tp.Partition}] = a.st.HighWatermark
			}
		case <-deadline.C:
			return out
		}
	}
	return out
}
