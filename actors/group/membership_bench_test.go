package group

import (
	"fmt"
	"testing"
)

// BenchmarkMembershipCheck is what the coordinator does after each message
// to a stable KIP-848 group of 1,000 members to learn whether its
// membership must be saved: compare the group's version (what it does) or
// encode the membership and compare bytes (the baseline, what a
// coordinator without the version would do).
func BenchmarkMembershipCheck(b *testing.B) {
	g := stableConsumerGroup(b, 1000)
	saved, _ := g.MembershipToSave()
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if now, _ := g.MembershipToSave(); len(now) != len(saved) {
				b.Fatal("the membership changed")
			}
		}
	})
	b.Run("version", func(b *testing.B) {
		v := g.MembershipVersion()
		for b.Loop() {
			if g.MembershipVersion() != v {
				b.Fatal("the membership changed")
			}
		}
	})
}

// BenchmarkTickStable is the deadline check a coordinator runs after each
// message to a stable KIP-848 group of 1,000 members, none due: Tick, and
// as the baseline the walks over every member that Tick skips when
// nothing is due.
func BenchmarkTickStable(b *testing.B) {
	g := stableConsumerGroup(b, 1000)
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			g.classicTick(t0)
			g.consumerTick(t0)
			g.shareTick(t0)
		}
	})
	b.Run("tick", func(b *testing.B) {
		for b.Loop() {
			g.Tick(t0)
		}
	})
}

// stableConsumerGroup is a KIP-848 group of n members over a topic of n
// partitions, heartbeaten until stable.
func stableConsumerGroup(b *testing.B, n int) *Group {
	g, _ := stableConsumerMembers(b, n, int32(n))
	return g
}

// stableConsumerMembers is a KIP-848 group of n members over a topic of
// parts partitions, heartbeaten until stable, and its members.
func stableConsumerMembers(b *testing.B, n int, parts int32) (*Group, []*cgm) {
	g := New("g", testConfig())
	topics := fakeTopics{"t": parts}
	var ms []*cgm
	for i := range n {
		m := newCGM(b, g, fmt.Sprint("m", i))
		m.topics = topics
		ms = append(ms, m)
	}
	for range 3 {
		for _, m := range ms {
			m.beat(t0)
		}
	}
	return g, ms
}
