package streams

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// repartitioned is a two-subtopology topology: 0 reads the source and
// writes the repartition topic, 1 reads it and keeps a store.
func repartitioned(source string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	return &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{
			SubtopologyID:         "0",
			SourceTopics:          []string{source},
			RepartitionSinkTopics: []string{"app-rep-repartition"},
		},
		{
			SubtopologyID: "1",
			RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "app-rep-repartition", Configs: []kmsg.TopicInfoConfig{
				{Key: "cleanup.policy", Value: "delete"}, {Key: "retention.ms", Value: "-1"},
			}}},
			StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-store-changelog", ReplicationFactor: 3, Configs: []kmsg.TopicInfoConfig{
				{Key: "cleanup.policy", Value: "compact"},
			}}},
		},
	}}
}

func statusOf(resp *kmsg.StreamsGroupHeartbeatResponse) []kmsg.StreamsGroupHeartbeatResponseStatus {
	var out []kmsg.StreamsGroupHeartbeatResponseStatus
	for _, s := range resp.Status {
		out = append(out, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: s.StatusCode, StatusDetail: s.StatusDetail})
	}
	return out
}

func TestMissingSourceTopicThenRecovery(t *testing.T) {
	g := New(testConfig())
	a := newSim("a", "pa", oneSub("in"))
	topics := topicsOf("other", 1)
	resp := a.beat(t, g, t0, topics, true)
	want := []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 1, StatusDetail: "Source topics in are missing."}}
	if got := statusOf(resp); !reflect.DeepEqual(got, want) {
		t.Fatalf("status %+v, want %+v", got, want)
	}
	if len(resp.ActiveTasks) != 0 || g.State() != NotReady {
		t.Fatalf("tasks %v state %s", resp.ActiveTasks, g.State())
	}
	// Not ready, the topology is described as sent.
	d := g.Describe(t0, topics)
	if d.State != "NotReady" || d.Topology == nil || len(d.Topology.Subtopologies) != 1 || d.Topology.Subtopologies[0].StateChangelogTopics[0].NumPartitions != 0 {
		t.Fatalf("describe while not ready: %+v", d)
	}
	epoch := g.Epoch()
	// The source topic appears: the group epoch moves, the changelog is
	// to be created.
	topics = topics.with("in", 3)
	resp, create := g.Heartbeat(t0, Client{}, a.request(), topics)
	if g.Epoch() != epoch+1 {
		t.Fatalf("epoch %d, want %d", g.Epoch(), epoch+1)
	}
	if len(create) != 1 || create[0].Name != "app-store-changelog" || create[0].Partitions != 3 || create[0].Configs["cleanup.policy"] != "compact" {
		t.Fatalf("create %+v", create)
	}
	if got := statusOf(resp); len(got) != 1 || got[0].StatusCode != 3 || got[0].StatusDetail != "Internal topics are missing: app-store-changelog" {
		t.Fatalf("status %+v", got)
	}
	topics = topics.with("app-store-changelog", 3)
	settle(t, g, t0, topics, a)
	if len(a.owned.Active) != 3 || len(a.last.Status) != 0 {
		t.Fatalf("a holds %v, status %+v", a.active(), a.last.Status)
	}
}

func TestInternalTopicsToCreate(t *testing.T) {
	g := New(testConfig())
	a := newSim("a", "pa", repartitioned("in"))
	topics := topicsOf("in", 5)
	_, create := g.Heartbeat(t0, Client{}, a.request(), topics)
	want := []InternalTopic{
		{Name: "app-rep-repartition", Partitions: 5, ReplicationFactor: -1, Configs: map[string]string{"cleanup.policy": "delete", "retention.ms": "-1"}},
		{Name: "app-store-changelog", Partitions: 5, ReplicationFactor: 3, Configs: map[string]string{"cleanup.policy": "compact"}},
	}
	if !reflect.DeepEqual(create, want) {
		t.Fatalf("create %+v\nwant %+v", create, want)
	}
	if g.State() != NotReady {
		t.Fatalf("state %s", g.State())
	}
	// Created: both subtopologies' tasks are assigned.
	topics = topics.with("app-rep-repartition", 5).with("app-store-changelog", 5)
	settle(t, g, t0, topics, a)
	if len(a.owned.Active) != 10 {
		t.Fatalf("a holds %v", a.active())
	}
	d := g.Describe(t0, topics)
	if n := d.Topology.Subtopologies[1].RepartitionSourceTopics[0].NumPartitions; n != 5 {
		t.Fatalf("described repartition topic with %d partitions", n)
	}
}

func TestIncorrectlyPartitionedTopics(t *testing.T) {
	copart := &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{
		SubtopologyID:     "0",
		SourceTopics:      []string{"left", "right"},
		CopartitionGroups: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0, 1}}},
	}}}
	for _, tc := range []struct {
		name   string
		topo   *kmsg.StreamsGroupHeartbeatRequestTopology
		topics fakeTopics
		detail string
	}{
		{"copartitioned sources differ", copart, topicsOf("left", 2, "right", 3),
			"Following topics do not have the same number of partitions: [{left=2, right=3}]"},
		{"existing internal topic", repartitioned("in"), topicsOf("in", 4, "app-rep-repartition", 4, "app-store-changelog", 2),
			"Existing topic app-store-changelog has different number of partitions: expected 4, found 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(testConfig())
			a := newSim("a", "pa", tc.topo)
			resp, create := g.Heartbeat(t0, Client{}, a.request(), tc.topics)
			want := []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 2, StatusDetail: tc.detail}}
			if got := statusOf(resp); !reflect.DeepEqual(got, want) {
				t.Fatalf("status %+v, want %+v", got, want)
			}
			if len(create) != 0 || len(resp.ActiveTasks) != 0 || g.State() != NotReady {
				t.Fatalf("create %v tasks %v state %s", create, resp.ActiveTasks, g.State())
			}
		})
	}
	// Copartitioned with a flexible repartition topic: it takes the
	// source's count.
	topo := repartitioned("in")
	topo.Subtopologies[1].SourceTopics = []string{"side"}
	topo.Subtopologies[1].CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0}, RepartitionSourceTopics: []int16{0}}}
	g := New(testConfig())
	_, create := g.Heartbeat(t0, Client{}, newSim("a", "pa", topo).request(), topicsOf("in", 8, "side", 3))
	if len(create) != 2 || create[0].Partitions != 3 || create[1].Partitions != 3 {
		t.Fatalf("create %+v", create)
	}
}

