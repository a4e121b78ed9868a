package txn

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/txnlog"
)

// harness drives a Core in virtual time, executing Persist and
// WriteMarkers as the test says and recording replies.
type harness struct {
	t       *testing.T
	c       *Core
	now     time.Time
	replies []Result
	persist []Persist
	markers []WriteMarkers
	after   []After
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, c: NewCore(CoreConfig{}), now: time.Unix(1000, 0)}
}

func (h *harness) step(ev any) {
	for _, e := range h.c.Step(ev, h.now) {
		switch e := e.(type) {
		case Reply:
			h.replies = append(h.replies, e.Result)
		case Persist:
			h.persist = append(h.persist, e)
		case WriteMarkers:
			h.markers = append(h.markers, e)
		case After:
			h.after = append(h.after, e)
		case Report:
			e.Done(e.Unloaded)
		}
	}
}

// flush acknowledges every Persist and WriteMarkers in flight, until
// nothing more is emitted.
func (h *harness) flush() {
	for len(h.persist)+len(h.markers) > 0 {
		p, m := h.persist, h.markers
		h.persist, h.markers = nil, nil
		for _, x := range p {
			h.step(Persisted{ID: x.State.ID, Seq: x.Seq})
		}
		for _, x := range m {
			h.step(MarkersWritten{ID: x.ID, Seq: x.Seq})
		}
	}
}

func (h *harness) last() Result {
	h.t.Helper()
	if len(h.replies) == 0 {
		h.t.Fatal("no reply")
	}
	r := h.replies[len(h.replies)-1]
	h.replies = nil
	return r
}

func (h *harness) status(id string) txnlog.Status {
	st, _ := h.c.State(id)
	return st.Status
}

func (h *harness) init(id string, pid int64, epoch int16) Result {
	h.step(InitProducerID{ID: id, TimeoutMs: 60000, ProducerID: pid, Epoch: epoch, NewPID: 100, Reply: h.record})
	h.flush()
	return h.last()
}

func (h *harness) record(r Result) { h.replies = append(h.replies, r) }

// ongoing starts id's first transaction (producer 100, epoch 0) with tp0
// added.
func (h *harness) ongoing(id string) {
	h.step(Loaded{State: txnlog.State{ID: id}})
	h.init(id, -1, -1)
	h.step(AddPartitions{ID: id, ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
	h.flush()
}

var tp0 = TP{Topic: "t", Partition: 0}

func TestCommitWritesMarkersBeforeAnswering(t *testing.T) {
	h := newHarness(t)
	h.step(Loaded{State: txnlog.State{ID: "x"}})
	r := h.init("x", -1, -1)
	if r.ErrorCode != 0 || r.ProducerID != 100 || r.Epoch != 0 {
		t.Fatalf("init = %+v", r)
	}
	h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
	if len(h.replies) != 0 || len(h.persist) != 1 || h.persist[0].State.Status != txnlog.Ongoing {
		t.Fatalf("add answered before persisting: replies %v persist %v", h.replies, h.persist)
	}
	// A request while the add is persisting is told to retry.
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record})
	if r := h.last(); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("end while busy = %+v", r)
	}
	h.flush()
	if r := h.last(); r.ErrorCode != 0 {
		t.Fatalf("add = %+v", r)
	}
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record})
	if len(h.persist) != 1 || h.persist[0].State.Status != txnlog.PrepareCommit {
		t.Fatalf("end did not persist PrepareCommit first: %+v", h.persist)
	}
	h.step(Persisted{ID: "x", Seq: h.persist[0].Seq})
	h.persist = nil
	if len(h.markers) != 1 || !h.markers[0].Commit || h.markers[0].Bumped || len(h.markers[0].Partitions) != 1 || len(h.replies) != 0 {
		t.Fatalf("markers %+v replies %v", h.markers, h.replies)
	}
	// A failed marker write is retried after MarkerRetry, not answered.
	m := h.markers[0]
	h.markers = nil
	h.step(MarkersWritten{ID: "x", Seq: m.Seq, Err: errors.New("partition moving")})
	if len(h.after) != 1 || len(h.replies) != 0 {
		t.Fatalf("after %+v replies %v", h.after, h.replies)
	}
	h.step(h.after[0].Event)
	h.flush()
	if r := h.last(); r.ErrorCode != 0 || h.status("x") != txnlog.CompleteCommit {
		t.Fatalf("end = %+v status %v", r, h.status("x"))
	}
	if st, _ := h.c.State("x"); len(st.Partitions) != 0 || len(st.Groups) != 0 {
		t.Fatalf("a finished transaction holds partitions %v and groups %v", st.Partitions, st.Groups)
	}
	// A retried EndTxn is answered the same; the other outcome is refused.
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record})
	if r := h.last(); r.ErrorCode != 0 {
		t.Fatalf("retried commit = %+v", r)
	}
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: false, Reply: h.record})
	if r := h.last(); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("abort after commit = %+v", r)
	}
}

