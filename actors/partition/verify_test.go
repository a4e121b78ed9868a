package partition

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/memlog"
)

func TestVerifyAnswerMapsCoordinatorErrors(t *testing.T) {
	for _, tc := range []struct {
		from, want int16
		abortable  bool
	}{
		{from: 0, want: 0},
		{from: kerr.InvalidTxnState.Code, want: kerr.InvalidTxnState.Code},
		{from: kerr.InvalidTxnState.Code, want: kerr.TransactionAbortable.Code, abortable: true},
		{from: kerr.ClusterAuthorizationFailed.Code, want: kerr.InvalidTxnState.Code},
		{from: kerr.ClusterAuthorizationFailed.Code, want: kerr.TransactionAbortable.Code, abortable: true},
		{from: kerr.ProducerFenced.Code, want: kerr.InvalidProducerEpoch.Code, abortable: true},
		{from: kerr.ConcurrentTransactions.Code, want: kerr.NotEnoughReplicas.Code, abortable: true},
		{from: kerr.NetworkException.Code, want: kerr.NotEnoughReplicas.Code},
		{from: kerr.CoordinatorLoadInProgress.Code, want: kerr.NotEnoughReplicas.Code},
		{from: kerr.CoordinatorNotAvailable.Code, want: kerr.NotEnoughReplicas.Code},
		{from: kerr.NotCoordinator.Code, want: kerr.NotEnoughReplicas.Code},
		{from: kerr.RequestTimedOut.Code, want: kerr.NotEnoughReplicas.Code},
		{from: kerr.InvalidProducerIDMapping.Code, want: kerr.InvalidProducerIDMapping.Code},
	} {
		if got, msg := verifyAnswer(tc.from, tc.abortable); got != tc.want || (got != 0 && msg == "") {
			t.Errorf("verifyAnswer(%v, abortable %v) = %v %q, want %v", kerr.ErrorForCode(tc.from), tc.abortable, kerr.ErrorForCode(got), msg, kerr.ErrorForCode(tc.want))
		}
	}
}

// verifier records the verifications a partition asks for; the test
// answers them.
type verifier struct{ asked chan messages.VerifyTxn }

func newVerifier() *verifier { return &verifier{asked: make(chan messages.VerifyTxn, 16)} }

func (v *verifier) verify(x messages.VerifyTxn) { v.asked <- x }

// txnProduce sends a transactional batch of producer 7 (epoch 0) with
// sequence seq to ref.
func txnProduceBatch(ref actorsys.Ref, v *verifier, seq int32, val string) chan messages.ProduceResult {
	out := make(chan messages.ProduceResult, 1)
	b := batch.Build(batch.Spec{ProducerID: 7, ProducerEpoch: 0, BaseSequence: seq, Transactional: true, Values: [][]byte{[]byte(val)}})
	ref.Send(&messages.Produce{Batch: b, Acks: 1, TransactionalID: "tx", Verify: v.verify, Reply: func(r messages.ProduceResult) { out <- r }})
	return out
}

func noAnswer(t *testing.T, ch chan messages.ProduceResult, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s answered before its verification: %+v", what, r)
	default:
	}
}

// TestTransactionalBatchWaitsForVerification: the first transactional batch
// of a producer waits (the mailbox still served) for the coordinator;
// batches behind it wait too and follow in order; once the producer has a
// transaction open here, nothing more is verified.
func TestTransactionalBatchWaitsForVerification(t *testing.T) {
	ref := spawnWith(t, Config{Opener: memlog.NewOpener(), SyncTimeout: time.Second, Clock: fakeClock()})
	v := newVerifier()
	first := txnProduceBatch(ref, v, 0, "a")
	second := txnProduceBatch(ref, v, 1, "b")
	asked := within(t, v.asked, time.Second, "verification")
	if asked.TransactionalID != "tx" || asked.ProducerID != 7 || asked.Epoch != 0 || asked.Topic != "t" || asked.Partition != 0 || asked.Add {
		t.Fatalf("asked %+v", asked)
	}
	barrier(t, ref) // served while the verification is pending
	noAnswer(t, first, "first batch")
	noAnswer(t, second, "second batch")
	asked.Reply(0)
	if r := within(t, first, time.Second, "first"); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("first: %+v", r)
	}
	if r := within(t, second, time.Second, "second"); r.ErrorCode != 0 || r.BaseOffset != 1 {
		t.Fatalf("second: %+v", r)
	}
	if r := within(t, txnProduceBatch(ref, v, 2, "c"), time.Second, "third"); r.ErrorCode != 0 || r.BaseOffset != 2 {
		t.Fatalf("third: %+v", r)
	}
	select {
	case x := <-v.asked:
		t.Fatalf("verified again inside an open transaction: %+v", x)
	default:
	}
}

