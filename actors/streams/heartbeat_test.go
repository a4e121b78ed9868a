package streams

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func strp(s string) *string { return &s }

func TestHeartbeatValidation(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	settle(t, g, t0, topics, newSim("a", "pa", oneSub("in")))
	join := func(edit func(*kmsg.StreamsGroupHeartbeatRequest)) *kmsg.StreamsGroupHeartbeatRequest {
		r := newSim("x", "px", oneSub("in")).request()
		edit(r)
		return r
	}
	beat := func(edit func(*kmsg.StreamsGroupHeartbeatRequest)) *kmsg.StreamsGroupHeartbeatRequest {
		r := newSim("a", "pa", nil).request()
		r.MemberEpoch = g.members["a"].epoch
		r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = nil, nil, nil
		edit(r)
		return r
	}
	for _, tc := range []struct {
		name string
		req  *kmsg.StreamsGroupHeartbeatRequest
		code int16
		msg  string
	}{
		{"empty group", join(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = "" }), 42, "GroupId can't be empty."},
		{"empty member id heartbeat", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "" }), 42, "MemberId can't be empty."},
		{"empty instance id", join(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.InstanceID = strp("") }), 42, "Static membership is not yet supported."},
		{"empty rack", join(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RackID = strp("") }), 42, "RackId can't be empty."},
		{"no rebalance timeout", join(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }), 42, "RebalanceTimeoutMs must be provided in first request."},
		{"join with tasks", join(func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}}
		}), 42, "ActiveTasks must be empty when (re-)joining."},
		{"join without topology", join(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = nil }), 42, "Topology must be non-null when (re-)joining."},
		{"epoch -3", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch = -3 }), 42, "MemberEpoch is -3, but must be greater than or equal to -2."},
		{"some task types", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.ActiveTasks = []kmsg.TaskIDs{} }), 42, "If one task-type is non-null, all must be non-null."},
		{"topology on heartbeat", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = oneSub("in") }), 42, "Topology can only be provided when (re-)joining."},
		{"regex source", join(func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology = oneSub("in")
			r.Topology.Subtopologies[0].SourceTopicRegex = []string{"in.*"}
		}), 42, "Regular expressions for source topics are not supported yet."},
		{"changelog partitions", join(func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology = oneSub("in")
			r.Topology.Subtopologies[0].StateChangelogTopics[0].NumPartitions = 3
		}), kerr.StreamsInvalidTopology.Code, "Changelog topic app-store-changelog must have an undefined partition count, but it is set to 3."},
		{"static member", join(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.InstanceID = strp("i") }), 42, "Static membership is not yet supported."},
		{"static member leaving", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.InstanceID, r.MemberEpoch = strp("i"), -2 }), 42, "Static membership is not yet supported."},
		{"task offsets", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.TaskOffsets = []kmsg.TaskOffset{} }), 42, "TaskOffsets are not supported yet."},
		{"task end offsets", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.TaskEndOffsets = []kmsg.TaskOffset{} }), 42, "TaskEndOffsets are not supported yet."},
		{"warmup tasks", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.ActiveTasks, r.StandbyTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
			r.WarmupTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}}
		}), 42, "WarmupTasks are not supported yet."},
		{"a known member rejoining at epoch 0 with tasks unknown", join(func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.MemberID = "a"
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = nil, nil, nil
		}), kerr.FencedMemberEpoch.Code, "The streams group member has a smaller member epoch (0) than the one known by the group coordinator (2). The member must abandon all its partitions and rejoin."},
		{"unknown member", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "nobody" }), kerr.UnknownMemberID.Code, "Member nobody is not a member of group app."},
		{"unknown member leaving", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "nobody", -1 }), kerr.UnknownMemberID.Code, "Member nobody is not a member of group app."},
		{"invalid task", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{2}}}
			r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		}), 42, "Task 2 for subtopology 0 is invalid. Number of tasks for this subtopology: 2"},
		{"unknown subtopology", beat(func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "9", Partitions: []int32{0}}}
			r.StandbyTasks, r.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		}), 42, "Subtopology 9 does not exist in the topology."},
		{"another topology at the group's epoch", join(func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology = oneSub("in")
			r.Topology.Subtopologies[0].RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: "never-written"}}
		}), kerr.InvalidRequest.Code, "Topology updates are not supported yet."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := g.Version()
			resp, create := g.Heartbeat(t0, Client{}, tc.req, topics)
			if resp.ErrorCode != tc.code || resp.ErrorMessage == nil || *resp.ErrorMessage != tc.msg {
				t.Fatalf("got %d %v, want %d %q", resp.ErrorCode, resp.ErrorMessage, tc.code, tc.msg)
			}
			if create != nil || g.Version() != before || g.Len() != 1 {
				t.Fatalf("a refused heartbeat changed the group (create %v, %d members)", create, g.Len())
			}
		})
	}
}

