package group

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ccm drives one classic member of the consumer protocol type the way a
// Kafka client does: an eager member gives up everything before it joins; a
// cooperative one reports what it owns in its subscription, and when an
// assignment takes partitions away it releases them and joins again.
type ccm struct {
	t           *testing.T
	g           *Group
	id          string
	instance    *string
	gen         int32
	protocol    string
	cooperative bool
	subs        []string
	owned       map[string][]int32
	topics      fakeTopics
}

func newCCM(t *testing.T, g *Group, cooperative bool) *ccm {
	c := &ccm{t: t, g: g, protocol: "range", cooperative: cooperative, subs: []string{"t"},
		owned: map[string][]int32{}, topics: fakeTopics{"t": 6}}
	if cooperative {
		c.protocol = "cooperative-sticky"
	}
	return c
}

func (c *ccm) metadata() []byte {
	m := kmsg.ConsumerMemberMetadata{Version: 3, Topics: c.subs}
	if c.cooperative {
		for _, tn := range sortedKeys(c.owned) {
			m.OwnedPartitions = append(m.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: tn, Partitions: c.owned[tn]})
		}
	}
	return m.AppendTo(nil)
}

func (c *ccm) joinReq() *kmsg.JoinGroupRequest {
	r := joinReq(c.id, "")
	r.InstanceID = c.instance
	r.Protocols[0].Name, r.Protocols[0].Metadata = c.protocol, c.metadata()
	return r
}

// join sends a JoinGroup and returns its (maybe parked) reply.
func (c *ccm) join(now time.Time) *box {
	if !c.cooperative {
		c.owned = map[string][]int32{}
	}
	b := &box{}
	c.g.JoinGroup(now, client, c.joinReq(), c.topics, b.reply)
	return b
}

// joined reads a JoinGroup answer, coming back with the member id when
// the coordinator asks for it.
func (c *ccm) joined(now time.Time, b *box) *kmsg.JoinGroupResponse {
	c.t.Helper()
	r := b.join(c.t)
	if r.ErrorCode == kerr.MemberIDRequired.Code {
		c.id = r.MemberID
		return c.joined(now, c.join(now))
	}
	if r.ErrorCode == 0 {
		c.id, c.gen = r.MemberID, r.Generation
	}
	return r
}

