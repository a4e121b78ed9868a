package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestClassicFirstJoinWaitsInitialDelay(t *testing.T) {
	g := New("g", testConfig())
	id, b := newMember(t, g, t0)
	if b.r != nil {
		t.Fatal("join answered before the initial rebalance delay")
	}
	if g.State() != PreparingRebalance {
		t.Fatalf("state %v", g.State())
	}
	// A second member inside the delay extends it.
	id2, b2 := newMember(t, g, t0.Add(80*time.Millisecond))
	g.Tick(t0.Add(100 * time.Millisecond))
	if b.r != nil {
		t.Fatal("delay was not extended by a new member")
	}
	g.Tick(t0.Add(200 * time.Millisecond))
	r1, r2 := b.join(t), b2.join(t)
	if r1.Generation != 1 || r2.Generation != 1 || r1.LeaderID != r2.LeaderID {
		t.Fatalf("generations %d %d leaders %s %s", r1.Generation, r2.Generation, r1.LeaderID, r2.LeaderID)
	}
	leader, follower := r1, r2
	if r2.LeaderID == id2 {
		leader, follower = r2, r1
	}
	if len(leader.Members) != 2 || len(follower.Members) != 0 {
		t.Fatalf("leader got %d members, follower %d", len(leader.Members), len(follower.Members))
	}
	if *leader.Protocol != "range" || *leader.ProtocolType != "consumer" {
		t.Fatalf("protocol %v/%v", *leader.ProtocolType, *leader.Protocol)
	}
	if g.State() != CompletingRebalance {
		t.Fatalf("state %v", g.State())
	}
	_ = id
}

func TestClassicRebalanceWhenMemberJoins(t *testing.T) {
	g, ids, now := stableGroup(t, 1)
	// A new member: the group prepares a rebalance and waits for the
	// existing member, whose heartbeat says so.
	id2, b2 := newMember(t, g, now)
	if g.State() != PreparingRebalance {
		t.Fatalf("state %v", g.State())
	}
	if c := heartbeat(g, now, ids[0], 1); c != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance: %s", code(c))
	}
	b1 := join(g, now, joinReq(ids[0], "m"))
	r1, r2 := b1.join(t), b2.join(t)
	if r1.Generation != 2 || r2.Generation != 2 {
		t.Fatalf("generation %d %d", r1.Generation, r2.Generation)
	}
	if r1.LeaderID != ids[0] {
		t.Fatalf("leader moved to %s", r1.LeaderID)
	}
	// Old generation is fenced.
	if c := heartbeat(g, now, ids[0], 1); c != kerr.IllegalGeneration.Code {
		t.Fatalf("old generation heartbeat: %s", code(c))
	}
	s2 := syncG(g, now, syncReq(id2, 2, nil))
	if s2.r != nil {
		t.Fatal("follower sync answered before the leader's")
	}
	s1 := syncG(g, now, syncReq(ids[0], 2, map[string]string{ids[0]: "x", id2: "y"}))
	if string(s1.sync(t).MemberAssignment) != "x" || string(s2.sync(t).MemberAssignment) != "y" {
		t.Fatal("assignments not propagated")
	}
	if g.State() != Stable {
		t.Fatalf("state %v", g.State())
	}
}

func TestClassicRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	g, ids, now := stableGroup(t, 2)
	// ids[1] keeps heartbeating but never rejoins.
	_, b3 := newMember(t, g, now)
	b1 := join(g, now, joinReq(ids[0], "m"))
	for i := 1; i <= 19; i++ {
		now = now.Add(time.Second)
		if c := heartbeat(g, now, ids[1], 1); c != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat: %s", code(c))
		}
	}
	if b1.r != nil {
		t.Fatal("join completed before the rebalance timeout")
	}
	now = now.Add(time.Second) // 20 s rebalance timeout
	g.Tick(now)
	r1, r3 := b1.join(t), b3.join(t)
	if r1.Generation != 2 || len(r1.Members) != 2 || r3.Generation != 2 {
		t.Fatalf("gen %d members %d", r1.Generation, len(r1.Members))
	}
	if c := heartbeat(g, now, ids[1], 1); c != kerr.UnknownMemberID.Code {
		t.Fatalf("dropped member heartbeat: %s", code(c))
	}
}

