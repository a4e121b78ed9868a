package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
)

// TestFindCoordinatorOfAHeldSlot: while a slot is held between
// coordinators, a group's lookup answers COORDINATOR_NOT_AVAILABLE, and a
// transactional id's the broker the slot goes to (which refuses with a
// retriable NOT_COORDINATOR until it holds the slot).
func TestFindCoordinatorOfAHeldSlot(t *testing.T) {
	next := routing.Broker{ID: 2, Host: "next", Port: 9092, Alive: true}
	v := &routing.View{
		Brokers:         []routing.Broker{{ID: 0, Host: "h", Port: 1, Alive: true}, next},
		Coordinator:     func(string) (routing.Broker, bool) { return routing.Broker{}, false },
		NextCoordinator: func(string) (routing.Broker, bool) { return next, false },
	}
	for _, tc := range []struct {
		keyType  int8
		version  int16
		wantCode int16
		wantNode int32
	}{
		{0, 3, kerr.CoordinatorNotAvailable.Code, -1},
		{0, 4, kerr.CoordinatorNotAvailable.Code, -1},
		{1, 3, 0, 2},
		{1, 4, 0, 2},
	} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType = tc.version, tc.keyType
		req.CoordinatorKey, req.CoordinatorKeys = "k", []string{"k"}
		resp := (*Coordinator)(nil).handleFindCoordinator(&conn.Request{Body: req, View: v})().(*kmsg.FindCoordinatorResponse)
		code, node, host := resp.ErrorCode, resp.NodeID, resp.Host
		if tc.version >= 4 {
			code, node, host = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID, resp.Coordinators[0].Host
		}
		if code != tc.wantCode || node != tc.wantNode || (node >= 0 && host != next.Host) {
			t.Errorf("key type %d v%d: code %d node %d host %q, want code %d node %d", tc.keyType, tc.version, code, node, host, tc.wantCode, tc.wantNode)
		}
	}
}
