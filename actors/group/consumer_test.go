package group

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgm drives one KIP-848 member the way a client does: it owns what the
// coordinator assigned, releases what was taken away, and reports what it
// owns on every heartbeat.
type cgm struct {
	t        testing.TB
	g        *Group
	id       string
	instance *string
	epoch    int32
	owned    map[string][]int32 // topic -> partitions
	topics   fakeTopics
	subs     []string
	regex    *string
	assignor string
	// principal is the member's connection's principal.
	principal string
}

func (m *cgm) req(epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version, r.Group, r.MemberID, r.MemberEpoch, r.InstanceID = 1, "g", m.id, epoch, m.instance
	r.RebalanceTimeoutMillis = 10_000
	r.SubscribedTopicNames, r.SubscribedTopicRegex = m.subs, m.regex
	if m.assignor != "" {
		r.ServerAssignor = &m.assignor
	}
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, tn := range sortedKeys(m.owned) {
		rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		rt.TopicID, rt.Partitions = topicID(tn), m.owned[tn]
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// beat sends a full heartbeat and applies the assignment.
func (m *cgm) beat(now time.Time) *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	c := client
	c.Principal = m.principal
	r := m.g.ConsumerHeartbeat(now, c, m.req(m.epoch), m.topics)
	if r.ErrorCode != 0 {
		return r
	}
	m.epoch = r.MemberEpoch
	if r.Assignment != nil {
		m.owned = map[string][]int32{}
		for _, at := range r.Assignment.Topics {
			ti, _ := m.topics.ByID(at.TopicID)
			m.owned[ti.Name] = slices.Clone(at.Partitions)
		}
	}
	return r
}

func (m *cgm) count() int {
	n := 0
	for _, ps := range m.owned {
		n += len(ps)
	}
	return n
}

func newCGM(t testing.TB, g *Group, id string) *cgm {
	return &cgm{t: t, g: g, id: id, owned: map[string][]int32{}, topics: fakeTopics{"t": 6}, subs: []string{"t"}}
}

// converge heartbeats every member until none changes, checking that no
// partition is ever owned by two members.
func converge(t *testing.T, now time.Time, ms ...*cgm) {
	t.Helper()
	for round := 0; round < 20; round++ {
		for _, m := range ms {
			if r := m.beat(now); r.ErrorCode != 0 {
				t.Fatalf("member %s: %s", m.id, code(r.ErrorCode))
			}
			owners := map[int32]string{}
			for _, o := range ms {
				for _, p := range o.owned["t"] {
					if prev, ok := owners[p]; ok {
						t.Fatalf("partition %d owned by %s and %s", p, prev, o.id)
					}
					owners[p] = o.id
				}
			}
		}
		if ms[0].g.State() == Stable {
			return
		}
	}
	t.Fatalf("did not converge: state %v", ms[0].g.State())
}

func TestConsumerJoinAndRebalanceIncrementally(t *testing.T) {
	g := New("g", testConfig())
	a := newCGM(t, g, "a")
	r := a.beat(t0)
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || a.count() != 6 || *r.MemberID != "a" {
		t.Fatalf("first join: %s epoch %d owned %v", code(r.ErrorCode), r.MemberEpoch, a.owned)
	}
	if g.State() != Stable || g.Kind() != KindConsumer {
		t.Fatalf("state %v kind %v", g.State(), g.Kind())
	}
	b := newCGM(t, g, "b")
	b.beat(t0)
	// b may not get anything a still owns.
	if b.count() != 0 || g.State() != Reconciling {
		t.Fatalf("b owns %v before a released; state %v", b.owned, g.State())
	}
	// a is asked to revoke first: its epoch stays.
	epoch := a.epoch
	a.beat(t0)
	if a.count() != 3 || a.epoch != epoch {
		t.Fatalf("a after revocation request: %v epoch %d", a.owned, a.epoch)
	}
	converge(t, t0, a, b)
	if a.count() != 3 || b.count() != 3 || a.epoch != b.epoch || a.epoch != 2 {
		t.Fatalf("a %v (epoch %d), b %v (epoch %d)", a.owned, a.epoch, b.owned, b.epoch)
	}
	// b leaves: its partitions go back to a.
	lr := b.req(-1)
	if r := g.ConsumerHeartbeat(t0, client, lr, b.topics); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %s %d", code(r.ErrorCode), r.MemberEpoch)
	}
	converge(t, t0, a)
	if a.count() != 6 {
		t.Fatalf("a after b left: %v", a.owned)
	}
	// Topic metadata change (more partitions) bumps the epoch.
	a.topics["t"] = 8
	converge(t, t0, a)
	if a.count() != 8 {
		t.Fatalf("a after partitions were added: %v", a.owned)
	}
}

