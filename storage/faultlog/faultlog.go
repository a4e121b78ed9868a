// Package faultlog wraps a storage.Opener so that the logs it opens have
// slow and failing Syncs, as a stalling or failing volume would give them.
// It backs the chaos harness (--debug-chaos): the partition actors see
// exactly the storage interface they use in production, with faults behind
// it.
package faultlog

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kaas-project/kaas/storage"
)

// Faults is what the next Syncs suffer. Zero: none.
type Faults struct {
	// Delay is added before each Sync runs.
	Delay time.Duration
	// FailRate in [0, 1] is the share of Syncs that fail (the real Sync is
	// not run: nothing new becomes durable, as with a failed fsync).
	FailRate float64
}

// ErrInjected is the error of an injected Sync failure.
var ErrInjected = errors.New("faultlog: injected fsync failure")

// Opener is a storage.Opener whose logs suffer the Faults set.
type Opener struct {
	storage.Opener
	mu     sync.Mutex
	faults Faults
	until  time.Time
	now    func() time.Time
	sleep  func(time.Duration)
	// Counts of Syncs delayed and failed.
	Delayed, Failed atomic.Int64
}

// New wraps o. now and sleep are the clock (time.Now, time.Sleep when nil).
func New(o storage.Opener, now func() time.Time, sleep func(time.Duration)) *Opener {
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = time.Sleep
	}
	return &Opener{Opener: o, now: now, sleep: sleep}
}

// Set makes the next Syncs suffer f until for has passed (for <= 0: until
// the next Set).
func (o *Opener) Set(f Faults, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.faults, o.until = f, time.Time{}
	if d > 0 {
		o.until = o.now().Add(d)
	}
}

// current returns the faults in force.
func (o *Opener) current() Faults {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.until.IsZero() && !o.now().Before(o.until) {
		o.faults, o.until = Faults{}, time.Time{}
	}
	return o.faults
}

// Open implements storage.Opener.
func (o *Opener) Open(id storage.PartitionID, cfg storage.LogConfig) (storage.Log, error) {
	l, err := o.Opener.Open(id, cfg)
	if err != nil {
		return nil, err
	}
	return &faultyLog{Log: l, o: o}, nil
}

// faultyLog is a storage.Log whose Sync suffers the Opener's faults.
type faultyLog struct {
	storage.Log
	o *Opener
}

// Sync implements storage.Log.
func (l *faultyLog) Sync() (int64, error) {
	f := l.o.current()
	if f.Delay > 0 {
		l.o.Delayed.Add(1)
		l.o.sleep(f.Delay)
	}
	if f.FailRate > 0 && rand.Float64() < f.FailRate {
		l.o.Failed.Add(1)
		return l.Log.Durable(), ErrInjected
	}
	return l.Log.Sync()
}

// Partitions lists the wrapped Opener's partitions, when it can (the
// controller's stray-directory check asks for them).
func (o *Opener) Partitions() ([]storage.PartitionID, error) {
	if l, ok := o.Opener.(interface {
		Partitions() ([]storage.PartitionID, error)
	}); ok {
		return l.Partitions()
	}
	return nil, nil
}
