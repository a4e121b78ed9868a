package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
)

// ShareGroupDescribe (key 77): v0-1, each group asked of its actor.
func init() {
	serve(groupAPI{key: kmsg.ShareGroupDescribe.Int16(), min: 0, max: 1, handle: (*Coordinator).handleShareGroupDescribe})
}

// handleShareGroupDescribe asks each group's actor and gathers the answers.
// The description itself: share.go, (*Group).DescribeShareGroup.
func (c *Coordinator) handleShareGroupDescribe(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	waits := make([]func() any, len(req.GroupIDs))
	for i, g := range req.GroupIDs {
		waits[i] = c.call(r, g, &messages.GroupDescribeShare{})
	}
	return func() kmsg.Response {
		for i, wait := range waits {
			d := wait().(kmsg.ShareGroupDescribeResponseGroup)
			d.GroupID = req.GroupIDs[i]
			if req.IncludeAuthorizedOperations {
				d.AuthorizedOperations = groupAuthorizedOps
			}
			resp.Groups = append(resp.Groups, d)
		}
		return resp
	}
}

// shareGroupDescribeError answers one group of a ShareGroupDescribe with
// code.
func shareGroupDescribeError(group string, code int16) kmsg.ShareGroupDescribeResponseGroup {
	r := kmsg.NewShareGroupDescribeResponseGroup()
	r.GroupID, r.ErrorCode = group, code
	return r
}
