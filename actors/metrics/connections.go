package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The connection-limit series (max.connections, max.connections.per.ip,
// max.connection.creation.rate): connections refused for their address,
// closed to make room for the inter-broker listener, and the time a
// listener stopped accepting while the broker or the listener was at its
// limit or over its rate (Kafka's AcceptorBlockedPercent, as a total).
var (
	connectionsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "connections_refused_total",
		Help: "Connections closed unserved because their address already had max.connections.per.ip (or its override) open, by listener.",
	}, []string{"listener"})
	connectionsEvicted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "connections_evicted_total",
		Help: "Connections closed because the broker had more than max.connections open (inter-broker connections accepted past it, or the limit lowered), the least recently active first, by listener.",
	}, []string{"listener"})
	acceptBlockedSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "accept_blocked_seconds_total",
		Help: "Time a listener held an accepted connection and accepted no other because the broker or the listener was at its max.connections or over its max.connection.creation.rate, by listener.",
	}, []string{"listener"})
)

func init() { shared = append(shared, connectionsRefused, connectionsEvicted, acceptBlockedSeconds) }

// ConnectionRefused counts a connection refused for its address.
func ConnectionRefused(listener string) { connectionsRefused.WithLabelValues(listener).Inc() }

// ConnectionEvicted counts a connection closed over the broker's limit.
func ConnectionEvicted(listener string) { connectionsEvicted.WithLabelValues(listener).Inc() }

// AcceptBlocked adds d to the time listener stopped accepting.
func AcceptBlocked(listener string, d time.Duration) {
	acceptBlockedSeconds.WithLabelValues(listener).Add(d.Seconds())
}
