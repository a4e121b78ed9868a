package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestClusterSeries records an assignment write, a heartbeat round trip and
// pings from two brokers, and checks the registry gathers them (ages
// growing with time, gone once the process stops being the controller)
// and that they lint clean.
func TestClusterSeries(t *testing.T) {
	r := NewRegistry(View{PartitionsLed: func() int { return 0 }, Topics: func() int { return 0 },
		ControllerEpoch: func() int64 { return 0 }, AssignmentVersion: func() int64 { return 0 }, DiskFsyncs: func() int64 { return 0 }})
	AssignmentWritten(0.02)
	HeartbeatRoundTrip(0.003)
	HeartbeatReceived("kaas-0", time.Now().Add(-3*time.Second))
	HeartbeatReceived("kaas-1", time.Now())
	t.Cleanup(ForgetHeartbeats)

	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ages := map[string]float64{}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "kaas_assignment_write_duration_seconds", "kaas_heartbeat_round_trip_seconds":
			if c := mf.GetMetric()[0].GetHistogram().GetSampleCount(); c < 1 {
				t.Errorf("%s counted %d observations", mf.GetName(), c)
			}
		case "kaas_heartbeat_age_seconds":
			for _, m := range mf.GetMetric() {
				ages[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
	}
	if ages["kaas-0"] < 3 || ages["kaas-0"] > 60 || ages["kaas-1"] > ages["kaas-0"] {
		t.Errorf("heartbeat ages %v: want kaas-0 about 3 s and kaas-1 younger", ages)
	}
	if problems, err := testutil.GatherAndLint(r); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
	ForgetHeartbeats()
	if n := testutil.CollectAndCount(heartbeatAges{}); n != 0 {
		t.Errorf("%d heartbeat ages after ForgetHeartbeats, want none", n)
	}
}
