package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The client-quota series: how often and how long clients were throttled
// for exceeding their quota, by kind: produce and fetch (byte rates, a
// throttled answer), connection (connection_creation_rate of an ip, a
// connection closed unserved).
var (
	quotaThrottled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "quota_throttled_requests_total",
		Help: "Produce and Fetch requests answered with a throttle time because the client exceeded its byte-rate quota (kind produce, fetch), and connections closed unserved because their address exceeded its connection_creation_rate (kind connection).",
	}, []string{"kind"})
	quotaThrottleSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "quota_throttle_seconds_total",
		Help: "Time connections were muted for exceeding their byte-rate quota (kind produce, fetch), or held before being closed for exceeding their address's connection_creation_rate (kind connection).",
	}, []string{"kind"})
)

func init() { shared = append(shared, quotaThrottled, quotaThrottleSeconds) }

// QuotaThrottled counts one request of kind throttled for d.
func QuotaThrottled(kind string, d time.Duration) {
	quotaThrottled.WithLabelValues(kind).Inc()
	quotaThrottleSeconds.WithLabelValues(kind).Add(d.Seconds())
}