func TestHeartbeatOnUnknownGroup(t *testing.T) {
	g := New(testConfig())
	r := newSim("a", "pa", nil).request()
	r.MemberEpoch, r.Topology = 3, nil
	resp, _ := g.Heartbeat(t0, Client{}, r, topicsOf())
	if resp.ErrorCode != kerr.GroupIDNotFound.Code || *resp.ErrorMessage != "Streams group app not found." {
		t.Fatalf("%d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	// An invalid topology on the first join is refused and leaves no group.
	topo := oneSub("in")
	topo.Subtopologies[0].RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: "never-written"}}
	resp, _ = g.Heartbeat(t0, Client{}, newSim("a", "pa", topo).request(), topicsOf("in", 1))
	if resp.ErrorCode != kerr.StreamsInvalidTopology.Code {
		t.Fatalf("%d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	if g.Len() != 0 || g.Topics() != nil {
		t.Fatalf("refused join left %d members, topics %v", g.Len(), g.Topics())
	}
}

// TestJoinWithoutMemberID: the client names its member; a join without a
// member id is refused, as Kafka 4.2 refuses it.
func TestJoinWithoutMemberID(t *testing.T) {
	g := New(testConfig())
	resp, _ := g.Heartbeat(t0, Client{}, newSim("", "pa", oneSub("in")).request(), topicsOf("in", 1))
	if resp.ErrorCode != kerr.InvalidRequest.Code || *resp.ErrorMessage != "MemberId can't be empty." || g.Len() != 0 {
		t.Fatalf("%d %v (%d members)", resp.ErrorCode, resp.ErrorMessage, g.Len())
	}
}

func TestGroupMaxSize(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSize = 2
	g := New(cfg)
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	settle(t, g, t0, topics, newSim("a", "pa", oneSub("in")), newSim("b", "pb", oneSub("in")))
	resp := newSim("c", "pc", oneSub("in")).beat(t, g, t0, topics, true)
	if resp.ErrorCode != kerr.GroupMaxSizeReached.Code || *resp.ErrorMessage != "The streams group has reached its maximum capacity of 2 members." {
		t.Fatalf("%d %v", resp.ErrorCode, resp.ErrorMessage)
	}
}

func TestFencingEpochs(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	a := newSim("a", "pa", oneSub("in"))
	settle(t, g, t0, topics, a)
	b := newSim("b", "pb", oneSub("in"))
	settle(t, g, t0, topics, a, b)
	c := newSim("c", "pc", oneSub("in"))
	settle(t, g, t0, topics, a, b, c)
	m := g.members["a"]
	if m.prevEpoch >= m.epoch || m.prevEpoch < 2 {
		t.Fatalf("a at %d, previous %d", m.epoch, m.prevEpoch)
	}
	for _, tc := range []struct {
		name  string
		epoch int32
		owned []int32
		code  int16
	}{
		{"current epoch", m.epoch, []int32{0}, 0},
		{"greater epoch", m.epoch + 1, []int32{0}, kerr.FencedMemberEpoch.Code},
		{"previous epoch, owned tasks assigned", m.prevEpoch, []int32{0}, 0},
		{"previous epoch, a task not assigned", m.prevEpoch, []int32{0, 1}, kerr.FencedMemberEpoch.Code},
		{"older epoch", m.prevEpoch - 1, []int32{}, kerr.FencedMemberEpoch.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := g.members["a"].assigned.Active.sorted()[0].Part
			r := a.request()
			r.MemberEpoch = tc.epoch
			var ps []int32
			for _, p := range tc.owned {
				ps = append(ps, (held+p)%2)
			}
			r.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: ps}}
			resp, _ := g.Heartbeat(t0, Client{ID: "client-a", Host: "/10.0.0.1"}, r, topics)
			if resp.ErrorCode != tc.code {
				t.Fatalf("error %d, want %d (%v)", resp.ErrorCode, tc.code, resp.ErrorMessage)
			}
			if tc.code == 0 && resp.MemberEpoch != m.epoch {
				t.Fatalf("answered epoch %d, want %d", resp.MemberEpoch, m.epoch)
			}
		})
	}
}

