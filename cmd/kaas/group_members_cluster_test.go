package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterGroupMembershipSurvivesCoordinatorKill: a classic and a
// KIP-848 group, coordinated by one broker of three, keep their members
// and partitions when that broker is SIGKILLed: the brokers that take the
// groups over restore their saved membership from the shared volume, the
// consumers find it, heartbeat on in their generation or epoch, and read
// what is produced after the kill, with no rebalance. (franz-go's classic
// consumer may end its session on its own while the dead broker is still
// in the metadata; then the group keeps its members, checked by
// watchedGroup.unchanged.)
func TestClusterGroupMembershipSurvivesCoordinatorKill(t *testing.T) {
	const topic, parts = "members-kill", 6
	c := threeBrokers(t, []string{"--group-initial-rebalance-delay", "0s"}, topic)
	ctx := ctxFor(t, 240*time.Second)
	admCl := c.client()
	adm := kadm.NewClient(admCl)
	// Two groups with one coordinator.
	var coord int32 = -1
	waitUntil(t, 30*time.Second, "a coordinator for the classic group", func() bool {
		coord = findCoordinator(ctx, admCl, 0, "mk-classic")
		return coord >= 0
	})
	kip848 := keyCoordinatedBy(ctx, t, admCl, 0, "mk-848", coord)
	// franz-go (v1.22.3) sends a KIP-848 session's OffsetFetch to the
	// coordinator it cached and does not drop that entry when the dial
	// fails; the session then restarts at once, again and again, and never
	// heartbeats the new coordinator until the client's metadata stops
	// listing the dead broker (its next refresh, by default five minutes
	// on). A short metadata age bounds that loop well inside the session
	// timeout.
	client := func(opts ...kgo.Opt) *kgo.Client {
		return c.client(append(opts, kgo.MetadataMaxAge(3*time.Second))...)
	}
	groups := []*watchedGroup{
		watchGroup(t, "mk-classic", topic, parts, client, groupProtocols[0].opts),
		watchGroup(t, kip848, topic, parts, client, groupProtocols[2].opts),
	}
	produce := func(from, to int) {
		t.Helper()
		prod := c.client()
		for i := from; i < to; i++ {
			k := fmt.Sprint(i)
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(k)}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 60)
	var before []string
	for _, w := range groups {
		before = append(before, w.settle(t, adm, 60))
	}

	victim := fmt.Sprintf("kaas-%d", coord)
	t.Logf("killing %s, the coordinator of %s and %s", victim, groups[0].group, groups[1].group)
	c.brokers[victim].kill()
	// The dead broker's slots spread over the survivors: each group may
	// move to either.
	waitUntil(t, 60*time.Second, "each group coordinated by another broker", func() bool {
		for _, w := range groups {
			if n := findCoordinator(ctx, admCl, 0, w.group); n < 0 || n == coord {
				return false
			}
		}
		return true
	})
	produce(60, 120)
	// A new admin client: the first one's cached coordinator is the dead one.
	after := kadm.NewClient(c.client())
	for i, w := range groups {
		w.unchanged(t, after, before[i], 120)
	}
}
