package controller

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/actors/runtime"
	"github.com/kaas-project/kaas/storage/assignment"
)

// TestControllerWritesAndReassertsItsFile: a controller writes its epoch's
// assignment, and when a lower epoch's file replaces it on the volume (a
// deposed controller's late write), it puts its own back.
func TestControllerWritesAndReassertsItsFile(t *testing.T) {
	dir := t.TempDir()
	sys := runtime.NewSystem()
	t.Cleanup(sys.Shutdown)
	hub := NewHub()
	ref, err := sys.Spawn("controller", New(Config{
		Self: "kaas-0", SelfHost: "127.0.0.1", SelfPort: 9092, HeartbeatAddr: "127.0.0.1:9094",
		Epoch: 5, DataDir: dir, DeadAfter: time.Second, Tick: 20 * time.Millisecond, Hub: hub, Log: zerolog.Nop(),
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	ref.Send(&TopicsChanged{Topics: map[string]balancer.TopicSpec{"t": {ID: "id-1", Partitions: 3, Config: map[string]string{}}}})
	path := assignment.Path(dir)
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var mine *assignment.Assignment
	wait("controller writes epoch 5 with the topic", func() bool {
		a, err := assignment.ReadFile(path)
		if err != nil || a.ControllerEpoch != 5 || len(a.Topics["t"].Partitions) != 3 {
			return false
		}
		mine = a
		return true
	})
	for _, p := range mine.Topics["t"].Partitions {
		if p.Leader != 0 {
			t.Fatalf("partition led by %d, want the controller's broker 0", p.Leader)
		}
	}
	stale := *mine
	stale.ControllerEpoch, stale.AssignmentVersion = 3, 99
	if err := assignment.WriteFile(dir, &stale); err != nil {
		t.Fatal(err)
	}
	wait("controller re-asserts its epoch", func() bool {
		e, _, err := assignment.ReadHeader(path)
		return err == nil && e == 5
	})
}