func TestTable(t *testing.T) {
	// Each case starts from an id with an initialized producer 100/0.
	cases := []struct {
		name string
		ev   func(h *harness) any
		code int16
	}{
		{"add with wrong producer id", func(h *harness) any {
			return AddPartitions{ID: "x", ProducerID: 7, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record}
		}, kerr.InvalidProducerIDMapping.Code},
		{"add with old epoch", func(h *harness) any {
			return AddPartitions{ID: "x", ProducerID: 100, Epoch: -1, Partitions: []TP{tp0}, Reply: h.record}
		}, kerr.ProducerFenced.Code},
		{"end with nothing ongoing", func(h *harness) any {
			return EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record}
		}, kerr.InvalidTxnState.Code},
		{"verify a partition not added", func(h *harness) any {
			return AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, VerifyOnly: true, Reply: h.record}
		}, kerr.InvalidTxnState.Code},
		{"timeout above the maximum", func(h *harness) any {
			return InitProducerID{ID: "x", TimeoutMs: 16 * 60000, ProducerID: -1, Epoch: -1, Reply: h.record}
		}, kerr.InvalidTransactionTimeout.Code},
		{"KIP-360 with a stale epoch", func(h *harness) any {
			return InitProducerID{ID: "x", TimeoutMs: 1000, ProducerID: 100, Epoch: 5, Reply: h.record}
		}, kerr.ProducerFenced.Code},
		{"unknown id", func(h *harness) any {
			return EndTxn{ID: "nope", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record}
		}, kerr.CoordinatorLoadInProgress.Code},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.step(Loaded{State: txnlog.State{ID: "x"}})
			h.init("x", -1, -1)
			h.step(tc.ev(h))
			h.flush()
			if r := h.last(); r.ErrorCode != tc.code {
				t.Fatalf("code = %d (%v), want %d", r.ErrorCode, kerr.ErrorForCode(r.ErrorCode), tc.code)
			}
		})
	}
}

func TestReinitFencesAndAbortsOngoing(t *testing.T) {
	h := newHarness(t)
	h.ongoing("x")
	h.last()
	// A second incarnation: the open transaction is aborted under epoch 1.
	h.step(InitProducerID{ID: "x", TimeoutMs: 60000, ProducerID: -1, Epoch: -1, NewPID: 200, Reply: h.record})
	if r := h.last(); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init over ongoing = %+v", r)
	}
	h.step(Persisted{ID: "x", Seq: h.persist[0].Seq})
	h.persist = nil
	if len(h.markers) != 1 || h.markers[0].Commit || h.markers[0].Epoch != 1 || !h.markers[0].Bumped {
		t.Fatalf("abort markers = %+v", h.markers)
	}
	h.flush()
	if r := h.init("x", -1, -1); r.ErrorCode != 0 || r.ProducerID != 100 || r.Epoch != 2 {
		t.Fatalf("retried init = %+v", r)
	}
	// The zombie (epoch 0) is fenced.
	h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
	if r := h.last(); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("zombie add = %+v", r)
	}
	// KIP-360: the producer re-initializing with its current id and
	// epoch gets the next epoch; retrying with the previous pair gets the
	// current one back.
	if r := h.init("x", 100, 2); r.ErrorCode != 0 || r.Epoch != 3 {
		t.Fatalf("KIP-360 init = %+v", r)
	}
	if r := h.init("x", 100, 2); r.ErrorCode != 0 || r.Epoch != 3 {
		t.Fatalf("KIP-360 retried init = %+v", r)
	}
}

