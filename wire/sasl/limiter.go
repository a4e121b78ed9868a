package sasl

import (
	"sync"
	"time"
)

// Limiter counts failed authentications per client address: an address
// with MaxFailures failures within Window is refused without checking its
// credentials until the oldest of them leaves the window (a password-guessing
// flood costs one map lookup per attempt, and other clients are unaffected).
type Limiter struct {
	MaxFailures int
	Window      time.Duration

	mu       sync.Mutex
	failures map[string][]time.Time
}

// NewLimiter returns a limiter allowing max failures per window per address.
func NewLimiter(max int, window time.Duration) *Limiter {
	return &Limiter{MaxFailures: max, Window: window, failures: map[string][]time.Time{}}
}

func (l *Limiter) recent(host string, now time.Time) []time.Time {
	fs := l.failures[host]
	i := 0
	for i < len(fs) && now.Sub(fs[i]) >= l.Window {
		i++
	}
	fs = fs[i:]
	if len(fs) == 0 {
		delete(l.failures, host)
		return nil
	}
	l.failures[host] = fs
	return fs
}

// Allow reports whether host may try to authenticate now.
func (l *Limiter) Allow(host string, now time.Time) bool {
	if l == nil || l.MaxFailures <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recent(host, now)) < l.MaxFailures
}

// Fail records a failed authentication from host.
func (l *Limiter) Fail(host string, now time.Time) {
	if l == nil || l.MaxFailures <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fs := l.recent(host, now)
	if len(fs) >= l.MaxFailures {
		return
	}
	l.failures[host] = append(fs, now)
	if len(l.failures) > 100000 {
		// Bound the memory a spray of addresses can take.
		for h := range l.failures {
			delete(l.failures, h)
			break
		}
	}
}
