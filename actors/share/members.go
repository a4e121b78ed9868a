package share

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupConfig holds the share-group membership settings.
type GroupConfig struct {
	// HeartbeatInterval is group.share.heartbeat.interval.ms (5 s).
	HeartbeatInterval time.Duration
	// SessionTimeout is group.share.session.timeout.ms (45 s): a member
	// without a heartbeat for this long is removed.
	SessionTimeout time.Duration
	// MaxSize is group.share.max.size (200).
	MaxSize int
}

// Defaults fills zero fields with Kafka's defaults.
func (c *GroupConfig) Defaults() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.MaxSize <= 0 {
		c.MaxSize = 200
	}
}

// Topic is what share-group assignment needs to know of a topic.
type Topic struct {
	ID         [16]byte
	Partitions int32
}

// Topics looks a topic up by name (the routing view, or a map in tests).
type Topics func(name string) (Topic, bool)

// Member is one share-group member as ShareGroupDescribe shows it.
type Member struct {
	ID, ClientID, ClientHost string
	Rack                     *string
	Epoch, prevEpoch         int32
	Topics                   []string // subscribed, sorted
	Assignment               map[[16]byte][]int32
	expires                  time.Time
}

// Members is one share group's membership: members, the group epoch and
// the server-side assignment. Assignment follows KIP-932's simple assignor:
// the partitions of each topic are spread evenly over the members
// subscribed to it, and when a topic has fewer partitions than subscribers
// a partition is shared by several members.
type Members struct {
	cfg     GroupConfig
	epoch   int32
	members map[string]*Member
	sig     string // the topic metadata the assignment was computed from
	// version moves whenever Save may answer differently, so the group
	// coordinator encodes the membership only then.
	version uint64
}

// SetConfig replaces the settings (the group's configs changed): a new
// heartbeat interval goes out with the next heartbeats, a new session
// timeout counts from each member's next heartbeat.
func (g *Members) SetConfig(cfg GroupConfig) {
	cfg.Defaults()
	g.cfg = cfg
}

// NewMembers returns an empty share group.
func NewMembers(cfg GroupConfig) *Members {
	cfg.Defaults()
	return &Members{cfg: cfg, members: map[string]*Member{}}
}

// Epoch is the group epoch.
func (g *Members) Epoch() int32 { return g.epoch }

// Version moves whenever the membership Save returns may have changed.
func (g *Members) Version() uint64 { return g.version }

// Len is the number of members.
func (g *Members) Len() int { return len(g.members) }

