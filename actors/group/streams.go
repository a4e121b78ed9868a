package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/streams"
)

// A streams group (KIP-1071) lives in the same Group as the other kinds, so
// it is placed, listed, moved and healed as they are, and its committed
// offsets are the group's; its membership, topology and task assignment are
// streams.Group. Only a new group or a classic group without members (one
// that only stores offsets, or whose members all left) becomes a streams
// group, keeping its offsets; an empty streams group becomes classic again
// when a classic member joins (Kafka's offline migration).

// streamsTopics adapts Topics to streams.Topics.
type streamsTopics struct{ Topics }

func (t streamsTopics) ByName(name string) (streams.Topic, bool) {
	ti, ok := t.Topics.ByName(name)
	return streams.Topic{Name: ti.Name, ID: ti.ID, Partitions: ti.Partitions}, ok
}

func (g *Group) streamsMembers() int {
	if g.streams == nil {
		return 0
	}
	return g.streams.Len()
}

// StreamsReply is a StreamsGroupHeartbeat's answer, and the internal topics
// the group's topology needs that the broker is to create.
type StreamsReply struct {
	Response *kmsg.StreamsGroupHeartbeatResponse
	Create   []streams.InternalTopic
}

// StreamsHeartbeat serves StreamsGroupHeartbeat (key 88). A join to a
// classic group without members (one that only stores offsets) makes it a
// streams group keeping them (Kafka's offline migration); any other group
// of another kind answers GROUP_ID_NOT_FOUND, as Kafka does.
func (g *Group) StreamsHeartbeat(now time.Time, c Client, req *kmsg.StreamsGroupHeartbeatRequest, topics Topics) StreamsReply {
	g.Tick(now)
	defer g.Tick(now)
	if g.state == Dead {
		return StreamsReply{Response: streamsHeartbeatError(kerr.CoordinatorNotAvailable.Code, "")}
	}
	if g.kind != KindStreams {
		switch {
		case g.kind == KindNone && req.MemberEpoch != epochJoin:
			return StreamsReply{Response: streamsHeartbeatError(kerr.GroupIDNotFound.Code, "Streams group "+g.ID+" not found.")}
		case g.kind == KindNone, g.kind == KindClassic && !g.HasMembers() && req.MemberEpoch == epochJoin:
			g.becomeStreams(now)
		default:
			return StreamsReply{Response: streamsHeartbeatError(kerr.GroupIDNotFound.Code, "Group "+g.ID+" is not a streams group.")}
		}
	}
	resp, create := g.streams.Heartbeat(now, streams.Client{ID: c.ID, Host: c.Host}, req, streamsTopics{topics})
	g.updateStreamsState(now)
	return StreamsReply{Response: resp, Create: create}
}

// becomeStreams turns a group without members (new, or holding only
// offsets) into an empty streams group.
func (g *Group) becomeStreams(now time.Time) {
	g.kind = KindStreams
	g.protocolType = "streams"
	g.clearClassic()
	g.static = map[string]string{}
	g.cons = newConsumerState()
	g.share = nil
	g.streams = streams.New(g.cfg.Streams)
	g.membersVersion++
	g.setState(now, Empty)
}

// streamsToClassic turns an empty streams group into a classic one keeping
// its offsets (Kafka's offline migration back to the classic protocol).
func (g *Group) streamsToClassic(now time.Time) {
	g.streams = nil
	g.kind, g.protocolType = KindClassic, ""
	g.membersVersion++
	g.setState(now, Empty)
}

// DescribeStreamsGroup serves one group of StreamsGroupDescribe (key 89).
func (g *Group) DescribeStreamsGroup(now time.Time, topics Topics) kmsg.StreamsGroupDescribeResponseGroup {
	g.Tick(now)
	if g.kind != KindStreams || g.state == Dead {
		d := kmsg.NewStreamsGroupDescribeResponseGroup()
		d.Group, d.ErrorCode = g.ID, kerr.GroupIDNotFound.Code
		if g.kind != KindNone && g.state != Dead {
			d.ErrorMessage = strp("Group " + g.ID + " is not a streams group.")
		} else {
			d.ErrorMessage = strp("Group " + g.ID + " not found.")
		}
		return d
	}
	d := g.streams.Describe(now, streamsTopics{topics})
	d.Group = g.ID
	return d
}

func (g *Group) streamsTick(now time.Time) {
	if g.streams == nil {
		return
	}
	// Expire also ends the initial rebalance delay, which assigns the
	// tasks: the state follows either way.
	g.streams.Expire(now)
	g.updateStreamsState(now)
}

// updateStreamsState mirrors the streams group's state in the group's.
func (g *Group) updateStreamsState(now time.Time) {
	if g.kind != KindStreams {
		return
	}
	switch g.streams.State() {
	case streams.Empty:
		g.setState(now, Empty)
	case streams.NotReady:
		g.setState(now, NotReady)
	case streams.Assigning:
		g.setState(now, Assigning)
	case streams.Reconciling:
		g.setState(now, Reconciling)
	default:
		g.setState(now, Stable)
	}
}

// validateStreamsCommit checks an OffsetCommit or TxnOffsetCommit against a
// streams group, as Kafka: a transactional commit that names no member
// is not checked, an OffsetCommit older than v9 from a member is
// UNSUPPORTED_VERSION, the rest is the member and its epoch
// (streams.Group.ValidateCommit).
func (g *Group) validateStreamsCommit(now time.Time, version int16, txn bool, epoch int32, memberID string, instanceID *string) int16 {
	if txn && memberID == "" && epoch == -1 && instanceID == nil {
		return 0
	}
	code := g.streams.ValidateCommit(now, memberID, epoch)
	if code == 0 && !txn && version < 9 && (epoch >= 0 || g.streamsMembers() > 0) {
		return kerr.UnsupportedVersion.Code
	}
	return code
}

// streamsSubscribed is every topic a streams group's topology reads or
// writes: offsets of these are kept while the group has members.
func (g *Group) streamsSubscribed() map[string]bool {
	out := map[string]bool{}
	if g.streams != nil {
		for _, t := range g.streams.Topics() {
			out[t] = true
		}
	}
	return out
}

// streamsHeartbeatError answers a StreamsGroupHeartbeat with code.
func streamsHeartbeatError(code int16, msg string) *kmsg.StreamsGroupHeartbeatResponse {
	r := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	r.ErrorCode = code
	if msg != "" {
		r.ErrorMessage = &msg
	}
	return r
}
