// Package clock is the one source of time for actors: the current time,
// one-shot timers and tickers. Real uses the time package; Fake is a
// virtual clock that tests advance by hand, firing due timers in deadline
// order on the caller's goroutine, so a test of timeouts needs no sleep.
package clock

import "time"

// Clock tells the time and starts timers.
type Clock interface {
	// Now is the current time (with a monotonic reading for Real).
	Now() time.Time
	// Since is Now().Sub(t).
	Since(t time.Time) time.Duration
	// AfterFunc calls f once d has passed (on its own goroutine for Real,
	// inside Advance for Fake). f must not block.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTicker sends the time on its channel every d; a slow reader
	// misses ticks rather than queueing them, as time.Ticker does.
	NewTicker(d time.Duration) Ticker
}

// Timer is a timer started by AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened yet, and reports
	// whether it did.
	Stop() bool
}

// Ticker is a ticker started by NewTicker.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the wall clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) Since(t time.Time) time.Duration { return time.Since(t) }
func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, f)
}
func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }

// OrReal is c, or Real when c is nil (for optional Config fields).
func OrReal(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}