func (c *ccm) syncReq(assign map[string][]byte) *kmsg.SyncGroupRequest {
	r := syncReq(c.id, c.gen, nil)
	r.InstanceID = c.instance
	r.ProtocolType, r.Protocol = strp("consumer"), strp(c.protocol)
	for _, id := range sortedKeys(assign) {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, assign[id]
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

// synced applies a SyncGroup answer and reports whether the member must
// join again (a cooperative member that lost partitions).
func (c *ccm) synced(r *kmsg.SyncGroupResponse) (rejoin bool) {
	c.t.Helper()
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(r.MemberAssignment); err != nil {
		c.t.Fatalf("member %s: assignment %x: %v", c.id, r.MemberAssignment, err)
	}
	got := map[string][]int32{}
	for _, t := range a.Topics {
		got[t.Topic] = slices.Sorted(slices.Values(t.Partitions))
	}
	if c.cooperative {
		for tn, ps := range c.owned {
			for _, p := range ps {
				if !slices.Contains(got[tn], p) {
					rejoin = true
				}
			}
		}
		if rejoin {
			for tn, ps := range c.owned {
				c.owned[tn] = slices.DeleteFunc(ps, func(p int32) bool { return !slices.Contains(got[tn], p) })
			}
			return true
		}
	}
	c.owned = got
	return false
}

func (c *ccm) heartbeat(now time.Time) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version, r.Group, r.MemberID, r.Generation, r.InstanceID = 4, "g", c.id, c.gen, c.instance
	return c.g.Heartbeat(now, r).ErrorCode
}

// rejoin joins and syncs a member of a consumer group (answered at once)
// until it holds its assignment.
func (c *ccm) rejoin(now time.Time) {
	c.t.Helper()
	for range 10 {
		if r := c.joined(now, c.join(now)); r.ErrorCode != 0 {
			c.t.Fatalf("member %s: join: %s", c.id, code(r.ErrorCode))
		}
		b := &box{}
		c.g.SyncGroup(now, c.syncReq(nil), b.reply)
		r := b.sync(c.t)
		if r.ErrorCode == kerr.RebalanceInProgress.Code {
			continue
		}
		if r.ErrorCode != 0 {
			c.t.Fatalf("member %s: sync: %s", c.id, code(r.ErrorCode))
		}
		if !c.synced(r) {
			return
		}
	}
	c.t.Fatalf("member %s never settled", c.id)
}

// poll is the member's heartbeat, and the rejoin it asks for.
func (c *ccm) poll(now time.Time) {
	c.t.Helper()
	switch hc := c.heartbeat(now); hc {
	case 0:
	case kerr.RebalanceInProgress.Code:
		c.rejoin(now)
	default:
		c.t.Fatalf("member %s: heartbeat: %s", c.id, code(hc))
	}
}

func (c *ccm) count() int {
	n := 0
	for _, ps := range c.owned {
		n += len(ps)
	}
	return n
}

// classicRebalance runs one rebalance of a classic group: every member
// joins, the leader assigns "t" round robin, every member syncs.
func classicRebalance(t *testing.T, now *time.Time, cs ...*ccm) {
	t.Helper()
	boxes := make([]*box, len(cs))
	for i, c := range cs {
		boxes[i] = c.join(*now)
		if boxes[i].r != nil && boxes[i].r.(*kmsg.JoinGroupResponse).ErrorCode == kerr.MemberIDRequired.Code {
			c.id = boxes[i].r.(*kmsg.JoinGroupResponse).MemberID
			boxes[i] = c.join(*now)
		}
	}
	if boxes[len(cs)-1].r == nil {
		*now = now.Add(time.Second) // past the initial rebalance delay
		cs[0].g.Tick(*now)
	}
	var leader *ccm
	var members []kmsg.JoinGroupResponseMember
	for i, c := range cs {
		r := c.joined(*now, boxes[i])
		if r.ErrorCode != 0 {
			t.Fatalf("member %s: join: %s", c.id, code(r.ErrorCode))
		}
		if r.LeaderID == r.MemberID {
			leader, members = c, r.Members
		}
	}
	if leader == nil {
		t.Fatal("no leader")
	}
	assign := map[string][]byte{}
	ids := make([]string, 0, len(members))
	for _, m := range members {
		ids = append(ids, m.MemberID)
	}
	slices.Sort(ids)
	parts := map[string][]int32{}
	for p := range int32(6) {
		id := ids[int(p)%len(ids)]
		parts[id] = append(parts[id], p)
	}
	for _, id := range ids {
		a := kmsg.ConsumerMemberAssignment{Version: 3}
		if len(parts[id]) > 0 {
			a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: parts[id]}}
		}
		assign[id] = a.AppendTo(nil)
	}
	sboxes := map[*ccm]*box{}
	for _, c := range cs {
		if c != leader {
			sboxes[c] = &box{}
			c.g.SyncGroup(*now, c.syncReq(nil), sboxes[c].reply)
		}
	}
	sboxes[leader] = &box{}
	leader.g.SyncGroup(*now, leader.syncReq(assign), sboxes[leader].reply)
	for _, c := range cs {
		r := sboxes[c].sync(t)
		if r.ErrorCode != 0 {
			t.Fatalf("member %s: sync: %s", c.id, code(r.ErrorCode))
		}
		c.synced(r)
	}
}

// checkOwners fails when two members, of either protocol, own one partition.
func checkOwners(t *testing.T, cs []*ccm, ms []*cgm) {
	t.Helper()
	owner := map[int32]string{}
	own := func(who string, owned map[string][]int32) {
		for _, p := range owned["t"] {
			if o, ok := owner[p]; ok {
				t.Fatalf("partition %d owned by %s and %s", p, o, who)
			}
			owner[p] = who
		}
	}
	for _, c := range cs {
		own("classic "+c.id, c.owned)
	}
	for _, m := range ms {
		own("consumer "+m.id, m.owned)
	}
}