func TestTopologyEpochs(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 2, "app-store-changelog", 2)
	topo2 := oneSub("in")
	topo2.Epoch = 2
	a := newSim("a", "pa", topo2)
	settle(t, g, t0, topics, a)
	// A member with an older topology joins and is told it is stale.
	b := newSim("b", "pb", oneSub("in"))
	resp := b.beat(t, g, t0, topics, true)
	want := []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 0, StatusDetail: "The member's topology epoch 1 is behind the group's topology epoch 2."}}
	if got := statusOf(resp); resp.ErrorCode != 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("error %d status %+v", resp.ErrorCode, got)
	}
	// Another topology at the group's epoch, or a newer one, is refused.
	for _, epoch := range []int32{2, 3} {
		other := repartitioned("in")
		other.Epoch = epoch
		resp = newSim("c", "pc", other).beat(t, g, t0, topics, true)
		if resp.ErrorCode != 42 || *resp.ErrorMessage != "Topology updates are not supported yet." {
			t.Fatalf("epoch %d: error %d %v", epoch, resp.ErrorCode, resp.ErrorMessage)
		}
	}
	if g.Len() != 2 {
		t.Fatalf("%d members", g.Len())
	}
}

func TestTopologyConfigurationCases(t *testing.T) {
	sub := func(id string, sources []string, repSources []string, sinks []string, changelogs ...string) kmsg.StreamsGroupHeartbeatRequestTopologySubtopology {
		s := kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: id, SourceTopics: sources, RepartitionSinkTopics: sinks}
		for _, r := range repSources {
			s.RepartitionSourceTopics = append(s.RepartitionSourceTopics, kmsg.TopicInfo{Topic: r})
		}
		for _, c := range changelogs {
			s.StateChangelogTopics = append(s.StateChangelogTopics, kmsg.TopicInfo{Topic: c})
		}
		return s
	}
	topo := func(subs ...kmsg.StreamsGroupHeartbeatRequestTopologySubtopology) *kmsg.StreamsGroupHeartbeatRequestTopology {
		return &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 1, Subtopologies: subs}
	}
	for _, tc := range []struct {
		name    string
		topo    *kmsg.StreamsGroupHeartbeatRequestTopology
		topics  fakeTopics
		code    int16
		msg     string
		status  []kmsg.StreamsGroupHeartbeatResponseStatus
		created []string
	}{
		{name: "a source topic as its own changelog is not created",
			topo: topo(sub("0", []string{"table"}, nil, nil, "table")), topics: topicsOf("table", 3)},
		{name: "missing sources are summarized",
			topo: topo(sub("0", []string{"e", "d", "c", "b", "a"}, nil, nil)), topics: topicsOf(),
			status: []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 1, StatusDetail: "Source topics a, b, c and 2 additional topics are missing."}}},
		{name: "a subtopology without inputs",
			topo: topo(sub("0", []string{"in"}, nil, nil), sub("1", nil, nil, nil, "store")), topics: topicsOf("in", 1),
			code: 130, msg: "No source topics found for subtopology 1"},
		{name: "a repartition topic nobody writes",
			topo: topo(sub("0", []string{"in"}, []string{"rep"}, nil)), topics: topicsOf("in", 1),
			code: 130, msg: "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic."},
		{name: "repartition chain takes the largest input",
			topo:    topo(sub("0", []string{"small", "big"}, nil, []string{"rep1"}), sub("1", nil, []string{"rep1"}, []string{"rep2"}), sub("2", nil, []string{"rep2"}, nil, "store")),
			topics:  topicsOf("small", 2, "big", 6),
			status:  []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: 3, StatusDetail: "Internal topics are missing: rep1, rep2, store"}},
			created: []string{"rep1/6", "rep2/6", "store/6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(testConfig())
			resp, create := g.Heartbeat(t0, Client{}, newSim("a", "pa", tc.topo).request(), tc.topics)
			if resp.ErrorCode != tc.code || (tc.code != 0 && *resp.ErrorMessage != tc.msg) {
				t.Fatalf("error %d %v, want %d %q", resp.ErrorCode, resp.ErrorMessage, tc.code, tc.msg)
			}
			if tc.code != 0 {
				return
			}
			if got := statusOf(resp); !reflect.DeepEqual(got, tc.status) {
				t.Fatalf("status %+v, want %+v", got, tc.status)
			}
			var names []string
			for _, c := range create {
				names = append(names, fmt.Sprintf("%s/%d", c.Name, c.Partitions))
			}
			if !reflect.DeepEqual(names, tc.created) {
				t.Fatalf("created %v, want %v", names, tc.created)
			}
		})
	}
}
