package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/share"
)

// A share group (KIP-932) lives in the same Group as the other kinds, so it
// is placed, listed, moved and healed as they are; its membership and
// assignment are share.Members. Its records' states live with the
// partitions (share.Keeper), not here.

// shareProtocolType is the protocol type a share group is listed with, as
// Kafka's coordinator lists it (tools tell share groups from simple
// consumer groups, which have none, by it).
const shareProtocolType = "share"

// shareTopics adapts Topics to share.Topics.
func shareTopics(topics Topics) share.Topics {
	return func(name string) (share.Topic, bool) {
		t, ok := topics.ByName(name)
		return share.Topic{ID: t.ID, Partitions: t.Partitions}, ok
	}
}

func (g *Group) shareMembers() int {
	if g.share == nil {
		return 0
	}
	return g.share.Len()
}

// ShareHeartbeat serves ShareGroupHeartbeat (key 76). A group of another
// kind with members or offsets answers GROUP_ID_NOT_FOUND, as Kafka does.
func (g *Group) ShareHeartbeat(now time.Time, c Client, req *kmsg.ShareGroupHeartbeatRequest, topics Topics) *kmsg.ShareGroupHeartbeatResponse {
	g.Tick(now)
	defer g.Tick(now)
	if g.state == Dead {
		return shareHeartbeatError(kerr.CoordinatorNotAvailable.Code)
	}
	if g.kind != KindShare {
		if g.kind == KindStreams || g.kind != KindNone && (g.HasMembers() || len(g.offsets) > 0) {
			r := shareHeartbeatError(kerr.GroupIDNotFound.Code)
			r.ErrorMessage = strp("Group " + g.ID + " is not a share group.")
			return r
		}
		if req.MemberEpoch != 0 {
			return shareHeartbeatError(kerr.UnknownMemberID.Code)
		}
		g.kind = KindShare
		g.protocolType = shareProtocolType
		g.share = share.NewMembers(g.cfg.Share)
		g.membersVersion++
	}
	resp, _ := g.share.Heartbeat(now, c.ID, c.Host, req, shareTopics(topics))
	g.updateShareState(now)
	return resp
}

// DescribeShareGroup serves one group of ShareGroupDescribe (key 77).
func (g *Group) DescribeShareGroup(now time.Time, topics Topics) kmsg.ShareGroupDescribeResponseGroup {
	g.Tick(now)
	if g.kind != KindShare {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID, d.ErrorCode = g.ID, kerr.GroupIDNotFound.Code
		if g.kind != KindNone {
			d.ErrorMessage = strp("Group " + g.ID + " is not a share group.")
		}
		return d
	}
	d := g.share.Describe(now, shareTopics(topics), func(id [16]byte) string {
		t, _ := topics.ByID(id)
		return t.Name
	})
	d.GroupID = g.ID
	return d
}

// ShareAdmin says whether an admin may change the group's share-partition
// state (AlterShareGroupOffsets, DeleteShareGroupOffsets), as Kafka: a
// share group without members (else NON_EMPTY_GROUP); a group of another
// kind, or none, is GROUP_ID_NOT_FOUND, except that with create an absent
// group becomes an empty share group (Kafka's AlterShareGroupOffsets
// creates it).
func (g *Group) ShareAdmin(now time.Time, create bool) int16 {
	g.Tick(now)
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if g.kind != KindShare {
		if g.kind == KindStreams || (g.kind != KindNone && (g.HasMembers() || len(g.offsets) > 0)) || !create {
			return kerr.GroupIDNotFound.Code
		}
		g.kind = KindShare
		g.protocolType = shareProtocolType
		g.share = share.NewMembers(g.cfg.Share)
		g.membersVersion++
		g.updateShareState(now)
	}
	if g.share.Len() > 0 {
		return kerr.NonEmptyGroup.Code
	}
	return 0
}

func (g *Group) shareTick(now time.Time) {
	if g.share == nil {
		return
	}
	if len(g.share.Expire(now)) > 0 {
		g.updateShareState(now)
	}
}

func (g *Group) updateShareState(now time.Time) {
	if g.share.Len() > 0 {
		g.setState(now, Stable)
	} else {
		g.setState(now, Empty)
	}
}

// shareHeartbeatError answers a ShareGroupHeartbeat with code.
func shareHeartbeatError(code int16) *kmsg.ShareGroupHeartbeatResponse {
	r := kmsg.NewPtrShareGroupHeartbeatResponse()
	r.ErrorCode = code
	return r
}