// mixedConverge runs every member (classic members poll, consumer members
// heartbeat) until the group is Stable and every one of the 6 partitions
// is owned, checking after each step that no partition has two owners.
func mixedConverge(t *testing.T, now time.Time, cs []*ccm, ms []*cgm) {
	t.Helper()
	for range 20 {
		for _, c := range cs {
			c.poll(now)
			checkOwners(t, cs, ms)
		}
		for _, m := range ms {
			if r := m.beat(now); r.ErrorCode != 0 {
				t.Fatalf("member %s: %s", m.id, code(r.ErrorCode))
			}
			checkOwners(t, cs, ms)
		}
		n := 0
		for _, c := range cs {
			n += c.count()
		}
		for _, m := range ms {
			n += m.count()
		}
		if n == 6 && groupOf(cs, ms).State() == Stable {
			return
		}
	}
	t.Fatalf("the group never settled: state %v", groupOf(cs, ms).State())
}

func groupOf(cs []*ccm, ms []*cgm) *Group {
	if len(cs) > 0 {
		return cs[0].g
	}
	return ms[0].g
}

func memberTypes(t *testing.T, gr *Group) map[string]int8 {
	t.Helper()
	d := gr.DescribeConsumerGroup(t0, fakeTopics{"t": 6})
	if d.ErrorCode != 0 {
		t.Fatalf("describe: %s", code(d.ErrorCode))
	}
	out := map[string]int8{}
	for _, m := range d.Members {
		out[m.MemberID] = m.MemberType
	}
	return out
}

// mixedGroup is a consumer group of two classic members (a and b, eager
// or cooperative) and one of the consumer protocol (c), upgraded from a
// classic group and settled.
func mixedGroup(t *testing.T, cfg Config, cooperative bool) (*Group, *ccm, *ccm, *cgm, time.Time) {
	t.Helper()
	gr := New("g", cfg)
	now := t0
	a, b := newCCM(t, gr, cooperative), newCCM(t, gr, cooperative)
	classicRebalance(t, &now, a, b)
	c := newCGM(t, gr, "c")
	if r := c.beat(now); r.ErrorCode != 0 {
		t.Fatalf("upgrade: %s", code(r.ErrorCode))
	}
	mixedConverge(t, now, []*ccm{a, b}, []*cgm{c})
	return gr, a, b, c, now
}

// TestUpgradeToConsumerProtocol: a ConsumerGroupHeartbeat turns a classic
// group into a consumer group without a partition having two owners; its
// classic members keep their assignment until they rejoin, then share the
// partitions with the new member.
func TestUpgradeToConsumerProtocol(t *testing.T) {
	for _, cooperative := range []bool{false, true} {
		t.Run(fmt.Sprintf("cooperative=%v", cooperative), func(t *testing.T) {
			gr := New("g", testConfig())
			now := t0
			a, b := newCCM(t, gr, cooperative), newCCM(t, gr, cooperative)
			classicRebalance(t, &now, a, b)
			gen := gr.Generation()
			c := newCGM(t, gr, "c")
			if r := c.beat(now); r.ErrorCode != 0 {
				t.Fatalf("upgrade: %s", code(r.ErrorCode))
			}
			if gr.Kind() != KindConsumer || c.epoch != gen+1 || c.count() != 0 {
				t.Fatalf("after the upgrade: kind %v, epoch %d (generation %d), c owns %v", gr.Kind(), c.epoch, gen, c.owned)
			}
			if got := memberTypes(t, gr); got[a.id] != 0 || got[b.id] != 0 || got["c"] != 1 || len(got) != 3 {
				t.Fatalf("member types %v", got)
			}
			// The classic members still hold generation gen: a heartbeat
			// of it is valid and asks them to rejoin.
			if hc := a.heartbeat(now); hc != kerr.RebalanceInProgress.Code {
				t.Fatalf("classic heartbeat after the upgrade: %s", code(hc))
			}
			mixedConverge(t, now, []*ccm{a, b}, []*cgm{c})
			if a.count() != 2 || b.count() != 2 || c.count() != 2 {
				t.Fatalf("a %v b %v c %v", a.owned, b.owned, c.owned)
			}
			if a.gen != c.epoch || b.gen != c.epoch {
				t.Fatalf("generations %d %d, epoch %d", a.gen, b.gen, c.epoch)
			}
		})
	}
}

