// Package faultlog injects slow and failing fsyncs, as a stalling or
// failing volume would give them. It backs the chaos harness
// (--debug-chaos). On the disk log engine it drives disklog's own fsync
// seam (Injector.Fsync as a disklog.FsyncHook), so a failure takes the real
// group-commit path: the fdatasync is not run, disklog refuses the log's
// further writes and the partition actor stops and is reopened. A log
// engine without fsyncs (memlog) is wrapped instead (Injector.Wrap): its
// Syncs fail above it.
package faultlog

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kaas-project/kaas/storage"
)

// Faults is what the next fsyncs suffer. Zero: none.
type Faults struct {
	// Delay is added before each fsync runs.
	Delay time.Duration
	// FailRate in [0, 1] is the share of fsyncs that fail (the real call
	// is not run: nothing new becomes durable, as with a failed fsync).
	FailRate float64
}

// ErrInjected is the error of an injected fsync failure.
var ErrInjected = errors.New("faultlog: injected fsync failure")

// Injector holds the Faults in force and applies them.
type Injector struct {
	mu     sync.Mutex
	faults Faults
	until  time.Time
	now    func() time.Time
	sleep  func(time.Duration)
	// Counts of fsyncs delayed and failed.
	Delayed, Failed atomic.Int64
}

// New returns an injector without faults. now and sleep are the clock
// (time.Now, time.Sleep when nil).
func New(now func() time.Time, sleep func(time.Duration)) *Injector {
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = time.Sleep
	}
	return &Injector{now: now, sleep: sleep}
}

// Set makes the next fsyncs suffer f until d has passed (d <= 0: until the
// next Set).
func (i *Injector) Set(f Faults, d time.Duration) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.faults, i.until = f, time.Time{}
	if d > 0 {
		i.until = i.now().Add(d)
	}
}

// current returns the faults in force.
func (i *Injector) current() Faults {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.until.IsZero() && !i.now().Before(i.until) {
		i.faults, i.until = Faults{}, time.Time{}
	}
	return i.faults
}

// inject delays as the faults say and reports whether this call fails.
func (i *Injector) inject() bool {
	f := i.current()
	if f.Delay > 0 {
		i.Delayed.Add(1)
		i.sleep(f.Delay)
	}
	if f.FailRate > 0 && rand.Float64() < f.FailRate {
		i.Failed.Add(1)
		return true
	}
	return false
}

// Fsync is a disklog.FsyncHook: it delays real, or fails without running it.
func (i *Injector) Fsync(_ string, real func() error) error {
	if i.inject() {
		return ErrInjected
	}
	return real()
}

// Wrap returns o with every log's Sync suffering the faults, for a log
// engine that has no fsync seam of its own.
func (i *Injector) Wrap(o storage.Opener) storage.Opener { return &opener{Opener: o, i: i} }

type opener struct {
	storage.Opener
	i *Injector
}

// Open implements storage.Opener.
func (o *opener) Open(id storage.PartitionID, cfg storage.LogConfig) (storage.Log, error) {
	l, err := o.Opener.Open(id, cfg)
	if err != nil {
		return nil, err
	}
	return &faultyLog{Log: l, i: o.i}, nil
}

// faultyLog is a storage.Log whose Sync suffers the faults.
type faultyLog struct {
	storage.Log
	i *Injector
}

// Sync implements storage.Log.
func (l *faultyLog) Sync() (int64, error) {
	if l.i.inject() {
		return l.Log.Durable(), ErrInjected
	}
	return l.Log.Sync()
}
