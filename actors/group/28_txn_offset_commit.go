package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// TxnOffsetCommit (key 28): v0-4 (v5+ is KIP-890 transaction protocol v2,
// not served). The group actor validates the commit like an OffsetCommit
// (generation and member id from v3, KIP-447) and holds the offsets
// pending, per producer, until the transaction coordinator ends the
// transaction (messages.TxnOffsetsEnd): on commit they are persisted and
// become the group's offsets; on abort they are dropped. While pending,
// OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT for them.
func init() {
	serve(groupAPI{key: kmsg.TxnOffsetCommit.Int16(), min: 0, max: 4, handle: (*Coordinator).handleTxnOffsetCommit})
}

func (c *Coordinator) handleTxnOffsetCommit(r *conn.Request) conn.Pending {
	return c.dispatch(r, r.Body.(*kmsg.TxnOffsetCommitRequest).Group)
}

// txnPending is one producer's transactional offsets not yet committed.
type txnPending struct {
	epoch   int16
	commits []*PendingCommit
}

// asOffsetCommit expresses a TxnOffsetCommit as the OffsetCommit whose
// validation it shares: v7 (leader epochs, static members); before
// TxnOffsetCommit v3 no generation is checked.
func asOffsetCommit(req *kmsg.TxnOffsetCommitRequest) *kmsg.OffsetCommitRequest {
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version = 7
	oc.Group, oc.Generation, oc.MemberID, oc.InstanceID = req.Group, req.Generation, req.MemberID, req.InstanceID
	if req.Version < 3 {
		oc.Generation, oc.MemberID, oc.InstanceID = -1, "", nil
	}
	for _, t := range req.Topics {
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = t.Topic
		for _, p := range t.Partitions {
			op := kmsg.NewOffsetCommitRequestTopicPartition()
			op.Partition, op.Offset, op.LeaderEpoch, op.Metadata = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata
			if req.Version < 2 {
				op.LeaderEpoch = -1
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		oc.Topics = append(oc.Topics, ot)
	}
	return oc
}

// txnOffsetCommitResponse carries an OffsetCommit verdict back in a
// TxnOffsetCommit response.
func txnOffsetCommitResponse(req *kmsg.TxnOffsetCommitRequest, oc *kmsg.OffsetCommitResponse) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range oc.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
			if rp.ErrorCode == kerr.ProducerFenced.Code && req.Version < 3 {
				rp.ErrorCode = kerr.InvalidProducerEpoch.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// txnOffsetCommitError answers every partition of a TxnOffsetCommit with
// code.
func txnOffsetCommitError(req *kmsg.TxnOffsetCommitRequest, code int16) *kmsg.TxnOffsetCommitResponse {
	return txnOffsetCommitResponse(req, offsetCommitError(asOffsetCommit(req), code))
}

// txnOffsetCommit validates a transactional commit and holds it pending.
func (a *groupActor) txnOffsetCommit(gc *messages.GroupCall, op *kmsg.TxnOffsetCommitRequest, pc *PendingCommit) {
	if len(pc.Records) == 0 {
		gc.Reply(txnOffsetCommitResponse(op, pc.Response))
		return
	}
	if a.txnOffsets == nil {
		a.txnOffsets = map[int64]*txnPending{}
	}
	p := a.txnOffsets[op.ProducerID]
	switch {
	case p != nil && op.ProducerEpoch < p.epoch:
		a.g.Fail(pc, kerr.ProducerFenced.Code)
		gc.Reply(txnOffsetCommitResponse(op, pc.Response))
		return
	case p != nil && op.ProducerEpoch > p.epoch:
		// A new epoch: whatever the fenced one left is dropped.
		for _, old := range p.commits {
			a.g.Fail(old, 0)
		}
		p = nil
	}
	if p == nil {
		p = &txnPending{epoch: op.ProducerEpoch}
		a.txnOffsets[op.ProducerID] = p
	}
	p.commits = append(p.commits, pc)
	gc.Reply(txnOffsetCommitResponse(op, pc.Response))
}

// txnOffsetsEnd completes (persists and applies) or drops a producer's
// pending transactional offsets; it answers once they are durable.
func (a *groupActor) txnOffsetsEnd(gc *messages.GroupCall, m *messages.TxnOffsetsEnd) {
	p := a.txnOffsets[m.ProducerID]
	if p == nil {
		gc.Reply(int16(0))
		return
	}
	delete(a.txnOffsets, m.ProducerID)
	if !m.Commit || m.ProducerEpoch < p.epoch {
		for _, pc := range p.commits {
			a.g.Fail(pc, 0)
		}
		gc.Reply(int16(0))
		return
	}
	var recs []groupstore.Record
	for _, pc := range p.commits {
		recs = append(recs, pc.Records...)
	}
	a.ensureMeta()
	a.enqueue(write{recs: recs, done: func(err error) {
		if err != nil {
			a.log.Error().Err(err).Msg("persisting transactional offsets failed")
			// Pending again: the coordinator retries the marker.
			a.txnOffsets[m.ProducerID] = p
			gc.Reply(kerr.CoordinatorNotAvailable.Code)
			return
		}
		for _, pc := range p.commits {
			a.g.Apply(pc)
		}
		gc.Reply(int16(0))
	}})
}
