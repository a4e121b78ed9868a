package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// SyncGroup (key 14): v0-5, to the group's actor; a follower's answer
// parks until the leader's assignment arrives.
func init() {
	serve(groupAPI{key: kmsg.SyncGroup.Int16(), min: 0, max: 5, handle: (*Coordinator).handleSyncGroup})
}

// handleSyncGroup dispatches to the group actor.
// The sync itself: classic.go, (*Group).SyncGroup.
func (c *Coordinator) handleSyncGroup(r *conn.Request) conn.Pending {
	return c.dispatch(r, r.Body.(*kmsg.SyncGroupRequest).Group)
}

// syncGroupError answers a SyncGroup with code (classic.go's syncError, which
// the state machine answers its own refusals with).
func syncGroupError(code int16) *kmsg.SyncGroupResponse {
	return syncError(code)
}
