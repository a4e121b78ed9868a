package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/txnlog"
)

// A coordinator whose transactional id another one loaded from a later
// assignment file (it stalled past dead-after) acknowledges no transition
// after that and gives the id up; loading it again is refused while its
// broker follows an older file than the claim, and a load from a later file
// reads the other coordinator's state.
func TestCoordinatorClaim(t *testing.T) {
	dir := t.TempDir()
	claimed := func() *txnlog.File {
		st, err := txnlog.NewFile(dir)
		if err != nil {
			t.Fatal(err)
		}
		st.Claims = true
		return st
	}
	views := &routing.Store{}
	publish := func(version int64) {
		views.Publish(&routing.View{Self: 0, Brokers: []routing.Broker{{ID: 0, Host: "h", Port: 1, Alive: true}}, Epoch: 3, Version: version})
	}
	publish(10)
	sys := actorsys.NewSystem()
	c, err := Start(sys, "txn", Options{Views: views, Store: claimed(), Clock: clock.NewFake(time.Unix(1_700_000_000, 0))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Shutdown)
	ask := func(ev func(reply func(Result)) any) Result {
		t.Helper()
		ch := make(chan Result, 1)
		c.ref.Send(&call{id: "x", ev: ev(func(r Result) { ch <- r })})
		select {
		case r := <-ch:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("no reply")
		}
		return Result{}
	}
	add := func(epoch int16) Result {
		return ask(func(reply func(Result)) any {
			return AddPartitions{ID: "x", ProducerID: 100, Epoch: epoch, Partitions: []TP{{Topic: "t", Partition: 0}}, Reply: reply}
		})
	}
	if r := ask(func(reply func(Result)) any {
		return InitProducerID{ID: "x", TimeoutMs: 60_000, ProducerID: -1, Epoch: -1, NewPID: 100, Reply: reply}
	}); r.ErrorCode != 0 || r.ProducerID != 100 {
		t.Fatalf("init: %+v", r)
	}

	// The next coordinator loads the id from file 3.20 and bumps the
	// producer's epoch.
	next := claimed()
	st, ok, err := next.LoadAt("x", assignment.Position{Epoch: 3, Version: 20})
	if err != nil || !ok || st.ProducerID != 100 {
		t.Fatalf("next coordinator's load: %+v %v %v", st, ok, err)
	}
	st.Epoch = 1
	if err := next.Save(st); err != nil {
		t.Fatal(err)
	}

	if r := add(0); r.ErrorCode == 0 {
		t.Fatal("the superseded coordinator acknowledged a transition")
	}
	if r := add(0); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("a request while this broker's view is older than the claim: %v, want COORDINATOR_LOAD_IN_PROGRESS", kerr.ErrorForCode(r.ErrorCode))
	}
	// The id comes back to this broker in a later file: the load claims it
	// and reads the other coordinator's epoch, which fences epoch 0.
	publish(30)
	if r := add(0); r.ErrorCode != kerr.ProducerFenced.Code && r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("epoch 0 after the reload: %v, want it fenced by the other coordinator's epoch 1", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := add(1); r.ErrorCode != 0 {
		t.Fatalf("epoch 1 after the reload: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if _, _, err := next.LoadAt("x", assignment.Position{Epoch: 3, Version: 20}); err == nil {
		t.Fatal("the superseded store loaded the id again")
	}
}
