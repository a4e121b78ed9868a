package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkStableHeartbeat is one member's heartbeat to a stable group of
// 100 members over a 1,000-partition topic: a KIP-848 consumer group (the
// baseline) and a streams group (1,000 tasks), each heartbeat reporting
// nothing new, as members do between rebalances.
func BenchmarkStableHeartbeat(b *testing.B) {
	const members, parts = 100, 1000
	b.Run("consumer", func(b *testing.B) {
		g, ms := stableConsumerMembers(b, members, parts)
		topics := fakeTopics{"t": parts}
		reqs := make([]*kmsg.ConsumerGroupHeartbeatRequest, members)
		for i, m := range ms {
			r := m.req(m.epoch)
			r.Topics, r.SubscribedTopicNames, r.RebalanceTimeoutMillis = nil, nil, -1
			reqs[i] = r
		}
		i := 0
		for b.Loop() {
			if r := g.ConsumerHeartbeat(t0, client, reqs[i%members], topics); r.ErrorCode != 0 || r.Assignment != nil {
				b.Fatalf("heartbeat: %s, assignment %v", code(r.ErrorCode), r.Assignment)
			}
			i++
		}
	})
	b.Run("streams", func(b *testing.B) {
		g, reqs := stableStreamsGroup(b, members, parts)
		topics := fakeTopics{"t": parts, "app-counts-changelog": parts}
		i := 0
		for b.Loop() {
			if r := g.StreamsHeartbeat(t0, client, reqs[i%members], topics); r.Response.ErrorCode != 0 || r.Response.ActiveTasks != nil {
				b.Fatalf("heartbeat: %s, tasks %v", code(r.Response.ErrorCode), r.Response.ActiveTasks)
			}
			i++
		}
	})
}

// stableStreamsGroup is a streams group of n members over a topic of parts
// partitions (and its changelog), heartbeaten until stable, and each
// member's next heartbeat reporting nothing new.
func stableStreamsGroup(b *testing.B, n int, parts int32) (*Group, []*kmsg.StreamsGroupHeartbeatRequest) {
	cfg := testConfig()
	cfg.Streams.InitialRebalanceDelay = -1
	g := New("g", cfg)
	topics := fakeTopics{"t": parts, "app-counts-changelog": parts}
	epochs := make([]int32, n)
	owned := make([][]int32, n)
	id := func(i int) string { return fmt.Sprint("m", i) }
	for i := range n {
		join := streamsJoin(id(i))
		cl := kmsg.NewTopicInfo()
		cl.Topic = "app-counts-changelog"
		join.Topology.Subtopologies[0].StateChangelogTopics = []kmsg.TopicInfo{cl}
		r := g.StreamsHeartbeat(t0, client, join, topics)
		if r.Response.ErrorCode != 0 {
			b.Fatalf("join: %s", code(r.Response.ErrorCode))
		}
		epochs[i] = r.Response.MemberEpoch
	}
	for range 4 {
		for i := range n {
			r := g.StreamsHeartbeat(t0, client, streamsBeat(id(i), epochs[i], owned[i]...), topics)
			if r.Response.ErrorCode != 0 {
				b.Fatalf("heartbeat: %s", code(r.Response.ErrorCode))
			}
			epochs[i] = r.Response.MemberEpoch
			if r.Response.ActiveTasks != nil {
				owned[i] = nil
				for _, ti := range r.Response.ActiveTasks {
					owned[i] = append(owned[i], ti.Partitions...)
				}
			}
		}
	}
	if g.State() != Stable {
		b.Fatalf("streams group %v after the rounds", g.State())
	}
	reqs := make([]*kmsg.StreamsGroupHeartbeatRequest, n)
	for i := range n {
		r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "g", id(i), epochs[i], -1
		reqs[i] = r
	}
	return g, reqs
}

// BenchmarkJoinAndLeave is a 101st member joining a stable group of 100
// members over a 1,000-partition topic, then leaving: the target
// assignment computed twice (the joiner's heartbeat, the next heartbeat
// after the leave). A KIP-848 consumer group with the uniform assignor is
// the baseline; the streams group runs the sticky task assignor.
func BenchmarkJoinAndLeave(b *testing.B) {
	const members, parts = 100, 1000
	b.Run("consumer", func(b *testing.B) {
		g, ms := stableConsumerMembers(b, members, parts)
		topics := fakeTopics{"t": parts}
		x := newCGM(b, g, "x")
		x.topics = topics
		for b.Loop() {
			x.epoch, x.owned = 0, map[string][]int32{}
			if r := x.beat(t0); r.ErrorCode != 0 {
				b.Fatalf("join: %s", code(r.ErrorCode))
			}
			if r := x.g.ConsumerHeartbeat(t0, client, x.req(-1), topics); r.ErrorCode != 0 {
				b.Fatalf("leave: %s", code(r.ErrorCode))
			}
			if r := ms[0].beat(t0); r.ErrorCode != 0 {
				b.Fatalf("heartbeat: %s", code(r.ErrorCode))
			}
		}
	})
	b.Run("streams", func(b *testing.B) {
		g, reqs := stableStreamsGroup(b, members, parts)
		topics := fakeTopics{"t": parts, "app-counts-changelog": parts}
		join := streamsJoin("x")
		cl := kmsg.NewTopicInfo()
		cl.Topic = "app-counts-changelog"
		join.Topology.Subtopologies[0].StateChangelogTopics = []kmsg.TopicInfo{cl}
		leave := streamsBeat("x", -1)
		leave.ActiveTasks, leave.StandbyTasks, leave.WarmupTasks = nil, nil, nil
		for b.Loop() {
			if r := g.StreamsHeartbeat(t0, client, join, topics); r.Response.ErrorCode != 0 {
				b.Fatalf("join: %s", code(r.Response.ErrorCode))
			}
			if r := g.StreamsHeartbeat(t0, client, leave, topics); r.Response.ErrorCode != 0 {
				b.Fatalf("leave: %s", code(r.Response.ErrorCode))
			}
			r := g.StreamsHeartbeat(t0, client, reqs[0], topics)
			if r.Response.ErrorCode != 0 {
				b.Fatalf("heartbeat: %s", code(r.Response.ErrorCode))
			}
			reqs[0].MemberEpoch = r.Response.MemberEpoch
		}
	})
}