func TestShutdownApplicationReachesEveryMember(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	a, b := newSim("a", "pa", oneSub("in")), newSim("b", "pb", oneSub("in"))
	settle(t, g, t0, topics, a, b)
	r := a.request()
	r.ShutdownApplication = true
	want := []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 4, StatusDetail: "Streams group member a encountered a fatal error and requested a shutdown for the entire application."}}
	resp, _ := g.Heartbeat(t0, Client{}, r, topics)
	if got := statusOf(resp); !reflect.DeepEqual(got, want) {
		t.Fatalf("a got %+v", got)
	}
	// A second request keeps the first requester.
	r = b.request()
	r.ShutdownApplication = true
	if resp, _ := g.Heartbeat(t0, Client{}, r, topics); !reflect.DeepEqual(statusOf(resp), want) {
		t.Fatalf("b got %+v", statusOf(resp))
	}
	// It lasts while the group has members, and is saved.
	var s Saved
	roundTrip(t, g.Save(), &s)
	if s.ShutdownBy != "a" {
		t.Fatalf("saved shutdown by %q", s.ShutdownBy)
	}
	for _, x := range []*sim{a, b} {
		r := x.request()
		r.MemberEpoch = -1
		g.Heartbeat(t0, Client{}, r, topics)
	}
	resp = newSim("c", "pc", oneSub("in")).beat(t, g, t0, topics, true)
	if len(resp.Status) != 0 {
		t.Fatalf("a new generation got %+v", resp.Status)
	}
}

func roundTrip(t *testing.T, in Saved, out *Saved) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

func TestResponseFields(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	a := newSim("a", "pa", oneSub("in"))
	resp := a.beat(t, g, t0, topics, true)
	// A new group's first epoch is 2; the statuses are an empty list; 4.2
	// sets neither the recovery lag nor the task offset interval.
	if resp.HeartbeatIntervalMillis != 5000 || resp.MemberEpoch != 2 || resp.ActiveTasks == nil || resp.StandbyTasks == nil ||
		resp.WarmupTasks == nil || resp.Status == nil || len(resp.Status) != 0 || resp.PartitionsByUserEndpoint != nil ||
		resp.AcceptableRecoveryLagLegacy != 0 || resp.TaskOffsetIntervalMillis != 0 || resp.EndpointInformationEpoch != 0 {
		t.Fatalf("join response %+v", resp)
	}
	settle(t, g, t0, topics, a)
	// A heartbeat that changes nothing sends no tasks.
	if resp = a.beat(t, g, t0, topics, true); resp.ActiveTasks != nil || resp.StandbyTasks != nil || resp.WarmupTasks != nil {
		t.Fatalf("unchanged assignment sent: %+v", resp)
	}
}

