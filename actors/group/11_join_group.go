package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// JoinGroup (key 11): v0-9, to the group's actor; the answer may park until
// the rebalance's join phase completes. v0-1 are served as from Kafka 4.0.1
// (KAFKA-19444): librdkafka before 2.11 enables GSSAPI only when
// ApiVersions lists JoinGroup v0. v0 has no rebalance timeout (the session
// timeout stands for it).
func init() {
	serve(groupAPI{key: kmsg.JoinGroup.Int16(), min: 0, max: 9, handle: (*Coordinator).handleJoinGroup})
}

// handleJoinGroup dispatches to the group actor.
// The join itself: classic.go, (*Group).JoinGroup.
func (c *Coordinator) handleJoinGroup(r *conn.Request) conn.Pending {
	return c.dispatch(r, r.Body.(*kmsg.JoinGroupRequest).Group)
}

// joinGroupError answers a JoinGroup with code (classic.go's joinError, which
// the state machine answers its own refusals with).
func joinGroupError(req *kmsg.JoinGroupRequest, code int16) *kmsg.JoinGroupResponse {
	return joinError(req, code)
}