func TestConsumerFencing(t *testing.T) {
	g := New("g", testConfig())
	a := newCGM(t, g, "a")
	b := newCGM(t, g, "b")
	a.beat(t0)
	b.beat(t0)
	converge(t, t0, a, b)
	hb := func(epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) int16 {
		r := a.req(epoch)
		r.Topics = owned
		return g.ConsumerHeartbeat(t0, client, r, a.topics).ErrorCode
	}
	own := a.req(a.epoch).Topics
	for _, tc := range []struct {
		name  string
		epoch int32
		owned []kmsg.ConsumerGroupHeartbeatRequestTopic
		want  int16
	}{
		{"current epoch", a.epoch, own, 0},
		{"epoch from the future", a.epoch + 5, own, kerr.FencedMemberEpoch.Code},
		{"previous epoch owning a subset", a.epoch - 1, own[:1], 0},
		{"previous epoch, keepalive", a.epoch - 1, nil, kerr.FencedMemberEpoch.Code},
		{"previous epoch owning a partition it lost", a.epoch - 1, []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicID("t"), Partitions: b.owned["t"]}}, kerr.FencedMemberEpoch.Code},
	} {
		if c := hb(tc.epoch, tc.owned); c != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, code(c), code(tc.want))
		}
	}
	ghost := newCGM(t, g, "ghost")
	if r := ghost.g.ConsumerHeartbeat(t0, client, ghost.req(3), ghost.topics); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("unknown member: %s", code(r.ErrorCode))
	}
	// A member that rejoins with epoch 0 gets its assignment back.
	before := a.count()
	a.owned = map[string][]int32{}
	a.epoch = 0
	if r := a.beat(t0); r.ErrorCode != 0 || a.count() != before {
		t.Errorf("rejoin at epoch 0: %s owned %v", code(r.ErrorCode), a.owned)
	}
	// Session timeout: b goes silent, a takes everything.
	now := t0.Add(30 * time.Second)
	a.beat(now)
	now = now.Add(20 * time.Second) // b's 45 s session expired
	converge(t, now, a)
	if a.count() != 6 {
		t.Fatalf("a after b expired: %v", a.owned)
	}
	if r := b.beat(now); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member: %s", code(r.ErrorCode))
	}
}

func TestConsumerRevocationTimeout(t *testing.T) {
	g := New("g", testConfig())
	a := newCGM(t, g, "a")
	a.beat(t0)
	b := newCGM(t, g, "b")
	b.beat(t0)
	// a is told to revoke, then only sends keepalives (it never confirms).
	a.beat(t0)
	ka := a.req(a.epoch)
	ka.Topics, ka.SubscribedTopicNames, ka.RebalanceTimeoutMillis = nil, nil, -1
	now := t0
	for i := 0; i < 9; i++ {
		now = now.Add(time.Second)
		if r := g.ConsumerHeartbeat(now, client, ka, a.topics); r.ErrorCode != 0 {
			t.Fatalf("keepalive: %s", code(r.ErrorCode))
		}
		b.beat(now)
	}
	if b.count() != 0 {
		t.Fatal("b got partitions a never released")
	}
	now = now.Add(time.Second) // a's 10 s rebalance timeout
	b.beat(now)
	converge(t, now, b)
	if b.count() != 6 {
		t.Fatalf("b after a was fenced: %v", b.owned)
	}
	if r := g.ConsumerHeartbeat(now, client, ka, a.topics); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("fenced member: %s", code(r.ErrorCode))
	}
}

