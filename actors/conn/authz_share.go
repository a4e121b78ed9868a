package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
)

// The share-group (KIP-932) rules of authRules: READ on the group for every
// key, as Kafka; ShareFetch and ShareAcknowledge also need READ on each
// topic (refused partitions answer TOPIC_AUTHORIZATION_FAILED), and the
// heartbeat DESCRIBE on each subscribed topic.

func authShareGroupHeartbeat(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.ShareGroupHeartbeatRequest)
	if !z.group(opRead, req.GroupID) {
		return refuse(api, req, codeGroupAuth)
	}
	for _, t := range req.SubscribedTopicNames {
		if !z.topic(opDescribe, t) {
			return refuse(api, req, codeTopicAuth)
		}
	}
	return allow
}

func authShareGroupDescribe(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.ShareGroupDescribeRequest)
	keep, refused := split(req.GroupIDs, func(g string) bool { return z.group(opDescribe, g) })
	req.GroupIDs = keep
	patch := func(r kmsg.Response) {
		resp := r.(*kmsg.ShareGroupDescribeResponse)
		if req.IncludeAuthorizedOperations {
			for i := range resp.Groups {
				if g := &resp.Groups[i]; g.ErrorCode == 0 {
					g.AuthorizedOperations = z.ops(rtGroup, g.GroupID, acl.GroupOperations)
				}
			}
		}
		for _, g := range refused {
			rg := kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID, rg.ErrorCode = g, codeGroupAuth
			resp.Groups = append(resp.Groups, rg)
		}
	}
	return narrowed(len(keep) == 0 && len(refused) > 0, req, patch)
}

func authShareFetch(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.ShareFetchRequest)
	if req.GroupID == nil || !z.group(opRead, *req.GroupID) {
		return refuse(api, req, codeGroupAuth)
	}
	keep, refused := split(req.Topics, func(t kmsg.ShareFetchRequestTopic) bool {
		name := z.topicOf("", t.TopicID)
		return name == "" || z.topic(opRead, name)
	})
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0 && len(req.ForgottenTopicsData) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.ShareFetchResponse)
		for _, t := range refused {
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewShareFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuth
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

func authShareAcknowledge(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.ShareAcknowledgeRequest)
	if req.GroupID == nil || !z.group(opRead, *req.GroupID) {
		return refuse(api, req, codeGroupAuth)
	}
	keep, refused := split(req.Topics, func(t kmsg.ShareAcknowledgeRequestTopic) bool {
		name := z.topicOf("", t.TopicID)
		return name == "" || z.topic(opRead, name)
	})
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.ShareAcknowledgeResponse)
		for _, t := range refused {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuth
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

// authDescribeShareGroupOffsets: DESCRIBE on each group
// (GROUP_AUTHORIZATION_FAILED for the group) and on each topic named
// (TOPIC_AUTHORIZATION_FAILED per partition).
func authDescribeShareGroupOffsets(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.DescribeShareGroupOffsetsRequest)
	keep, refused := split(req.Groups, func(g kmsg.DescribeShareGroupOffsetsRequestGroup) bool { return z.group(opDescribe, g.GroupID) })
	var refusedTopics []kmsg.DescribeShareGroupOffsetsResponseGroup
	for i := range keep {
		g := &keep[i]
		var out []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		for _, t := range g.Topics {
			if z.topic(opDescribe, t.Topic) {
				out = append(out, t)
				continue
			}
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, codeTopicAuth, -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		if g.Topics != nil && out == nil {
			out = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
		}
		g.Topics = out
		if len(rg.Topics) > 0 {
			refusedTopics = append(refusedTopics, rg)
		}
	}
	if len(refused) == 0 && len(refusedTopics) == 0 {
		return allow
	}
	req.Groups = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.DescribeShareGroupOffsetsResponse)
		for _, rg := range refusedTopics {
			for i := range resp.Groups {
				if resp.Groups[i].GroupID == rg.GroupID {
					resp.Groups[i].Topics = append(resp.Groups[i].Topics, rg.Topics...)
				}
			}
		}
		for _, g := range refused {
			rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID, rg.ErrorCode = g.GroupID, codeGroupAuth
			resp.Groups = append(resp.Groups, rg)
		}
	})
}

// authAlterShareGroupOffsets: READ on the group (Kafka asks READ, as for
// committing a consumer group's offsets), READ on each topic, refused
// partition by partition.
func authAlterShareGroupOffsets(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.AlterShareGroupOffsetsRequest)
	if !z.group(opRead, req.GroupID) {
		return refuse(api, req, codeGroupAuth)
	}
	keep, refused := split(req.Topics, func(t kmsg.AlterShareGroupOffsetsRequestTopic) bool { return z.topic(opRead, t.Topic) })
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.AlterShareGroupOffsetsResponse)
		for _, t := range refused {
			rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuth
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

// authDeleteShareGroupOffsets: DELETE on the group, READ on each topic,
// refused topic by topic (as OffsetDelete).
func authDeleteShareGroupOffsets(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.DeleteShareGroupOffsetsRequest)
	if !z.group(opDelete, req.GroupID) {
		return refuse(api, req, codeGroupAuth)
	}
	keep, refused := split(req.Topics, func(t kmsg.DeleteShareGroupOffsetsRequestTopic) bool { return z.topic(opRead, t.Topic) })
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.DeleteShareGroupOffsetsResponse)
		for _, t := range refused {
			rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, codeTopicAuth
			resp.Topics = append(resp.Topics, rt)
		}
	})
}
