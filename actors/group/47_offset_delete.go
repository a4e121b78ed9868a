package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// OffsetDelete (key 47): v0, to the group's actor, which persists the
// deletion before answering.
func init() {
	serve(groupAPI{key: kmsg.OffsetDelete.Int16(), min: 0, max: 0, handle: (*Coordinator).handleOffsetDelete})
}

// handleOffsetDelete dispatches to the group actor.
// The deletion itself: offsets.go, (*Group).OffsetDelete, then ApplyDelete.
func (c *Coordinator) handleOffsetDelete(r *conn.Request) conn.Pending {
	return c.dispatch(r, r.Body.(*kmsg.OffsetDeleteRequest).Group)
}

// offsetDeleteError answers an OffsetDelete with code.
func offsetDeleteError(code int16) *kmsg.OffsetDeleteResponse {
	r := kmsg.NewPtrOffsetDeleteResponse()
	r.ErrorCode = code
	return r
}
