package conn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
	"github.com/kaas-project/kaas/actors/internal/kmsgtest"
	"github.com/kaas-project/kaas/actors/routing"
)

// TestAuthStreamsGroup: a streams heartbeat needs READ on the group and,
// when it joins with a topology, DESCRIBE on every topic the topology
// names; a described group whose topology names a topic the principal may
// not describe is refused alone, after the groups refused outright.
func TestAuthStreamsGroup(t *testing.T) {
	lit, allowP := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLPermissionTypeAllow
	bind := func(groupOps []kmsg.ACLOperation, topics ...string) authz {
		a := acl.New(acl.Config{})
		var bs []acl.Binding
		for _, op := range groupOps {
			bs = append(bs, acl.Binding{ResourceType: rtGroup, ResourceName: "app", PatternType: lit, Principal: acl.Anonymous, Host: "*", Operation: op, Permission: allowP})
		}
		for _, n := range topics {
			bs = append(bs, acl.Binding{ResourceType: rtTopic, ResourceName: n, PatternType: lit, Principal: acl.Anonymous, Host: "*", Operation: opDescribe, Permission: allowP})
		}
		a.Set(bs)
		return authz{a: a, s: newSession("127.0.0.1"), view: &routing.View{}}
	}
	join := func() *kmsg.StreamsGroupHeartbeatRequest {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID = "app", "m"
		sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		sub.SubtopologyID, sub.SourceTopics = "0", []string{"in"}
		cl := kmsg.NewTopicInfo()
		cl.Topic = "app-store-changelog"
		sub.StateChangelogTopics = []kmsg.TopicInfo{cl}
		top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
		req.Topology = &top
		return req
	}
	code := func(d authDecision) int16 {
		if d.deny == nil {
			return 0
		}
		return kmsgtest.ErrorCodes(d.deny)[0]
	}
	read := []kmsg.ACLOperation{opRead}
	for _, tc := range []struct {
		name string
		z    authz
		req  *kmsg.StreamsGroupHeartbeatRequest
		want int16
	}{
		{"no READ on the group", bind(nil, "in", "app-store-changelog"), join(), codeGroupAuth},
		{"join, changelog not describable", bind(read, "in"), join(), codeTopicAuth},
		{"join, every topic describable", bind(read, "in", "app-store-changelog"), join(), 0},
		{"heartbeat without a topology", bind(read), func() *kmsg.StreamsGroupHeartbeatRequest {
			r := join()
			r.Topology, r.MemberEpoch = nil, 3
			return r
		}(), 0},
	} {
		if got := code(authorize(tc.z, apiFor(tc.req.Key()), tc.req)); got != tc.want {
			t.Errorf("%s: code %d, want %d", tc.name, got, tc.want)
		}
	}

	describe := func(z authz) *kmsg.StreamsGroupDescribeResponse {
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{"other", "app"}
		d := authorize(z, apiFor(req.Key()), req)
		if d.deny != nil || len(req.Groups) != 1 || req.Groups[0] != "app" {
			t.Fatalf("describe reaches the handler with %v (%+v), want app", req.Groups, d.deny)
		}
		resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		g := kmsg.NewStreamsGroupDescribeResponseGroup()
		g.Group, g.State = "app", "Stable"
		top := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		sub := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
		sub.SubtopologyID, sub.SourceTopics = "0", []string{"in"}
		cl := kmsg.NewTopicInfo()
		cl.Topic = "app-store-changelog"
		sub.StateChangelogTopics = []kmsg.TopicInfo{cl}
		top.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{sub}
		g.Topology = &top
		g.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{kmsg.NewStreamsGroupDescribeResponseGroupMember()}
		resp.Groups = []kmsg.StreamsGroupDescribeResponseGroup{g}
		d.patch(resp)
		return resp
	}
	describeOps := []kmsg.ACLOperation{opDescribe}
	resp := describe(bind(describeOps, "in"))
	if len(resp.Groups) != 2 || resp.Groups[0].Group != "other" || resp.Groups[0].ErrorCode != codeGroupAuth ||
		resp.Groups[1].ErrorCode != codeTopicAuth || len(resp.Groups[1].Members) != 0 || resp.Groups[1].Topology != nil {
		t.Fatalf("describe with the changelog not describable: %+v", resp.Groups)
	}
	resp = describe(bind(describeOps, "in", "app-store-changelog"))
	if len(resp.Groups) != 2 || resp.Groups[1].ErrorCode != 0 || len(resp.Groups[1].Members) != 1 {
		t.Fatalf("describe with every topic describable: %+v", resp.Groups)
	}
}
