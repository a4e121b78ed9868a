package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/groupstore"
)

// moved returns a fresh group, as a new coordinator loads it, with g's
// saved membership restored at now.
func moved(t *testing.T, g *Group, now time.Time) *Group {
	t.Helper()
	b, save := g.MembershipToSave()
	if !save || b == nil {
		t.Fatalf("nothing to save (%v)", save)
	}
	n := New("g", testConfig())
	n.Load(now, groupstore.State{Offsets: map[groupstore.TP]groupstore.Commit{}})
	if err := n.RestoreMembership(now, b, fakeTopics{"t": 6}); err != nil {
		t.Fatal(err)
	}
	if again, _ := n.MembershipToSave(); string(again) != string(b) {
		t.Fatalf("restored membership saves as\n%s\nwant\n%s", again, b)
	}
	return n
}

// TestClassicMembershipSurvivesMove: a stable classic group restored on a
// new coordinator goes on without a rebalance (heartbeats, a follower's
// JoinGroup with unchanged metadata and SyncGroup are answered in the
// generation); a member that does not come back is removed one session
// timeout after the restore, which rebalances the group.
func TestClassicMembershipSurvivesMove(t *testing.T) {
	g, ids, now := stableGroup(t, 3)
	later := now.Add(time.Hour) // past every session of the old coordinator
	n := moved(t, g, later)
	if n.State() != Stable || n.Generation() != 1 || n.Kind() != KindClassic {
		t.Fatalf("restored: %v generation %d kind %v", n.State(), n.Generation(), n.Kind())
	}
	for _, id := range ids {
		if c := heartbeat(n, later, id, 1); c != 0 {
			t.Fatalf("heartbeat of %s after the move: %s", id, code(c))
		}
	}
	if r := syncG(n, later, syncReq(ids[1], 1, nil)).sync(t); r.ErrorCode != 0 || string(r.MemberAssignment) != "a-"+ids[1] {
		t.Fatalf("follower sync after the move: %+v", r)
	}
	if r := join(n, later, joinReq(ids[2], "m")).join(t); r.ErrorCode != 0 || r.Generation != 1 || n.State() != Stable {
		t.Fatalf("follower rejoin after the move: %s gen %d, state %v", code(r.ErrorCode), r.Generation, n.State())
	}
	// ids[2] stops heartbeating: its session (10 s) runs from the restore.
	for at := later; at.Before(later.Add(9 * time.Second)); at = at.Add(3 * time.Second) {
		for _, id := range ids[:2] {
			if c := heartbeat(n, at, id, 1); c != 0 {
				t.Fatalf("heartbeat of %s: %s", id, code(c))
			}
		}
	}
	if n.State() != Stable {
		t.Fatalf("before the session timeout: %v", n.State())
	}
	if c := heartbeat(n, later.Add(11*time.Second), ids[0], 1); c != kerr.RebalanceInProgress.Code {
		t.Fatalf("after the lost member's session: %s, want REBALANCE_IN_PROGRESS", code(c))
	}
}

// TestClassicMembershipSavedAtStablePoints: mid-rebalance the membership
// to save stays the last completed generation's; once every member has
// left, the Empty group's protocol type and generation (no members); an
// unreadable membership is an error that leaves the group as it was.
func TestClassicMembershipSavedAtStablePoints(t *testing.T) {
	g, ids, now := stableGroup(t, 2)
	stable, _ := g.MembershipToSave()
	join(g, now, joinReq(ids[1], "other")) // new metadata: a rebalance
	if g.State() != PreparingRebalance {
		t.Fatalf("state %v", g.State())
	}
	if _, save := g.MembershipToSave(); save {
		t.Fatal("a rebalancing group saves its membership")
	}
	n := New("g", testConfig())
	if err := n.RestoreMembership(now, stable, fakeTopics{"t": 6}); err != nil || n.Generation() != 1 || n.State() != Stable {
		t.Fatalf("the generation saved before the rebalance restores as %v gen %d (%v)", n.State(), n.Generation(), err)
	}

	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 5, "g"
	for _, id := range ids {
		req.Members = append(req.Members, kmsg.LeaveGroupRequestMember{MemberID: id})
	}
	g.LeaveGroup(now, req)
	if b, save := g.MembershipToSave(); !save || string(b) != `{"kind":"classic","protocolType":"consumer","generation":3}` {
		t.Fatalf("emptied group saves %s (%v), want its protocol type and generation", b, save)
	}

	bad := New("g", testConfig())
	for _, b := range []string{"{", `{"kind":"mystery"}`, `{"kind":"consumer","consumers":[{"id":"a","assigned":[{"topic":"zz","partitions":[0]}]}]}`} {
		if err := bad.RestoreMembership(now, []byte(b), fakeTopics{"t": 6}); err == nil {
			t.Errorf("%s restored without an error", b)
		}
		if bad.Kind() != KindNone || bad.HasMembers() {
			t.Fatalf("%s: a failed restore left kind %v, members %v", b, bad.Kind(), bad.HasMembers())
		}
	}
}