// TestUpgradeRefused: the group stays classic, as Kafka's does, when the
// policy, its protocol type, its size or its members' metadata forbid it.
func TestUpgradeRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    func(*Config)
		build  func(t *testing.T, g *Group, now *time.Time)
		epoch  int32
		want   int16
		parked bool
	}{
		{name: "policy disabled", cfg: func(c *Config) { c.MigrationPolicy = MigrationDisabled }, want: kerr.GroupIDNotFound.Code},
		{name: "policy downgrade only", cfg: func(c *Config) { c.MigrationPolicy = MigrationDowngrade }, want: kerr.GroupIDNotFound.Code},
		{name: "a heartbeat that is not a join", epoch: 3, want: kerr.GroupIDNotFound.Code},
		{name: "larger than group.consumer.max.size", cfg: func(c *Config) { c.ConsumerMaxSize = 1 }, want: kerr.GroupIDNotFound.Code,
			build: func(t *testing.T, g *Group, now *time.Time) {
				// Two members joined before the limit was lowered.
				g.cfg.ConsumerMaxSize = 0
				classicRebalance(t, now, newCCM(t, g, false), newCCM(t, g, false))
				g.cfg.ConsumerMaxSize = 1
			}},
		{name: "full", cfg: func(c *Config) { c.ConsumerMaxSize = 2 }, want: kerr.GroupMaxSizeReached.Code},
		{name: "another protocol type", want: kerr.GroupIDNotFound.Code,
			build: func(t *testing.T, g *Group, now *time.Time) {
				r := joinReq("", "m")
				r.ProtocolType, r.Version = "connect", 3
				join(g, *now, r)
				*now = now.Add(time.Second)
				g.Tick(*now)
			}},
		{name: "metadata that is not the consumer protocol's", want: kerr.GroupIDNotFound.Code,
			build: func(t *testing.T, g *Group, now *time.Time) {
				id, _ := newMember(t, g, *now)
				*now = now.Add(time.Second)
				g.Tick(*now)
				syncG(g, *now, syncReq(id, 1, map[string]string{id: "x"}))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			gr := New("g", cfg)
			now := t0
			if tc.build != nil {
				tc.build(t, gr, &now)
			} else {
				classicRebalance(t, &now, newCCM(t, gr, false), newCCM(t, gr, false))
			}
			before, _ := gr.MembershipToSave()
			c := newCGM(t, gr, "c")
			r := gr.ConsumerHeartbeat(now, client, c.req(tc.epoch), c.topics)
			if r.ErrorCode != tc.want {
				t.Fatalf("heartbeat: %s, want %s", code(r.ErrorCode), code(tc.want))
			}
			after, _ := gr.MembershipToSave()
			if gr.Kind() != KindClassic || string(before) != string(after) {
				t.Fatalf("the group changed: kind %v\n%s\n%s", gr.Kind(), before, after)
			}
		})
	}
}

// TestUpgradeAnswersParkedJoins: members waiting in a classic rebalance
// are told to rejoin the group it became.
func TestUpgradeAnswersParkedJoins(t *testing.T) {
	gr := New("g", testConfig())
	now := t0
	a, b := newCCM(t, gr, false), newCCM(t, gr, false)
	classicRebalance(t, &now, a, b)
	parked := a.join(now) // b has not rejoined: a waits
	if parked.r != nil {
		t.Fatal("the join was answered before the rebalance completed")
	}
	c := newCGM(t, gr, "c")
	if r := c.beat(now); r.ErrorCode != 0 {
		t.Fatalf("upgrade: %s", code(r.ErrorCode))
	}
	if r := parked.join(t); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("parked join: %s", code(r.ErrorCode))
	}
	mixedConverge(t, now, []*ccm{a, b}, []*cgm{c})
}