// TestTransactionalBatchAddsUnderProtocolV2: a batch of Produce v12 (the
// transaction protocol v2) asks the coordinator to add its partition to the
// transaction, and is appended once it did.
func TestTransactionalBatchAddsUnderProtocolV2(t *testing.T) {
	ref := spawnWith(t, Config{Opener: memlog.NewOpener(), SyncTimeout: time.Second, Clock: fakeClock()})
	v := newVerifier()
	out := make(chan messages.ProduceResult, 1)
	b := batch.Build(batch.Spec{ProducerID: 7, ProducerEpoch: 3, Transactional: true, Values: [][]byte{[]byte("a")}})
	ref.Send(&messages.Produce{Batch: b, Acks: 1, TransactionalID: "tx", Verify: v.verify, AddToTxn: true,
		Reply: func(r messages.ProduceResult) { out <- r }})
	asked := within(t, v.asked, time.Second, "add")
	if !asked.Add || asked.Epoch != 3 {
		t.Fatalf("asked %+v", asked)
	}
	noAnswer(t, out, "the batch")
	asked.Reply(0)
	if r := within(t, out, time.Second, "the batch"); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("batch: %+v", r)
	}
}

// TestVerificationRefusals: a partition not in the transaction is refused
// with nothing written; a verification with no answer times out with a
// retriable error; a marker of the producer arriving during the check
// voids its answer.
func TestVerificationRefusals(t *testing.T) {
	clk := fakeClock()
	ref := spawnWith(t, Config{Opener: memlog.NewOpener(), SyncTimeout: time.Second, Clock: clk})
	v := newVerifier()

	res := txnProduceBatch(ref, v, 0, "a")
	within(t, v.asked, time.Second, "verification").Reply(kerr.InvalidTxnState.Code)
	if r := within(t, res, time.Second, "refused"); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("not in the transaction: %+v", r)
	}

	res = txnProduceBatch(ref, v, 0, "a")
	late := within(t, v.asked, time.Second, "verification")
	barrier(t, ref)
	clk.Advance(verifyTimeout)
	if r := within(t, res, time.Second, "timed out"); r.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("no answer: %+v", r)
	}
	late.Reply(0) // after the timeout: ignored

	res = txnProduceBatch(ref, v, 0, "a")
	asked := within(t, v.asked, time.Second, "verification")
	marked := make(chan int16, 1)
	ref.Send(&messages.WriteTxnMarker{ProducerID: 7, ProducerEpoch: 0, Commit: false, Reply: func(c int16) { marked <- c }})
	if c := within(t, marked, time.Second, "marker"); c != 0 {
		t.Fatalf("marker: %v", kerr.ErrorForCode(c))
	}
	asked.Reply(0)
	if r := within(t, res, time.Second, "voided"); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("marker during verification: %+v", r)
	}

	st := make(chan messages.PartitionStatusResult, 1)
	ref.Send(&messages.PartitionStatus{Reply: func(s messages.PartitionStatusResult) { st <- s }})
	if s := within(t, st, time.Second, "status"); s.LogEndOffset != 0 {
		t.Fatalf("log end %d: nothing may be written", s.LogEndOffset)
	}
}
