package compaction

import (
	"sync"
	"time"
)

// Throttle paces the cleaners' I/O to a byte rate shared by every cleaner
// that holds it (the broker's --cleaner-io-rate): each Wait reserves its
// bytes on one timeline and sleeps until its turn.
type Throttle struct {
	now   func() time.Time
	sleep func(time.Duration)

	mu   sync.Mutex
	rate float64 // bytes per second; <= 0: unthrottled
	next time.Time
}

// NewThrottle returns a throttle of rate bytes per second (<= 0: none).
// now and sleep are the clock (nil: the wall clock).
func NewThrottle(rate int64, now func() time.Time, sleep func(time.Duration)) *Throttle {
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = time.Sleep
	}
	return &Throttle{rate: float64(rate), now: now, sleep: sleep}
}

// SetRate changes the rate to rate bytes per second (<= 0: none) for
// every Wait from now on (a dynamic log.cleaner.io.max.bytes.per.second).
func (t *Throttle) SetRate(rate int64) {
	t.mu.Lock()
	t.rate = float64(rate)
	t.mu.Unlock()
}

// Wait blocks until n more bytes fit the rate.
func (t *Throttle) Wait(n int64) {
	if t == nil || n <= 0 {
		return
	}
	t.mu.Lock()
	if t.rate <= 0 {
		t.mu.Unlock()
		return
	}
	now := t.now()
	at := t.next
	if at.Before(now) {
		at = now
	}
	t.next = at.Add(time.Duration(float64(n) / t.rate * float64(time.Second)))
	t.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		t.sleep(d)
	}
}