func TestEndpointInformation(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	a, b := newSim("a", "pa", oneSub("in")), newSim("b", "pb", oneSub("in"))
	a.endpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "a.local", Port: 8080}
	b.endpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "b.local", Port: 8081}
	settle(t, g, t0, topics, a, b)
	// Each assignment sent to a member with an endpoint moved the epoch;
	// a member behind it gets the whole map, with itself last.
	a.endpointEpoch = 0
	resp := a.beat(t, g, t0, topics, true)
	if resp.EndpointInformationEpoch != g.endpointEpoch || g.endpointEpoch == 0 {
		t.Fatalf("endpoint epoch %d, group %d", resp.EndpointInformationEpoch, g.endpointEpoch)
	}
	got := resp.PartitionsByUserEndpoint
	if len(got) != 2 || got[0].UserEndpoint.Host != "b.local" || got[1].UserEndpoint.Host != "a.local" {
		t.Fatalf("partitions by endpoint %+v", got)
	}
	for i, s := range []*sim{b, a} {
		want := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{{Topic: "in", Partitions: []int32{s.active()[0].Part}}}
		if !reflect.DeepEqual(got[i].ActivePartitions, want) {
			t.Errorf("%s: %+v, want %+v", s.id, got[i].ActivePartitions, want)
		}
	}
	// Up to date: nothing sent.
	if resp = a.beat(t, g, t0, topics, true); resp.PartitionsByUserEndpoint != nil {
		t.Fatalf("sent again: %+v", resp.PartitionsByUserEndpoint)
	}
}

func TestDescribe(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	a := newSim("a", "pa", oneSub("in"))
	a.endpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "a.local", Port: 8080}
	settle(t, g, t0, topics, a)
	r := a.request()
	r.RackID = strp("r1")
	r.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{{Key: "zone", Value: "z1"}}
	g.Heartbeat(t0, Client{ID: "client-a", Host: "/10.0.0.1"}, r, topics)
	settle(t, g, t0, topics, a)
	d := g.Describe(t0, topics)
	if d.State != "Stable" || d.Epoch != g.Epoch() || d.AssignmentEpoch != g.Epoch() {
		t.Fatalf("state %s epoch %d assignment epoch %d", d.State, d.Epoch, d.AssignmentEpoch)
	}
	wantTopo := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{{
		SubtopologyID:           "0",
		SourceTopics:            []string{"in"},
		RepartitionSinkTopics:   []string{},
		StateChangelogTopics:    []kmsg.TopicInfo{{Topic: "app-store-changelog", NumPartitions: 2, Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}},
		RepartitionSourceTopics: []kmsg.TopicInfo{},
	}}}
	if !reflect.DeepEqual(d.Topology, wantTopo) {
		t.Fatalf("topology %+v\nwant %+v", d.Topology, wantTopo)
	}
	if len(d.Members) != 1 {
		t.Fatalf("%d members", len(d.Members))
	}
	m := d.Members[0]
	all := kmsg.StreamsAssignment{ActiveTasks: []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0, 1}}}, StandbyTasks: []kmsg.TaskIDs{}, WarmupTasks: []kmsg.TaskIDs{}}
	if m.MemberID != "a" || m.MemberEpoch != g.Epoch() || m.InstanceID != nil || m.RackID == nil || *m.RackID != "r1" ||
		m.ClientID != "client-a" || m.ClientHost != "/10.0.0.1" || m.TopologyEpoch != 1 || m.ProcessID != "pa" ||
		m.UserEndpoint == nil || m.UserEndpoint.Host != "a.local" || m.UserEndpoint.Port != 8080 ||
		!reflect.DeepEqual(m.ClientTags, []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{{Key: "zone", Value: "z1"}}) ||
		!reflect.DeepEqual(m.TaskOffsets, []kmsg.TaskOffset{}) ||
		!reflect.DeepEqual(m.Assignment, all) || !reflect.DeepEqual(m.TargetAssignment, all) || m.IsClassic {
		t.Fatalf("member %+v", m)
	}
	if empty := New(testConfig()).Describe(t0, topics); empty.State != "Empty" || empty.Topology != nil || len(empty.Members) != 0 {
		t.Fatalf("empty group %+v", empty)
	}
}