// TestClassicMembersJoinAConsumerGroup: classic members join a group of
// the consumer protocol; they get partitions only once the member holding
// them released them.
func TestClassicMembersJoinAConsumerGroup(t *testing.T) {
	for _, cooperative := range []bool{false, true} {
		t.Run(fmt.Sprintf("cooperative=%v", cooperative), func(t *testing.T) {
			gr := New("g", testConfig())
			c := newCGM(t, gr, "c")
			converge(t, t0, c)
			a := newCCM(t, gr, cooperative)
			r := a.join(t0).join(t)
			if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
				t.Fatalf("first join: %s %q", code(r.ErrorCode), r.MemberID)
			}
			a.id = r.MemberID
			r = a.joined(t0, a.join(t0))
			if r.ErrorCode != 0 || r.LeaderID != "" || len(r.Members) != 0 || *r.ProtocolType != "consumer" || *r.Protocol != a.protocol {
				t.Fatalf("join: %+v", r)
			}
			if r.Generation != gr.cons.groupEpoch {
				t.Fatalf("generation %d, group epoch %d", r.Generation, gr.cons.groupEpoch)
			}
			// Everything is still c's: a syncs to nothing and waits.
			b := &box{}
			gr.SyncGroup(t0, a.syncReq(nil), b.reply)
			if s := b.sync(t); s.ErrorCode != 0 || a.synced(s) || a.count() != 0 {
				t.Fatalf("sync: %s, owns %v", code(s.ErrorCode), a.owned)
			}
			if hc := a.heartbeat(t0); hc != 0 {
				t.Fatalf("heartbeat while c holds the partitions: %s", code(hc))
			}
			mixedConverge(t, t0, []*ccm{a}, []*cgm{c})
			if a.count() != 3 || c.count() != 3 {
				t.Fatalf("a %v c %v", a.owned, c.owned)
			}
		})
	}
}

// TestClassicMemberErrors: requests of classic members to a consumer group
// get Kafka's codes.
func TestClassicMemberErrors(t *testing.T) {
	gr, a, _, c, now := mixedGroup(t, testConfig(), false)
	hb := func(member string, gen int32, instance *string) int16 {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Version, r.Group, r.MemberID, r.Generation, r.InstanceID = 4, "g", member, gen, instance
		return gr.Heartbeat(now, r).ErrorCode
	}
	sync := func(mod func(*kmsg.SyncGroupRequest)) int16 {
		r := a.syncReq(nil)
		mod(r)
		b := &box{}
		gr.SyncGroup(now, r, b.reply)
		return b.sync(t).ErrorCode
	}
	joinCode := func(mod func(*kmsg.JoinGroupRequest)) int16 {
		r := a.joinReq()
		mod(r)
		b := &box{}
		gr.JoinGroup(now, client, r, a.topics, b.reply)
		return b.join(t).ErrorCode
	}
	leave := func(member string, instance *string) int16 {
		return gr.LeaveGroup(now, leaveReq(member, instance)).Members[0].ErrorCode
	}
	commit := func(gen int32) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.MemberID, r.Generation = 8, "g", a.id, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = a.owned["t"][0], 5
		rt.Partitions = append(rt.Partitions, p)
		r.Topics = append(r.Topics, rt)
		pc := gr.OffsetCommit(now, r, a.topics)
		return pc.Response.Topics[0].Partitions[0].ErrorCode
	}
	other := "other"
	for _, tc := range []struct {
		name string
		got  int16
		want int16
	}{
		{"heartbeat of an unknown member", hb("nobody", a.gen, nil), kerr.UnknownMemberID.Code},
		{"heartbeat of a consumer-protocol member", hb(c.id, c.epoch, nil), kerr.UnknownMemberID.Code},
		{"heartbeat of another generation", hb(a.id, a.gen-1, nil), kerr.IllegalGeneration.Code},
		{"heartbeat of an unknown instance", hb(a.id, a.gen, &other), kerr.UnknownMemberID.Code},
		{"sync of another generation", sync(func(r *kmsg.SyncGroupRequest) { r.Generation++ }), kerr.IllegalGeneration.Code},
		{"sync of another protocol", sync(func(r *kmsg.SyncGroupRequest) { r.Protocol = strp("roundrobin") }), kerr.InconsistentGroupProtocol.Code},
		{"sync of another protocol type", sync(func(r *kmsg.SyncGroupRequest) { r.ProtocolType = strp("connect") }), kerr.InconsistentGroupProtocol.Code},
		{"join of another protocol type", joinCode(func(r *kmsg.JoinGroupRequest) { r.ProtocolType = "connect" }), kerr.InconsistentGroupProtocol.Code},
		{"join with no common protocol", joinCode(func(r *kmsg.JoinGroupRequest) { r.MemberID = "new"; r.Protocols[0].Name = "roundrobin" }), kerr.InconsistentGroupProtocol.Code},
		{"join with unreadable metadata", joinCode(func(r *kmsg.JoinGroupRequest) { r.Protocols[0].Metadata = []byte{0} }), kerr.InconsistentGroupProtocol.Code},
		{"join with a session too short", joinCode(func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 10 }), kerr.InvalidSessionTimeout.Code},
		{"leave of an unknown member", leave("nobody", nil), kerr.UnknownMemberID.Code},
		{"commit of another generation", commit(a.gen - 1), kerr.IllegalGeneration.Code},
		{"commit of the member's generation (v8)", commit(a.gen), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, code(tc.got), code(tc.want))
		}
	}
	if gr.Kind() != KindConsumer || len(gr.cons.members) != 3 {
		t.Fatalf("kind %v, %d members", gr.Kind(), len(gr.cons.members))
	}
}

