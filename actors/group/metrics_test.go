package group

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kaas-project/kaas/actors/metrics/metricstest"
)

// TestTrackStateCountsGroupsAndRebalances: a loaded group that exists counts
// in its state's gauge, each new generation counts a rebalance, and a group
// that stops leaves the gauges.
func TestTrackStateCountsGroupsAndRebalances(t *testing.T) {
	value := func(s State) float64 { return testutil.ToFloat64(stateGauges[s]) }
	empty0, stable0, preparing0 := value(Empty), value(Stable), value(PreparingRebalance)

	a := &groupActor{phase: phaseLoading, g: New("g", testConfig())}
	a.trackState(false)
	a.phase = phaseReady
	a.trackState(false)
	if value(Empty) != empty0 {
		t.Fatal("a group that does not exist is counted")
	}
	// Loaded with a generation from the store: counted, not a rebalance.
	a.g.kind, a.g.state, a.g.generation = KindClassic, Stable, 4
	a.trackState(false)
	if value(Stable) != stable0+1 {
		t.Fatalf("Stable gauge %v, want %v", value(Stable), stable0+1)
	}
	a.g.state = PreparingRebalance
	a.trackState(false)
	// A streams group waiting for its topics counts as NotReady.
	notReady0 := value(NotReady)
	a.g.state = NotReady
	a.trackState(false)
	if value(NotReady) != notReady0+1 || value(PreparingRebalance) != preparing0 {
		t.Fatalf("NotReady %v PreparingRebalance %v after the move", value(NotReady), value(PreparingRebalance))
	}
	a.g.state = PreparingRebalance
	a.trackState(false)
	if value(Stable) != stable0 || value(PreparingRebalance) != preparing0+1 {
		t.Fatalf("Stable %v PreparingRebalance %v after the move", value(Stable), value(PreparingRebalance))
	}

	rebalances := func() float64 {
		v, _ := metricstest.Value(t, "kaas_consumer_group_rebalances_total")
		return v
	}
	before := rebalances()
	a.g.state, a.g.generation = Stable, 5
	a.trackState(false)
	if got := rebalances(); got != before+1 {
		t.Fatalf("rebalances %v after a new generation, want %v", got, before+1)
	}
	a.trackState(false)
	if got := rebalances(); got != before+1 {
		t.Fatalf("rebalances %v without a new generation, want %v", got, before+1)
	}

	a.trackState(true)
	if value(Stable) != stable0 || value(PreparingRebalance) != preparing0 || value(Empty) != empty0 {
		t.Fatal("a stopped group is still counted")
	}
}
