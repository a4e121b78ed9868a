package txn

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/interbroker"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// Remote sends markers for partitions led by other brokers as a Kafka
// WriteTxnMarkers request to the leader's listener, through the clients
// this broker keeps to the others. It is Options.Remote.
type Remote struct {
	Peers *interbroker.Clients
}

// Write implements Options.Remote: done gets the partitions whose marker
// was not written.
func (r *Remote) Write(b routing.Broker, w WriteMarkers, tps []TP, done func(failed []TP, err error)) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = w.ProducerID, w.Epoch, w.Commit
	if w.Bumped {
		// Dropped on the wire to a broker that knows only v0-1, which
		// then checks the marker as unbumped.
		m.TransactionVersion = 2
	}
	byTopic := map[string]int{}
	for _, tp := range tps {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(m.Topics)
			byTopic[tp.Topic] = i
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = tp.Topic
			m.Topics = append(m.Topics, t)
		}
		m.Topics[i].Partitions = append(m.Topics[i].Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, m)
	r.Peers.Request(b, req, func(kr kmsg.Response, err error) {
		if err != nil {
			done(tps, err)
			return
		}
		resp := kr.(*kmsg.WriteTxnMarkersResponse)
		ok := map[TP]bool{}
		for _, rm := range resp.Markers {
			for _, t := range rm.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode == 0 {
						ok[TP{Topic: t.Topic, Partition: p.Partition}] = true
					}
				}
			}
		}
		var failed []TP
		for _, tp := range tps {
			if !ok[tp] {
				failed = append(failed, tp)
			}
		}
		var ferr error
		if len(failed) > 0 {
			ferr = fmt.Errorf("WriteTxnMarkers to %s:%d: %d partitions refused", b.Host, b.Port, len(failed))
		}
		done(failed, ferr)
	})
}

// WriteGroup sends a group's transaction marker to the group's coordinator
// broker b: a WriteTxnMarkers request whose topic is
// messages.GroupMarkerTopic(group). m.Reply gets its error code
// (NETWORK_EXCEPTION when the request failed).
func (r *Remote) WriteGroup(b routing.Broker, m *messages.TxnOffsetsEnd) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	x := kmsg.NewWriteTxnMarkersRequestMarker()
	x.ProducerID, x.ProducerEpoch, x.Committed = m.ProducerID, m.ProducerEpoch, m.Commit
	t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	t.Topic, t.Partitions = messages.GroupMarkerTopic(m.Group), []int32{0}
	x.Topics = append(x.Topics, t)
	req.Markers = append(req.Markers, x)
	r.Peers.Request(b, req, func(kr kmsg.Response, err error) {
		if err != nil {
			m.Reply(kerr.NetworkException.Code)
			return
		}
		for _, rm := range kr.(*kmsg.WriteTxnMarkersResponse).Markers {
			for _, rt := range rm.Topics {
				for _, rp := range rt.Partitions {
					m.Reply(rp.ErrorCode)
					return
				}
			}
		}
		m.Reply(kerr.UnknownServerError.Code)
	})
}

// Verify implements Options.RemoteVerify: an AddPartitionsToTxn v4
// request (v5 to add) with VerifyOnly (unless v.Add) to the coordinator
// broker b, answered with the partition's error code (NETWORK_EXCEPTION
// when the request failed).
func (r *Remote) Verify(b routing.Broker, v messages.VerifyTxn) {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	if v.Add {
		req.Version = 5
	}
	x := kmsg.NewAddPartitionsToTxnRequestTransaction()
	x.TransactionalID, x.ProducerID, x.ProducerEpoch, x.VerifyOnly = v.TransactionalID, v.ProducerID, v.Epoch, !v.Add
	t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	t.Topic, t.Partitions = v.Topic, []int32{v.Partition}
	x.Topics = append(x.Topics, t)
	req.Transactions = append(req.Transactions, x)
	r.Peers.Request(b, req, func(kr kmsg.Response, err error) {
		if err != nil {
			v.Reply(kerr.NetworkException.Code)
			return
		}
		v.Reply(verifyCode(kr.(*kmsg.AddPartitionsToTxnResponse), v))
	})
}

// verifyCode is the answer to v in resp: the request's error, else its
// partition's (INVALID_TXN_STATE when the partition is missing from it).
func verifyCode(resp *kmsg.AddPartitionsToTxnResponse, v messages.VerifyTxn) int16 {
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	for _, x := range resp.Transactions {
		if x.TransactionalID != v.TransactionalID {
			continue
		}
		for _, t := range x.Topics {
			if t.Topic != v.Topic {
				continue
			}
			for _, p := range t.Partitions {
				if p.Partition == v.Partition {
					return p.ErrorCode
				}
			}
		}
	}
	return kerr.InvalidTxnState.Code
}
