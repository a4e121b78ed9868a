package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// WriteTxnMarkers (key 27): v1-2. The transaction coordinator of another
// broker asks this broker to write commit or abort markers to the
// partitions it leads (actors/txn); each partition actor appends the
// marker and answers once it is durable. From v2 a marker's
// TransactionVersion 2 says its epoch was bumped past the transaction's
// writes (KIP-1228), which the partition checks strictly
// (messages.WriteTxnMarker.Bumped). A partition not led here answers
// NOT_LEADER_OR_FOLLOWER and the coordinator retries. A topic named
// messages.GroupMarkerTopic(group) is the marker of the group's pending
// transactional offsets, handed to the group coordinator (NOT_COORDINATOR
// when the group is not coordinated here; the coordinator retries).
func init() {
	serve(API{Key: kmsg.WriteTxnMarkers.Int16(), MinVersion: 1, MaxVersion: 2, Handle: handleWriteTxnMarkers, ErrorResponse: writeTxnMarkersError})
}

func handleWriteTxnMarkers(r *Request) Pending {
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	fan := newFanOut(r)
	for i := range req.Markers {
		m := &req.Markers[i]
		rm := &resp.Markers[i]
		*rm = kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
		for j := range m.Topics {
			t := &m.Topics[j]
			rt := &rm.Topics[j]
			*rt = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			group, isGroup := messages.GroupOfMarkerTopic(t.Topic)
			for k, p := range t.Partitions {
				rp := &rt.Partitions[k]
				*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if isGroup {
					groupMarker(r.Server, fan, &messages.TxnOffsetsEnd{Group: group, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
						Commit: m.Committed, Bumped: m.TransactionVersion >= 2}, &rp.ErrorCode)
					continue
				}
				fan.send(t.Topic, p, &rp.ErrorCode, func(done func()) any {
					return &messages.WriteTxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, Commit: m.Committed,
						CoordinatorEpoch: m.CoordinatorEpoch, Bumped: m.TransactionVersion >= 2, Reply: func(code int16) {
							rp.ErrorCode = code
							done()
						}}
				})
			}
		}
	}
	return fan.answer(resp)
}

// groupMarker hands a group's marker to the group coordinator; its answer
// goes to *code.
func groupMarker(srv *Server, fan *fanOut, m *messages.TxnOffsetsEnd, code *int16) {
	if srv == nil || srv.TxnOffsetsEnd == nil {
		*code = kerr.CoordinatorNotAvailable.Code
		return
	}
	fan.wg.Add(1)
	m.Reply = func(c int16) {
		*code = c
		fan.wg.Done()
	}
	srv.TxnOffsetsEnd(m)
}

// writeTxnMarkersError answers every partition of every marker with code.
func writeTxnMarkersError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}
