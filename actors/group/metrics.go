package group

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// stateGauges are the consumer-groups gauges by state, resolved once.
var stateGauges = func() []prometheus.Gauge {
	var g []prometheus.Gauge
	for _, name := range stateNames {
		g = append(g, metrics.GroupState(name))
	}
	return g
}()

// trackState moves this group between the consumer-groups gauges: a group
// counts while it is loaded and exists. Each new generation counts one
// rebalance (a join can complete one without a visible PreparingRebalance).
func (a *groupActor) trackState(gone bool) {
	counted := !gone && a.phase == phaseReady && a.g.Exists()
	state, gen := a.g.State(), a.g.Generation()
	if counted && a.counted && gen > a.countedGen {
		metrics.Rebalance()
	}
	a.countedGen = gen
	a.publishOffsets(counted)
	if counted == a.counted && (!counted || state == a.countedState) {
		return
	}
	if a.counted {
		stateGauges[a.countedState].Dec()
	}
	if counted {
		stateGauges[state].Inc()
	}
	a.counted, a.countedState = counted, state
}

// publishedOffsets is one group actor's committed offsets, as published for
// the scrape-time lag series (never modified once published).
type publishedOffsets struct {
	offsets map[groupstore.TP]int64
}

// publishOffsets keeps this group's entry of the coordinator's offsets
// board current: a copy whenever the committed offsets changed while the
// group counts (loaded, existing, not released), and no entry otherwise.
// Each entry is this actor's own pointer, so an incarnation that follows
// (a restart, a regain) never loses its entry to this one's withdrawal.
func (a *groupActor) publishOffsets(counted bool) {
	if a.opts == nil || a.opts.offsets == nil {
		return
	}
	board := a.opts.offsets
	if !counted {
		if a.published != nil {
			board.CompareAndDelete(a.id, a.published)
			a.published = nil
		}
		return
	}
	if a.published != nil && a.publishedVersion == a.g.OffsetsVersion() {
		return
	}
	p := &publishedOffsets{offsets: a.g.CommittedOffsets()}
	board.Store(a.id, p)
	a.published, a.publishedVersion = p, a.g.OffsetsVersion()
}

// CommittedOffsets lists the committed offsets of every group this broker
// coordinates, sorted by group, topic and partition (scrape time: it reads
// what the group actors published, never the actors themselves).
func (c *Coordinator) CommittedOffsets() []metrics.CommittedOffset {
	var out []metrics.CommittedOffset
	c.offsets.Range(func(k, v any) bool {
		for tp, off := range v.(*publishedOffsets).offsets {
			out = append(out, metrics.CommittedOffset{Group: k.(string), Topic: tp.Topic, Partition: tp.Partition, Offset: off})
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Group != y.Group {
			return x.Group < y.Group
		}
		if x.Topic != y.Topic {
			return x.Topic < y.Topic
		}
		return x.Partition < y.Partition
	})
	return out
}
