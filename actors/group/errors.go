package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// errorReply builds the answer to op carrying code everywhere it can: a
// request the coordinator does not get to (NOT_COORDINATOR, loading, ...).
func errorReply(group string, op any, code int16) any {
	switch req := op.(type) {
	case *kmsg.JoinGroupRequest:
		return joinError(req, code)
	case *kmsg.SyncGroupRequest:
		return syncError(code)
	case *kmsg.HeartbeatRequest:
		r := kmsg.NewPtrHeartbeatResponse()
		r.ErrorCode = code
		return r
	case *kmsg.LeaveGroupRequest:
		r := kmsg.NewPtrLeaveGroupResponse()
		r.ErrorCode = code
		return r
	case *kmsg.OffsetCommitRequest:
		return offsetCommitError(req, code)
	case *kmsg.OffsetDeleteRequest:
		r := kmsg.NewPtrOffsetDeleteResponse()
		r.ErrorCode = code
		return r
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return cgError(code, "")
	case *messages.GroupFetchOffsets:
		r := kmsg.NewOffsetFetchResponseGroup()
		r.Group, r.ErrorCode = group, code
		return r
	case *messages.GroupDescribe:
		r := kmsg.NewDescribeGroupsResponseGroup()
		r.Group, r.ErrorCode = group, code
		return r
	case *messages.GroupDelete:
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group, r.ErrorCode = group, code
		return r
	case *messages.GroupDescribeConsumer:
		r := kmsg.NewConsumerGroupDescribeResponseGroup()
		r.Group, r.ErrorCode = group, code
		return r
	}
	return nil
}

func offsetCommitError(req *kmsg.OffsetCommitRequest, code int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