func TestTimeoutAbortsInVirtualTime(t *testing.T) {
	h := newHarness(t)
	h.step(Loaded{State: txnlog.State{ID: "x"}})
	h.init("x", -1, -1)
	h.step(AddOffsets{ID: "x", ProducerID: 100, Epoch: 0, Group: "g", Reply: h.record})
	h.flush()
	h.last()
	h.now = h.now.Add(59 * time.Second)
	h.step(Tick{})
	if len(h.persist) != 0 {
		t.Fatal("aborted before its timeout")
	}
	h.now = h.now.Add(2 * time.Second)
	h.step(Tick{})
	h.step(Persisted{ID: "x", Seq: h.persist[0].Seq})
	h.persist = nil
	if len(h.markers) != 1 || h.markers[0].Commit || h.markers[0].Epoch != 1 || !h.markers[0].Bumped || len(h.markers[0].Groups) != 1 {
		t.Fatalf("timeout markers = %+v", h.markers)
	}
	h.flush()
	if h.status("x") != txnlog.CompleteAbort {
		t.Fatalf("status = %v", h.status("x"))
	}
	// The timed-out producer's own commit is fenced.
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record})
	if r := h.last(); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("commit after timeout = %+v", r)
	}
}

func TestLoadedPreparedResumesMarkers(t *testing.T) {
	h := newHarness(t)
	h.step(Loaded{Found: true, State: txnlog.State{ID: "x", ProducerID: 9, Epoch: 3, TimeoutMs: 1000,
		Status: txnlog.PrepareCommit, Partitions: []TP{tp0}}})
	if len(h.markers) != 1 || !h.markers[0].Commit || h.markers[0].ProducerID != 9 || h.markers[0].Epoch != 3 {
		t.Fatalf("markers on load = %+v", h.markers)
	}
	h.flush()
	if h.status("x") != txnlog.CompleteCommit {
		t.Fatalf("status = %v", h.status("x"))
	}
}

func TestPersistFailureReloads(t *testing.T) {
	h := newHarness(t)
	h.step(Loaded{State: txnlog.State{ID: "x"}})
	h.step(InitProducerID{ID: "x", TimeoutMs: 1000, ProducerID: -1, Epoch: -1, NewPID: 5, Reply: h.record})
	h.step(Persisted{ID: "x", Seq: h.persist[0].Seq, Err: errors.New("disk full")})
	if r := h.last(); r.ErrorCode != kerr.CoordinatorNotAvailable.Code || h.c.Has("x") {
		t.Fatalf("reply %+v, still loaded %v", r, h.c.Has("x"))
	}
}

// TestVerifyAnswersFromTheDurableState: a partition leader's VerifyOnly
// check (KIP-890) passes only for partitions whose add is in the log, for
// the producer's current id and epoch, while the transaction is ongoing.
func TestVerifyAnswersFromTheDurableState(t *testing.T) {
	tp1 := TP{Topic: "t", Partition: 1}
	verify := func(h *harness, pid int64, epoch int16, tp TP) int16 {
		h.step(AddPartitions{ID: "x", ProducerID: pid, Epoch: epoch, Partitions: []TP{tp}, VerifyOnly: true, Reply: h.record})
		return h.last().ErrorCode
	}
	cases := []struct {
		name string
		// setup runs after InitProducerId 100/0; it leaves what it does
		// not flush in flight.
		setup func(h *harness)
		pid   int64
		epoch int16
		tp    TP
		code  int16
	}{
		{"added and durable", func(h *harness) {
			h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
			h.flush()
		}, 100, 0, tp0, 0},
		{"add still persisting", func(h *harness) {
			h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
		}, 100, 0, tp0, kerr.InvalidTxnState.Code},
		{"another partition of the transaction", func(h *harness) {
			h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
			h.flush()
		}, 100, 0, tp1, kerr.InvalidTxnState.Code},
		{"commit preparing (durable state still ongoing)", func(h *harness) {
			h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
			h.flush()
			h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record})
		}, 100, 0, tp0, 0},
		{"committed", func(h *harness) {
			h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
			h.flush()
			h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record})
			h.flush()
		}, 100, 0, tp0, kerr.InvalidTxnState.Code},
		{"nothing ongoing", func(h *harness) {}, 100, 0, tp0, kerr.InvalidTxnState.Code},
		{"older epoch", func(h *harness) {
			h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
			h.flush()
		}, 100, -1, tp0, kerr.ProducerFenced.Code},
		{"other producer id", func(h *harness) {
			h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
			h.flush()
		}, 7, 0, tp0, kerr.InvalidProducerIDMapping.Code},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.step(Loaded{State: txnlog.State{ID: "x"}})
			h.init("x", -1, -1)
			tc.setup(h)
			h.replies = nil
			if code := verify(h, tc.pid, tc.epoch, tc.tp); code != tc.code {
				t.Fatalf("verify = %d (%v), want %d", code, kerr.ErrorForCode(code), tc.code)
			}
		})
	}
	// A loaded ongoing transaction verifies its partitions at once.
	h := newHarness(t)
	h.step(Loaded{Found: true, State: txnlog.State{ID: "x", ProducerID: 100, Epoch: 3, Status: txnlog.Ongoing,
		Partitions: []TP{tp0}, TimeoutMs: 60000, StartMs: h.now.UnixMilli(), LastProducerID: -1, LastEpoch: -1}})
	if code := verify(h, 100, 3, tp0); code != 0 {
		t.Fatalf("verify after load = %d", code)
	}
}

