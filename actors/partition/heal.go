package partition

import (
	"time"

	"github.com/kaas-project/kaas/actors/actorsys"
)

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

// RetrySync is the timer after a failed group commit: the partition
// refuses produces while its storage is unhealthy, so nothing else would
// run the Sync whose success makes it healthy again.
type RetrySync struct{ Gen uint64 }

func (RetrySync) isEvent() {}

// syncRetryDelay spaces the Syncs of a partition whose last one failed.
const syncRetryDelay = 250 * time.Millisecond
