package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
)

// DescribeGroups (key 15): v0-6, each group asked of its actor.
func init() {
	serve(groupAPI{key: kmsg.DescribeGroups.Int16(), min: 0, max: 6, handle: (*Coordinator).handleDescribeGroups})
}

// handleDescribeGroups asks each group's actor and gathers the answers.
// The description itself: offsets.go, (*Group).DescribeGroup.
func (c *Coordinator) handleDescribeGroups(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	waits := make([]func() any, len(req.Groups))
	for i, g := range req.Groups {
		waits[i] = c.call(r, g, &messages.GroupDescribe{Version: req.Version})
	}
	return func() kmsg.Response {
		for i, wait := range waits {
			d := wait().(kmsg.DescribeGroupsResponseGroup)
			d.Group = req.Groups[i]
			if req.IncludeAuthorizedOperations {
				d.AuthorizedOperations = groupAuthorizedOps
			}
			resp.Groups = append(resp.Groups, d)
		}
		return resp
	}
}

// describeGroupsError answers one group of a DescribeGroups with code.
func describeGroupsError(group string, code int16) kmsg.DescribeGroupsResponseGroup {
	r := kmsg.NewDescribeGroupsResponseGroup()
	r.Group, r.ErrorCode = group, code
	return r
}
