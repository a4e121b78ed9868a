package group

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// versionWatch checks the rule the coordinator relies on to skip encoding
// the membership: while MembershipVersion stays, MembershipToSave answers
// the same.
type versionWatch struct {
	t     *testing.T
	g     *Group
	v     MembershipVersion
	b     []byte
	save  bool
	moves int
}

func watchVersion(t *testing.T, g *Group) *versionWatch {
	w := &versionWatch{t: t, g: g}
	w.v = g.MembershipVersion()
	w.b, w.save = g.MembershipToSave()
	return w
}

func (w *versionWatch) check(step string) {
	w.t.Helper()
	v := w.g.MembershipVersion()
	b, save := w.g.MembershipToSave()
	if v == w.v && (save != w.save || !bytes.Equal(b, w.b) || (b == nil) != (w.b == nil)) {
		w.t.Fatalf("after %s the membership to save changed but its version did not:\nwas (%v) %s\nnow (%v) %s", step, w.save, w.b, save, b)
	}
	if v != w.v {
		w.moves++
	}
	w.v, w.b, w.save = v, b, save
}

// TestMembershipVersionFollowsClassicGroups drives classic groups with
// random joins, syncs, heartbeats, leaves and time.
func TestMembershipVersionFollowsClassicGroups(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			g := New("g", testConfig())
			w := watchVersion(t, g)
			now := t0
			var ids []string
			for step := range 300 {
				var what string
				switch op := rng.IntN(8); {
				case op == 0 || len(ids) == 0:
					id, _ := newMember(t, g, now)
					ids = append(ids, id)
					what = "a new member's join"
				case op == 1:
					id := ids[rng.IntN(len(ids))]
					join(g, now, joinReq(id, []string{"m", "n"}[rng.IntN(2)]))
					what = "a rejoin of " + id
				case op == 2:
					assign := map[string]string{}
					for _, id := range ids {
						assign[id] = fmt.Sprintf("a-%s-%d", id, step)
					}
					for _, id := range ids {
						syncG(g, now, syncReq(id, g.Generation(), assign))
					}
					what = "every member's sync"
				case op == 3:
					req := kmsg.NewPtrLeaveGroupRequest()
					req.Version, req.Group = 3, "g"
					m := kmsg.NewLeaveGroupRequestMember()
					m.MemberID = ids[rng.IntN(len(ids))]
					req.Members = append(req.Members, m)
					g.LeaveGroup(now, req)
					what = "a leave"
				case op == 4:
					inst := fmt.Sprint("i", rng.IntN(2))
					join(g, now, staticJoinReq("", inst))
					what = "a static join of " + inst
				case op == 5:
					now = now.Add(time.Duration(rng.IntN(15)) * time.Second)
					g.Tick(now)
					what = "time passing"
				default:
					for _, id := range ids {
						heartbeat(g, now, id, g.Generation())
					}
					what = "heartbeats"
				}
				w.check(what)
			}
			if w.moves == 0 {
				t.Fatal("the version never moved")
			}
		})
	}
}

// TestMembershipVersionFollowsConsumerGroups drives KIP-848 groups with
// random heartbeats, subscription changes, leaves, new topics and time; a
// stable group's heartbeats leave the version where it was.
func TestMembershipVersionFollowsConsumerGroups(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2))
			g := New("g", testConfig())
			w := watchVersion(t, g)
			now := t0
			topics := fakeTopics{"t": 6, "u": 2}
			var ms []*cgm
			for i := range 4 {
				m := newCGM(t, g, fmt.Sprint("m", i))
				m.topics = topics
				if i == 3 {
					re := "t|v.*"
					m.subs, m.regex = nil, &re
				}
				ms = append(ms, m)
			}
			for step := range 300 {
				m := ms[rng.IntN(len(ms))]
				var what string
				switch rng.IntN(8) {
				case 0:
					if m.regex == nil {
						m.subs = [][]string{{"t"}, {"u"}, {"t", "u"}}[rng.IntN(3)]
					}
					m.beat(now)
					what = m.id + "'s subscription change"
				case 1:
					g.ConsumerHeartbeat(now, client, m.req(-1), topics)
					m.epoch, m.owned = 0, map[string][]int32{}
					what = m.id + "'s leave"
				case 2:
					topics[fmt.Sprint("v", step)] = 1
					what = "a new topic"
				case 3:
					now = now.Add(time.Duration(rng.IntN(30)) * time.Second)
					g.Tick(now)
					what = "time passing"
				default:
					if r := m.beat(now); r.ErrorCode != 0 {
						m.epoch, m.owned = 0, map[string][]int32{}
					}
					what = m.id + "'s heartbeat"
				}
				w.check(what)
			}
		})
	}
	g := New("g", testConfig())
	a, b := newCGM(t, g, "a"), newCGM(t, g, "b")
	a.beat(t0)
	b.beat(t0)
	converge(t, t0, a, b)
	v := g.MembershipVersion()
	for at := t0; at.Before(t0.Add(time.Minute)); at = at.Add(5 * time.Second) {
		a.beat(at)
		b.beat(at)
	}
	if g.MembershipVersion() != v {
		t.Fatal("a stable group's heartbeats moved the membership version")
	}
}

// TestMembershipVersionFollowsShareGroups drives share groups with random
// joins, heartbeats, leaves, topic changes and time; a stable group's
// heartbeats leave the version where it was.
func TestMembershipVersionFollowsShareGroups(t *testing.T) {
	topics := fakeTopics{"t": 4}
	epochs := map[string]int32{}
	beat := func(g *Group, now time.Time, id string, epoch int32) {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = "g", id, epoch, []string{"t"}
		if r := g.ShareHeartbeat(now, client, req, topics); r.ErrorCode == 0 {
			epochs[id] = r.MemberEpoch
		} else {
			delete(epochs, id)
		}
	}
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			g := New("g", testConfig())
			w := watchVersion(t, g)
			now := t0
			clear(epochs)
			for range 300 {
				id := fmt.Sprint("s", rng.IntN(4))
				var what string
				switch rng.IntN(6) {
				case 0:
					beat(g, now, id, -1)
					what = id + "'s leave"
				case 1:
					topics["t"]++
					what = "a partition added"
				case 2:
					now = now.Add(time.Duration(rng.IntN(30)) * time.Second)
					g.Tick(now)
					what = "time passing"
				default:
					beat(g, now, id, epochs[id])
					what = id + "'s heartbeat"
				}
				w.check(what)
			}
		})
	}
	g := New("g", testConfig())
	clear(epochs)
	for range 3 {
		beat(g, t0, "a", epochs["a"])
		beat(g, t0, "b", epochs["b"])
	}
	v := g.MembershipVersion()
	for at := t0; at.Before(t0.Add(time.Minute)); at = at.Add(5 * time.Second) {
		beat(g, at, "a", epochs["a"])
		beat(g, at, "b", epochs["b"])
	}
	if g.MembershipVersion() != v {
		t.Fatal("a stable share group's heartbeats moved the membership version")
	}
}