// TestLoadedHoldsAnIDUntilItsTransitionEnds: the ids a coordinator holds
// (reported to the controller's held-slot rules) include one whose slot
// moved while a transition of it was in flight, until that transition
// ends and the id is unloaded.
func TestLoadedHoldsAnIDUntilItsTransitionEnds(t *testing.T) {
	h := newHarness(t)
	for _, id := range []string{"x", "y"} {
		h.step(Loaded{State: txnlog.State{ID: id}})
		h.init(id, -1, -1)
	}
	h.step(AddPartitions{ID: "y", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
	unloaded := map[string]bool{}
	for _, id := range []string{"x", "y"} {
		h.step(Unload{ID: id, Done: func(ok bool) { unloaded[id] = ok }})
	}
	if !unloaded["x"] || unloaded["y"] {
		t.Fatalf("unloaded %v, want x only (y is persisting)", unloaded)
	}
	if got := h.c.Loaded(); len(got) != 1 || got[0] != "y" {
		t.Fatalf("held %v, want [y]", got)
	}
	h.flush()
	h.step(Unload{ID: "y", Done: func(ok bool) { unloaded["y"] = ok }})
	if got := h.c.Loaded(); !unloaded["y"] || len(got) != 0 {
		t.Fatalf("held %v after the transition ended", got)
	}
}

// TestIdleIDsExpireInVirtualTime: transactional.id.expiration.ms removes an
// id whose last transition is older than the expiration and that has no
// transaction in progress; an ongoing one is never expired; a request
// during the remove is told to retry; a failed remove keeps the id.
func TestIdleIDsExpireInVirtualTime(t *testing.T) {
	h := newHarness(t)
	h.c = NewCore(CoreConfig{IDExpiration: time.Hour, MaxTimeout: 2 * time.Hour})
	removes := func() []Remove {
		var out []Remove
		for _, e := range h.c.Step(Tick{}, h.now) {
			switch e := e.(type) {
			case Remove:
				out = append(out, e)
			case Persist:
				h.persist = append(h.persist, e)
			}
		}
		return out
	}
	for _, id := range []string{"idle", "open"} {
		h.step(Loaded{State: txnlog.State{ID: id}})
		h.step(InitProducerID{ID: id, TimeoutMs: int32((90 * time.Minute).Milliseconds()), ProducerID: -1, Epoch: -1, NewPID: 100, Reply: h.record})
		h.flush()
	}
	h.step(AddPartitions{ID: "open", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
	h.flush()
	h.replies = nil

	h.now = h.now.Add(time.Hour)
	if r := removes(); len(r) != 0 {
		t.Fatalf("expired at exactly the expiration: %+v", r)
	}
	h.now = h.now.Add(time.Millisecond)
	r := removes()
	if len(r) != 1 || r[0].ID != "idle" {
		t.Fatalf("removes %+v, want idle only (open has a transaction in progress)", r)
	}
	h.step(InitProducerID{ID: "idle", TimeoutMs: 1000, ProducerID: -1, Epoch: -1, NewPID: 200, Reply: h.record})
	if got := h.last(); got.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("request during the remove = %+v", got)
	}
	h.step(Removed{ID: "idle", Seq: r[0].Seq, Err: errors.New("disk full")})
	if !h.c.Has("idle") {
		t.Fatal("a failed remove dropped the id")
	}
	r = removes()
	if len(r) != 1 {
		t.Fatalf("no retry of the failed remove: %+v", r)
	}
	h.step(Removed{ID: "idle", Seq: r[0].Seq, Err: fmt.Errorf("remove: %w", txnlog.ErrSuperseded)})
	if h.c.Has("idle") {
		t.Fatal("an id another coordinator claimed is kept")
	}
	h.step(Loaded{State: txnlog.State{ID: "idle", ProducerID: 200, LastProducerID: -1, LastEpoch: -1, Status: txnlog.CompleteCommit}, Found: true})
	r = removes()
	if len(r) != 1 {
		t.Fatalf("no remove of the reloaded id: %+v", r)
	}
	h.step(Removed{ID: "idle", Seq: r[0].Seq})
	if h.c.Has("idle") || !h.c.Has("open") {
		t.Fatalf("after the remove: idle %v open %v", h.c.Has("idle"), h.c.Has("open"))
	}
	// The id starts afresh: its next InitProducerId (after a load that
	// finds nothing) gets the new producer id at epoch 0.
	h.step(Loaded{State: txnlog.State{ID: "idle"}})
	h.step(InitProducerID{ID: "idle", TimeoutMs: 1000, ProducerID: -1, Epoch: -1, NewPID: 200, Reply: h.record})
	h.flush()
	if got := h.last(); got.ErrorCode != 0 || got.ProducerID != 200 || got.Epoch != 0 {
		t.Fatalf("init after expiry = %+v", got)
	}
}

// TestEndTxnV2BumpsTheEpoch: with the transaction protocol v2 every end
// moves the epoch, the markers carry the new one, the reply names it, and
// a retried end is answered the same.
// TestTimedOutTransactionAbortedByItsProducerV2: under the transaction
// protocol v2 a producer whose transaction the coordinator aborted on
// timeout may abort it itself at its old epoch, as on Kafka: told to wait
// while the abort's markers are written, then answered with the epoch the
// timeout bumped to, which its next transaction uses. A commit of it is
// INVALID_TXN_STATE.
func TestTimedOutTransactionAbortedByItsProducerV2(t *testing.T) {
	h := newHarness(t)
	h.ongoing("x")
	h.now = h.now.Add(61 * time.Second)
	h.step(Tick{})
	h.replies = nil
	abort := EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: false, V2: true, NewPID: 300, Reply: h.record}
	h.step(abort)
	if r := h.last(); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("abort while the timeout's markers are written = %+v", r)
	}
	h.flush()
	h.step(abort)
	if r := h.last(); r.ErrorCode != 0 || r.ProducerID != 100 || r.Epoch != 1 || len(h.persist) != 0 {
		t.Fatalf("abort after the timeout = %+v, persist %v", r, h.persist)
	}
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, V2: true, NewPID: 300, Reply: h.record})
	if r := h.last(); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("commit after the timeout = %+v", r)
	}
	h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 1, Partitions: []TP{tp0}, Reply: h.record})
	h.flush()
	if r := h.last(); r.ErrorCode != 0 || h.status("x") != txnlog.Ongoing {
		t.Fatalf("next transaction at epoch 1 = %+v, status %v", r, h.status("x"))
	}
}