// TestAdminLeaveOfConsumerGroupMembers: a LeaveGroup removes members of a
// consumer group of either protocol, as Kafka's does (the admin's
// removeMembersFromConsumerGroup): a consumer-protocol member by its id,
// a static classic member by its instance id alone; the group epoch moves
// once, the answer names each member as the request did, the removed
// consumer-protocol member's next heartbeat is UNKNOWN_MEMBER_ID and its
// partitions go to the members left. An unknown instance is
// UNKNOWN_MEMBER_ID, an instance with another member's id
// FENCED_INSTANCE_ID.
func TestAdminLeaveOfConsumerGroupMembers(t *testing.T) {
	gr, a, b, c, now := mixedGroup(t, testConfig(), false)
	instance := "static-b"
	gr.static[instance] = b.id
	gr.cons.members[b.id].instanceID = &instance
	epoch := gr.cons.groupEpoch
	unknown, other := "nobody", "static-x"
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 5, "g"
	for _, m := range []kmsg.LeaveGroupRequestMember{
		{MemberID: c.id},
		{InstanceID: &instance},
		{InstanceID: &other},
		{MemberID: "wrong", InstanceID: &instance},
		{MemberID: unknown},
	} {
		req.Members = append(req.Members, m)
	}
	r := gr.LeaveGroup(now, req)
	want := []struct {
		member string
		code   int16
	}{{c.id, 0}, {"", 0}, {"", kerr.UnknownMemberID.Code}, {"wrong", kerr.UnknownMemberID.Code}, {unknown, kerr.UnknownMemberID.Code}}
	if r.ErrorCode != 0 || len(r.Members) != len(want) {
		t.Fatalf("leave: %s, %d answers", code(r.ErrorCode), len(r.Members))
	}
	for i, w := range want {
		if got := r.Members[i]; got.MemberID != w.member || got.ErrorCode != w.code {
			t.Errorf("answer %d: member %q %s, want %q %s", i, got.MemberID, code(got.ErrorCode), w.member, code(w.code))
		}
	}
	if _, ok := gr.cons.members[c.id]; ok || gr.cons.members[b.id] != nil || gr.cons.members[a.id] == nil {
		t.Fatalf("members after the leave: %v", sortedKeys(gr.cons.members))
	}
	if gr.cons.groupEpoch != epoch+1 {
		t.Fatalf("group epoch %d, want %d (one bump)", gr.cons.groupEpoch, epoch+1)
	}
	if hr := c.beat(now); hr.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("the removed member's heartbeat: %s", code(hr.ErrorCode))
	}
	mixedConverge(t, now, []*ccm{a}, nil)
	if a.count() != 6 {
		t.Fatalf("a owns %v after the others were removed", a.owned)
	}

	// An instance named with another member's id is fenced, not removed.
	gr2, _, b2, _, now2 := mixedGroup(t, testConfig(), false)
	gr2.static[instance] = b2.id
	gr2.cons.members[b2.id].instanceID = &instance
	r2 := gr2.LeaveGroup(now2, leaveReq("wrong", &instance))
	if got := r2.Members[0]; got.ErrorCode != kerr.FencedInstanceID.Code || gr2.cons.members[b2.id] == nil {
		t.Fatalf("leave of an instance with another member id: %s, member kept %v", code(got.ErrorCode), gr2.cons.members[b2.id] != nil)
	}
}

