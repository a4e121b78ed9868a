package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// LeaveGroup (key 13): v0-5, to the group's actor.
func init() {
	serve(groupAPI{key: kmsg.LeaveGroup.Int16(), min: 0, max: 5, handle: (*Coordinator).handleLeaveGroup})
}

// handleLeaveGroup dispatches to the group actor.
// The leave itself: classic.go, (*Group).LeaveGroup.
func (c *Coordinator) handleLeaveGroup(r *conn.Request) conn.Pending {
	return c.dispatch(r, r.Body.(*kmsg.LeaveGroupRequest).Group)
}

// leaveGroupError answers a LeaveGroup with code.
func leaveGroupError(code int16) *kmsg.LeaveGroupResponse {
	r := kmsg.NewPtrLeaveGroupResponse()
	r.ErrorCode = code
	return r
}
