package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// errorReply builds the answer to op carrying code everywhere it can: a
// request the coordinator does not get to (NOT_COORDINATOR, loading, ...).
// Each key's answer is built in its NN_name.go file.
func errorReply(group string, op any, code int16) any {
	switch req := op.(type) {
	case *kmsg.OffsetCommitRequest:
		return offsetCommitError(req, code)
	case *kmsg.TxnOffsetCommitRequest:
		return txnOffsetCommitError(req, code)
	case *messages.TxnOffsetsEnd, *messages.GroupShareAdmin:
		return code
	case *messages.GroupFetchOffsets:
		return offsetFetchError(group, code)
	case *kmsg.JoinGroupRequest:
		return joinGroupError(req, code)
	case *kmsg.HeartbeatRequest:
		return heartbeatError(code)
	case *kmsg.LeaveGroupRequest:
		return leaveGroupError(code)
	case *kmsg.SyncGroupRequest:
		return syncGroupError(code)
	case *messages.GroupDescribe:
		return describeGroupsError(group, code)
	case *messages.GroupDelete:
		return deleteGroupsError(group, code)
	case *kmsg.OffsetDeleteRequest:
		return offsetDeleteError(code)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return consumerGroupHeartbeatError(code)
	case *messages.GroupDescribeConsumer:
		return consumerGroupDescribeError(group, code)
	case *kmsg.ShareGroupHeartbeatRequest:
		return shareHeartbeatError(code)
	case *messages.GroupDescribeShare:
		return shareGroupDescribeError(group, code)
	case *kmsg.StreamsGroupHeartbeatRequest:
		return StreamsReply{Response: streamsHeartbeatError(code, "")}
	case *messages.GroupDescribeStreams:
		return streamsGroupDescribeError(group, code)
	}
	return nil
}