func TestClassicSessionTimeout(t *testing.T) {
	g, ids, now := stableGroup(t, 2)
	for i := 0; i < 2; i++ {
		now = now.Add(4 * time.Second)
		if c := heartbeat(g, now, ids[0], 1); c != 0 {
			t.Fatalf("heartbeat: %s", code(c))
		}
	}
	// ids[1] went silent 12 s ago (> 10 s session timeout).
	now = now.Add(4 * time.Second)
	if c := heartbeat(g, now, ids[0], 1); c != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after a member expired: %s", code(c))
	}
	if g.State() != PreparingRebalance {
		t.Fatalf("state %v after a member's session expired", g.State())
	}
	if c := heartbeat(g, now, ids[1], 1); c != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member heartbeat: %s", code(c))
	}
	b := join(g, now, joinReq(ids[0], "m"))
	if r := b.join(t); r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("gen %d members %d", r.Generation, len(r.Members))
	}
	// The last member's session expires too: the group empties.
	now = now.Add(11 * time.Second)
	g.Tick(now)
	if g.State() != Empty || g.Generation() != 3 {
		t.Fatalf("state %v generation %d", g.State(), g.Generation())
	}
}

func TestClassicPendingMemberExpires(t *testing.T) {
	g := New("g", testConfig())
	b := join(g, t0, joinReq("", "m"))
	id := b.join(t).MemberID
	g.Tick(t0.Add(11 * time.Second))
	if r := join(g, t0.Add(11*time.Second), joinReq(id, "m")).join(t); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("join with an expired pending id: %s", code(r.ErrorCode))
	}
}

func TestClassicMissingSyncTriggersRebalance(t *testing.T) {
	g := New("g", testConfig())
	id1, b1 := newMember(t, g, t0)
	_, b2 := newMember(t, g, t0)
	now := t0.Add(time.Second)
	g.Tick(now)
	leader := b1.join(t).LeaderID
	_ = b2.join(t)
	s := syncG(g, now, syncReq(leader, 1, map[string]string{}))
	if s.sync(t).ErrorCode != 0 || g.State() != Stable {
		t.Fatalf("leader sync %+v state %v", s.r, g.State())
	}
	// The follower never syncs: after the rebalance timeout it is
	// removed and the group rebalances.
	for i := 0; i < 20; i++ {
		now = now.Add(time.Second)
		heartbeat(g, now, leader, 1)
	}
	if g.State() != PreparingRebalance {
		t.Fatalf("state %v", g.State())
	}
	_ = id1
}

func TestClassicSyncDuringRebalanceIsAnswered(t *testing.T) {
	g := New("g", testConfig())
	_, b1 := newMember(t, g, t0)
	_, b2 := newMember(t, g, t0)
	now := t0.Add(time.Second)
	g.Tick(now)
	r1, r2 := b1.join(t), b2.join(t)
	follower := r2.MemberID
	if r2.LeaderID == r2.MemberID {
		follower = r1.MemberID
	}
	s := syncG(g, now, syncReq(follower, 1, nil))
	// A third member joins while the follower waits in SyncGroup.
	newMember(t, g, now)
	if r := s.sync(t); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("parked sync got %s", code(r.ErrorCode))
	}
	if c := syncG(g, now, syncReq(follower, 1, nil)).sync(t).ErrorCode; c != kerr.RebalanceInProgress.Code {
		t.Fatalf("sync in PreparingRebalance: %s", code(c))
	}
}

func TestClassicStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	g := New("g", testConfig())
	b1 := join(g, t0, staticJoinReq("", "a"))
	b2 := join(g, t0, staticJoinReq("", "b"))
	now := t0.Add(time.Second)
	g.Tick(now)
	r1, r2 := b1.join(t), b2.join(t)
	if r1.ErrorCode != 0 || r2.ErrorCode != 0 {
		t.Fatalf("static joins: %s %s (static members skip MEMBER_ID_REQUIRED)", code(r1.ErrorCode), code(r2.ErrorCode))
	}
	leader := r1.LeaderID
	assign := map[string]string{r1.MemberID: "pa", r2.MemberID: "pb"}
	other := r2.MemberID
	if leader == r2.MemberID {
		other = r1.MemberID
	}
	syncG(g, now, syncReq(other, 1, nil))
	syncG(g, now, syncReq(leader, 1, assign))
	if g.State() != Stable {
		t.Fatalf("state %v", g.State())
	}
	// "a" restarts: a new member id, same generation, its old assignment,
	// and no rebalance.
	now = now.Add(time.Second)
	rb := join(g, now, staticJoinReq("", "a"))
	rr := rb.join(t)
	if rr.ErrorCode != 0 || rr.Generation != 1 || rr.MemberID == r1.MemberID {
		t.Fatalf("static rejoin: %s gen %d member %s", code(rr.ErrorCode), rr.Generation, rr.MemberID)
	}
	if g.State() != Stable || g.Generation() != 1 {
		t.Fatalf("state %v gen %d: the static rejoin rebalanced", g.State(), g.Generation())
	}
	if rr.MemberID == rr.LeaderID && !rr.SkipAssignment {
		t.Error("rejoining static leader must skip the assignment (KIP-814)")
	}
	s := syncG(g, now, syncReq(rr.MemberID, 1, nil))
	if string(s.sync(t).MemberAssignment) != "pa" {
		t.Fatalf("assignment after static rejoin: %q", s.sync(t).MemberAssignment)
	}
	// The old incarnation is fenced.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation = 4, "g", r1.MemberID, 1
	inst := "a"
	hb.InstanceID = &inst
	if c := g.Heartbeat(now, hb).ErrorCode; c != kerr.FencedInstanceID.Code {
		t.Fatalf("old static incarnation heartbeat: %s", code(c))
	}
	// A static member rejoining while the group rebalances fences a
	// parked old incarnation.
	newMember(t, g, now)
	old := join(g, now, staticJoinReq(rr.MemberID, "a"))
	newer := join(g, now, staticJoinReq("", "a"))
	if old.join(t).ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("parked old incarnation got %s", code(old.join(t).ErrorCode))
	}
	_ = newer
}

