package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/storage/groupstore"
)

// TestClassicGroupMaxSize: a new member's JoinGroup into a classic group of
// group.max.size members is refused; its members rejoin; the consumer
// limit does not bound a classic group.
func TestClassicGroupMaxSize(t *testing.T) {
	g, ids, now := stableGroup(t, 2)
	g.cfg.ClassicMaxSize, g.cfg.ConsumerMaxSize = 2, 1
	r := join(g, now, joinReq("", "m")).join(t)
	if r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third member's join: %s, want GROUP_MAX_SIZE_REACHED", code(r.ErrorCode))
	}
	if g.State() != Stable {
		t.Fatalf("refused join changed the group: state %v", g.State())
	}
	// Both members rejoin (a rebalance) and get the next generation.
	b0, b1 := join(g, now, joinReq(ids[0], "m")), join(g, now, joinReq(ids[1], "m"))
	for i, b := range []*box{b0, b1} {
		if r := b.join(t); r.ErrorCode != 0 || r.Generation != 2 {
			t.Fatalf("member %s rejoin: %s generation %d", ids[i], code(r.ErrorCode), r.Generation)
		}
	}
	// A member that leaves makes room: the next new member is asked
	// for its id (newMember checks MEMBER_ID_REQUIRED).
	if r := g.LeaveGroup(now, leaveReq(ids[1], nil)); r.ErrorCode != 0 {
		t.Fatalf("leave: %s", code(r.ErrorCode))
	}
	newMember(t, g, now)
}

// TestConsumerGroupMaxSize: a new member's ConsumerGroupHeartbeat into a
// consumer group of group.consumer.max.size members is refused; its
// members go on; the classic limit does not bound a consumer group.
func TestConsumerGroupMaxSize(t *testing.T) {
	cfg := testConfig()
	cfg.ConsumerMaxSize, cfg.ClassicMaxSize = 2, 1
	g := New("g", cfg)
	a, b, c := newCGM(t, g, "a"), newCGM(t, g, "b"), newCGM(t, g, "c")
	converge(t, t0, a, b)
	if r := c.beat(t0); r.ErrorCode != kerr.GroupMaxSizeReached.Code || r.ErrorMessage == nil ||
		*r.ErrorMessage != "The consumer group has reached its maximum capacity of 2 members." {
		t.Fatalf("third member: %s %v, want GROUP_MAX_SIZE_REACHED with Kafka's message", code(r.ErrorCode), r.ErrorMessage)
	}
	if r := a.beat(t0); r.ErrorCode != 0 || r.MemberEpoch != a.epoch || a.epoch == 0 {
		t.Fatalf("member a: %s epoch %d", code(r.ErrorCode), r.MemberEpoch)
	}
	if r := g.ConsumerHeartbeat(t0, client, b.req(-1), b.topics); r.ErrorCode != 0 {
		t.Fatalf("b leaves: %s", code(r.ErrorCode))
	}
	if r := c.beat(t0); r.ErrorCode != 0 || r.MemberEpoch == 0 {
		t.Fatalf("c after b left: %s epoch %d", code(r.ErrorCode), r.MemberEpoch)
	}
}

// TestMixedGroupMaxSize: in a consumer group, a classic member's join is
// bounded by group.consumer.max.size, not group.max.size; a classic group
// is turned into a consumer group when its members fit the consumer limit,
// whatever the classic one.
func TestMixedGroupMaxSize(t *testing.T) {
	for _, tc := range []struct {
		name             string
		classic, consumr int
		want             int16
	}{
		{name: "consumer limit reached", classic: 0, consumr: 1, want: kerr.GroupMaxSizeReached.Code},
		{name: "classic limit reached", classic: 1, consumr: 2, want: kerr.MemberIDRequired.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.ClassicMaxSize, cfg.ConsumerMaxSize = tc.classic, tc.consumr
			g := New("g", cfg)
			c := newCGM(t, g, "c")
			converge(t, t0, c)
			a := newCCM(t, g, false)
			if r := a.join(t0).join(t); r.ErrorCode != tc.want {
				t.Fatalf("classic member's join: %s, want %s", code(r.ErrorCode), code(tc.want))
			}
		})
	}
	t.Run("upgrade within the consumer limit", func(t *testing.T) {
		cfg := testConfig()
		cfg.ClassicMaxSize, cfg.ConsumerMaxSize = 2, 3
		g, _, _, _, _ := mixedGroup(t, cfg, false)
		if g.Kind() != KindConsumer || len(g.cons.members) != 3 {
			t.Fatalf("kind %v, %d members", g.Kind(), len(g.cons.members))
		}
	})
}

