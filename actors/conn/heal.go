package conn

import (
	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/metrics"
)

// connStrategy supervises connection actors: one that panics is stopped,
// and its Stopping handler closes its socket. Only that client reconnects;
// nothing else of the broker notices. Each Server keeps its own (protoactor
// keeps one guardian per strategy value).
func connStrategy(s *Server) *actorsys.StopOnFailure {
	log := s.cfg.Log
	return &actorsys.StopOnFailure{OnFailure: func(f actorsys.Failed) {
		metrics.ActorRestarted("connection", "panic")
		log.Warn().Str("actor", f.Child.Id).Interface("cause", f.Reason).Msg("connection actor panicked; closing its connection")
	}}
}