func TestConsumerStaticMembership(t *testing.T) {
	g := New("g", testConfig())
	inst := "i"
	a := newCGM(t, g, "a1")
	a.instance = &inst
	b := newCGM(t, g, "b")
	a.beat(t0)
	b.beat(t0)
	converge(t, t0, a, b)
	owned := a.owned["t"]
	epoch := g.cons.groupEpoch
	// Another process with the same instance id while a is active.
	dup := newCGM(t, g, "a2")
	dup.instance = &inst
	if r := dup.beat(t0); r.ErrorCode != kerr.UnreleasedInstanceID.Code {
		t.Fatalf("duplicate instance: %s", code(r.ErrorCode))
	}
	// a leaves temporarily (epoch -2); its partitions stay reserved.
	if r := g.ConsumerHeartbeat(t0, client, a.req(-2), a.topics); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %s %d", code(r.ErrorCode), r.MemberEpoch)
	}
	converge2 := func() {
		for i := 0; i < 5; i++ {
			b.beat(t0)
		}
	}
	converge2()
	if b.count() != 3 {
		t.Fatalf("b took the away member's partitions: %v", b.owned)
	}
	// a comes back with a new member id: same partitions, no new epoch.
	if r := dup.beat(t0); r.ErrorCode != 0 {
		t.Fatalf("static rejoin: %s", code(r.ErrorCode))
	}
	if !slices.Equal(dup.owned["t"], owned) || g.cons.groupEpoch != epoch {
		t.Fatalf("static rejoin got %v (had %v), group epoch %d -> %d", dup.owned["t"], owned, epoch, g.cons.groupEpoch)
	}
	// The old member id is fenced.
	if r := a.beat(t0); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("old static member id: %s", code(r.ErrorCode))
	}
}

func TestConsumerHeartbeatValidation(t *testing.T) {
	g := New("g", testConfig())
	bad := "nope"
	badRe := "("
	for _, tc := range []struct {
		name string
		mod  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		want int16
	}{
		{"empty member id on v1", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest.Code},
		{"join owning partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicID("t"), Partitions: []int32{0}}}
		}, kerr.InvalidRequest.Code},
		{"join without rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest.Code},
		{"join without subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest.Code},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = &bad }, kerr.UnsupportedAssignor.Code},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = &badRe }, kerr.InvalidRegularExpression.Code},
		{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest.Code},
		{"heartbeat to a missing group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 4 }, kerr.UnknownMemberID.Code},
	} {
		m := newCGM(t, g, "m")
		r := m.req(0)
		tc.mod(r)
		if c := g.ConsumerHeartbeat(t0, client, r, m.topics).ErrorCode; c != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, code(c), code(tc.want))
		}
	}
	if g.Exists() {
		t.Fatal("invalid heartbeats created the group")
	}
}

func TestConsumerRegexAndRangeAssignor(t *testing.T) {
	g := New("g", testConfig())
	re := "t.*"
	tops := fakeTopics{"t1": 2, "t2": 2, "other": 4}
	mk := func(id string) *cgm {
		m := newCGM(t, g, id)
		m.topics, m.subs, m.regex, m.assignor = tops, nil, &re, AssignorRange
		return m
	}
	a, b := mk("a"), mk("b")
	for range 6 {
		for _, m := range []*cgm{a, b} {
			if r := m.beat(t0); r.ErrorCode != 0 {
				t.Fatal(code(r.ErrorCode))
			}
		}
	}
	// Range: co-partitioned topics give each member the same numbers.
	if !slices.Equal(a.owned["t1"], []int32{0}) || !slices.Equal(a.owned["t2"], []int32{0}) ||
		!slices.Equal(b.owned["t1"], []int32{1}) || !slices.Equal(b.owned["t2"], []int32{1}) || len(a.owned["other"]) != 0 {
		t.Fatalf("a %v b %v", a.owned, b.owned)
	}
	d := g.DescribeConsumerGroup(t0, tops)
	if d.ErrorCode != 0 || d.AssignorName != AssignorRange || len(d.Members) != 2 || d.State != "Stable" {
		t.Fatalf("describe %+v", d)
	}
}