func TestEndTxnV2BumpsTheEpoch(t *testing.T) {
	h := newHarness(t)
	h.step(Loaded{State: txnlog.State{ID: "x"}})
	h.init("x", -1, -1)
	// A partition leader adds the partition (produce v12).
	h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
	h.flush()
	h.step(AddOffsets{ID: "x", ProducerID: 100, Epoch: 0, Group: "g", Reply: h.record})
	h.flush()
	h.replies = nil
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, V2: true, NewPID: 300, Reply: h.record})
	if len(h.persist) != 1 || h.persist[0].State.Status != txnlog.PrepareCommit || h.persist[0].State.Epoch != 1 {
		t.Fatalf("prepare = %+v", h.persist)
	}
	h.step(Persisted{ID: "x", Seq: h.persist[0].Seq})
	h.persist = nil
	if len(h.markers) != 1 || h.markers[0].ProducerID != 100 || h.markers[0].Epoch != 1 || !h.markers[0].Bumped || len(h.markers[0].Groups) != 1 {
		t.Fatalf("markers = %+v", h.markers)
	}
	h.flush()
	if r := h.last(); r.ErrorCode != 0 || r.ProducerID != 100 || r.Epoch != 1 {
		t.Fatalf("end = %+v", r)
	}
	// The reply was lost: the retry names epoch 0 and gets epoch 1; the
	// other outcome is refused.
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, V2: true, NewPID: 300, Reply: h.record})
	if r := h.last(); r.ErrorCode != 0 || r.Epoch != 1 || len(h.persist) != 0 {
		t.Fatalf("retried end = %+v, persist %v", r, h.persist)
	}
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: false, V2: true, NewPID: 300, Reply: h.record})
	if r := h.last(); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("abort retried after a commit = %+v", r)
	}
	// The next transaction runs at epoch 1; the old epoch is fenced.
	h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
	if r := h.last(); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("add at the old epoch = %+v", r)
	}
	// An abort with nothing added is answered, with a bump.
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 1, Commit: false, V2: true, NewPID: 300, Reply: h.record})
	h.flush()
	if r := h.last(); r.ErrorCode != 0 || r.Epoch != 2 || len(h.markers) != 0 || h.status("x") != txnlog.CompleteAbort {
		t.Fatalf("empty abort = %+v, markers %v, status %v", r, h.markers, h.status("x"))
	}
	// A commit of nothing is not.
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 2, Commit: true, V2: true, NewPID: 300, Reply: h.record})
	if r := h.last(); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("empty commit = %+v", r)
	}
}

