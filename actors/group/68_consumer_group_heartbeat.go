package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// ConsumerGroupHeartbeat (key 68): v0-1, the KIP-848 consumer protocol's
// heartbeat, to the group's actor.
func init() {
	serve(groupAPI{key: kmsg.ConsumerGroupHeartbeat.Int16(), min: 0, max: 1, handle: (*Coordinator).handleConsumerGroupHeartbeat})
}

// handleConsumerGroupHeartbeat refuses an empty group id with
// INVALID_REQUEST (as Kafka, not INVALID_GROUP_ID), else dispatches to the
// group actor.
// The heartbeat itself: consumer.go, (*Group).ConsumerHeartbeat.
func (c *Coordinator) handleConsumerGroupHeartbeat(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if req.Group == "" {
		return conn.Ready(cgError(kerr.InvalidRequest.Code, "GroupId can't be empty."))
	}
	return c.dispatch(r, req.Group)
}

// consumerGroupHeartbeatError answers a ConsumerGroupHeartbeat with code
// (consumer.go's cgError, which the state machine answers its own refusals
// with).
func consumerGroupHeartbeatError(code int16) *kmsg.ConsumerGroupHeartbeatResponse {
	return cgError(code, "")
}
