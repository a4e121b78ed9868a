package partition

import "github.com/kaas-project/kaas/actors/actorsys"

// Abandon answers requests the actor will never serve (queued while its
// log opened, when it stopped) with their retriable error
// (actorsys.Undeliverable): a connection waiting for them would otherwise
// stall every response behind them.
type Abandon struct{ Msgs []any }

func (Abandon) isEffect() {}

func abandon(msgs []any) {
	for _, m := range msgs {
		if u, ok := m.(actorsys.Undeliverable); ok {
			u.Undelivered()
		}
	}
}

// StopSelf stops the actor: its group commit failed, and the disk log
// acknowledges nothing more until it is reopened (the kernel may have
// dropped the dirty pages). The supervisor spawns a new incarnation, which
// reopens and recovers the log, as a leadership move does.
type StopSelf struct{ Reason string }

func (StopSelf) isEffect() {}
