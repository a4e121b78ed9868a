package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
)

// StreamsGroupDescribe (key 89): v0, each group asked of its actor.
func init() {
	serve(groupAPI{key: kmsg.StreamsGroupDescribe.Int16(), min: 0, max: 0, handle: (*Coordinator).handleStreamsGroupDescribe})
}

// handleStreamsGroupDescribe asks each group's actor and gathers the
// answers.
// The description itself: streams.go, (*Group).DescribeStreamsGroup.
func (c *Coordinator) handleStreamsGroupDescribe(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.StreamsGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	waits := make([]func() any, len(req.Groups))
	for i, g := range req.Groups {
		waits[i] = c.call(r, g, &messages.GroupDescribeStreams{})
	}
	return func() kmsg.Response {
		for i, wait := range waits {
			d := wait().(kmsg.StreamsGroupDescribeResponseGroup)
			d.Group = req.Groups[i]
			if req.IncludeAuthorizedOperations {
				d.AuthorizedOperations = groupAuthorizedOps
			}
			resp.Groups = append(resp.Groups, d)
		}
		return resp
	}
}

// streamsGroupDescribeError answers one group of a StreamsGroupDescribe
// with code.
func streamsGroupDescribeError(group string, code int16) kmsg.StreamsGroupDescribeResponseGroup {
	r := kmsg.NewStreamsGroupDescribeResponseGroup()
	r.Group, r.ErrorCode = group, code
	return r
}