// TestEndTxnV2EpochExhausted: an end at the last epoch moves the producer
// to a new id at epoch 0, and writes the markers with the old id at the
// last epoch, which fences it for good.
func TestEndTxnV2EpochExhausted(t *testing.T) {
	h := newHarness(t)
	last := int16(math.MaxInt16 - 1)
	h.step(Loaded{State: txnlog.State{ID: "x", ProducerID: 100, Epoch: last, LastProducerID: 100, LastEpoch: last - 1,
		TimeoutMs: 60000, Status: txnlog.Ongoing, Partitions: []TP{tp0}, StartMs: h.now.UnixMilli()}, Found: true})
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: last, Commit: false, V2: true, NewPID: 300, Reply: h.record})
	h.step(Persisted{ID: "x", Seq: h.persist[0].Seq})
	h.persist = nil
	if len(h.markers) != 1 || h.markers[0].ProducerID != 100 || h.markers[0].Epoch != math.MaxInt16 || !h.markers[0].Bumped {
		t.Fatalf("markers = %+v", h.markers)
	}
	h.flush()
	if r := h.last(); r.ErrorCode != 0 || r.ProducerID != 300 || r.Epoch != 0 {
		t.Fatalf("end = %+v", r)
	}
	// A coordinator that loads the prepared state writes the same markers.
	st, _ := h.c.State("x")
	st.Status = txnlog.PrepareAbort
	h2 := newHarness(t)
	h2.step(Loaded{State: st, Found: true})
	if len(h2.markers) != 1 || h2.markers[0].ProducerID != 100 || h2.markers[0].Epoch != math.MaxInt16 || !h2.markers[0].Bumped {
		t.Fatalf("resumed markers = %+v", h2.markers)
	}
}

// TestEndTxnV2FencedIncarnation: a producer fenced by a new incarnation's
// InitProducerId does not get the new epoch by ending its transaction:
// only a retry of an end gets the epoch it bumped to.
func TestEndTxnV2FencedIncarnation(t *testing.T) {
	h := newHarness(t)
	h.ongoing("x")
	h.step(InitProducerID{ID: "x", TimeoutMs: 60000, ProducerID: -1, Epoch: -1, NewPID: 200, Reply: h.record})
	h.flush() // the open transaction is aborted under epoch 1
	h.replies = nil
	for _, commit := range []bool{false, true} {
		h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: commit, V2: true, NewPID: 300, Reply: h.record})
		if r := h.last(); r.ErrorCode != kerr.ProducerFenced.Code {
			t.Fatalf("end (commit %v) of the fenced incarnation = %+v", commit, r)
		}
	}
}

