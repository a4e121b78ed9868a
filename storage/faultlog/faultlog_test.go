package faultlog

import (
	"errors"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/memlog"
)

func TestFsyncDelaysFailsAndExpires(t *testing.T) {
	now := time.Unix(0, 0)
	var slept time.Duration
	i := New(func() time.Time { return now }, func(d time.Duration) { slept += d })
	ran := 0
	real := func() error { ran++; return nil }
	if err := i.Fsync("d", real); err != nil || slept != 0 || ran != 1 {
		t.Fatalf("no faults: err %v, slept %s, real ran %d times", err, slept, ran)
	}
	i.Set(Faults{Delay: 50 * time.Millisecond, FailRate: 1}, time.Second)
	if err := i.Fsync("d", real); !errors.Is(err, ErrInjected) || slept != 50*time.Millisecond || ran != 1 {
		t.Fatalf("faults: err %v, slept %s, real ran %d times (a failed fsync must not run)", err, slept, ran)
	}
	realErr := errors.New("EIO")
	i.Set(Faults{Delay: 10 * time.Millisecond}, time.Second)
	if err := i.Fsync("d", func() error { return realErr }); err != realErr || slept != 60*time.Millisecond {
		t.Fatalf("a delayed fsync returns the real result: %v, slept %s", err, slept)
	}
	if i.Delayed.Load() != 2 || i.Failed.Load() != 1 {
		t.Errorf("counted %d delayed, %d failed", i.Delayed.Load(), i.Failed.Load())
	}
	now = now.Add(time.Second)
	if err := i.Fsync("d", real); err != nil || slept != 60*time.Millisecond || ran != 2 {
		t.Fatalf("after the faults' time: err %v, slept %s", err, slept)
	}
}

// TestWrapFailsSyncs: a log engine without an fsync seam fails its Syncs
// above it, reporting its durable offset unchanged.
func TestWrapFailsSyncs(t *testing.T) {
	i := New(nil, func(time.Duration) {})
	o := i.Wrap(memlog.NewOpener())
	l, err := o.Open(storage.PartitionID{Topic: "t", TopicID: "id"}, storage.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatalf("no faults: %v", err)
	}
	i.Set(Faults{FailRate: 1}, 0)
	if _, err := l.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("faults: %v", err)
	}
	i.Set(Faults{}, 0)
	if _, err := l.Sync(); err != nil {
		t.Fatalf("faults cleared: %v", err)
	}
}