func TestSaveRestoreKeepsServing(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 4, "app-store-changelog", 4)
	a, b := newSim("a", "pa", oneSub("in")), newSim("b", "pb", oneSub("in"))
	settle(t, g, t0, topics, a, b)
	// b asked to revoke mid-way: the saved group keeps that too.
	c := newSim("c", "pc", oneSub("in"))
	c.beat(t, g, t0, topics, true)
	b.beat(t, g, t0, topics, false)
	var s Saved
	roundTrip(t, g.Save(), &s)
	later := t0.Add(time.Minute)
	r := New(testConfig())
	if err := r.Restore(later, s); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Save(), g.Save()) {
		t.Fatalf("restored group saves differently:\n%+v\n%+v", r.Save(), g.Save())
	}
	if r.State() != g.State() || r.Epoch() != g.Epoch() || !reflect.DeepEqual(r.Topics(), g.Topics()) {
		t.Fatalf("restored: state %s epoch %d", r.State(), r.Epoch())
	}
	if want := later.Add(30 * time.Second); !r.NextDeadline().Equal(want) {
		t.Fatalf("restored next deadline %v, want %v (b's rebalance timeout afresh)", r.NextDeadline(), want)
	}
	epoch := r.Epoch()
	settle(t, r, later, topics, a, b, c)
	if r.Epoch() != epoch {
		t.Fatalf("restored group rebalanced: epoch %d -> %d", epoch, r.Epoch())
	}
	for _, x := range []*sim{a, b, c} {
		if len(x.owned.Active) == 0 || x.last.ErrorCode != 0 {
			t.Fatalf("%s holds %v (error %d)", x.id, x.active(), x.last.ErrorCode)
		}
	}
	checkOneActiveOwner(t, "restored", r, []*sim{a, b, c})
	if err := r.Restore(later, s); err == nil {
		t.Fatal("restore into a group in use succeeded")
	}
}

func TestVersionMovesWithSave(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	a := newSim("a", "pa", oneSub("in"))
	settle(t, g, t0, topics, a)
	saved, v := g.Save(), g.Version()
	a.beat(t, g, t0.Add(time.Second), topics, true)
	if g.Version() != v || !reflect.DeepEqual(g.Save(), saved) {
		t.Fatalf("a plain heartbeat moved the version (%d -> %d)", v, g.Version())
	}
	r := a.request()
	r.RackID = strp("r2")
	g.Heartbeat(t0, Client{ID: "client-a", Host: "/10.0.0.1"}, r, topics)
	if g.Version() == v || reflect.DeepEqual(g.Save(), saved) {
		t.Fatal("a rack change did not move the version or the save")
	}
	if g.Epoch() != saved.Epoch+1 {
		t.Fatalf("a rack change did not bump the group epoch")
	}
}

func TestValidateCommitAndFetch(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	for _, id := range []string{"", "standalone"} {
		if code := g.ValidateCommit(t0, id, -1); code != 0 {
			t.Fatalf("commit without an epoch to an empty group (member %q): %d", id, code)
		}
	}
	a := newSim("a", "pa", oneSub("in"))
	settle(t, g, t0, topics, a)
	e := g.members["a"].epoch
	for _, tc := range []struct {
		name   string
		member string
		epoch  int32
		code   int16
	}{
		{"member at its epoch", "a", e, 0},
		{"stale epoch", "a", e - 1, kerr.StaleMemberEpoch.Code},
		{"newer epoch", "a", e + 1, kerr.StaleMemberEpoch.Code},
		{"unknown member", "x", e, kerr.UnknownMemberID.Code},
		{"admin while members", "", -1, kerr.UnknownMemberID.Code},
	} {
		t.Run("commit "+tc.name, func(t *testing.T) {
			if code := g.ValidateCommit(t0, tc.member, tc.epoch); code != tc.code {
				t.Fatalf("%d, want %d", code, tc.code)
			}
		})
		t.Run("fetch "+tc.name, func(t *testing.T) {
			id := &tc.member
			want := tc.code
			if tc.member == "" {
				id, want = nil, 0 // an admin fetch is always accepted
			}
			if code := g.ValidateFetch(id, tc.epoch); code != want {
				t.Fatalf("%d, want %d", code, want)
			}
		})
	}
}

func TestEndpointPartitionsOfTasks(t *testing.T) {
	g := New(testConfig())
	topo := oneSub("big")
	topo.Subtopologies[0].SourceTopics = []string{"big", "small"}
	g.topo = fromRequest(topo)
	tasks := taskSet{{"0", 2}: {}, {"0", 0}: {}, {"0", 1}: {}}
	got := g.inputPartitions(tasks, topicsOf("big", 3, "small", 1))
	want := []topicParts{{"big", []int32{0, 1, 2}}, {"small", []int32{0}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
}
