package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The controller's and the heartbeat's series.

var (
	assignmentWrite = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "assignment_write_duration_seconds",
		Help:    "Time the controller took to write one assignment file (Lease check, temporary file and its fsync, rename, directory fsync).",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	})
	heartbeatRTT = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "heartbeat_round_trip_seconds",
		Help:    "Time from a broker's heartbeat ping to the controller's pong answering it, seen by the broker.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	})
	heartbeatAgeDesc = prometheus.NewDesc(namespace+"_heartbeat_age_seconds",
		"Seconds since the controller last received a heartbeat ping from the broker (exported by the controller only).",
		[]string{"broker"}, nil)
)

// clusterSeries are this file's series, gathered by every registry.
var clusterSeries = []prometheus.Collector{assignmentWrite, heartbeatRTT, heartbeatAges{}}

// AssignmentWritten observes one assignment file write.
func AssignmentWritten(seconds float64) { assignmentWrite.Observe(seconds) }

// HeartbeatRoundTrip observes one ping-to-pong exchange.
func HeartbeatRoundTrip(seconds float64) { heartbeatRTT.Observe(seconds) }

var lastPings sync.Map // broker name → time.Time

// HeartbeatReceived notes a ping from broker (controller side).
func HeartbeatReceived(broker string, at time.Time) { lastPings.Store(broker, at) }

// ForgetHeartbeats drops every broker's age (this process stopped being the
// controller).
func ForgetHeartbeats() { lastPings.Clear() }

type heartbeatAges struct{}

func (heartbeatAges) Describe(ch chan<- *prometheus.Desc) { ch <- heartbeatAgeDesc }

func (heartbeatAges) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	lastPings.Range(func(k, v any) bool {
		ch <- prometheus.MustNewConstMetric(heartbeatAgeDesc, prometheus.GaugeValue, now.Sub(v.(time.Time)).Seconds(), k.(string))
		return true
	})
}
