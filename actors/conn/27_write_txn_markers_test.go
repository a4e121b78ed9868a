package conn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// TestWriteTxnMarkersOfAGroup: a marker whose topic is a group's marker
// topic goes to the group coordinator, with its outcome, and the answer
// carries the coordinator's code; without a group coordinator it is
// COORDINATOR_NOT_AVAILABLE.
func TestWriteTxnMarkersOfAGroup(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   int16
		noGroups bool
	}{
		{"applied", 0, false},
		{"not coordinated here", kerr.NotCoordinator.Code, false},
		{"no group coordinator", kerr.CoordinatorNotAvailable.Code, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrWriteTxnMarkersRequest()
			req.Version = 1
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed = 42, 3, true
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = messages.GroupMarkerTopic("my:group"), []int32{0}
			m.Topics = append(m.Topics, mt)
			req.Markers = append(req.Markers, m)
			var got *messages.TxnOffsetsEnd
			srv := &Server{}
			if !tc.noGroups {
				srv.TxnOffsetsEnd = func(e *messages.TxnOffsetsEnd) {
					got = e
					go e.Reply(tc.answer)
				}
			}
			resp := handleWriteTxnMarkers(&Request{Body: req, View: &routing.View{}, Server: srv})().(*kmsg.WriteTxnMarkersResponse)
			if c := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; c != tc.answer {
				t.Fatalf("code %d, want %d", c, tc.answer)
			}
			if tc.noGroups {
				return
			}
			if got == nil || got.Group != "my:group" || got.ProducerID != 42 || got.ProducerEpoch != 3 || !got.Commit {
				t.Fatalf("group coordinator got %+v", got)
			}
		})
	}
	if _, ok := messages.GroupOfMarkerTopic("orders"); ok {
		t.Error("a topic name taken for a group marker")
	}
}
