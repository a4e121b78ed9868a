package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
)

// OffsetFetch (key 9): v1-10; v8+ batch groups, each asked of its actor.
func init() {
	serve(groupAPI{key: kmsg.OffsetFetch.Int16(), min: 1, max: 10, handle: (*Coordinator).handleOffsetFetch})
}

// handleOffsetFetch asks each group's actor for its offsets and assembles
// the answer in the request's version.
// The fetch itself: offsets.go, (*Group).FetchOffsets.
func (c *Coordinator) handleOffsetFetch(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	groups := req.Groups
	if req.Version < 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = req.Group
		if req.Topics != nil || req.Version < 2 {
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		}
		for _, t := range req.Topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = t.Topic, t.Partitions
			g.Topics = append(g.Topics, gt)
		}
		groups = []kmsg.OffsetFetchRequestGroup{g}
	}
	waits := make([]func() any, len(groups))
	for i, g := range groups {
		f := &messages.GroupFetchOffsets{Version: req.Version, MemberID: g.MemberID, MemberEpoch: g.MemberEpoch, RequireStable: req.RequireStable}
		if req.Version < 9 {
			f.MemberID, f.MemberEpoch = nil, -1
		}
		if g.Topics != nil {
			f.Topics = []messages.GroupTopic{}
			for _, t := range g.Topics {
				f.Topics = append(f.Topics, messages.GroupTopic{Topic: t.Topic, TopicID: t.TopicID, Partitions: t.Partitions})
			}
		}
		waits[i] = c.call(r, g.Group, f)
	}
	return func() kmsg.Response {
		for i, wait := range waits {
			rg := wait().(kmsg.OffsetFetchResponseGroup)
			rg.Group = groups[i].Group
			if req.Version >= 8 {
				resp.Groups = append(resp.Groups, rg)
				continue
			}
			resp.ErrorCode = rg.ErrorCode
			if rg.ErrorCode != 0 && req.Version < 2 {
				// v1 carries errors per partition only.
				for _, t := range req.Topics {
					rt := kmsg.NewOffsetFetchResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewOffsetFetchResponseTopicPartition()
						rp.Partition, rp.Offset, rp.ErrorCode, rp.Metadata = p, -1, rg.ErrorCode, strp("")
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
				continue
			}
			for _, t := range rg.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp
	}
}

// offsetFetchError answers one group of an OffsetFetch with code
// (handleOffsetFetch spreads it over the partitions for v1).
func offsetFetchError(group string, code int16) kmsg.OffsetFetchResponseGroup {
	r := kmsg.NewOffsetFetchResponseGroup()
	r.Group, r.ErrorCode = group, code
	return r
}