// TestClassicMemberTimers: a classic member of a consumer group is fenced
// when its session expires, when told to rejoin it does not within its
// rebalance timeout, or when answered in JoinGroup it does not sync.
func TestClassicMemberTimers(t *testing.T) {
	const session, rebalance = 10 * time.Second, 20 * time.Second // joinReq's
	alive := func(gr *Group, id string) bool { return gr.cons.members[id] != nil }

	t.Run("session", func(t *testing.T) {
		gr, a, b, c, now := mixedGroup(t, testConfig(), false)
		for range 3 {
			now = now.Add(session / 2)
			b.poll(now)
			c.beat(now)
		}
		if alive(gr, a.id) || !alive(gr, b.id) {
			t.Fatalf("a alive %v, b alive %v", alive(gr, a.id), alive(gr, b.id))
		}
	})
	t.Run("join", func(t *testing.T) {
		gr, a, b, c, now := mixedGroup(t, testConfig(), false)
		c.subs = []string{"t", "u"} // the group epoch moves
		c.topics["u"] = 1
		c.beat(now)
		for range 5 {
			now = now.Add(rebalance / 4)
			if hc := a.heartbeat(now); hc != kerr.RebalanceInProgress.Code && alive(gr, a.id) {
				t.Fatalf("heartbeat: %s", code(hc))
			}
			b.poll(now)
			c.beat(now)
		}
		if alive(gr, a.id) || !alive(gr, b.id) {
			t.Fatalf("a alive %v, b alive %v", alive(gr, a.id), alive(gr, b.id))
		}
	})
	t.Run("sync", func(t *testing.T) {
		gr, a, b, c, now := mixedGroup(t, testConfig(), false)
		if r := a.joined(now, a.join(now)); r.ErrorCode != 0 {
			t.Fatalf("join: %s", code(r.ErrorCode))
		}
		for range 5 {
			now = now.Add(rebalance / 4)
			a.heartbeat(now)
			b.poll(now)
			c.beat(now)
		}
		if alive(gr, a.id) || !alive(gr, b.id) {
			t.Fatalf("a alive %v, b alive %v", alive(gr, a.id), alive(gr, b.id))
		}
	})
}

