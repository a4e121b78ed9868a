package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// ShareGroupHeartbeat (key 76): v0-1, the KIP-932 share-group heartbeat,
// to the group's actor.
func init() {
	serve(groupAPI{key: kmsg.ShareGroupHeartbeat.Int16(), min: 0, max: 1, handle: (*Coordinator).handleShareGroupHeartbeat})
}

// handleShareGroupHeartbeat refuses an empty group id with INVALID_REQUEST
// (as Kafka), else dispatches to the group actor.
// The heartbeat itself: share.go, (*Group).ShareHeartbeat.
func (c *Coordinator) handleShareGroupHeartbeat(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.ShareGroupHeartbeatRequest)
	if req.GroupID == "" {
		return conn.Ready(shareHeartbeatError(kerr.InvalidRequest.Code))
	}
	return c.dispatch(r, req.GroupID)
}
