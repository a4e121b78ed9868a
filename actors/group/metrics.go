package group

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kaas-project/kaas/actors/metrics"
)

// stateGauges are the consumer-groups gauges by state, resolved once.
var stateGauges = func() []prometheus.Gauge {
	var g []prometheus.Gauge
	for s := Empty; s <= Reconciling; s++ {
		g = append(g, metrics.GroupState(s.String()))
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