func TestClassicLeaveGroup(t *testing.T) {
	g := New("g", testConfig())
	bs := join(g, t0, staticJoinReq("", "s"))
	id, bd := newMember(t, g, t0)
	g.Tick(t0.Add(time.Second))
	static := bs.join(t).MemberID
	_ = bd.join(t)
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 5, "g"
	inst, wrong := "s", "nope"
	for _, m := range []kmsg.LeaveGroupRequestMember{
		{InstanceID: &inst},                 // resolved by instance id
		{MemberID: id},                      // dynamic
		{MemberID: "ghost"},                 // unknown
		{MemberID: "x", InstanceID: &wrong}, // unknown instance
	} {
		req.Members = append(req.Members, m)
	}
	r := g.LeaveGroup(t0.Add(time.Second), req)
	want := []int16{0, 0, kerr.UnknownMemberID.Code, kerr.UnknownMemberID.Code}
	for i, m := range r.Members {
		if m.ErrorCode != want[i] {
			t.Errorf("member %d: %s, want %s", i, code(m.ErrorCode), code(want[i]))
		}
	}
	if g.HasMembers() {
		t.Fatal("members left behind")
	}
	// v0: one member, top-level error.
	req0 := kmsg.NewPtrLeaveGroupRequest()
	req0.Version, req0.Group, req0.MemberID = 0, "g", static
	if c := g.LeaveGroup(t0.Add(time.Second), req0).ErrorCode; c != kerr.UnknownMemberID.Code {
		t.Fatalf("v0 leave of a gone member: %s", code(c))
	}
}

func TestClassicJoinValidation(t *testing.T) {
	g, _, now := stableGroup(t, 1)
	for _, tc := range []struct {
		name string
		req  func() *kmsg.JoinGroupRequest
		want int16
	}{
		{"session too short", func() *kmsg.JoinGroupRequest { r := joinReq("", "m"); r.SessionTimeoutMillis = 10; return r }, kerr.InvalidSessionTimeout.Code},
		{"session too long", func() *kmsg.JoinGroupRequest { r := joinReq("", "m"); r.SessionTimeoutMillis = 1 << 30; return r }, kerr.InvalidSessionTimeout.Code},
		{"other protocol type", func() *kmsg.JoinGroupRequest { r := joinReq("", "m"); r.ProtocolType = "connect"; return r }, kerr.InconsistentGroupProtocol.Code},
		{"no common protocol", func() *kmsg.JoinGroupRequest { r := joinReq("", "m"); r.Protocols[0].Name = "roundrobin"; return r }, kerr.InconsistentGroupProtocol.Code},
		{"unknown member id", func() *kmsg.JoinGroupRequest { return joinReq("ghost", "m") }, kerr.UnknownMemberID.Code},
		{"v3 joins without the member-id round trip", func() *kmsg.JoinGroupRequest { r := joinReq("", "m"); r.Version = 3; return r }, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := join(g, now, tc.req())
			if tc.want < 0 {
				if b.r != nil {
					t.Fatalf("v3 join answered at once: %s", code(b.join(t).ErrorCode))
				}
				return
			}
			if c := b.join(t).ErrorCode; c != tc.want {
				t.Fatalf("got %s, want %s", code(c), code(tc.want))
			}
		})
	}
	// An empty group accepts any protocol type again.
	e := New("e", testConfig())
	r := joinReq("", "m")
	r.ProtocolType = ""
	if c := join(e, t0, r).join(t).ErrorCode; c != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("empty protocol type: %s", code(c))
	}
}

