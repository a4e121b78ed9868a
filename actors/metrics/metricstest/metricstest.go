// Package metricstest reads kaas's shared Prometheus series in tests.
package metricstest

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/kaas-project/kaas/actors/metrics"
)

// Value is the value of the shared series name{labels...} (labels as
// name, value pairs; a histogram's sample count) and, for a histogram, its
// sample sum. A series not yet recorded reads 0.
func Value(t testing.TB, name string, labels ...string) (value, sum float64) {
	t.Helper()
	zero := func() int { return 0 }
	zero64 := func() int64 { return 0 }
	r := metrics.NewRegistry(metrics.View{PartitionsLed: zero, Topics: zero, ControllerEpoch: zero64, AssignmentVersion: zero64, DiskFsyncs: zero64})
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), 0
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), 0
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()
			}
		}
	}
	return 0, 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}
