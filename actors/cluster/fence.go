package cluster

import (
	"sync/atomic"
	"time"

	"github.com/kaas-project/kaas/actors/clock"
)

// Fence is a broker's self-fencing clock (invariant 1). A broker may accept
// writes and commits only while its last completed heartbeat exchange is
// younger than fence_after. The exchange is dated by when its ping was
// *sent*, so the broker always stops before the controller, which counts
// dead_after (> fence_after + margin) from when it *received* the ping, can
// give its partitions away. Only the monotonic clock is used.
type Fence struct {
	clk   clock.Clock
	start time.Time // monotonic origin
	after time.Duration
	last  atomic.Int64 // ns since start of the newest exchanged ping's send time; -1 = never
}

// NewFence returns a fence that is closed (fenced) until the first exchange.
func NewFence(after time.Duration) *Fence { return NewFenceOn(clock.Real(), after) }

// NewFenceOn is NewFence on clk.
func NewFenceOn(clk clock.Clock, after time.Duration) *Fence {
	f := &Fence{clk: clk, start: clk.Now(), after: after}
	f.last.Store(-1)
	return f
}

// Exchanged records a completed exchange for a ping sent at sentAt.
func (f *Fence) Exchanged(sentAt time.Time) {
	ns := int64(sentAt.Sub(f.start))
	for {
		cur := f.last.Load()
		if ns <= cur || f.last.CompareAndSwap(cur, ns) {
			return
		}
	}
}

// ExchangedSince reports whether an exchange completed for a ping sent at
// or after t (a drain waits for one carrying its last release).
func (f *Fence) ExchangedSince(t time.Time) bool {
	if f == nil {
		return true
	}
	last := f.last.Load()
	return last >= 0 && time.Duration(last) >= t.Sub(f.start)
}

// Fenced reports whether writes must be refused now. A nil Fence never
// fences (local-dev mode).
func (f *Fence) Fenced() bool {
	if f == nil {
		return false
	}
	last := f.last.Load()
	return last < 0 || f.clk.Since(f.start)-time.Duration(last) > f.after
}