// TestVerifyEvents: what a partition leader's or a group coordinator's
// request becomes in the core: a verification, a partition added, or (the
// group's marker topic, TxnOffsetCommit v5) a group added.
func TestVerifyEvents(t *testing.T) {
	v := messages.VerifyTxn{TransactionalID: "x", ProducerID: 1, Epoch: 2, Topic: "t", Partition: 3, Reply: func(int16) {}}
	if e, ok := verifyEvent(v).(AddPartitions); !ok || !e.VerifyOnly || e.Partitions[0] != (TP{Topic: "t", Partition: 3}) {
		t.Fatalf("verify: %+v", verifyEvent(v))
	}
	v.Add = true
	if e, ok := verifyEvent(v).(AddPartitions); !ok || e.VerifyOnly || e.Epoch != 2 {
		t.Fatalf("add: %+v", verifyEvent(v))
	}
	v.Topic = messages.GroupMarkerTopic("g")
	if e, ok := verifyEvent(v).(AddOffsets); !ok || e.Group != "g" || e.ProducerID != 1 {
		t.Fatalf("group: %+v", verifyEvent(v))
	}

	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	for _, tc := range []struct {
		target addTarget
		group  string
	}{
		{addTarget{order: []string{messages.GroupMarkerTopic("g")}, topics: map[string][]int32{messages.GroupMarkerTopic("g"): {0}}}, "g"},
		{addTarget{order: []string{"t"}, topics: map[string][]int32{"t": {0}}}, ""},
		{addTarget{verifyOnly: true, order: []string{messages.GroupMarkerTopic("g")}, topics: map[string][]int32{messages.GroupMarkerTopic("g"): {0}}}, ""},
	} {
		if g, ok := groupAdd(req, tc.target); g != tc.group || ok != (tc.group != "") {
			t.Errorf("groupAdd(%+v) = %q %v", tc.target, g, ok)
		}
	}
}

// TestAddsWaitForThePersistInFlight: adds arriving while an add is
// persisted (the partitions of one produce request, each added by its
// leader) are persisted together next and answered once durable, not
// refused; other requests meanwhile are told to retry.
func TestAddsWaitForThePersistInFlight(t *testing.T) {
	h := newHarness(t)
	h.step(Loaded{State: txnlog.State{ID: "x"}})
	h.init("x", -1, -1)
	tp1, tp2 := TP{Topic: "t", Partition: 1}, TP{Topic: "t", Partition: 2}
	h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp0}, Reply: h.record})
	h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 0, Partitions: []TP{tp1}, Reply: h.record})
	h.step(AddOffsets{ID: "x", ProducerID: 100, Epoch: 0, Group: "g", Reply: h.record})
	h.step(AddPartitions{ID: "x", ProducerID: 100, Epoch: 9, Partitions: []TP{tp2}, Reply: h.record}) // fenced
	h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record})
	if r := h.last(); r.ErrorCode != kerr.ConcurrentTransactions.Code || len(h.persist) != 1 {
		t.Fatalf("end while adding = %+v, persists %d", r, len(h.persist))
	}
	first := h.persist[0]
	h.persist = nil
	h.step(Persisted{ID: "x", Seq: first.Seq})
	// The first add is answered; the queued ones are in one persist.
	if len(h.replies) != 2 || h.replies[0].ErrorCode != 0 || h.replies[1].ErrorCode != kerr.ProducerFenced.Code || len(h.persist) != 1 {
		t.Fatalf("after the first persist: replies %+v, persists %d", h.replies, len(h.persist))
	}
	if st := h.persist[0].State; len(st.Partitions) != 2 || len(st.Groups) != 1 {
		t.Fatalf("queued adds persisted as %+v", st)
	}
	h.replies = nil
	h.flush()
	if len(h.replies) != 2 || h.replies[0].ErrorCode != 0 || h.replies[1].ErrorCode != 0 {
		t.Fatalf("queued adds answered %+v", h.replies)
	}
}

