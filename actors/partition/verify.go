package partition

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/batch"
)

// Transaction verification (KIP-890 part 1). A transactional batch of a
// producer that has no transaction open on this partition starts one here;
// before it is appended, the transaction coordinator confirms that the
// partition is part of the producer's ongoing transaction. Without that
// check, a batch sent without AddPartitionsToTxn (or after its transaction
// ended) would open a transaction no marker ever closes, holding the last
// stable offset back for good.
//
// The batch waits, stashed, while the coordinator answers (the mailbox is
// never blocked); later batches of the same producer queue behind it so
// that sequences stay in order. A marker of the producer arriving in
// between invalidates the answer: its transaction ended here.

// verifyTimeout bounds a verification: past it the batch is answered with a
// retriable error and the producer retries.
const verifyTimeout = 5 * time.Second

// verification is the pending check of one producer's first batch.
type verification struct {
	seq   uint64
	prods *Producers // the table the check was started on
	marks uint64     // the producer's marker count then
	head  *messages.Produce
	queue []*messages.Produce
	timer clock.Timer
}

// verified reports a verification's answer to the actor.
type verified struct {
	pid  int64
	seq  uint64
	code int16
}

// needsVerify reports whether a batch must be verified before its append:
// a transactional data batch of a producer with no transaction open here.
func needsVerify(h batch.Header, prods *Producers, m *messages.Produce) bool {
	return m.Verify != nil && m.TransactionalID != "" && h.IsTransactional() && !h.IsControl() && !prods.InTxn(h.ProducerID)
}

// verifyAnswer maps the coordinator's answer to the produce's, as Kafka's
// partition leaders do: a fenced producer gets INVALID_PRODUCER_EPOCH; the
// coordinator's retriable errors become NOT_ENOUGH_REPLICAS, which every
// client retries without refreshing metadata; a partition outside the
// transaction, or a refused authorization of the broker's own request, is
// INVALID_TXN_STATE, or TRANSACTION_ABORTABLE for a producer that knows it
// (abortable: Produce v11+, KIP-1050), which aborts and carries on.
func verifyAnswer(code int16, abortable bool) (int16, string) {
	switch code {
	case 0:
		return 0, ""
	case kerr.InvalidTxnState.Code, kerr.ClusterAuthorizationFailed.Code:
		return notInTxn(abortable), "the partition is not part of the producer's ongoing transaction (AddPartitionsToTxn first)"
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code, "the producer's epoch is fenced by the transaction coordinator"
	case kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code, kerr.RequestTimedOut.Code:
		return kerr.NotEnoughReplicas.Code, "unable to verify the partition is part of the transaction: " + kerr.ErrorForCode(code).Error()
	}
	return code, "transaction verification failed"
}

// notInTxn is the code for a batch outside its producer's transaction.
func notInTxn(abortable bool) int16 {
	if abortable {
		return kerr.TransactionAbortable.Code
	}
	return kerr.InvalidTxnState.Code
}

// startVerify stashes m (the first batch of producer h.ProducerID to be
// verified) and asks the coordinator.
func (a *Actor) startVerify(m *messages.Produce, h batch.Header, prods *Producers) {
	a.verifySeq++
	v := &verification{seq: a.verifySeq, prods: prods, marks: prods.Marks(h.ProducerID), head: m}
	if a.verifying == nil {
		a.verifying = map[int64]*verification{}
	}
	a.verifying[h.ProducerID] = v
	self, system, pid, seq := a.self, a.system, h.ProducerID, v.seq
	answer := func(code int16) { system.Root.Send(self, verified{pid: pid, seq: seq, code: code}) }
	v.timer = a.cfg.Clock.AfterFunc(verifyTimeout, func() { answer(kerr.RequestTimedOut.Code) })
	m.Verify(messages.VerifyTxn{TransactionalID: m.TransactionalID, ProducerID: h.ProducerID, Epoch: h.ProducerEpoch,
		Topic: a.id.Topic, Partition: a.id.Partition, Add: m.AddToTxn, Reply: answer})
}

// queueBehindVerify queues m behind its producer's verification in flight,
// if any.
func (a *Actor) queueBehindVerify(m *messages.Produce, h batch.Header) bool {
	if !h.IsTransactional() {
		return false
	}
	v := a.verifying[h.ProducerID]
	if v == nil {
		return false
	}
	v.queue = append(v.queue, m)
	return true
}

// onVerified appends (or refuses) the verified batch, then runs the
// batches queued behind it in order.
func (a *Actor) onVerified(r verified) {
	v := a.verifying[r.pid]
	if v == nil || v.seq != r.seq {
		return // answered already (the timeout, or the answer after it)
	}
	delete(a.verifying, r.pid)
	v.timer.Stop()
	code, msg := verifyAnswer(r.code, v.head.Abortable)
	if code == 0 {
		switch prods := a.core.Producers(); {
		case prods != v.prods:
			code, msg = kerr.NotEnoughReplicas.Code, "the partition was reopened while its transaction was verified"
		case prods.Marks(r.pid) != v.marks:
			code, msg = notInTxn(v.head.Abortable), "the producer's transaction ended on this partition while it was verified"
		}
	}
	if code != 0 {
		refuseProduce(v.head, code, msg)
	} else {
		a.produceBatch(v.head, true)
	}
	for _, m := range v.queue {
		a.produceBatch(m, false)
	}
}

// dropVerifications answers every stashed batch (the actor stops).
func (a *Actor) dropVerifications() {
	for pid, v := range a.verifying {
		delete(a.verifying, pid)
		v.timer.Stop()
		refuseProduce(v.head, kerr.NotLeaderForPartition.Code, "")
		for _, m := range v.queue {
			refuseProduce(m, kerr.NotLeaderForPartition.Code, "")
		}
	}
}

func refuseProduce(m *messages.Produce, code int16, msg string) {
	m.Reply(messages.ProduceResult{ErrorCode: code, ErrorMessage: msg, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
}
