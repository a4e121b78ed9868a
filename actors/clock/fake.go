package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a virtual clock: time stands still until Advance or Set moves
// it, and then every timer that has come due fires, earliest first (in
// start order for equal deadlines), on the goroutine that moved the clock.
// Safe for concurrent use; a callback may start or stop timers.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*fakeTimer
}

// NewFake returns a virtual clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

type fakeTimer struct {
	c      *Fake
	at     time.Time
	seq    uint64
	f      func()
	period time.Duration // tickers
	ch     chan time.Time
}

// Now implements Clock.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since implements Clock.
func (c *Fake) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// AfterFunc implements Clock.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.add(&fakeTimer{c: c, at: c.now.Add(d), f: f})
}

// NewTicker implements Clock.
func (c *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive ticker period")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return fakeTicker{c.add(&fakeTimer{c: c, at: c.now.Add(d), period: d, ch: make(chan time.Time, 1)})}
}

type fakeTicker struct{ t *fakeTimer }

func (t fakeTicker) C() <-chan time.Time { return t.t.ch }
func (t fakeTicker) Stop()               { t.t.Stop() }

func (c *Fake) add(t *fakeTimer) *fakeTimer {
	c.seq++
	t.seq = c.seq
	c.timers = append(c.timers, t)
	return t
}

// Stop implements Timer.
func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Pending is the number of timers and tickers not yet fired or stopped.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves the clock d forward, firing what comes due on the way.
func (c *Fake) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never backwards), firing what comes due on the
// way, each with the clock reading its deadline.
func (c *Fake) Set(t time.Time) {
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool {
			a, b := c.timers[i], c.timers[j]
			if !a.at.Equal(b.at) {
				return a.at.Before(b.at)
			}
			return a.seq < b.seq
		})
		if len(c.timers) == 0 || c.timers[0].at.After(t) {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		next := c.timers[0]
		if next.at.After(c.now) {
			c.now = next.at
		}
		now := c.now
		if next.period > 0 {
			next.at = next.at.Add(next.period)
			c.seq++
			next.seq = c.seq
		} else {
			c.timers = c.timers[1:]
		}
		c.mu.Unlock()
		if next.ch != nil {
			select {
			case next.ch <- now:
			default:
			}
			continue
		}
		next.f()
	}
}
