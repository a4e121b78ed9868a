package conn

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
	"github.com/kaas-project/kaas/actors/streams"
)

// The streams-group (KIP-1071) rules of authRules, as Kafka's: READ on the
// group for the heartbeat, and on a join DESCRIBE on every topic its
// topology names; DESCRIBE on each group described. The internal topics a
// heartbeat creates need CREATE, checked where they are created
// (Request.MayCreateTopic). A described group whose topology names a topic
// the principal may not describe is answered TOPIC_AUTHORIZATION_FAILED
// alone, and the groups refused come first, as Kafka answers.

func authStreamsGroupHeartbeat(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.StreamsGroupHeartbeatRequest)
	if !z.group(opRead, req.Group) {
		return refuse(api, req, codeGroupAuth)
	}
	if req.Topology != nil {
		for _, t := range streams.TopologyTopics(req.Topology) {
			if !z.topic(opDescribe, t) {
				return refuse(api, req, codeTopicAuth)
			}
		}
	}
	return allow
}

func authStreamsGroupDescribe(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.StreamsGroupDescribeRequest)
	keep, refused := split(req.Groups, func(g string) bool { return z.group(opDescribe, g) })
	req.Groups = keep
	patch := func(r kmsg.Response) {
		resp := r.(*kmsg.StreamsGroupDescribeResponse)
		for i := range resp.Groups {
			g := &resp.Groups[i]
			if g.ErrorCode != 0 {
				continue
			}
			if z.a != nil && !describesTopology(z, g.Topology) {
				group := g.Group
				*g = kmsg.NewStreamsGroupDescribeResponseGroup()
				g.Group, g.ErrorCode = group, codeTopicAuth
				msg := "The described group uses topics that the client is not authorized to describe."
				g.ErrorMessage = &msg
				g.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
				continue
			}
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = z.ops(rtGroup, g.Group, acl.GroupOperations)
			}
		}
		rows := make([]kmsg.StreamsGroupDescribeResponseGroup, 0, len(refused)+len(resp.Groups))
		for _, g := range refused {
			rg := kmsg.NewStreamsGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, codeGroupAuth
			rows = append(rows, rg)
		}
		resp.Groups = append(rows, resp.Groups...)
	}
	return narrowed(len(keep) == 0 && len(refused) > 0, req, patch)
}

// describesTopology reports whether the principal may describe every topic
// a described streams group's topology names.
func describesTopology(z authz, t *kmsg.StreamsGroupDescribeResponseGroupTopology) bool {
	if t == nil {
		return true
	}
	for _, s := range t.Subtopologies {
		names := append(slices.Clone(s.SourceTopics), s.RepartitionSinkTopics...)
		for _, ti := range s.StateChangelogTopics {
			names = append(names, ti.Topic)
		}
		for _, ti := range s.RepartitionSourceTopics {
			names = append(names, ti.Topic)
		}
		for _, n := range names {
			if !z.topic(opDescribe, n) {
				return false
			}
		}
	}
	return true
}