// List returns the members sorted by id.
func (g *Members) List() []*Member {
	out := slices.Collect(maps.Values(g.members))
	slices.SortFunc(out, func(a, b *Member) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Expire removes members whose session timed out and returns their ids.
// The others' assignments are recomputed at their next heartbeat.
func (g *Members) Expire(now time.Time) []string {
	var gone []string
	for id, m := range g.members {
		if !now.Before(m.expires) {
			gone = append(gone, id)
			delete(g.members, id)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		g.epoch++
		g.version++
	}
	return gone
}

// NextDeadline is the earliest session expiry, or zero without members.
func (g *Members) NextDeadline() time.Time {
	var next time.Time
	for _, m := range g.members {
		if next.IsZero() || m.expires.Before(next) {
			next = m.expires
		}
	}
	return next
}

// Heartbeat serves a ShareGroupHeartbeat: epoch 0 joins (or rejoins), -1
// leaves, anything else is a member's heartbeat at its current (or
// previous) epoch. left names a member that left, whose records are to be
// released.
func (g *Members) Heartbeat(now time.Time, clientID, host string, req *kmsg.ShareGroupHeartbeatRequest, topics Topics) (resp *kmsg.ShareGroupHeartbeatResponse, left string) {
	resp = req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval.Milliseconds())
	fail := func(code int16, msg string) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	switch {
	case req.MemberID == "" || len(req.MemberID) > 36:
		return fail(kerr.InvalidRequest.Code, "MemberId must be a client-generated id of 1 to 36 characters."), ""
	case req.MemberEpoch < -1:
		return fail(kerr.InvalidRequest.Code, "MemberEpoch is invalid."), ""
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return fail(kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request."), ""
	}
	g.Expire(now)
	m := g.members[req.MemberID]
	epoch := g.epoch
	var was Member
	if m != nil {
		was = *m
	}
	defer func() {
		if g.epoch != epoch || (m != nil && !was.sameSaved(m)) {
			g.version++
		}
	}()
	switch req.MemberEpoch {
	case -1:
		if m == nil {
			return fail(kerr.UnknownMemberID.Code, ""), ""
		}
		delete(g.members, m.ID)
		g.epoch++
		g.assign(topics)
		resp.MemberID, resp.MemberEpoch = &m.ID, -1
		return resp, m.ID
	case 0:
		if m == nil {
			if len(g.members) >= g.cfg.MaxSize {
				return fail(kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", g.cfg.MaxSize)), ""
			}
			m = &Member{ID: req.MemberID}
			g.members[m.ID] = m
			g.epoch++
		}
	default:
		if m == nil {
			return fail(kerr.UnknownMemberID.Code, ""), ""
		}
		if req.MemberEpoch != m.Epoch && req.MemberEpoch != m.prevEpoch {
			return fail(kerr.FencedMemberEpoch.Code, ""), ""
		}
	}
	m.ClientID, m.ClientHost, m.expires = clientID, host, now.Add(g.cfg.SessionTimeout)
	if req.RackID != nil {
		m.Rack = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		subs := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(subs)
		subs = slices.Compact(subs)
		if !slices.Equal(subs, m.Topics) {
			m.Topics = subs
			g.epoch++
		}
	}
	g.assign(topics)
	before := m.Epoch
	if m.Epoch != g.epoch {
		m.prevEpoch, m.Epoch = m.Epoch, g.epoch
	}
	resp.MemberID, resp.MemberEpoch = &m.ID, m.Epoch
	// The assignment goes to a full request (one naming the subscription)
	// and whenever this heartbeat moved the member's epoch.
	if req.SubscribedTopicNames != nil || m.Epoch != before {
		a := &kmsg.ShareGroupHeartbeatResponseAssignment{}
		for _, id := range sortedIDs(m.Assignment) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = id, m.Assignment[id]
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = a
	}
	return resp, ""
}

// assign recomputes every member's assignment; a change of the topics'
// metadata (a topic created, grown or deleted) moves the group epoch.
func (g *Members) assign(topics Topics) {
	byTopic := map[string][]string{}
	for _, m := range g.List() {
		for _, t := range m.Topics {
			byTopic[t] = append(byTopic[t], m.ID)
		}
	}
	names := slices.Sorted(maps.Keys(byTopic))
	var sig strings.Builder
	next := map[string]map[[16]byte][]int32{}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		next[id] = map[[16]byte][]int32{}
	}
	for _, name := range names {
		t, ok := topics(name)
		if !ok || t.Partitions <= 0 {
			continue
		}
		fmt.Fprintf(&sig, "%s/%x/%d;", name, t.ID, t.Partitions)
		subs := byTopic[name]
		n := max(int(t.Partitions), len(subs))
		for i := range n {
			id, p := subs[i%len(subs)], int32(i%int(t.Partitions))
			if !slices.Contains(next[id][t.ID], p) {
				next[id][t.ID] = append(next[id][t.ID], p)
			}
		}
	}
	if s := sig.String(); s != g.sig {
		if g.sig != "" || len(g.members) > 0 {
			g.epoch++
		}
		g.sig = s
	}
	for id, a := range next {
		for _, ps := range a {
			slices.Sort(ps)
		}
		if !maps.EqualFunc(a, g.members[id].Assignment, slices.Equal) {
			g.version++
		}
		g.members[id].Assignment = a
	}
}

// sameSaved reports whether m saves as was does, but for its assignment
// (assign compares that).
func (was *Member) sameSaved(m *Member) bool {
	return was.ClientID == m.ClientID && was.ClientHost == m.ClientHost &&
		(was.Rack == nil) == (m.Rack == nil) && (was.Rack == nil || *was.Rack == *m.Rack) &&
		was.Epoch == m.Epoch && was.prevEpoch == m.prevEpoch && slices.Equal(was.Topics, m.Topics)
}

func sortedIDs(a map[[16]byte][]int32) [][16]byte {
	ids := slices.Collect(maps.Keys(a))
	slices.SortFunc(ids, func(x, y [16]byte) int { return strings.Compare(string(x[:]), string(y[:])) })
	return ids
}

// Describe fills a ShareGroupDescribe group from the membership.
func (g *Members) Describe(now time.Time, topics Topics, names func([16]byte) string) kmsg.ShareGroupDescribeResponseGroup {
	g.Expire(now)
	g.assign(topics)
	d := kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupState = "Empty"
	if len(g.members) > 0 {
		d.GroupState = "Stable"
	}
	d.GroupEpoch, d.AssignmentEpoch, d.Assignor = g.epoch, g.epoch, "simple"
	for _, m := range g.List() {
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.RackID, dm.MemberEpoch = m.ID, m.Rack, m.Epoch
		dm.ClientID, dm.ClientHost = m.ClientID, m.ClientHost
		dm.SubscribedTopicNames = slices.Clone(m.Topics)
		for _, id := range sortedIDs(m.Assignment) {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = id, names(id), m.Assignment[id]
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		d.Members = append(d.Members, dm)
	}
	return d
}
