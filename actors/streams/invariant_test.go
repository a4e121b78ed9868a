package streams

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// checkOneActiveOwner fails if a task is active on two members, in the
// group's view (assigned or still being revoked) or in the clients'.
func checkOneActiveOwner(t *testing.T, step string, g *Group, sims []*sim) {
	t.Helper()
	group := map[taskID]string{}
	for id, m := range g.members {
		for _, s := range []taskSet{m.assigned.Active, m.revoking.Active} {
			for task := range s {
				if prev, ok := group[task]; ok && prev != id {
					t.Fatalf("%s: task %v active on members %s and %s", step, task, prev, id)
				}
				group[task] = id
			}
		}
	}
	// No process holds a task both active and standby, in the target or
	// in what the members hold.
	for _, view := range []func(string) tasks{
		func(id string) tasks { return g.target[id] },
		func(id string) tasks { return g.members[id].assigned },
	} {
		activeOn := map[taskID]string{}
		for id, m := range g.members {
			for task := range view(id).Active {
				activeOn[task] = m.process
			}
		}
		for id, m := range g.members {
			for task := range view(id).Standby {
				if p, ok := activeOn[task]; ok && p == m.process {
					t.Fatalf("%s: task %v active and standby on process %s", step, task, p)
				}
			}
		}
	}
	for task, ids := range activeOwners(sims...) {
		if len(ids) > 1 {
			t.Fatalf("%s: task %v held by clients %v", step, task, ids)
		}
	}
}

// A random script of joins, leaves, restarts, expiries, topic growth and
// heartbeats that confirm or delay revocation never has a task active on
// two members (nor a standby beside its active), never changes Save
// without moving Version, and ends with every task assigned once when
// everyone heartbeats.
func TestNeverTwoActiveOwners(t *testing.T) {
	rng := rand.New(rand.NewSource(1071))
	for run := 0; run < 150; run++ {
		cfg := testConfig()
		cfg.NumStandbyReplicas = rng.Intn(2)
		g := New(cfg)
		topics := topicsOf("in", 1+rng.Intn(8), "app-store-changelog", 0)
		topics = topics.with("app-store-changelog", topics["in"].Partitions)
		var sims []*sim
		for i := 0; i < 5; i++ {
			sims = append(sims, newSim(fmt.Sprintf("m%d", i), fmt.Sprintf("p%d", i%3), oneSub("in")))
		}
		joined := make([]bool, len(sims))
		now := t0
		saved, version := g.Save(), g.Version()
		for step := 0; step < 300; step++ {
			i := rng.Intn(len(sims))
			s := sims[i]
			label := fmt.Sprintf("run %d step %d", run, step)
			switch r := rng.Intn(12); {
			case r == 10 && joined[i]: // a restart: it drops its tasks and rejoins
				s.epoch, s.owned, s.want = 0, newTasks(), nil
				s.beat(t, g, now, topics, true)
				joined[i] = g.members[s.id] != nil
			case r == 11 && topics["in"].Partitions < 12: // the source and its changelog grow
				n := topics["in"].Partitions + 1
				topics = topics.with("in", n).with("app-store-changelog", n)
			case r == 0 && joined[i]: // leave
				req := s.request()
				req.MemberEpoch = -1
				g.Heartbeat(now, Client{}, req, topics)
				s.epoch, s.owned, s.want = 0, newTasks(), nil
				joined[i] = false
			case r == 1: // time passes; the silent expire
				now = now.Add(time.Duration(rng.Intn(20)) * time.Second)
				for _, id := range g.Expire(now) {
					for j, o := range sims {
						if o.id == id {
							o.epoch, o.owned, o.want = 0, newTasks(), nil
							joined[j] = false
						}
					}
				}
			case r < 6: // heartbeat that confirms
				s.beat(t, g, now, topics, true)
				joined[i] = s.epoch > 0 || g.members[s.id] != nil
			default: // heartbeat that delays revocation
				s.beat(t, g, now, topics, false)
				joined[i] = s.epoch > 0 || g.members[s.id] != nil
			}
			checkOneActiveOwner(t, label, g, sims)
			// Version moves whenever Save answers differently.
			if now := g.Save(); !reflect.DeepEqual(now, saved) {
				if g.Version() == version {
					t.Fatalf("%s: Save changed but Version stayed %d", label, version)
				}
				saved, version = now, g.Version()
			}
		}
		// Members fenced for a stale epoch keep being fenced until their
		// session ends (Kafka 4.2 checks a known member's epoch on a join
		// too): let the sessions of the silent ones run out, then have
		// everyone heartbeat.
		now = now.Add(46 * time.Second)
		for _, s := range sims {
			if g.members[s.id] != nil && s.last != nil && s.last.ErrorCode == 0 {
				s.beat(t, g, now, topics, true)
			}
		}
		for _, id := range g.Expire(now) {
			for _, o := range sims {
				if o.id == id {
					o.epoch, o.owned, o.want = 0, newTasks(), nil
				}
			}
		}
		settle(t, g, now, topics, sims...)
		checkOneActiveOwner(t, fmt.Sprintf("run %d settled", run), g, sims)
		if got, want := len(activeOwners(sims...)), int(topics["in"].Partitions); got != want {
			t.Fatalf("run %d: %d tasks held after settling, want %d", run, got, want)
		}
	}
}
