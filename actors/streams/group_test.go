package streams

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// activeOwners maps each task a sim holds to the sims holding it.
func activeOwners(sims ...*sim) map[taskID][]string {
	o := map[taskID][]string{}
	for _, s := range sims {
		for t := range s.owned.Active {
			o[t] = append(o[t], s.id)
		}
	}
	return o
}

func TestJoinSplitsTasksAmongMembers(t *testing.T) {
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("%d-members", n), func(t *testing.T) {
			g := New(testConfig())
			topics := topicsOf("in", 6, "app-store-changelog", 6)
			var sims []*sim
			for i := 0; i < n; i++ {
				sims = append(sims, newSim(fmt.Sprintf("m%d", i), fmt.Sprintf("p%d", i), oneSub("in")))
			}
			settle(t, g, t0, topics, sims...)
			owners := activeOwners(sims...)
			if len(owners) != 6 {
				t.Fatalf("%d tasks held, want 6", len(owners))
			}
			for task, ids := range owners {
				if len(ids) != 1 {
					t.Errorf("task %v held by %v", task, ids)
				}
			}
			for _, s := range sims {
				if got := len(s.owned.Active); got != 6/n {
					t.Errorf("%s holds %d tasks, want %d", s.id, got, 6/n)
				}
				if s.epoch != g.Epoch() {
					t.Errorf("%s at epoch %d, group at %d", s.id, s.epoch, g.Epoch())
				}
			}
			if g.State() != Stable || g.Len() != n {
				t.Errorf("state %s with %d members", g.State(), g.Len())
			}
		})
	}
}

func TestRejoinIsSticky(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 6, "app-store-changelog", 6)
	a, b, c := newSim("a", "pa", oneSub("in")), newSim("b", "pb", oneSub("in")), newSim("c", "pc", oneSub("in"))
	settle(t, g, t0, topics, a, b, c)
	beforeA, beforeB := a.owned.Active.clone(), b.owned.Active.clone()
	// c leaves: a and b keep theirs and split c's.
	req := c.request()
	req.MemberEpoch = -1
	if resp, _ := g.Heartbeat(t0, Client{}, req, topics); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", resp)
	}
	settle(t, g, t0, topics, a, b)
	if len(beforeA.minus(a.owned.Active)) != 0 || len(beforeB.minus(b.owned.Active)) != 0 {
		t.Fatalf("a or b lost tasks when c left: a %v -> %v, b %v -> %v", beforeA.sorted(), a.active(), beforeB.sorted(), b.active())
	}
	if len(a.owned.Active) != 3 || len(b.owned.Active) != 3 {
		t.Fatalf("a %v b %v", a.active(), b.active())
	}
	// c rejoins: each of a and b gives up one task, keeping the others.
	keptA, keptB := a.owned.Active.clone(), b.owned.Active.clone()
	c = newSim("c", "pc", oneSub("in"))
	settle(t, g, t0, topics, a, b, c)
	if len(keptA.minus(a.owned.Active)) != 1 || len(keptB.minus(b.owned.Active)) != 1 || len(c.owned.Active) != 2 {
		t.Fatalf("after rejoin a %v b %v c %v", a.active(), b.active(), c.active())
	}
}

