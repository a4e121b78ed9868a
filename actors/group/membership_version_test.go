package group

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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

// step does one random thing to a script's group at *now (moving it on
// when time passes) and says what it did.
type step func(rng *rand.Rand, now *time.Time, i int) (what string)

// scripts runs 20 random scripts of 300 steps, each on a fresh group that
// setup prepares, checking the version after every step (versionWatch).
func scripts(t *testing.T, stream uint64, setup func(t *testing.T, g *Group) step) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, stream))
			g := New("g", testConfig())
			w := watchVersion(t, g)
			now := t0
			next := setup(t, g)
			for i := range 300 {
				w.check(next(rng, &now, i))
			}
			if w.moves == 0 {
				t.Fatal("the version never moved")
			}
		})
	}
}

// TestMembershipVersionFollowsClassicGroups drives classic groups with
// random joins, syncs, heartbeats, leaves and time.
func TestMembershipVersionFollowsClassicGroups(t *testing.T) {
	scripts(t, 1, func(t *testing.T, g *Group) step {
		var ids []string
		return func(rng *rand.Rand, now *time.Time, i int) string {
			switch op := rng.IntN(8); {
			case op == 0 || len(ids) == 0:
				id, _ := newMember(t, g, *now)
				ids = append(ids, id)
				return "a new member's join"
			case op == 1:
				id := ids[rng.IntN(len(ids))]
				join(g, *now, joinReq(id, []string{"m", "n"}[rng.IntN(2)]))
				return "a rejoin of " + id
			case op == 2:
				assign := map[string]string{}
				for _, id := range ids {
					assign[id] = fmt.Sprintf("a-%s-%d", id, i)
				}
				for _, id := range ids {
					syncG(g, *now, syncReq(id, g.Generation(), assign))
				}
				return "every member's sync"
			case op == 3:
				g.LeaveGroup(*now, leaveReq(ids[rng.IntN(len(ids))], nil))
				return "a leave"
			case op == 4:
				inst := fmt.Sprint("i", rng.IntN(2))
				join(g, *now, staticJoinReq("", inst))
				return "a static join of " + inst
			case op == 5:
				*now = now.Add(time.Duration(rng.IntN(15)) * time.Second)
				g.Tick(*now)
				return "time passing"
			default:
				for _, id := range ids {
					heartbeat(g, *now, id, g.Generation())
				}
				return "heartbeats"
			}
		}
	})
}

// TestMembershipVersionFollowsConsumerGroups drives KIP-848 groups with
// random heartbeats, subscription changes, leaves, new topics and time; a
// stable group's heartbeats leave the version where it was.
func TestMembershipVersionFollowsConsumerGroups(t *testing.T) {
	scripts(t, 2, func(t *testing.T, g *Group) step {
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
		return func(rng *rand.Rand, now *time.Time, i int) string {
			m := ms[rng.IntN(len(ms))]
			switch rng.IntN(8) {
			case 0:
				if m.regex == nil {
					m.subs = [][]string{{"t"}, {"u"}, {"t", "u"}}[rng.IntN(3)]
				}
				m.beat(*now)
				return m.id + "'s subscription change"
			case 1:
				g.ConsumerHeartbeat(*now, client, m.req(-1), topics)
				m.epoch, m.owned = 0, map[string][]int32{}
				return m.id + "'s leave"
			case 2:
				topics[fmt.Sprint("v", i)] = 1
				return "a new topic"
			case 3:
				*now = now.Add(time.Duration(rng.IntN(30)) * time.Second)
				g.Tick(*now)
				return "time passing"
			default:
				if r := m.beat(*now); r.ErrorCode != 0 {
					m.epoch, m.owned = 0, map[string][]int32{}
				}
				return m.id + "'s heartbeat"
			}
		}
	})
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

// shareBeat sends id's ShareGroupHeartbeat at its epoch in epochs and
// keeps the epoch answered (or forgets it on an error).
func shareBeat(g *Group, now time.Time, topics fakeTopics, epochs map[string]int32, id string, epoch int32) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = "g", id, epoch, []string{"t"}
	if r := g.ShareHeartbeat(now, client, req, topics); r.ErrorCode == 0 {
		epochs[id] = r.MemberEpoch
	} else {
		delete(epochs, id)
	}
}