// TestEmptyClassicGroupKeepsItsGeneration: an Empty classic group restored
// on a new coordinator keeps its protocol type and generation, as Kafka's
// Empty GroupMetadata record keeps them: the coordinator writes that
// record again, DescribeGroups answers the Empty classic group, and the
// next member's join starts the generation after it. A group that only
// stores offsets (generation 0) saves no membership.
func TestEmptyClassicGroupKeepsItsGeneration(t *testing.T) {
	g, ids, now := stableGroup(t, 1)
	g.LeaveGroup(now, leaveReq(ids[0], nil))
	if g.State() != Empty || g.Generation() != 2 {
		t.Fatalf("after the last member left: %v generation %d", g.State(), g.Generation())
	}
	wantRecord := describeMetadata(t, g)
	later := now.Add(time.Hour)
	n := moved(t, g, later)
	if n.State() != Empty || n.Kind() != KindClassic || n.Generation() != 2 || n.HasMembers() {
		t.Fatalf("restored: %v kind %v generation %d members %v", n.State(), n.Kind(), n.Generation(), n.HasMembers())
	}
	if got := describeMetadata(t, n); got != wantRecord || got != "v1 consumer gen 2 protocol null leader null members" {
		t.Fatalf("restored group's record %q, want the one written before the move %q", got, wantRecord)
	}
	if d := n.DescribeGroup(later, 5); d.ErrorCode != 0 || d.State != "Empty" || d.ProtocolType != "consumer" || len(d.Members) != 0 {
		t.Fatalf("DescribeGroups of the restored group: %+v", d)
	}
	_, b := newMember(t, n, later)
	n.Tick(later.Add(time.Second)) // past the initial rebalance delay
	if r := b.join(t); r.ErrorCode != 0 || r.Generation != 3 {
		t.Fatalf("a new member's join after the move: %s generation %d, want 3", code(r.ErrorCode), r.Generation)
	}

	offsetsOnly := New("g", testConfig())
	commit(offsetsOnly, now, commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 1}}))
	if b, save := offsetsOnly.MembershipToSave(); !save || b != nil {
		t.Fatalf("a group that only stores offsets saves %s (%v), want none", b, save)
	}
}

// TestConsumerMembershipSurvivesMove: a KIP-848 group restored on a new
// coordinator keeps member ids, epochs and assignments: heartbeats go on
// with no fencing and no new assignment, a member mid-revocation still
// owes its revoked partitions, and a member that does not come back is
// fenced one session timeout after the restore, its partitions going to
// the others.
func TestConsumerMembershipSurvivesMove(t *testing.T) {
	g := New("g", testConfig())
	a, b := newCGM(t, g, "a"), newCGM(t, g, "b")
	a.beat(t0)
	b.beat(t0)
	converge(t, t0, a, b)
	epoch := a.epoch
	later := t0.Add(time.Hour)
	n := moved(t, g, later)
	if n.State() != Stable || n.Kind() != KindConsumer {
		t.Fatalf("restored: %v kind %v", n.State(), n.Kind())
	}
	a.g, b.g = n, n
	for _, m := range []*cgm{a, b} {
		owned := m.count()
		if r := m.beat(later); r.ErrorCode != 0 || r.MemberEpoch != epoch || m.count() != owned {
			t.Fatalf("%s after the move: %s epoch %d owns %d (was %d at epoch %d)", m.id, code(r.ErrorCode), r.MemberEpoch, m.count(), owned, epoch)
		}
	}

	// A third member joins: a and b are asked to revoke; the group moves
	// again before they confirm.
	c := newCGM(t, n, "c")
	c.beat(later)
	a.beat(later)
	if n.State() != Reconciling || a.count() >= 3 {
		t.Fatalf("before the second move: %v, a owns %v", n.State(), a.owned)
	}
	n2 := moved(t, n, later)
	a.g, b.g, c.g = n2, n2, n2
	converge(t, later, a, b, c)
	if a.count()+b.count()+c.count() != 6 || c.count() != 2 {
		t.Fatalf("after converging: a %v b %v c %v", a.owned, b.owned, c.owned)
	}

	// c stops heartbeating: fenced one session timeout (45 s) after the
	// last restore, and its partitions go back.
	n3 := moved(t, n2, later)
	a.g, b.g = n3, n3
	at := later
	for ; at.Before(later.Add(44 * time.Second)); at = at.Add(5 * time.Second) {
		a.beat(at)
		b.beat(at)
	}
	if len(n3.cons.members) != 3 {
		t.Fatalf("c fenced before its session timeout: %d members", len(n3.cons.members))
	}
	converge(t, later.Add(46*time.Second), a, b)
	if len(n3.cons.members) != 2 || a.count()+b.count() != 6 {
		t.Fatalf("after c's session: %d members, a %v b %v", len(n3.cons.members), a.owned, b.owned)
	}
}

