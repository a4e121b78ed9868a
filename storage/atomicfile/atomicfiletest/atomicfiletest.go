// Package atomicfiletest helps test the stores built on atomicfile.Update.
package atomicfiletest

import (
	"sync"
	"testing"
)

// Brokers runs update for rounds rounds in each of brokers goroutines at
// once, as brokers sharing a volume change one file at the same time (each
// goroutine should use a store of its own), and fails t with every error.
func Brokers(t testing.TB, brokers, rounds int, update func(broker, round int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, brokers*rounds)
	for b := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if err := update(b, r); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
}
