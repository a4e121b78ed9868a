package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// TxnOffsetCommit (key 28): v0-5. From v5 (the transaction protocol v2 of
// KIP-890 part 2) the producer sends no AddOffsetsToTxn: the group is
// added to its transaction first (addToTxn), as Kafka's group coordinator
// adds it. The group actor validates the commit like an OffsetCommit
// (generation and member id from v3, KIP-447) and stores the offsets
// pending, tagged with the producer id and epoch, in the group's log before
// it answers. The transaction coordinator's marker (messages.TxnOffsetsEnd)
// is stored too: on commit the pending offsets become the group's offsets,
// on abort they are dropped (groupstore's replay rules). A coordinator that
// loads the group resumes its pending offsets, so a marker that arrives
// after a crash or a move still finds them. While pending, OffsetFetch
// with RequireStable answers UNSTABLE_OFFSET_COMMIT for them. From v6
// topics are named by id (resolveTopicIDs); an id the broker does not know
// is UNKNOWN_TOPIC_ID.
func init() {
	serve(groupAPI{key: kmsg.TxnOffsetCommit.Int16(), min: 0, max: 6, handle: (*Coordinator).handleTxnOffsetCommit})
}

// addToTxnTimeout bounds the wait for the transaction coordinator to add a
// group (its answer may be lost with its actor).
const addToTxnTimeout = 5 * time.Second

func (c *Coordinator) handleTxnOffsetCommit(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	resolveTopicIDs(r.View, req)
	if req.Version < 5 || req.Group == "" || !coordinates(r.View, req.Group) {
		return c.dispatch(r, req.Group)
	}
	added := addToTxn(c.clock, r.Server.VerifyTxn, req)
	return func() kmsg.Response {
		if code := added(); code != 0 {
			return txnOffsetCommitError(req, code)
		}
		return c.dispatch(r, req.Group)()
	}
}

// resolveTopicIDs names the topics of a v6+ request by their ids, so the
// commit is validated and stored as a named one; an unknown id leaves the
// name empty (txnOffsetCommitResponse answers UNKNOWN_TOPIC_ID for it).
func resolveTopicIDs(v *routing.View, req *kmsg.TxnOffsetCommitRequest) {
	if req.Version < 6 {
		return
	}
	for i := range req.Topics {
		t := &req.Topics[i]
		t.Topic = ""
		if ti, ok := v.TopicIDs[t.TopicID]; ok {
			t.Topic = ti.Name
		}
	}
}