func TestClassicFencingTable(t *testing.T) {
	g, ids, now := stableGroup(t, 2)
	inst := "i"
	for _, tc := range []struct {
		name string
		do   func() int16
		want int16
	}{
		{"heartbeat ok", func() int16 { return heartbeat(g, now, ids[0], 1) }, 0},
		{"heartbeat old generation", func() int16 { return heartbeat(g, now, ids[0], 0) }, kerr.IllegalGeneration.Code},
		{"heartbeat unknown member", func() int16 { return heartbeat(g, now, "ghost", 1) }, kerr.UnknownMemberID.Code},
		{"heartbeat unknown instance", func() int16 {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Version, r.Group, r.MemberID, r.Generation, r.InstanceID = 4, "g", ids[0], 1, &inst
			return g.Heartbeat(now, r).ErrorCode
		}, kerr.UnknownMemberID.Code},
		{"sync old generation", func() int16 { return syncG(g, now, syncReq(ids[1], 0, nil)).sync(t).ErrorCode }, kerr.IllegalGeneration.Code},
		{"sync wrong protocol", func() int16 {
			r := syncReq(ids[1], 1, nil)
			p := "sticky"
			r.Protocol = &p
			return syncG(g, now, r).sync(t).ErrorCode
		}, kerr.InconsistentGroupProtocol.Code},
		{"commit old generation", func() int16 { return commitCode(g, now, 8, 0, ids[0]) }, kerr.IllegalGeneration.Code},
		{"commit unknown member", func() int16 { return commitCode(g, now, 8, 1, "ghost") }, kerr.UnknownMemberID.Code},
		{"commit without generation to a live group", func() int16 { return commitCode(g, now, 8, -1, "") }, kerr.UnknownMemberID.Code},
		{"commit ok", func() int16 { return commitCode(g, now, 8, 1, ids[1]) }, 0},
		// A transactional commit names a member only from TxnOffsetCommit v3
		// on; without one (sarama's AddMessageToTxn) a live group accepts it.
		{"txn commit without generation to a live group", func() int16 { return txnCommitCode(g, now, -1, "") }, 0},
		{"txn commit unknown member", func() int16 { return txnCommitCode(g, now, 1, "ghost") }, kerr.UnknownMemberID.Code},
		{"txn commit old generation", func() int16 { return txnCommitCode(g, now, 0, ids[0]) }, kerr.IllegalGeneration.Code},
		{"txn commit ok", func() int16 { return txnCommitCode(g, now, 1, ids[1]) }, 0},
	} {
		if c := tc.do(); c != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, code(c), code(tc.want))
		}
	}
	// During CompletingRebalance commits are refused.
	newMember(t, g, now)
	b0 := join(g, now, joinReq(ids[0], "m"))
	b1 := join(g, now, joinReq(ids[1], "m"))
	_, _ = b0.join(t), b1.join(t)
	if g.State() != CompletingRebalance {
		t.Fatalf("state %v", g.State())
	}
	if c := commitCode(g, now, 8, 2, ids[0]); c != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit while completing: %s", code(c))
	}
	// A transactional commit does not wait for the rebalance, as in Kafka.
	if c := txnCommitCode(g, now, 2, ids[0]); c != 0 {
		t.Fatalf("txn commit while completing: %s", code(c))
	}
}

func TestClassicCooperativeStyleRejoinKeepsGeneration(t *testing.T) {
	// A follower rejoining a stable group with unchanged metadata gets the
	// current generation back; a changed subscription rebalances.
	g, ids, now := stableGroup(t, 2)
	r := join(g, now, joinReq(ids[1], "m")).join(t)
	if r.Generation != 1 || g.State() != Stable {
		t.Fatalf("unchanged rejoin: gen %d state %v", r.Generation, g.State())
	}
	b := join(g, now, joinReq(ids[1], "changed"))
	if b.r != nil || g.State() != PreparingRebalance {
		t.Fatalf("changed rejoin: state %v", g.State())
	}
	// The leader rejoining always rebalances.
	b0 := join(g, now, joinReq(ids[0], "m"))
	if b0.join(t).Generation != 2 || b.join(t).Generation != 2 {
		t.Fatal("rebalance did not complete with both members")
	}
}