// TestUnloadLetsGoOfMarkers: an id that moves while its markers are being
// written is let go of without waiting for them (they may need the moved
// slot's group coordinator, which is held until this coordinator lets go):
// an attempt in flight is the last, a failed one is not retried, and the
// EndTxn waiting for them is told NOT_COORDINATOR. The new coordinator
// resumes the markers from the durable prepare and answers the retried
// EndTxn. A persist in flight is still waited for.
func TestUnloadLetsGoOfMarkers(t *testing.T) {
	// prepared leaves x's commit writing its first markers attempt and
	// returns the durable PrepareCommit.
	prepared := func(h *harness) txnlog.State {
		h.ongoing("x")
		h.replies = nil
		h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record})
		p := h.persist[0]
		h.persist = nil
		h.step(Persisted{ID: "x", Seq: p.Seq})
		if len(h.markers) != 1 || p.State.Status != txnlog.PrepareCommit {
			t.Fatalf("markers %+v after persisting %v", h.markers, p.State.Status)
		}
		return p.State
	}
	unload := func(h *harness) (unloaded bool) {
		h.step(Unload{ID: "x", Done: func(ok bool) { unloaded = ok }})
		return unloaded
	}

	t.Run("attempt in flight fails", func(t *testing.T) {
		h := newHarness(t)
		durable := prepared(h)
		if unload(h) || !h.c.Has("x") {
			t.Fatal("let go of x with its markers attempt in flight")
		}
		m := h.markers[0]
		h.markers = nil
		h.step(MarkersWritten{ID: "x", Seq: m.Seq, Err: errors.New("group coordinator slot held")})
		if len(h.after) != 0 || h.c.Has("x") || len(h.c.Loaded()) != 0 {
			t.Fatalf("retry %+v, still held %v", h.after, h.c.Loaded())
		}
		if r := h.last(); r.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("EndTxn = %+v, want NOT_COORDINATOR", r)
		}
		// The new coordinator writes the markers and answers the retry.
		n := newHarness(t)
		n.step(Loaded{Found: true, State: durable})
		if len(n.markers) != 1 || !n.markers[0].Commit {
			t.Fatalf("new coordinator's markers %+v", n.markers)
		}
		n.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: n.record})
		if r := n.last(); r.ErrorCode != kerr.ConcurrentTransactions.Code {
			t.Fatalf("EndTxn during the markers = %+v", r)
		}
		n.flush()
		n.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: n.record})
		if r := n.last(); r.ErrorCode != 0 || n.status("x") != txnlog.CompleteCommit {
			t.Fatalf("retried EndTxn = %+v, status %v", r, n.status("x"))
		}
	})
	t.Run("failed attempt waiting for its retry", func(t *testing.T) {
		h := newHarness(t)
		prepared(h)
		m := h.markers[0]
		h.markers = nil
		h.step(MarkersWritten{ID: "x", Seq: m.Seq, Err: errors.New("partition moving")})
		if len(h.after) != 1 {
			t.Fatalf("after %+v", h.after)
		}
		if !unload(h) || h.c.Has("x") {
			t.Fatal("kept x while its markers waited for a retry")
		}
		if r := h.last(); r.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("EndTxn = %+v, want NOT_COORDINATOR", r)
		}
		h.step(h.after[0].Event)
		if len(h.markers) != 0 {
			t.Fatalf("markers retried after letting go: %+v", h.markers)
		}
	})
	t.Run("attempt in flight succeeds", func(t *testing.T) {
		h := newHarness(t)
		prepared(h)
		if unload(h) {
			t.Fatal("let go of x with its markers attempt in flight")
		}
		h.flush()
		if r := h.last(); r.ErrorCode != 0 || h.status("x") != txnlog.CompleteCommit {
			t.Fatalf("EndTxn = %+v, status %v", r, h.status("x"))
		}
		if !unload(h) || h.c.Has("x") {
			t.Fatal("kept x after its transition ended")
		}
	})
	t.Run("persist in flight", func(t *testing.T) {
		h := newHarness(t)
		h.ongoing("x")
		h.step(EndTxn{ID: "x", ProducerID: 100, Epoch: 0, Commit: true, Reply: h.record})
		if unload(h) || !h.c.Has("x") {
			t.Fatal("let go of x with its prepare persisting")
		}
	})
}