// A task moves to a new member only after its owner reports it revoked.
func TestTaskMovesOnlyAfterRevocation(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	a := newSim("a", "pa", oneSub("in"))
	settle(t, g, t0, topics, a)
	b := newSim("b", "pb", oneSub("in"))
	resp := b.beat(t, g, t0, topics, true)
	if len(resp.ActiveTasks) != 0 || resp.MemberEpoch != g.Epoch() {
		t.Fatalf("b joined with %v at %d", resp.ActiveTasks, resp.MemberEpoch)
	}
	if g.State() != Reconciling {
		t.Fatalf("state %s, want Reconciling", g.State())
	}
	// a is asked to revoke one task, and keeps its epoch until it does.
	resp = a.beat(t, g, t0, topics, false)
	if got := len(fromTaskIDs(resp.ActiveTasks)); got != 1 || resp.MemberEpoch != 2 {
		t.Fatalf("a told to keep %d tasks at epoch %d", got, resp.MemberEpoch)
	}
	// a still reports both: b gets nothing, and a is not asked again.
	a.want = nil
	if resp = a.beat(t, g, t0, topics, false); resp.ActiveTasks != nil {
		t.Fatalf("a's unchanged assignment was sent again: %v", resp.ActiveTasks)
	}
	if resp = b.beat(t, g, t0, topics, true); len(fromTaskIDs(resp.ActiveTasks)) != 0 && resp.ActiveTasks != nil {
		t.Fatalf("b given %v while a holds it", resp.ActiveTasks)
	}
	if len(g.members["b"].assigned.Active) != 0 || g.members["b"].state != stateUnreleased {
		t.Fatalf("b holds %v in state %s", g.members["b"].assigned.Active.sorted(), g.members["b"].state)
	}
	// a revokes: it moves to the group epoch; b then gets the task.
	a.owned.Active = fromTaskIDs(g.members["a"].assigned.Active.taskIDs())
	if resp = a.beat(t, g, t0, topics, false); resp.MemberEpoch != g.Epoch() {
		t.Fatalf("a at %d after revoking, group at %d", resp.MemberEpoch, g.Epoch())
	}
	resp = b.beat(t, g, t0, topics, true)
	if got := fromTaskIDs(resp.ActiveTasks); len(got) != 1 || a.owned.Active.intersects(got) {
		t.Fatalf("b given %v, a holds %v", got.sorted(), a.active())
	}
	b.beat(t, g, t0, topics, true)
	if g.State() != Stable {
		t.Fatalf("state %s", g.State())
	}
}

func TestExpiredMemberTasksMove(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 4, "app-store-changelog", 4)
	a, b := newSim("a", "pa", oneSub("in")), newSim("b", "pb", oneSub("in"))
	settle(t, g, t0, topics, a, b)
	if want := t0.Add(45 * time.Second); !g.NextDeadline().Equal(want) {
		t.Fatalf("next deadline %v, want %v", g.NextDeadline(), want)
	}
	later := t0.Add(30 * time.Second)
	a.beat(t, g, later, topics, true)
	if got := g.Expire(t0.Add(45*time.Second - 1)); len(got) != 0 {
		t.Fatalf("expired early: %v", got)
	}
	epoch := g.Epoch()
	if got := g.Expire(t0.Add(45 * time.Second)); len(got) != 1 || got[0] != "b" {
		t.Fatalf("expired %v, want [b]", got)
	}
	if g.Epoch() != epoch+1 || g.State() != Assigning {
		t.Fatalf("epoch %d state %s after expiry", g.Epoch(), g.State())
	}
	b.owned = newTasks() // b is gone
	settle(t, g, later, topics, a)
	if len(a.owned.Active) != 4 {
		t.Fatalf("a holds %v", a.active())
	}
	// b comes back: it is unknown and must rejoin.
	b.epoch = 3
	if resp := b.beat(t, g, later, topics, true); resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member's heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

func TestRebalanceTimeoutFencesUnrevokingMember(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	a := newSim("a", "pa", oneSub("in"))
	settle(t, g, t0, topics, a)
	b := newSim("b", "pb", oneSub("in"))
	b.beat(t, g, t0, topics, true)
	a.beat(t, g, t0, topics, false) // asked to revoke, never does
	if g.members["a"].state != stateUnrevoked {
		t.Fatalf("a in %s", g.members["a"].state)
	}
	deadline := t0.Add(30 * time.Second) // the sim's rebalance timeout
	if got := g.NextDeadline(); !got.Equal(deadline) {
		t.Fatalf("next deadline %v, want %v", got, deadline)
	}
	a.beat(t, g, t0.Add(20*time.Second), topics, false)
	b.beat(t, g, t0.Add(20*time.Second), topics, true)
	if got := g.Expire(deadline); len(got) != 1 || got[0] != "a" {
		t.Fatalf("expired %v, want [a]", got)
	}
	a.owned = newTasks()
	settle(t, g, deadline, topics, b)
	if len(b.owned.Active) != 2 {
		t.Fatalf("b holds %v", b.active())
	}
}

