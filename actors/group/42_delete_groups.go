package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
)

// DeleteGroups (key 42): v0-3, each group deleted by its actor, which
// removes the group's stored state before answering.
func init() {
	serve(groupAPI{key: kmsg.DeleteGroups.Int16(), min: 0, max: 3, handle: (*Coordinator).handleDeleteGroups})
}

// handleDeleteGroups asks each group's actor and gathers the answers.
// The deletion itself: offsets.go, (*Group).Delete, then Deleted.
func (c *Coordinator) handleDeleteGroups(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	waits := make([]func() any, len(req.Groups))
	for i, g := range req.Groups {
		waits[i] = c.call(r, g, &messages.GroupDelete{})
	}
	return func() kmsg.Response {
		for i, wait := range waits {
			d := wait().(kmsg.DeleteGroupsResponseGroup)
			d.Group = req.Groups[i]
			resp.Groups = append(resp.Groups, d)
		}
		return resp
	}
}

// deleteGroupsError answers one group of a DeleteGroups with code.
func deleteGroupsError(group string, code int16) kmsg.DeleteGroupsResponseGroup {
	r := kmsg.NewDeleteGroupsResponseGroup()
	r.Group, r.ErrorCode = group, code
	return r
}
