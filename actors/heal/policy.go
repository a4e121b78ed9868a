// Package heal holds the restart decisions of kaas's supervision tree as
// plain data over virtual time: how long a parent waits before it respawns
// a child that died, and when it stops trying. The actors that own children
// (the supervisor, the group manager, the connection guardian) are shells
// around it.
package heal

import "time"

// Policy bounds the restarts of one kind of actor.
type Policy struct {
	// Initial is the delay before the second restart within Window (the
	// first is immediate); each further one doubles it, up to Max.
	Initial, Max time.Duration
	// Window is how long a restart counts against the child: a child that
	// ran Window without dying starts again from an immediate restart.
	Window time.Duration
	// GiveUpAfter > 0: once that many restarts fell within Window, the
	// next death is not restarted (the parent escalates instead).
	GiveUpAfter int
}

// Decision is what to do about one death.
type Decision struct {
	Restart bool
	Delay   time.Duration
	// Recent is the number of restarts of the same child within Window
	// before this one.
	Recent int
}

// Tracker remembers the recent restarts of each child, by key (a
// partition, a group, the controller).
type Tracker struct {
	policy Policy
	recent map[string][]time.Time
}

// NewTracker returns a tracker applying p.
func NewTracker(p Policy) *Tracker {
	return &Tracker{policy: p, recent: map[string][]time.Time{}}
}

// Died records that the child key died at now and decides its restart.
func (t *Tracker) Died(key string, now time.Time) Decision {
	kept := t.recent[key][:0]
	for _, at := range t.recent[key] {
		if now.Sub(at) < t.policy.Window {
			kept = append(kept, at)
		}
	}
	n := len(kept)
	if t.policy.GiveUpAfter > 0 && n >= t.policy.GiveUpAfter {
		t.recent[key] = kept
		return Decision{Recent: n}
	}
	t.recent[key] = append(kept, now)
	return Decision{Restart: true, Delay: t.policy.delay(n), Recent: n}
}

// Forget drops the history of key (the child is gone for good).
func (t *Tracker) Forget(key string) { delete(t.recent, key) }

func (p Policy) delay(n int) time.Duration {
	if n == 0 || p.Initial <= 0 {
		return 0
	}
	d := p.Initial
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Policies of the supervision tree, by kind of actor (docs/operations.md,
// "How kaas heals").
var (
	// Partitions and groups are respawned forever: the broker still
	// leads them. Backoff bounds a storm (a partition that panics on
	// every open).
	Partitions = Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Window: time.Minute}
	Groups     = Partitions
	// A controller that keeps dying is given up: the process exits, its
	// Lease expires and another broker takes the controller over.
	Controllers = Policy{Initial: 200 * time.Millisecond, Max: 5 * time.Second, Window: time.Minute, GiveUpAfter: 5}
)