func TestStandbyTasksInGroup(t *testing.T) {
	cfg := testConfig()
	cfg.NumStandbyReplicas = 1
	g := New(cfg)
	topics := topicsOf("in", 4, "app-store-changelog", 4)
	a1, a2, b := newSim("a1", "pa", oneSub("in")), newSim("a2", "pa", oneSub("in")), newSim("b", "pb", oneSub("in"))
	settle(t, g, t0, topics, a1, a2, b)
	process := map[string]string{"a1": "pa", "a2": "pa", "b": "pb"}
	active := map[taskID]string{}
	for _, s := range []*sim{a1, a2, b} {
		for task := range s.owned.Active {
			active[task] = process[s.id]
		}
	}
	standbys := map[taskID]int{}
	for _, s := range []*sim{a1, a2, b} {
		for task := range s.owned.Standby {
			standbys[task]++
			if active[task] == process[s.id] {
				t.Errorf("standby of %v on the active's process %s", task, process[s.id])
			}
		}
	}
	for task := range active {
		if standbys[task] != 1 {
			t.Errorf("task %v has %d standbys", task, standbys[task])
		}
	}
}

func TestInitialRebalanceDelay(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = 3 * time.Second
	g := New(cfg)
	topics := topicsOf("in", 4, "app-store-changelog", 4)
	a, b := newSim("a", "pa", oneSub("in")), newSim("b", "pb", oneSub("in"))
	// During the delay members wait at epoch 1 with no tasks.
	for _, s := range []*sim{a, b, a, b} {
		resp := s.beat(t, g, t0.Add(time.Second), topics, true)
		if resp.MemberEpoch != 1 || len(resp.ActiveTasks) != 0 && resp.ActiveTasks != nil {
			t.Fatalf("%s during the delay: epoch %d tasks %v", s.id, resp.MemberEpoch, resp.ActiveTasks)
		}
	}
	if g.State() != Assigning || g.Epoch() != 3 {
		t.Fatalf("state %s epoch %d during the delay", g.State(), g.Epoch())
	}
	// The delay runs from the first join.
	if want := t0.Add(4 * time.Second); !g.NextDeadline().Equal(want) {
		t.Fatalf("next deadline %v, want %v", g.NextDeadline(), want)
	}
	if got := g.Expire(t0.Add(4 * time.Second)); len(got) != 0 || g.State() != Reconciling {
		t.Fatalf("the delay expired members %v; state %s", got, g.State())
	}
	settle(t, g, t0.Add(4*time.Second), topics, a, b)
	if len(a.owned.Active) != 2 || len(b.owned.Active) != 2 || a.epoch != 3 {
		t.Fatalf("after the delay a %v (epoch %d) b %v", a.active(), a.epoch, b.active())
	}
}

func TestStandbyConfigChangeRebalances(t *testing.T) {
	cfg := testConfig()
	g := New(cfg)
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	a, b := newSim("a", "pa", oneSub("in")), newSim("b", "pb", oneSub("in"))
	settle(t, g, t0, topics, a, b)
	epoch := g.Epoch()
	cfg.NumStandbyReplicas = 1
	g.SetConfig(cfg)
	if g.Epoch() != epoch {
		t.Fatal("SetConfig bumped the epoch before a heartbeat")
	}
	settle(t, g, t0, topics, a, b)
	if g.Epoch() != epoch+1 || len(a.owned.Standby) != 1 || len(b.owned.Standby) != 1 {
		t.Fatalf("epoch %d, standbys a %v b %v", g.Epoch(), a.owned.Standby.sorted(), b.owned.Standby.sorted())
	}
}
