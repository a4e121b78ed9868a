package group

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var t0 = time.Unix(1_700_000_000, 0)

// fakeTopics is a Topics over a map.
type fakeTopics map[string]int32

func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], "id:"+name)
	return id
}

func (f fakeTopics) ByName(name string) (TopicInfo, bool) {
	n, ok := f[name]
	return TopicInfo{Name: name, ID: topicID(name), Partitions: n}, ok
}

func (f fakeTopics) ByID(id [16]byte) (TopicInfo, bool) {
	for n := range f {
		if topicID(n) == id {
			return f.ByName(n)
		}
	}
	return TopicInfo{}, false
}

func (f fakeTopics) Names() []string {
	var out []string
	for n := range f {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func testConfig() Config {
	n := 0
	return Config{
		InitialRebalanceDelay: 100 * time.Millisecond,
		MinSessionTimeout:     time.Second,
		MaxSessionTimeout:     time.Minute,
		OffsetsRetention:      time.Hour,
		NewID:                 func() string { n++; return fmt.Sprint(n) },
	}
}

// box captures one parked reply.
type box struct{ r kmsg.Response }

func (b *box) reply(r kmsg.Response) {
	if b.r != nil {
		panic("replied twice")
	}
	b.r = r
}

func (b *box) join(t *testing.T) *kmsg.JoinGroupResponse {
	t.Helper()
	if b.r == nil {
		t.Fatal("JoinGroup not answered")
	}
	return b.r.(*kmsg.JoinGroupResponse)
}

func (b *box) sync(t *testing.T) *kmsg.SyncGroupResponse {
	t.Helper()
	if b.r == nil {
		t.Fatal("SyncGroup not answered")
	}
	return b.r.(*kmsg.SyncGroupResponse)
}

func joinReq(member string, meta string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = "g"
	r.MemberID = member
	r.SessionTimeoutMillis = 10_000
	r.RebalanceTimeoutMillis = 20_000
	r.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte(meta)
	r.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	return r
}

func staticJoinReq(member, instance string) *kmsg.JoinGroupRequest {
	r := joinReq(member, "m")
	r.InstanceID = &instance
	return r
}

var client = Client{ID: "cl", Host: "127.0.0.1"}

// join runs a JoinGroup and returns the parked reply.
func join(g *Group, now time.Time, req *kmsg.JoinGroupRequest) *box {
	b := &box{}
	g.JoinGroup(now, client, req, fakeTopics{"t": 6}, b.reply)
	return b
}

// newMember joins with the KIP-394 round trip and returns the member id and
// the parked second join.
func newMember(t *testing.T, g *Group, now time.Time) (string, *box) {
	t.Helper()
	b := join(g, now, joinReq("", "m"))
	r := b.join(t)
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		t.Fatalf("first join: code %d member %q", r.ErrorCode, r.MemberID)
	}
	return r.MemberID, join(g, now, joinReq(r.MemberID, "m"))
}

func syncReq(member string, gen int32, assign map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.Generation = "g", member, gen
	for m, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, []byte(a)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func syncG(g *Group, now time.Time, req *kmsg.SyncGroupRequest) *box {
	b := &box{}
	g.SyncGroup(now, req, b.reply)
	return b
}

// leaveReq is a LeaveGroup v3 of one member.
func leaveReq(member string, instance *string) *kmsg.LeaveGroupRequest {
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version, r.Group = 3, "g"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID, lm.InstanceID = member, instance
	r.Members = append(r.Members, lm)
	return r
}

func heartbeat(g *Group, now time.Time, member string, gen int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.MemberID, r.Generation = "g", member, gen
	return g.Heartbeat(now, r).ErrorCode
}

// stableGroup builds a Stable group of n members (ids returned, the first is
// the leader) at generation 1.
func stableGroup(t *testing.T, n int) (*Group, []string, time.Time) {
	t.Helper()
	g := New("g", testConfig())
	now := t0
	var ids []string
	var boxes []*box
	for i := 0; i < n; i++ {
		id, b := newMember(t, g, now)
		ids = append(ids, id)
		boxes = append(boxes, b)
	}
	now = now.Add(time.Second) // past the (extended) initial rebalance delay
	g.Tick(now)
	assign := map[string]string{}
	for i, b := range boxes {
		r := b.join(t)
		if r.ErrorCode != 0 || r.Generation != 1 {
			t.Fatalf("join %d: code %d gen %d", i, r.ErrorCode, r.Generation)
		}
		assign[ids[i]] = "a-" + ids[i]
	}
	leader := boxes[0].join(t).LeaderID
	// the leader first in ids
	for i, id := range ids {
		if id == leader {
			ids[0], ids[i] = ids[i], ids[0]
		}
	}
	var sboxes []*box
	for _, id := range ids[1:] {
		sboxes = append(sboxes, syncG(g, now, syncReq(id, 1, nil)))
	}
	lb := syncG(g, now, syncReq(ids[0], 1, assign))
	if r := lb.sync(t); r.ErrorCode != 0 || string(r.MemberAssignment) != "a-"+ids[0] {
		t.Fatalf("leader sync: %+v", r)
	}
	for i, sb := range sboxes {
		if r := sb.sync(t); r.ErrorCode != 0 || string(r.MemberAssignment) != "a-"+ids[i+1] {
			t.Fatalf("follower sync: %+v", r)
		}
	}
	if g.State() != Stable {
		t.Fatalf("state %v", g.State())
	}
	return g, ids, now
}

func code(c int16) string {
	if c == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(c).Error()
}