// TestEmptyShareGroupLasts: a share group without members lasts, as on
// Kafka, where share groups do not expire: one created empty by an admin
// (AlterShareGroupOffsets) and one whose last member timed out are never
// idle, so the cleanup keeps them, and each is restored on a new
// coordinator as an Empty share group at its group epoch. Deleting one is
// NON_EMPTY_GROUP while it has a member.
func TestEmptyShareGroupLasts(t *testing.T) {
	created := New("g", testConfig())
	if c := created.ShareAdmin(t0, true); c != 0 {
		t.Fatalf("admin creation: %s", code(c))
	}
	left := New("g", testConfig())
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.SubscribedTopicNames = "g", "a", []string{"t"}
	if r := left.ShareHeartbeat(t0, client, req, fakeTopics{"t": 4}); r.ErrorCode != 0 {
		t.Fatalf("join: %s", code(r.ErrorCode))
	}
	if c := left.Delete(t0); c != kerr.NonEmptyGroup.Code {
		t.Fatalf("deleting a share group with a member: %s", code(c))
	}
	epoch := left.share.Save().Epoch
	later := t0.Add(time.Hour)
	left.Tick(later) // the member's session ran out
	if left.shareMembers() != 0 || left.share.Save().Epoch <= epoch {
		t.Fatalf("after the session timeout: %d members, epoch %d (was %d)", left.shareMembers(), left.share.Save().Epoch, epoch)
	}
	for name, g := range map[string]*Group{"created by an admin": created, "left by its members": left} {
		g.Forget()
		if g.Idle() || g.Kind() != KindShare || g.State() != Empty {
			t.Fatalf("%s: after the cleanup idle %v, kind %v, state %v", name, g.Idle(), g.Kind(), g.State())
		}
		n := moved(t, g, later)
		if n.Kind() != KindShare || n.State() != Empty || !n.Exists() || n.Summary().ProtocolType != "share" {
			t.Fatalf("%s: restored as %+v", name, n.Summary())
		}
		if got, want := n.share.Save().Epoch, g.share.Save().Epoch; got != want {
			t.Fatalf("%s: restored at epoch %d, want %d", name, got, want)
		}
		if c := n.Delete(later); c != 0 {
			t.Fatalf("%s: delete: %s", name, code(c))
		}
	}
}

// TestShareMembershipSurvivesMove: a share group restored on a new
// coordinator keeps its members, epochs and assignments: heartbeats go on
// in their epoch without a new assignment, and a member that does not
// come back is removed one session timeout (45 s) after the restore, the
// group epoch moving on.
func TestShareMembershipSurvivesMove(t *testing.T) {
	g := New("g", testConfig())
	tops := fakeTopics{"t": 4}
	epochs := map[string]int32{}
	beat := func(g *Group, now time.Time, id string) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = "g", id, epochs[id], []string{"t"}
		r := g.ShareHeartbeat(now, client, req, tops)
		if r.ErrorCode != 0 {
			t.Fatalf("%s: %s", id, code(r.ErrorCode))
		}
		epochs[id] = r.MemberEpoch
		return r
	}
	for range 3 {
		beat(g, t0, "a")
		beat(g, t0, "b")
	}
	before, owned := epochs["a"], fmt.Sprint(beat(g, t0, "a").Assignment)
	later := t0.Add(time.Hour)
	n := moved(t, g, later)
	if n.Kind() != KindShare || n.State() != Stable {
		t.Fatalf("restored: kind %v state %v", n.Kind(), n.State())
	}
	if r := beat(n, later, "a"); r.MemberEpoch != before || fmt.Sprint(r.Assignment) != owned {
		t.Fatalf("a after the move: epoch %d (was %d), assignment %v (was %s)", r.MemberEpoch, before, r.Assignment, owned)
	}
	for at := later; at.Before(later.Add(44 * time.Second)); at = at.Add(5 * time.Second) {
		beat(n, at, "a")
	}
	if n.shareMembers() != 2 {
		t.Fatalf("b removed before its session timeout: %d members", n.shareMembers())
	}
	if r := beat(n, later.Add(46*time.Second), "a"); n.shareMembers() != 1 || r.MemberEpoch <= before {
		t.Fatalf("after b's session: %d members, a at epoch %d", n.shareMembers(), r.MemberEpoch)
	}
}