// TestDowngradeBoundedByClassicMaxSize: a consumer group whose last
// consumer-protocol member leaves turns back into a classic group only if
// its classic members fit group.max.size.
func TestDowngradeBoundedByClassicMaxSize(t *testing.T) {
	for _, tc := range []struct {
		name    string
		classic int
		want    Kind
	}{
		{name: "fits", classic: 2, want: KindClassic},
		{name: "too many", classic: 1, want: KindConsumer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.ConsumerMaxSize = 3
			g, _, _, c, now := mixedGroup(t, cfg, false)
			g.cfg.ClassicMaxSize = tc.classic
			if r := g.ConsumerHeartbeat(now, client, c.req(-1), c.topics); r.ErrorCode != 0 {
				t.Fatalf("leave: %s", code(r.ErrorCode))
			}
			if g.Kind() != tc.want {
				t.Fatalf("kind %v, want %v", g.Kind(), tc.want)
			}
		})
	}
}

// TestClassicGroupOverMaxSizeAfterRestore: a classic group restored with
// more members than group.max.size (the limit lowered between two
// coordinators) rebalances; the first members to rejoin, up to the
// limit, make the next generation, a member resending its JoinGroup
// included; the later ones are refused with GROUP_MAX_SIZE_REACHED and
// removed.
func TestClassicGroupOverMaxSizeAfterRestore(t *testing.T) {
	g, ids, now := stableGroup(t, 4)
	saved, _ := g.MembershipToSave()
	cfg := testConfig()
	cfg.ClassicMaxSize = 2
	n := New("g", cfg)
	n.Load(now, groupstore.State{Offsets: map[groupstore.TP]groupstore.Commit{}})
	if err := n.RestoreMembership(now, saved, fakeTopics{"t": 6}); err != nil {
		t.Fatal(err)
	}
	if n.State() != PreparingRebalance {
		t.Fatalf("restored over the limit: state %v, want PreparingRebalance", n.State())
	}
	if c := heartbeat(n, now, ids[3], 1); c != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat: %s, want REBALANCE_IN_PROGRESS", code(c))
	}
	first := join(n, now, joinReq(ids[0], "m"))
	b1 := join(n, now, joinReq(ids[1], "m"))
	b0 := join(n, now, joinReq(ids[0], "m")) // a resent JoinGroup
	if r := first.join(t); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("replaced JoinGroup: %s", code(r.ErrorCode))
	}
	for _, id := range ids[2:] {
		if r := join(n, now, joinReq(id, "m")).join(t); r.ErrorCode != kerr.GroupMaxSizeReached.Code || r.MemberID != "" {
			t.Fatalf("%s over the limit: %s member %q, want GROUP_MAX_SIZE_REACHED", id, code(r.ErrorCode), r.MemberID)
		}
	}
	for i, b := range []*box{b0, b1} {
		if r := b.join(t); r.ErrorCode != 0 || r.Generation != 2 || (r.LeaderID == r.MemberID) != (len(r.Members) == 2) {
			t.Fatalf("member %s: %s generation %d, %d members", ids[i], code(r.ErrorCode), r.Generation, len(r.Members))
		}
	}
	if n.State() != CompletingRebalance || len(n.members) != 2 {
		t.Fatalf("state %v, %d members", n.State(), len(n.members))
	}
	if c := heartbeat(n, now, ids[3], 2); c != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of a removed member: %s, want UNKNOWN_MEMBER_ID", code(c))
	}
}
