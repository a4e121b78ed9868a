package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
)

// ConsumerGroupDescribe (key 69): v0-1, each group asked of its actor.
func init() {
	serve(groupAPI{key: kmsg.ConsumerGroupDescribe.Int16(), min: 0, max: 1, handle: (*Coordinator).handleConsumerGroupDescribe})
}

// handleConsumerGroupDescribe asks each group's actor and gathers the
// answers.
// The description itself: offsets.go, (*Group).DescribeConsumerGroup.
func (c *Coordinator) handleConsumerGroupDescribe(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	waits := make([]func() any, len(req.Groups))
	for i, g := range req.Groups {
		waits[i] = c.call(r, g, &messages.GroupDescribeConsumer{})
	}
	return func() kmsg.Response {
		for i, wait := range waits {
			d := wait().(kmsg.ConsumerGroupDescribeResponseGroup)
			d.Group = req.Groups[i]
			if req.IncludeAuthorizedOperations {
				d.AuthorizedOperations = groupAuthorizedOps
			}
			resp.Groups = append(resp.Groups, d)
		}
		return resp
	}
}

// consumerGroupDescribeError answers one group of a ConsumerGroupDescribe
// with code.
func consumerGroupDescribeError(group string, code int16) kmsg.ConsumerGroupDescribeResponseGroup {
	r := kmsg.NewConsumerGroupDescribeResponseGroup()
	r.Group, r.ErrorCode = group, code
	return r
}
