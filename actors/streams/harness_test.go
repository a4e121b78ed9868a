package streams

import (
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeTopics is the cluster's topics in tests.
type fakeTopics map[string]Topic

func (f fakeTopics) ByName(n string) (Topic, bool) { t, ok := f[n]; return t, ok }

func (f fakeTopics) Names() []string {
	var ns []string
	for n := range f {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// with returns the topics plus name with n partitions.
func (f fakeTopics) with(name string, n int32) fakeTopics {
	c := fakeTopics{}
	for k, v := range f {
		c[k] = v
	}
	id := [16]byte{}
	copy(id[:], name)
	c[name] = Topic{Name: name, ID: id, Partitions: n}
	return c
}

func topicsOf(kv ...any) fakeTopics {
	f := fakeTopics{}
	for i := 0; i < len(kv); i += 2 {
		f = f.with(kv[i].(string), int32(kv[i+1].(int)))
	}
	return f
}

var t0 = time.Unix(1_700_000_000, 0)

func testConfig() GroupConfig {
	return GroupConfig{InitialRebalanceDelay: -1}
}

// oneSub is a topology of one subtopology reading source, with a changelog.
func oneSub(source string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	return &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{
		SubtopologyID: "0",
		SourceTopics:  []string{source},
		StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-store-changelog", Configs: []kmsg.TopicInfoConfig{
			{Key: "cleanup.policy", Value: "compact"},
		}}},
	}}}
}

// sim is a Kafka Streams client as the coordinator sees it: it reports
// the tasks it holds and takes the tasks it is given.
type sim struct {
	id, process string
	epoch       int32
	owned       tasks
	// want is the last assignment received; the client holds it once it
	// applies it (a delayed client keeps reporting its old tasks).
	want          *tasks
	endpointEpoch int32
	topology      *kmsg.StreamsGroupHeartbeatRequestTopology
	endpoint      *kmsg.StreamsGroupHeartbeatRequestUserEndpoint
	last          *kmsg.StreamsGroupHeartbeatResponse
}

func newSim(id, process string, topo *kmsg.StreamsGroupHeartbeatRequestTopology) *sim {
	return &sim{id: id, process: process, owned: newTasks(), topology: topo}
}

func (s *sim) request() *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group = "app"
	req.MemberID = s.id
	req.MemberEpoch = s.epoch
	req.EndpointInformationEpoch = s.endpointEpoch
	if s.epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topology = s.topology
		p := s.process
		req.ProcessID = &p
		req.UserEndpoint = s.endpoint
		req.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	} else {
		req.ActiveTasks = s.owned.Active.taskIDs()
		req.StandbyTasks = s.owned.Standby.taskIDs()
		req.WarmupTasks = s.owned.Warmup.taskIDs()
	}
	return req
}

// beat sends a heartbeat; apply says whether the client takes up (and
// revokes to) the assignment it was given.
func (s *sim) beat(t testing.TB, g *Group, now time.Time, topics Topics, apply bool) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	if apply && s.want != nil {
		s.owned = s.want.clone()
		s.want = nil
	}
	resp, _ := g.Heartbeat(now, Client{ID: "client-" + s.id, Host: "/10.0.0.1"}, s.request(), topics)
	s.last = resp
	if resp.ErrorCode != 0 {
		// Fenced or unknown: the client drops everything and rejoins.
		s.epoch, s.owned, s.want = 0, newTasks(), nil
		return resp
	}
	s.id = resp.MemberID
	s.epoch = resp.MemberEpoch
	s.endpointEpoch = resp.EndpointInformationEpoch
	if resp.ActiveTasks != nil {
		w := tasks{fromTaskIDs(resp.ActiveTasks), fromTaskIDs(resp.StandbyTasks), fromTaskIDs(resp.WarmupTasks)}
		s.want = &w
		// Revoking is immediate in a client that applies; new tasks come
		// with the next apply.
	}
	return resp
}

// settle heartbeats every sim, applying assignments, until nothing moves.
func settle(t testing.TB, g *Group, now time.Time, topics Topics, sims ...*sim) {
	t.Helper()
	for i := 0; i < 20; i++ {
		moved := false
		for _, s := range sims {
			before := g.Version()
			s.beat(t, g, now, topics, true)
			if g.Version() != before || s.want != nil {
				moved = true
			}
		}
		if !moved && g.State() == Stable {
			return
		}
	}
	t.Fatalf("group did not settle: state %s", g.State())
}

func (s *sim) active() []taskID { return s.owned.Active.sorted() }