// TestDowngradeToClassicProtocol: when the last member of the consumer
// protocol leaves or is fenced, the group turns classic and rebalances;
// while it does it saves the Stable group it started as.
func TestDowngradeToClassicProtocol(t *testing.T) {
	for _, how := range []string{"leave", "session"} {
		t.Run(how, func(t *testing.T) {
			gr, a, b, c, now := mixedGroup(t, testConfig(), true)
			epoch := gr.cons.groupEpoch
			targets := map[string]Assignment{a.id: gr.cons.members[a.id].target, b.id: gr.cons.members[b.id].target}
			if how == "leave" {
				if r := gr.ConsumerHeartbeat(now, client, c.req(-1), c.topics); r.ErrorCode != 0 || r.MemberEpoch != -1 {
					t.Fatalf("leave: %s epoch %d", code(r.ErrorCode), r.MemberEpoch)
				}
			} else {
				for end := now.Add(time.Minute); gr.Kind() == KindConsumer && now.Before(end); {
					now = now.Add(time.Second)
					a.heartbeat(now) // a stable group: nothing to rejoin for
					b.heartbeat(now)
				}
			}
			if gr.Kind() != KindClassic || gr.State() != PreparingRebalance || gr.Generation() != epoch {
				t.Fatalf("kind %v state %v generation %d (epoch %d)", gr.Kind(), gr.State(), gr.Generation(), epoch)
			}
			saved, ok := gr.MembershipToSave()
			var s savedMembership
			if err := json.Unmarshal(saved, &s); !ok || err != nil || s.Kind != "classic" || s.Generation != epoch || len(s.Classic) != 2 {
				t.Fatalf("saved %v %v: %s", ok, err, saved)
			}
			for _, sm := range s.Classic {
				want := encodeAssignment(targets[sm.ID], map[[16]byte]string{topicID("t"): "t"}, a.metadata())
				if string(sm.Assignment) != string(want) {
					t.Fatalf("member %s saved with assignment %x, target %x", sm.ID, sm.Assignment, want)
				}
			}
			for _, m := range []*ccm{a, b} {
				if hc := m.heartbeat(now); hc != kerr.RebalanceInProgress.Code {
					t.Fatalf("heartbeat: %s", code(hc))
				}
			}
			classicRebalance(t, &now, a, b)
			if gr.State() != Stable || gr.Generation() != epoch+1 || a.count()+b.count() != 6 {
				t.Fatalf("state %v generation %d, a %v b %v", gr.State(), gr.Generation(), a.owned, b.owned)
			}
			if saved, _ := gr.MembershipToSave(); json.Unmarshal(saved, &s) != nil || s.Generation != epoch+1 {
				t.Fatalf("saved after the rebalance: %s", saved)
			}
		})
	}
	t.Run("policy upgrade only", func(t *testing.T) {
		cfg := testConfig()
		cfg.MigrationPolicy = MigrationUpgrade
		gr, a, b, c, now := mixedGroup(t, cfg, false)
		gr.ConsumerHeartbeat(now, client, c.req(-1), c.topics)
		if gr.Kind() != KindConsumer {
			t.Fatalf("kind %v", gr.Kind())
		}
		mixedConverge(t, now, []*ccm{a, b}, nil)
		if a.count() != 3 || b.count() != 3 {
			t.Fatalf("a %v b %v", a.owned, b.owned)
		}
	})
	t.Run("static member replaced", func(t *testing.T) {
		gr := New("g", testConfig())
		inst := "i"
		c := newCGM(t, gr, "c")
		c.instance = &inst
		converge(t, t0, c)
		a := newCCM(t, gr, false)
		a.instance = &inst
		r := a.joined(t0, a.join(t0))
		if r.ErrorCode != 0 || gr.Kind() != KindClassic || gr.State() != Stable || r.Generation != gr.Generation() {
			t.Fatalf("join: %s gen %d, kind %v state %v generation %d", code(r.ErrorCode), r.Generation, gr.Kind(), gr.State(), gr.Generation())
		}
		b := &box{}
		gr.SyncGroup(t0, a.syncReq(nil), b.reply)
		if s := b.sync(t); s.ErrorCode != 0 || a.synced(s) || a.count() != 6 {
			t.Fatalf("sync: %s, owns %v", code(s.ErrorCode), a.owned)
		}
	})
}

// TestMixedMembershipSaved: a consumer group's classic members are saved
// and restored as classic members, with their own session timeouts.
func TestMixedMembershipSaved(t *testing.T) {
	gr, a, b, c, now := mixedGroup(t, testConfig(), true)
	saved, ok := gr.MembershipToSave()
	if !ok || saved == nil {
		t.Fatal("nothing to save")
	}
	n := New("g", testConfig())
	if err := n.RestoreMembership(now, saved, c.topics); err != nil {
		t.Fatal(err)
	}
	if again, _ := n.MembershipToSave(); string(again) != string(saved) {
		t.Fatalf("restored group saves\n%s\nnot\n%s", again, saved)
	}
	for _, m := range []*ccm{a, b} {
		m.g = n
		if hc := m.heartbeat(now); hc != 0 {
			t.Fatalf("heartbeat after the restore: %s", code(hc))
		}
	}
	c.g = n
	// Classic sessions are 10 s, the consumer protocol's 45 s: a silent
	// b goes first.
	for range 2 {
		now = now.Add(6 * time.Second)
		a.poll(now)
		c.beat(now)
	}
	if n.cons.members[b.id] != nil || n.cons.members[a.id] == nil {
		t.Fatal("b's classic session did not expire, or a's did")
	}
	// Assignments name the topics the restored group learned.
	mixedConverge(t, now, []*ccm{a}, []*cgm{c})
}
