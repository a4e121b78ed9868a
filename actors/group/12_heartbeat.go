package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// Heartbeat (key 12): v0-4, the classic protocol's heartbeat, to the
// group's actor.
func init() {
	serve(groupAPI{key: kmsg.Heartbeat.Int16(), min: 0, max: 4, handle: (*Coordinator).handleHeartbeat})
}

// handleHeartbeat dispatches to the group actor.
// The heartbeat itself: classic.go, (*Group).Heartbeat.
func (c *Coordinator) handleHeartbeat(r *conn.Request) conn.Pending {
	return c.dispatch(r, r.Body.(*kmsg.HeartbeatRequest).Group)
}

// heartbeatError answers a Heartbeat with code.
func heartbeatError(code int16) *kmsg.HeartbeatResponse {
	r := kmsg.NewPtrHeartbeatResponse()
	r.ErrorCode = code
	return r
}