func TestConsumerCommitEpochs(t *testing.T) {
	g := New("g", testConfig())
	a := newCGM(t, g, "a")
	a.beat(t0)
	b := newCGM(t, g, "b")
	b.beat(t0)
	converge(t, t0, a, b)
	ca := func(version int16, epoch int32, member string, p int32) int16 {
		r := commitReq(version, epoch, member, map[string]map[int32]int64{"t": {p: 1}})
		return g.OffsetCommit(t0, r, fakeTopics{"t": 6}).Response.Topics[0].Partitions[0].ErrorCode
	}
	pa, pb := a.owned["t"][0], b.owned["t"][0]
	for _, tc := range []struct {
		name    string
		version int16
		epoch   int32
		member  string
		p       int32
		want    int16
	}{
		{"current epoch", 9, a.epoch, "a", pa, 0},
		{"epoch from the future", 9, a.epoch + 1, "a", pa, kerr.StaleMemberEpoch.Code},
		{"older epoch, partition held since then (KIP-1251)", 9, 1, "a", pa, 0},
		{"older epoch, partition assigned later", 9, 1, "b", pb, kerr.StaleMemberEpoch.Code},
		{"unknown member", 9, 2, "ghost", pa, kerr.UnknownMemberID.Code},
		{"classic version from an 848 member", 8, a.epoch, "a", pa, kerr.UnsupportedVersion.Code},
		{"admin commit to a group with members", 9, -1, "", pa, kerr.UnknownMemberID.Code},
	} {
		if c := ca(tc.version, tc.epoch, tc.member, tc.p); c != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, code(c), code(tc.want))
		}
	}
	// A transactional commit (TxnOffsetCommit, expressed at v7) of an 848
	// member is accepted at any version; its epoch is checked the same.
	txn := func(epoch int32) int16 {
		r := commitReq(7, epoch, "a", map[string]map[int32]int64{"t": {pa: 2}})
		return g.TxnOffsetCommit(t0, r, fakeTopics{"t": 6}).Response.Topics[0].Partitions[0].ErrorCode
	}
	if c := txn(a.epoch); c != 0 {
		t.Errorf("transactional commit of an 848 member: %s", code(c))
	}
	if c := txn(a.epoch + 1); c != kerr.StaleMemberEpoch.Code {
		t.Errorf("transactional commit from the future: %s", code(c))
	}
	// OffsetFetch by a member checks its epoch strictly: any other epoch is
	// STALE_MEMBER_EPOCH, which consumers retry after their next heartbeat.
	for _, e := range []int32{a.epoch - 1, a.epoch + 1} {
		if f := g.FetchOffsets(t0, fetchAs("a", e), fakeTopics{"t": 6}); f.ErrorCode != kerr.StaleMemberEpoch.Code {
			t.Errorf("fetch at epoch %d (member at %d): %s", e, a.epoch, code(f.ErrorCode))
		}
	}
	if f := g.FetchOffsets(t0, fetchAs("a", a.epoch), fakeTopics{"t": 6}); f.ErrorCode != 0 {
		t.Errorf("fetch: %s", code(f.ErrorCode))
	}
}

