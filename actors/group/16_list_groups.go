package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
)

// ListGroups (key 16): v0-5, answered by the manager (manager.go) from the
// summaries its group actors report. Errors: the top-level ErrorCode, set
// here.
func init() {
	serve(groupAPI{key: kmsg.ListGroups.Int16(), min: 0, max: 5, handle: (*Coordinator).handleListGroups})
}

// handleListGroups asks the manager for the groups, filtered by state (v4+)
// and type (v5+).
// The summary each group reports: group.go, (*Group).Summary.
func (c *Coordinator) handleListGroups(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	type answer struct {
		rows []messages.GroupRow
		code int16
	}
	ch := make(chan answer, 1)
	l := &messages.GroupList{Reply: func(rows []messages.GroupRow, code int16) { ch <- answer{rows, code} }}
	if req.Version >= 4 {
		l.States = req.StatesFilter
	}
	if req.Version >= 5 {
		l.Types = req.TypesFilter
	}
	c.ref.Send(l)
	return func() kmsg.Response {
		var a answer
		select {
		case a = <-ch:
		case <-c.done:
			a.code = kerr.CoordinatorNotAvailable.Code
		}
		resp.ErrorCode = a.code
		for _, row := range a.rows {
			g := kmsg.NewListGroupsResponseGroup()
			g.Group, g.ProtocolType, g.GroupState, g.GroupType = row.Group, row.ProtocolType, row.State, row.Type
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
}
