package cluster

import (
	"sync"
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

// LeaseBacking dates the exchanges a controller's broker completes with its
// own hub. Its own pings are answered while its Lease renewal is fresh, but
// a ping is not evidence that the Lease is still held: cut off from the
// apiserver, the controller keeps answering itself. So an exchange with its
// own hub counts from no later than the start of the newest Lease write that
// succeeded: its broker fences --fence-after after its last renewal, and
// another broker can acquire the Lease only a lease duration after it (the
// configuration keeps fence-after below that).
type LeaseBacking struct {
	mu      sync.Mutex
	renewed time.Time      // start of the newest successful Lease write (monotonic)
	epochs  map[int64]bool // controller epochs this process has led
}

// Renewed records a successful Lease write started at startedAt.
func (b *LeaseBacking) Renewed(startedAt time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if startedAt.After(b.renewed) {
		b.renewed = startedAt
	}
}

// Leading records that this process runs the controller at epoch: PONGs
// naming it come from its own hub (an epoch has one holder identity, and
// identities are per process incarnation; a wrong match could only date an
// exchange earlier, which fences sooner).
func (b *LeaseBacking) Leading(epoch int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.epochs == nil {
		b.epochs = map[int64]bool{}
	}
	b.epochs[epoch] = true
}

// Date returns the time an exchange of a ping sent at sentAt, answered by a
// PONG at pongEpoch, counts from, and false when it counts for nothing.
func (b *LeaseBacking) Date(sentAt time.Time, pongEpoch int64) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return exchangeDate(sentAt, b.epochs[pongEpoch], b.renewed)
}

// exchangeDate: an exchange with another process's controller counts from
// its ping's send time; one with this process's own hub from no later than
// its last Lease renewal, and not at all before one.
func exchangeDate(sentAt time.Time, own bool, renewed time.Time) (time.Time, bool) {
	switch {
	case !own:
		return sentAt, true
	case renewed.IsZero():
		return time.Time{}, false
	case renewed.Before(sentAt):
		return renewed, true
	default:
		return sentAt, true
	}
}
