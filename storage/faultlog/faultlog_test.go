package faultlog

import (
	"errors"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/memlog"
)

func TestFaultsDelayFailAndExpire(t *testing.T) {
	now := time.Unix(0, 0)
	var slept time.Duration
	o := New(memlog.NewOpener(), func() time.Time { return now }, func(d time.Duration) { slept += d })
	l, err := o.Open(storage.PartitionID{Topic: "t", TopicID: "id"}, storage.LogConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Sync(); err != nil || slept != 0 {
		t.Fatalf("no faults: err %v, slept %s", err, slept)
	}
	o.Set(Faults{Delay: 50 * time.Millisecond, FailRate: 1}, time.Second)
	if _, err := l.Sync(); !errors.Is(err, ErrInjected) || slept != 50*time.Millisecond {
		t.Fatalf("faults: err %v, slept %s", err, slept)
	}
	if o.Delayed.Load() != 1 || o.Failed.Load() != 1 {
		t.Errorf("counted %d delayed, %d failed", o.Delayed.Load(), o.Failed.Load())
	}
	now = now.Add(time.Second)
	if _, err := l.Sync(); err != nil || slept != 50*time.Millisecond {
		t.Fatalf("after the faults' time: err %v, slept %s", err, slept)
	}
}
