package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
)

// DeleteGroups (key 42): v0-3, each group deleted by its actor, which
// removes the group's stored state before answering. A share group's
// share-partition state is removed first, as Kafka's coordinator does:
// its actor is asked whether it is an empty share group (ShareAdmin
// without create; one with members is NON_EMPTY_GROUP), the broker's
// share keeper removes the state of every topic, and only then is the
// group deleted; state that could not be removed leaves the group in
// place, answered KAFKA_STORAGE_ERROR.
func init() {
	serve(groupAPI{key: kmsg.DeleteGroups.Int16(), min: 0, max: 3, handle: (*Coordinator).handleDeleteGroups})
}

// handleDeleteGroups asks each group's actor and gathers the answers.
// The deletion itself: offsets.go, (*Group).Delete, then Deleted.
func (c *Coordinator) handleDeleteGroups(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	var shareChecks []func() any
	if c.shares != nil {
		for _, g := range req.Groups {
			shareChecks = append(shareChecks, c.call(r, g, &messages.GroupShareAdmin{}))
		}
	}
	return func() kmsg.Response {
		codes := make([]int16, len(req.Groups))
		for i, check := range shareChecks {
			switch code := check().(int16); code {
			case 0:
				if err := c.shares.DeleteGroupStates(r.Ctx, req.Groups[i]); err != nil {
					codes[i] = kerr.KafkaStorageError.Code
				}
			case kerr.NonEmptyGroup.Code:
				codes[i] = code
			}
		}
		waits := make([]func() any, len(req.Groups))
		for i, g := range req.Groups {
			if codes[i] == 0 {
				waits[i] = c.call(r, g, &messages.GroupDelete{})
			}
		}
		for i, wait := range waits {
			d := deleteGroupsError(req.Groups[i], codes[i])
			if wait != nil {
				d = wait().(kmsg.DeleteGroupsResponseGroup)
				d.Group = req.Groups[i]
			}
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
