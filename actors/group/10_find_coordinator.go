package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// FindCoordinator (key 10): v0-6, answered here from the routing view; no
// group actor is involved. Errors: the top-level ErrorCode (v0-3) or each
// coordinator's (v4+), set here.
func init() {
	serve(groupAPI{key: kmsg.FindCoordinator.Int16(), min: 0, max: 6, handle: (*Coordinator).handleFindCoordinator})
}

// handleFindCoordinator answers from the routing view. Transactional ids
// (key type 1) are placed like groups (actors/txn), but while an id's slot
// is held between coordinators the answer is the broker it goes to, not
// COORDINATOR_NOT_AVAILABLE: franz-go fails a produce whose
// AddPartitionsToTxn finds no coordinator, yet retries the NOT_COORDINATOR
// that broker answers until it holds the slot (then it loads the id). Share
// groups are refused with INVALID_REQUEST.
func (*Coordinator) handleFindCoordinator(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		switch req.CoordinatorType {
		case 0, 1:
			b, _ := r.View.CoordinatorFor(key)
			if req.CoordinatorType == 1 {
				b, _ = r.View.NextCoordinatorFor(key)
			}
			if b.Host == "" || b.Fenced || !b.Alive {
				c.ErrorCode = kerr.CoordinatorNotAvailable.Code
				break
			}
			c.NodeID, c.Host, c.Port = b.ID, b.Host, b.Port
		default:
			c.ErrorCode = kerr.InvalidRequest.Code
			c.ErrorMessage = strp("kaas serves consumer-group and transaction coordinators only")
		}
		if c.ErrorCode != 0 && c.ErrorMessage == nil {
			c.ErrorMessage = strp(kerr.ErrorForCode(c.ErrorCode).Error())
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
	}
	return conn.Ready(resp)
}
