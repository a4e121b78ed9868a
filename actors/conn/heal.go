package conn

import (
	"sync"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/metrics"
)

// connStrategy supervises connection actors: one that panics is stopped,
// and its Stopping handler closes its socket. Only that client reconnects;
// nothing else of the broker notices.
func connStrategy(s *Server) *actorsys.StopOnFailure {
	if g, ok := connGuards.Load(s); ok {
		return g.(*actorsys.StopOnFailure)
	}
	log := s.cfg.Log
	g, _ := connGuards.LoadOrStore(s, &actorsys.StopOnFailure{OnFailure: func(f actorsys.Failed) {
		metrics.ActorRestarted("connection", "panic")
		log.Warn().Str("actor", f.Child.Id).Interface("cause", f.Reason).Msg("connection actor panicked; closing its connection")
	}})
	return g.(*actorsys.StopOnFailure)
}

// connGuards holds each Server's strategy: protoactor keeps one guardian
// per strategy value.
var connGuards sync.Map