// addToTxn asks the transaction coordinator (add: conn.Server.VerifyTxn) to
// add req's group to its producer's transaction and returns a wait for the
// answer, as the TxnOffsetCommit's error code: the coordinator's refusals
// as they are, its retriable errors as COORDINATOR_NOT_AVAILABLE, which the
// producer retries.
func addToTxn(clk clock.Clock, add func(messages.VerifyTxn), req *kmsg.TxnOffsetCommitRequest) func() int16 {
	if add == nil {
		return func() int16 { return kerr.CoordinatorNotAvailable.Code }
	}
	ch := make(chan int16, 2)
	timer := clk.AfterFunc(addToTxnTimeout, func() { ch <- kerr.RequestTimedOut.Code })
	add(messages.VerifyTxn{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch,
		Topic: messages.GroupMarkerTopic(req.Group), Add: true, Reply: func(code int16) { ch <- code }})
	return func() int16 {
		code := <-ch
		timer.Stop()
		switch code {
		case 0, kerr.ProducerFenced.Code, kerr.InvalidProducerIDMapping.Code, kerr.InvalidTxnState.Code,
			kerr.TransactionalIDAuthorizationFailed.Code, kerr.ConcurrentTransactions.Code:
			return code
		case kerr.ClusterAuthorizationFailed.Code:
			// The coordinator refused this broker's request (no
			// inter-broker user): as a partition leader answers it.
			return kerr.InvalidTxnState.Code
		}
		return kerr.CoordinatorNotAvailable.Code
	}
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
	for i, t := range oc.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		unknownID := false
		if req.Version >= 6 && i < len(req.Topics) {
			// oc's topics are req's, in order.
			rt.TopicID, unknownID = req.Topics[i].TopicID, req.Topics[i].Topic == ""
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
			switch {
			case rp.ErrorCode == kerr.ProducerFenced.Code && req.Version < 3:
				rp.ErrorCode = kerr.InvalidProducerEpoch.Code
			case rp.ErrorCode == kerr.UnknownTopicOrPartition.Code && unknownID:
				rp.ErrorCode = kerr.UnknownTopicID.Code
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

// remove takes pc out of p's commits; false when it was not there.
func (p *txnPending) remove(pc *PendingCommit) bool {
	for i, x := range p.commits {
		if x == pc {
			p.commits = append(p.commits[:i], p.commits[i+1:]...)
			return true
		}
	}
	return false
}

// txnOffsetCommit validates a transactional commit, stores it pending and
// answers once it is durable.
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
		// A new epoch: whatever the fenced one left is dropped (the
		// store's replay drops it at the first record of the new epoch).
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
	recs := make([]groupstore.Record, len(pc.Records))
	for i, r := range pc.Records {
		r.Txn = &groupstore.TxnProducer{ProducerID: op.ProducerID, Epoch: op.ProducerEpoch}
		recs[i] = r
	}
	a.ensureMeta()
	a.enqueue(write{recs: recs, done: func(err error) {
		if err != nil {
			a.log.Error().Err(err).Msg("persisting transactional offsets failed")
			if p.remove(pc) {
				a.g.Fail(pc, kerr.CoordinatorNotAvailable.Code)
			} else {
				failSlots(pc, kerr.CoordinatorNotAvailable.Code)
			}
		}
		gc.Reply(txnOffsetCommitResponse(op, pc.Response))
	}})
}

// restorePending holds the pending transactional offsets a load found in
// the store, as if their TxnOffsetCommit had just been answered.
func (a *groupActor) restorePending(st groupstore.State) {
	for pid, pend := range st.Pending {
		recs := make([]groupstore.Record, 0, len(pend.Offsets))
		for tp, c := range pend.Offsets {
			recs = append(recs, groupstore.Record{TP: tp, Commit: &c})
		}
		if a.txnOffsets == nil {
			a.txnOffsets = map[int64]*txnPending{}
		}
		a.txnOffsets[pid] = &txnPending{epoch: pend.Epoch, commits: []*PendingCommit{a.g.Pending(recs)}}
	}
}

// txnOffsetsEnd stores a transaction's marker and then completes (applies)
// or drops its producer's pending offsets; it answers once the marker is
// durable. A marker with nothing pending (delivered again) is answered at
// once; one of an earlier transaction than the pending offsets'
// (messages.MarkerFenced) is refused and leaves them pending.
func (a *groupActor) txnOffsetsEnd(gc *messages.GroupCall, m *messages.TxnOffsetsEnd) {
	p := a.txnOffsets[m.ProducerID]
	if p == nil {
		gc.Reply(int16(0))
		return
	}
	if messages.MarkerFenced(m.ProducerEpoch, p.epoch, m.Bumped, true) {
		gc.Reply(kerr.InvalidProducerEpoch.Code)
		return
	}
	delete(a.txnOffsets, m.ProducerID)
	commit := m.Commit
	end := &groupstore.TxnEnd{TxnProducer: groupstore.TxnProducer{ProducerID: m.ProducerID, Epoch: m.ProducerEpoch}, Commit: m.Commit}
	a.enqueue(write{recs: []groupstore.Record{{TxnEnd: end}}, done: func(err error) {
		if err != nil {
			a.log.Error().Err(err).Msg("persisting a transaction marker failed")
			// Pending again: the coordinator retries the marker.
			if q := a.txnOffsets[m.ProducerID]; q != nil {
				p.commits = append(p.commits, q.commits...)
			}
			a.txnOffsets[m.ProducerID] = p
			gc.Reply(kerr.CoordinatorNotAvailable.Code)
			return
		}
		for _, pc := range p.commits {
			if commit {
				a.g.Apply(pc)
			} else {
				a.g.Fail(pc, 0)
			}
		}
		gc.Reply(int16(0))
	}})
}