// TestConsumerRegexResolvesDescribableTopics: with an authorizer, a regex
// resolves to the matching topics the member's principal may describe;
// an ACL change shows at the next heartbeat; a member of another
// principal in the same group resolves by its own rights; topics named
// outright are not filtered (the connection refuses those).
func TestConsumerRegexResolvesDescribableTopics(t *testing.T) {
	may := map[string]map[string]bool{"User:a": {"t1": true, "other": true}, "User:b": {"t1": true, "t2": true}}
	cfg := testConfig()
	cfg.DescribeTopic = func(principal, host, topic string) bool { return host == client.Host && may[principal][topic] }
	g := New("g", cfg)
	re := "t.*"
	tops := fakeTopics{"t1": 1, "t2": 1, "other": 1}
	owned := func(m *cgm, names []string) []string {
		t.Helper()
		m.subs = names
		for range 6 {
			if r := m.beat(t0); r.ErrorCode != 0 {
				t.Fatalf("%s: %s", m.id, code(r.ErrorCode))
			}
		}
		return sortedKeys(m.owned)
	}
	mk := func(id, principal string) *cgm {
		m := newCGM(t, g, id)
		m.topics, m.regex, m.principal = tops, &re, principal
		return m
	}
	a := mk("a", "User:a")
	if got := owned(a, nil); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("a owns %v, want t1 only (t2 not describable, other not matched)", got)
	}
	may["User:a"]["t2"] = true
	if got := owned(a, nil); !slices.Equal(got, []string{"t1", "t2"}) {
		t.Fatalf("after DESCRIBE on t2 was granted a owns %v", got)
	}
	delete(may["User:a"], "t2")
	if got := owned(a, []string{"t2"}); !slices.Equal(got, []string{"t1", "t2"}) {
		t.Fatalf("t2 named outright: a owns %v", got)
	}
	b := mk("b", "User:b")
	owned(b, nil)
	if d := g.DescribeConsumerGroup(t0, tops); d.ErrorCode != 0 || len(d.Members) != 2 {
		t.Fatalf("describe %+v", d)
	}
	for _, m := range []*cgm{a, b} {
		if m.g.cons.members[m.id].topics == nil {
			t.Fatalf("%s resolved nothing", m.id)
		}
	}
	if got := g.cons.members["b"].topics; !slices.Equal(got, []string{"t1", "t2"}) {
		t.Fatalf("b's regex resolves to %v, want t1 and t2 by its own rights", got)
	}
}

// TestAssignorsConfig: with group.consumer.assignors "range" alone, a group
// whose members ask for no assignor runs range, and a member asking for
// uniform is refused with UNSUPPORTED_ASSIGNOR naming what is supported.
func TestAssignorsConfig(t *testing.T) {
	cfg := testConfig()
	cfg.Assignors = []string{AssignorRange}
	g := New("g", cfg)
	m := newCGM(t, g, "m")
	if r := m.beat(t0); r.ErrorCode != 0 {
		t.Fatalf("join: %s", code(r.ErrorCode))
	}
	if g.cons.assignor != AssignorRange {
		t.Fatalf("assignor %q, want range, the first configured", g.cons.assignor)
	}
	u := newCGM(t, g, "u")
	u.assignor = AssignorUniform
	r := u.beat(t0)
	if r.ErrorCode != kerr.UnsupportedAssignor.Code || r.ErrorMessage == nil || *r.ErrorMessage != "ServerAssignor uniform is not supported. Supported assignors: range." {
		t.Fatalf("uniform under [range]: %s %v", code(r.ErrorCode), r.ErrorMessage)
	}
}

func TestParseAssignors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"uniform,range", []string{"uniform", "range"}, ""},
		{" range , uniform", []string{"range", "uniform"}, ""},
		{"range", []string{"range"}, ""},
		{"range,range", nil, "named twice"},
		{"org.example.MyAssignor", nil, "unknown server-side assignor"},
		{"", nil, "unknown server-side assignor"},
	} {
		got, err := ParseAssignors(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
}
