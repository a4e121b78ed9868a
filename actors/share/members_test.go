package share

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func hb(member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.GroupID, r.MemberID, r.MemberEpoch = "g", member, epoch
	if topics != nil {
		r.SubscribedTopicNames = topics
	}
	return r
}

func testTopics(parts map[string]int32) Topics {
	return func(name string) (Topic, bool) {
		n, ok := parts[name]
		if !ok {
			return Topic{}, false
		}
		return Topic{ID: [16]byte{byte(len(name)), name[0]}, Partitions: n}, true
	}
}

func assigned(r *kmsg.ShareGroupHeartbeatResponse) int {
	n := 0
	if r.Assignment != nil {
		for _, tp := range r.Assignment.TopicPartitions {
			n += len(tp.Partitions)
		}
	}
	return n
}

func TestMembersSpreadPartitions(t *testing.T) {
	now := time.Unix(0, 0)
	topics := testTopics(map[string]int32{"t": 4})
	g := NewMembers(GroupConfig{})
	r1, _ := g.Heartbeat(now, "c", "h", hb("a", 0, "t"), topics)
	if r1.ErrorCode != 0 || assigned(r1) != 4 || r1.MemberEpoch != g.Epoch() {
		t.Fatalf("first member: code %d, %d partitions, epoch %d (group %d)", r1.ErrorCode, assigned(r1), r1.MemberEpoch, g.Epoch())
	}
	r2, _ := g.Heartbeat(now, "c", "h", hb("b", 0, "t"), topics)
	if assigned(r2) != 2 {
		t.Fatalf("second member got %d partitions, want 2", assigned(r2))
	}
	// a learns of the new assignment at its next heartbeat, at its old epoch.
	r1b, _ := g.Heartbeat(now, "c", "h", hb("a", r1.MemberEpoch), topics)
	if r1b.ErrorCode != 0 || assigned(r1b) != 2 || r1b.MemberEpoch <= r1.MemberEpoch {
		t.Fatalf("first member after rebalance: code %d, %d partitions, epoch %d", r1b.ErrorCode, assigned(r1b), r1b.MemberEpoch)
	}
	// Without a change, a heartbeat carries no assignment.
	if r, _ := g.Heartbeat(now, "c", "h", hb("a", r1b.MemberEpoch), topics); r.Assignment != nil {
		t.Fatalf("unchanged heartbeat carried an assignment")
	}
}

func TestMembersShareAPartitionWhenOutnumbered(t *testing.T) {
	now := time.Unix(0, 0)
	topics := testTopics(map[string]int32{"t": 1})
	g := NewMembers(GroupConfig{})
	for _, m := range []string{"a", "b", "c"} {
		if r, _ := g.Heartbeat(now, "c", "h", hb(m, 0, "t"), topics); assigned(r) != 1 {
			t.Fatalf("member %s got %d partitions, want the one partition", m, assigned(r))
		}
	}
}

func TestMembersErrorsAndLeave(t *testing.T) {
	now := time.Unix(0, 0)
	topics := testTopics(map[string]int32{"t": 2})
	g := NewMembers(GroupConfig{SessionTimeout: 10 * time.Second, MaxSize: 2})
	cases := []struct {
		name string
		req  *kmsg.ShareGroupHeartbeatRequest
		want int16
	}{
		{"no member id", hb("", 0, "t"), kerr.InvalidRequest.Code},
		{"join without topics", hb("a", 0), kerr.InvalidRequest.Code},
		{"bad epoch", hb("a", -2, "t"), kerr.InvalidRequest.Code},
		{"unknown member", hb("z", 3), kerr.UnknownMemberID.Code},
		{"unknown member leaving", hb("z", -1), kerr.UnknownMemberID.Code},
		{"join a", hb("a", 0, "t"), 0},
		{"join b", hb("b", 0, "t"), 0},
		{"full", hb("c", 0, "t"), kerr.GroupMaxSizeReached.Code},
		{"stale epoch", hb("a", 99), kerr.FencedMemberEpoch.Code},
	}
	for _, c := range cases {
		r, _ := g.Heartbeat(now, "c", "h", c.req, topics)
		if r.ErrorCode != c.want {
			t.Fatalf("%s: code %d, want %d", c.name, r.ErrorCode, c.want)
		}
		if c.want == kerr.GroupMaxSizeReached.Code && (r.ErrorMessage == nil ||
			*r.ErrorMessage != "The share group has reached its maximum capacity of 2 members.") {
			t.Fatalf("%s: message %v, want Kafka's", c.name, r.ErrorMessage)
		}
	}
	r, left := g.Heartbeat(now, "c", "h", hb("a", -1), topics)
	if r.ErrorCode != 0 || r.MemberEpoch != -1 || left != "a" || g.Len() != 1 {
		t.Fatalf("leave: code %d epoch %d left %q members %d", r.ErrorCode, r.MemberEpoch, left, g.Len())
	}
	if gone := g.Expire(now.Add(10 * time.Second)); len(gone) != 1 || gone[0] != "b" {
		t.Fatalf("expired %v, want [b]", gone)
	}
	d := g.Describe(now.Add(10*time.Second), topics, func([16]byte) string { return "t" })
	if d.GroupState != "Empty" || len(d.Members) != 0 {
		t.Fatalf("describe after expiry: %s with %d members", d.GroupState, len(d.Members))
	}
}

func TestMembersTopicGrowthMovesEpoch(t *testing.T) {
	now := time.Unix(0, 0)
	parts := map[string]int32{}
	g := NewMembers(GroupConfig{})
	r, _ := g.Heartbeat(now, "c", "h", hb("a", 0, "t"), testTopics(parts))
	if assigned(r) != 0 {
		t.Fatalf("assigned %d partitions of a missing topic", assigned(r))
	}
	parts["t"] = 3
	r2, _ := g.Heartbeat(now, "c", "h", hb("a", r.MemberEpoch), testTopics(parts))
	if r2.MemberEpoch <= r.MemberEpoch || assigned(r2) != 3 {
		t.Fatalf("after the topic appeared: epoch %d (was %d), %d partitions", r2.MemberEpoch, r.MemberEpoch, assigned(r2))
	}
}
