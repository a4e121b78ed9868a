package metrics

import "github.com/prometheus/client_golang/prometheus"

var actorRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace, Name: "actor_restarts_total",
	Help: "Actor deaths the supervision tree handled, by kind of actor (partition, group, connection, controller, share) and reason (panic, stopped, gave_up).",
}, []string{"kind", "reason"})

func init() { shared = append(shared, actorRestarts) }

// ActorRestarted counts one death of an actor of kind handled by its parent.
func ActorRestarted(kind, reason string) { actorRestarts.WithLabelValues(kind, reason).Inc() }