// TestMembershipVersionFollowsShareGroups drives share groups with random
// joins, heartbeats, leaves, topic changes and time; a stable group's
// heartbeats leave the version where it was.
func TestMembershipVersionFollowsShareGroups(t *testing.T) {
	scripts(t, 3, func(t *testing.T, g *Group) step {
		topics, epochs := fakeTopics{"t": 4}, map[string]int32{}
		return func(rng *rand.Rand, now *time.Time, _ int) string {
			id := fmt.Sprint("s", rng.IntN(4))
			switch rng.IntN(6) {
			case 0:
				shareBeat(g, *now, topics, epochs, id, -1)
				return id + "'s leave"
			case 1:
				topics["t"]++
				return "a partition added"
			case 2:
				*now = now.Add(time.Duration(rng.IntN(30)) * time.Second)
				g.Tick(*now)
				return "time passing"
			default:
				shareBeat(g, *now, topics, epochs, id, epochs[id])
				return id + "'s heartbeat"
			}
		}
	})
	g := New("g", testConfig())
	topics, epochs := fakeTopics{"t": 4}, map[string]int32{}
	for range 3 {
		shareBeat(g, t0, topics, epochs, "a", epochs["a"])
		shareBeat(g, t0, topics, epochs, "b", epochs["b"])
	}
	v := g.MembershipVersion()
	for at := t0; at.Before(t0.Add(time.Minute)); at = at.Add(5 * time.Second) {
		shareBeat(g, at, topics, epochs, "a", epochs["a"])
		shareBeat(g, at, topics, epochs, "b", epochs["b"])
	}
	if g.MembershipVersion() != v {
		t.Fatal("a stable share group's heartbeats moved the membership version")
	}
}

// TestMembershipVersionFollowsMixedGroups drives groups of both protocols
// (mixed.go) with random classic joins, syncs, heartbeats and leaves,
// consumer-protocol heartbeats and leaves, and time: the group moves
// between the classic and the consumer protocol as its members come and go.
func TestMembershipVersionFollowsMixedGroups(t *testing.T) {
	switches := map[string]int{} // "classic>consumer": how often the scripts moved a group so
	scripts(t, 4, func(t *testing.T, g *Group) step {
		var cs []*ccm
		for range 3 {
			cs = append(cs, newCCM(t, g, false))
		}
		ms := []*cgm{newCGM(t, g, "m0"), newCGM(t, g, "m1")}
		was, had := g.Kind(), false
		return func(rng *rand.Rand, now *time.Time, i int) string {
			defer func() {
				if k := g.Kind(); k != was && had && g.HasMembers() {
					switches[was.String()+">"+k.String()]++
				}
				was, had = g.Kind(), g.HasMembers()
			}()
			c, m := cs[rng.IntN(len(cs))], ms[rng.IntN(len(ms))]
			switch rng.IntN(9) {
			case 0, 1:
				b := c.join(*now)
				if r, ok := b.r.(*kmsg.JoinGroupResponse); ok && (r.ErrorCode == 0 || r.ErrorCode == kerr.MemberIDRequired.Code) {
					c.id, c.gen = r.MemberID, r.Generation
				}
				return "a classic join"
			case 2:
				assign := map[string][]byte{}
				for j, o := range cs {
					a := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{int32(j)}}}}
					assign[o.id] = a.AppendTo(nil)
				}
				syncG(g, *now, c.syncReq(assign))
				return "a classic sync"
			case 3:
				c.heartbeat(*now)
				return "a classic heartbeat"
			case 4:
				g.LeaveGroup(*now, leaveReq(c.id, nil))
				return "a classic leave"
			case 5:
				g.ConsumerHeartbeat(*now, client, m.req(-1), m.topics)
				m.epoch, m.owned = 0, map[string][]int32{}
				return m.id + "'s leave"
			case 6:
				*now = now.Add(time.Duration(rng.IntN(15)) * time.Second)
				g.Tick(*now)
				return "time passing"
			default:
				if r := m.beat(*now); r.ErrorCode != 0 {
					m.epoch, m.owned = 0, map[string][]int32{}
				}
				return m.id + "'s heartbeat"
			}
		}
	})
	if switches["classic>consumer"] == 0 || switches["consumer>classic"] == 0 {
		t.Fatalf("the scripts never moved a group with members between protocols: %v", switches)
	}
	t.Logf("protocol switches: %v", switches)
}
