package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterStreamsGroupSurvivesCoordinatorKill: three brokers, a streams
// application of two members on a six-partition topic; the group's
// coordinator is SIGKILLed. The group is taken over from the shared volume
// by another broker: both members heartbeat on at their epochs with their
// tasks (no rebalance), and every record produced before and after the kill
// is processed and committed (at least once: a task whose write or commit
// failed while the broker died starts again from its committed offset).
func TestClusterStreamsGroupSurvivesCoordinatorKill(t *testing.T) {
	const source = "streams-kill"
	c := threeBrokers(t, []string{"--group-streams-initial-rebalance-delay", "0s"}, source)
	ctx := ctxFor(t, 240*time.Second)
	admCl := c.client()
	var coord int32 = -1
	waitUntil(t, 30*time.Second, "a coordinator", func() bool {
		coord = findCoordinator(ctx, admCl, 0, "streams-kill-app-0")
		return coord >= 0
	})
	group := keyCoordinatedBy(ctx, t, admCl, 0, "streams-kill-app", coord)
	app := newStreamsAppOf(t, func(opts ...kgo.Opt) *kgo.Client { return c.client(opts...) }, group, source)
	app.tolerant = true
	a, b := app.member("a"), app.member("b")
	produce := func(from, to int) {
		t.Helper()
		prod := c.client()
		for i := from; i < to; i++ {
			k := fmt.Sprint(i)
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: source, Key: []byte(k), Value: []byte(k)}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 60)
	app.run(ctx, []*streamsMember{a, b}, func() bool {
		return len(a.owned) == 3 && len(b.owned) == 3 && a.epoch == b.epoch && app.count() == 60
	})
	epochA, epochB, ownedA, ownedB := a.epoch, b.epoch, slices.Clone(a.owned), slices.Clone(b.owned)

	victim := fmt.Sprintf("kaas-%d", coord)
	t.Logf("killing %s, the coordinator of %s", victim, group)
	c.brokers[victim].kill()
	waitUntil(t, 60*time.Second, "the group coordinated by another broker", func() bool {
		n := findCoordinator(ctx, admCl, 0, group)
		return n >= 0 && n != coord
	})
	produce(60, 120)
	app.run(ctx, []*streamsMember{a, b}, func() bool { return app.count() == 120 })
	if a.epoch != epochA || b.epoch != epochB || !slices.Equal(a.owned, ownedA) || !slices.Equal(b.owned, ownedB) {
		t.Fatalf("after the kill: epochs %d/%d tasks %v/%v, before %d/%d %v/%v",
			a.epoch, b.epoch, a.owned, b.owned, epochA, epochB, ownedA, ownedB)
	}
	for _, k := range keysUpTo(120) {
		if app.processed[k] == 0 {
			t.Fatalf("record %s never processed and committed", k)
		}
	}
}
