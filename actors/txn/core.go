// Package txn is the transaction coordinator: the state machine of every
// transactional id this broker coordinates (Core, pure: Step(event, now)
// returns effects), the thin actor that runs it (persisting each transition
// to storage/txnlog and writing commit/abort markers through the partition
// actors) and the transaction APIs (InitProducerId with a transactional id,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
// ListTransactions). Transactional ids are placed like consumer groups (the
// routing view's CoordinatorFor), so they move with the group-coordinator
// slots and a new coordinator resumes each transaction from its log on the
// shared volume.
package txn

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/storage/txnlog"
)

// TP names a partition.
type TP = txnlog.TP

// Result answers a coordinator request.
type Result struct {
	ErrorCode  int16
	ProducerID int64
	Epoch      int16
}

// Events.
type (
	// Loaded hands the core a transactional id's stored state (Found
	// false: none). The shell loads an id before its first request.
	Loaded struct {
		State txnlog.State
		Found bool
	}
	// InitProducerID is InitProducerId with a transactional id. NewPID is
	// a fresh producer id, used when the id has none or its epoch is
	// exhausted. ProducerID/Epoch are the client's (-1: none; KIP-360).
	InitProducerID struct {
		ID         string
		TimeoutMs  int32
		ProducerID int64
		Epoch      int16
		NewPID     int64
		Reply      func(Result)
	}
	// AddPartitions adds partitions to the transaction (AddPartitionsToTxn).
	// VerifyOnly answers whether they are all part of the ongoing
	// transaction in the durable state, changing nothing (KIP-890).
	AddPartitions struct {
		ID         string
		ProducerID int64
		Epoch      int16
		Partitions []TP
		VerifyOnly bool
		Reply      func(Result)
	}
	// AddOffsets adds a consumer group to the transaction (AddOffsetsToTxn).
	AddOffsets struct {
		ID         string
		ProducerID int64
		Epoch      int16
		Group      string
		Reply      func(Result)
	}
	// EndTxn commits or aborts the transaction. V2 is the transaction
	// protocol v2 (KIP-890 part 2, EndTxn v5+): the end bumps the epoch
	// (NewPID when it is exhausted) and the reply carries the new one.
	EndTxn struct {
		ID         string
		ProducerID int64
		Epoch      int16
		Commit     bool
		V2         bool
		NewPID     int64
		Reply      func(Result)
	}
	// Persisted reports the Persist of Seq.
	Persisted struct {
		ID  string
		Seq uint64
		Err error
	}
	// MarkersWritten reports the WriteMarkers of Seq: Err when any
	// partition or group did not take its marker (they are all retried).
	MarkersWritten struct {
		ID  string
		Seq uint64
		Err error
	}
	// RetryMarkers re-sends the markers of Seq after a failure.
	RetryMarkers struct {
		ID  string
		Seq uint64
	}
	// Tick aborts the transactions that outlived their timeout and
	// expires idle ids.
	Tick struct{}
	// Removed reports the Remove of Seq.
	Removed struct {
		ID  string
		Seq uint64
		Err error
	}
	// Unload forgets an id (it moved to another coordinator). A persist
	// in flight finishes first (Unload reports false then). Markers are
	// not waited for: their prepare is durable, and the new coordinator
	// writes them again when it loads the id (they may need the moved
	// slot's group coordinator, which is held until this one lets go).
	// An attempt in flight is the last: it is not retried, and the id is
	// forgotten when it returns.
	Unload struct {
		ID   string
		Done func(unloaded bool)
	}
)

// Effects.
type (
	// Persist durably stores State; Persisted{Seq} reports it.
	Persist struct {
		Seq   uint64
		State txnlog.State
	}
	// WriteMarkers writes the transaction's commit or abort marker to each
	// of its partitions (durably) and completes or drops its groups'
	// pending offsets; MarkersWritten{Seq} reports it.
	WriteMarkers struct {
		ID         string
		Seq        uint64
		ProducerID int64
		Epoch      int16
		Commit     bool
		// Bumped: Epoch is one past every write of the transaction
		// (messages.WriteTxnMarker.Bumped).
		Bumped     bool
		Partitions []TP
		Groups     []string
	}
	// Remove deletes an expired id's state; Removed{Seq} reports it.
	Remove struct {
		ID  string
		Seq uint64
	}
	// Reply answers a request.
	Reply struct {
		To     func(Result)
		Result Result
	}
	// After steps Event after D.
	After struct {
		D     time.Duration
		Event any
	}
	// Report calls Done.
	Report struct {
		Done     func(bool)
		Unloaded bool
	}
)

// CoreConfig bounds the coordinator.
type CoreConfig struct {
	// MaxTimeout is transaction.max.timeout.ms (Kafka: 15 minutes).
	MaxTimeout time.Duration
	// MarkerRetry spaces marker attempts that failed.
	MarkerRetry time.Duration
	// IDExpiration is transactional.id.expiration.ms: an id with no
	// transaction in progress and no transition for that long is
	// forgotten (its log removed); its producer's next request gets
	// INVALID_PRODUCER_ID_MAPPING and a new InitProducerId starts afresh.
	IDExpiration time.Duration
}

// entry is one transactional id: its state (applied at once; durable once
// the Persist in flight returns) and the transition in flight, if any.
// While busy, requests are answered CONCURRENT_TRANSACTIONS (retriable), as
// Kafka answers them during a pending state transition.
type entry struct {
	st txnlog.State
	// durable is the last state known to be in the log; saving is the
	// state of the persist in flight. Verification (KIP-890) answers from
	// durable: a partition is part of a transaction once its add is
	// durable, whatever transition is in flight.
	durable, saving txnlog.State
	busy            bool
	seq             uint64
	// then continues the transition once the persist or the markers of
	// seq succeeded.
	then func()
	// failed answers the transition's waiting request when its persist
	// failed (nil: nobody waits).
	failed func()
	// marking: the transition of seq is writing markers (its prepare is
	// durable); attempt: an attempt of them is in flight (false while a
	// failed one waits for its retry); leaving: the id moved, so the
	// attempt in flight is the last; gone answers the waiting request,
	// if any, when the coordinator lets go of the id before its markers
	// are written.
	marking, attempt, leaving bool
	gone                      func()
	// adding is set while the persist in flight adds partitions or
	// groups. Adds arriving meanwhile (the partitions of one produce
	// request, each added by its leader under the transaction protocol
	// v2) wait in queued and are persisted together once it is done,
	// rather than answered CONCURRENT_TRANSACTIONS.
	adding bool
	queued []any // AddPartitions (not VerifyOnly), AddOffsets
}

// maxQueuedAdds bounds the adds waiting for one id's persist.
const maxQueuedAdds = 1024

// queueAdd queues ev for t when an add of t is being persisted.
func (c *Core) queueAdd(id string, ev any) bool {
	t, ok := c.txns[id]
	if !ok || !t.busy || !t.adding || len(t.queued) >= maxQueuedAdds {
		return false
	}
	t.queued = append(t.queued, ev)
	return true
}

// flushQueued persists the adds that waited for t's previous persist, in
// one write, and answers each once it is durable.
func (c *Core) flushQueued(t *entry) {
	queued := t.queued
	t.queued = nil
	var waiting []func(Result)
	changed := false
	for _, ev := range queued {
		var id string
		var pid int64
		var epoch int16
		var reply func(Result)
		switch e := ev.(type) {
		case AddPartitions:
			id, pid, epoch, reply = e.ID, e.ProducerID, e.Epoch, e.Reply
		case AddOffsets:
			id, pid, epoch, reply = e.ID, e.ProducerID, e.Epoch, e.Reply
		}
		if _, code := c.check(id, pid, epoch); code != 0 {
			c.fail(reply, code)
			continue
		}
		if t.st.Status != txnlog.Ongoing {
			c.begin(t)
			changed = true
		}
		switch e := ev.(type) {
		case AddPartitions:
			for _, tp := range e.Partitions {
				if !slices.Contains(t.st.Partitions, tp) {
					t.st.Partitions, changed = append(t.st.Partitions, tp), true
				}
			}
		case AddOffsets:
			if !slices.Contains(t.st.Groups, e.Group) {
				t.st.Groups, changed = append(t.st.Groups, e.Group), true
			}
		}
		waiting = append(waiting, reply)
	}
	answer := func(r Result) {
		for _, reply := range waiting {
			c.reply(reply, r)
		}
	}
	if !changed {
		answer(Result{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch})
		return
	}
	t.adding = true
	c.persist(t, func() { answer(Result{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch}) },
		func() { answer(Result{ErrorCode: kerr.CoordinatorNotAvailable.Code, ProducerID: -1, Epoch: -1}) })
}

// Core is the coordinator's state machine for every id it holds.
type Core struct {
	cfg  CoreConfig
	txns map[string]*entry
	seq  uint64
	now  time.Time
	out  []any
}

// NewCore returns an empty core.
func NewCore(cfg CoreConfig) *Core {
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = 15 * time.Minute
	}
	if cfg.MarkerRetry <= 0 {
		cfg.MarkerRetry = 100 * time.Millisecond
	}
	if cfg.IDExpiration <= 0 {
		cfg.IDExpiration = 7 * 24 * time.Hour // Kafka's default
	}
	return &Core{cfg: cfg, txns: map[string]*entry{}}
}

// Has reports whether id is loaded.
func (c *Core) Has(id string) bool { _, ok := c.txns[id]; return ok }

// State returns id's current state (ok false when not loaded or none).
func (c *Core) State(id string) (txnlog.State, bool) {
	e, ok := c.txns[id]
	if !ok || e.st.ProducerID < 0 {
		return txnlog.State{}, false
	}
	return e.st.Clone(), true
}

// Loaded lists every loaded id, sorted: the ids this coordinator holds
// (it answers for them, or finishes a transition of one that moved). The
// supervisor reports them with the groups, so that the slot of an id is
// not granted to another broker while this one still holds it.
func (c *Core) Loaded() []string { return c.sortedIDs() }

// IDs lists the loaded ids that have a producer id.
func (c *Core) IDs() []string {
	out := make([]string, 0, len(c.txns))
	for id, e := range c.txns {
		if e.st.ProducerID >= 0 {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Step applies ev at now and returns the effects, in order.
func (c *Core) Step(ev any, now time.Time) []any {
	c.now, c.out = now, nil
	switch e := ev.(type) {
	case Loaded:
		c.loaded(e)
	case InitProducerID:
		c.initProducerID(e)
	case AddPartitions:
		c.addPartitions(e)
	case AddOffsets:
		c.addOffsets(e)
	case EndTxn:
		c.endTxn(e)
	case Persisted:
		c.persisted(e)
	case MarkersWritten:
		c.markersWritten(e)
	case RetryMarkers:
		if t, ok := c.txns[e.ID]; ok && t.busy && t.seq == e.Seq {
			t.attempt = true
			c.emit(c.markers(t))
		}
	case Tick:
		c.tick()
	case Removed:
		c.removed(e)
	case Unload:
		t, ok := c.txns[e.ID]
		switch {
		case ok && t.busy && t.marking && t.attempt:
			t.leaving = true
			c.emit(Report{Done: e.Done})
		case ok && t.busy && t.marking:
			c.letGo(e.ID, t)
			c.emit(Report{Done: e.Done, Unloaded: true})
		case ok && t.busy:
			c.emit(Report{Done: e.Done})
		default:
			delete(c.txns, e.ID)
			c.emit(Report{Done: e.Done, Unloaded: true})
		}
	}
	out := c.out
	c.out = nil
	return out
}

func (c *Core) emit(e any) { c.out = append(c.out, e) }

func (c *Core) reply(to func(Result), r Result) { c.emit(Reply{To: to, Result: r}) }

func (c *Core) fail(to func(Result), code int16) {
	c.reply(to, Result{ErrorCode: code, ProducerID: -1, Epoch: -1})
}

func (c *Core) loaded(e Loaded) {
	if _, ok := c.txns[e.State.ID]; ok {
		return
	}
	if !e.Found {
		none := txnlog.State{ID: e.State.ID, ProducerID: -1, LastProducerID: -1, LastEpoch: -1}
		c.txns[e.State.ID] = &entry{st: none, durable: none}
		return
	}
	t := &entry{st: e.State.Clone(), durable: e.State.Clone()}
	c.txns[e.State.ID] = t
	// A coordinator that crashed or moved between a prepare and its
	// completion resumes by writing the markers again (a marker written
	// twice is harmless: the second finds no open transaction).
	switch t.st.Status {
	case txnlog.PrepareCommit, txnlog.PrepareAbort:
		c.writeMarkers(t, nil, nil)
	}
}

// persist stores t's state; then runs once it is durable.
func (c *Core) persist(t *entry, then func(), failed func()) {
	c.seq++
	t.busy, t.seq, t.then, t.failed = true, c.seq, then, failed
	t.st.UpdateMs = c.now.UnixMilli()
	t.saving = t.st.Clone()
	c.emit(Persist{Seq: c.seq, State: t.saving})
}

func (c *Core) persisted(e Persisted) {
	t, ok := c.txns[e.ID]
	if !ok || !t.busy || t.seq != e.Seq {
		return
	}
	if e.Err != nil {
		// The state in memory may be ahead of the log: reload it from the
		// log before the next request (the shell re-sends Loaded).
		failed := t.failed
		delete(c.txns, e.ID)
		if failed != nil {
			failed()
		}
		for _, ev := range t.queued {
			switch q := ev.(type) {
			case AddPartitions:
				c.fail(q.Reply, kerr.CoordinatorNotAvailable.Code)
			case AddOffsets:
				c.fail(q.Reply, kerr.CoordinatorNotAvailable.Code)
			}
		}
		return
	}
	t.busy, t.adding = false, false
	t.durable = t.saving
	if then := t.then; then != nil {
		t.then, t.failed = nil, nil
		then()
	}
	if !t.busy && len(t.queued) > 0 {
		c.flushQueued(t)
	}
}

// writeMarkers moves a prepared transaction to its markers, then to
// Complete*; done runs once Complete* is durable, gone if the coordinator
// lets go of the id before (see Unload).
func (c *Core) writeMarkers(t *entry, done, gone func()) {
	c.seq++
	t.busy, t.seq = true, c.seq
	t.marking, t.attempt, t.leaving, t.gone = true, true, false, gone
	t.then = func() {
		if t.st.Status == txnlog.PrepareCommit {
			t.st.Status = txnlog.CompleteCommit
		} else {
			t.st.Status = txnlog.CompleteAbort
		}
		// A finished transaction holds no partitions or groups, as Kafka's
		// prepareComplete leaves it: DescribeTransactions lists none.
		t.st.Partitions, t.st.Groups = nil, nil
		c.persist(t, done, nil)
	}
	t.failed = nil
	c.emit(c.markers(t))
}

func (c *Core) markers(t *entry) WriteMarkers {
	pid, epoch, bumped := t.st.ProducerID, t.st.Epoch, false
	if m := t.st.Marker; m != nil {
		pid, epoch, bumped = m.ProducerID, m.Epoch, m.Bumped
	}
	return WriteMarkers{ID: t.st.ID, Seq: t.seq, ProducerID: pid, Epoch: epoch, Bumped: bumped,
		Commit: t.st.Status == txnlog.PrepareCommit, Partitions: slices.Clone(t.st.Partitions), Groups: slices.Clone(t.st.Groups)}
}

// prepare moves t's transaction to PrepareCommit or PrepareAbort. With
// bump the epoch moves first (newPID when exhausted) and the markers carry
// the old producer id at the next epoch (txnlog.State.Marker).
func (c *Core) prepare(t *entry, commit, bump bool, newPID int64) {
	t.st.Marker = &txnlog.Marker{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch}
	if bump {
		c.bump(t, newPID)
		if t.st.Marker.Epoch < math.MaxInt16 {
			t.st.Marker.Epoch++
			t.st.Marker.Bumped = true
		}
	}
	t.st.Status = txnlog.PrepareAbort
	if commit {
		t.st.Status = txnlog.PrepareCommit
	}
}

func (c *Core) markersWritten(e MarkersWritten) {
	t, ok := c.txns[e.ID]
	if !ok || !t.busy || t.seq != e.Seq {
		return
	}
	t.attempt = false
	switch {
	case e.Err != nil && t.leaving:
		c.letGo(e.ID, t)
		return
	case e.Err != nil:
		c.emit(After{D: c.cfg.MarkerRetry, Event: RetryMarkers{ID: e.ID, Seq: e.Seq}})
		return
	}
	t.busy, t.marking, t.leaving, t.gone = false, false, false, nil
	then := t.then
	t.then = nil
	then()
}

// letGo forgets id, which moved while its markers were being written; the
// request waiting for them, if any, is told NOT_COORDINATOR and retries at
// the new coordinator, which resumes the markers from the durable prepare.
func (c *Core) letGo(id string, t *entry) {
	delete(c.txns, id)
	if t.gone != nil {
		t.gone()
	}
}

// bump fences the current producer epoch: the next epoch, or a new producer
// id when the epoch is exhausted.
func (c *Core) bump(t *entry, newPID int64) {
	t.st.LastProducerID, t.st.LastEpoch = t.st.ProducerID, t.st.Epoch
	t.st.EndBumped = false
	if newPID >= 0 && (t.st.ProducerID < 0 || t.st.Epoch >= math.MaxInt16-1) {
		t.st.ProducerID, t.st.Epoch = newPID, 0
		return
	}
	t.st.Epoch++
}

// abort prepares an abort of t's ongoing transaction under a bumped epoch
// (fencing its producer) and writes its markers. timedOut: the coordinator
// ends the transaction on its producer's behalf, and under the transaction
// protocol v2 the producer's own abort of it, at the epoch before the bump,
// is then answered as a retry of that end (Kafka's coordinator: the
// producer goes on at the new epoch). A new incarnation's fence is not.
func (c *Core) abortOngoing(t *entry, newPID int64, timedOut bool) {
	c.prepare(t, false, true, newPID)
	t.st.EndBumped = timedOut
	c.persist(t, func() { c.writeMarkers(t, nil, nil) }, nil)
}

func (c *Core) initProducerID(e InitProducerID) {
	if e.TimeoutMs <= 0 || time.Duration(e.TimeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		c.fail(e.Reply, kerr.InvalidTransactionTimeout.Code)
		return
	}
	t, ok := c.txns[e.ID]
	if !ok {
		c.fail(e.Reply, kerr.CoordinatorLoadInProgress.Code)
		return
	}
	if t.busy {
		c.fail(e.Reply, kerr.ConcurrentTransactions.Code)
		return
	}
	st := &t.st
	if e.ProducerID >= 0 && st.ProducerID >= 0 {
		// KIP-360: a producer recovering from an abortable error with its
		// id and epoch; a retry of an InitProducerId already served names
		// the previous ones and gets the current back.
		switch {
		case e.ProducerID == st.LastProducerID && e.Epoch == st.LastEpoch && st.Status != txnlog.Ongoing:
			c.reply(e.Reply, Result{ProducerID: st.ProducerID, Epoch: st.Epoch})
			return
		case e.ProducerID != st.ProducerID || e.Epoch != st.Epoch:
			c.fail(e.Reply, kerr.ProducerFenced.Code)
			return
		}
	}
	switch st.Status {
	case txnlog.Ongoing:
		// A new incarnation of the producer: fence the old one and abort
		// what it left open; the client retries until the abort is done.
		c.abortOngoing(t, e.NewPID, false)
		c.fail(e.Reply, kerr.ConcurrentTransactions.Code)
		return
	case txnlog.PrepareCommit, txnlog.PrepareAbort:
		c.fail(e.Reply, kerr.ConcurrentTransactions.Code)
		return
	}
	c.bump(t, e.NewPID)
	st.Status, st.TimeoutMs = txnlog.Empty, e.TimeoutMs
	st.Partitions, st.Groups, st.StartMs, st.Marker = nil, nil, 0, nil
	c.persist(t, func() { c.reply(e.Reply, Result{ProducerID: st.ProducerID, Epoch: st.Epoch}) },
		func() { c.fail(e.Reply, kerr.CoordinatorNotAvailable.Code) })
}

// check applies the producer id and epoch checks of the requests made
// within a transaction: 0 when the request may proceed.
func (c *Core) check(id string, pid int64, epoch int16) (*entry, int16) {
	t, ok := c.txns[id]
	switch {
	case !ok:
		return nil, kerr.CoordinatorLoadInProgress.Code
	case t.st.ProducerID < 0 || t.st.ProducerID != pid:
		return nil, kerr.InvalidProducerIDMapping.Code
	case epoch != t.st.Epoch:
		return nil, kerr.ProducerFenced.Code
	case t.busy || t.st.Status == txnlog.PrepareCommit || t.st.Status == txnlog.PrepareAbort:
		return nil, kerr.ConcurrentTransactions.Code
	}
	return t, 0
}

// begin makes t's transaction Ongoing if it is not yet.
func (c *Core) begin(t *entry) {
	if t.st.Status != txnlog.Ongoing {
		t.st.Status = txnlog.Ongoing
		t.st.Partitions, t.st.Groups, t.st.Marker = nil, nil, nil
		t.st.StartMs = c.now.UnixMilli()
	}
}

// verify answers a VerifyOnly AddPartitions (a partition leader checking a
// transactional batch, KIP-890) from the durable state, changing nothing:
// INVALID_TXN_STATE unless every partition is part of the producer's
// ongoing transaction.
func (c *Core) verify(e AddPartitions) {
	t, ok := c.txns[e.ID]
	if !ok {
		c.fail(e.Reply, kerr.CoordinatorLoadInProgress.Code)
		return
	}
	d := &t.durable
	switch {
	case d.ProducerID < 0 || d.ProducerID != e.ProducerID:
		c.fail(e.Reply, kerr.InvalidProducerIDMapping.Code)
		return
	case e.Epoch != d.Epoch:
		c.fail(e.Reply, kerr.ProducerFenced.Code)
		return
	case d.Status != txnlog.Ongoing:
		c.fail(e.Reply, kerr.InvalidTxnState.Code)
		return
	}
	for _, tp := range e.Partitions {
		if !slices.Contains(d.Partitions, tp) {
			c.fail(e.Reply, kerr.InvalidTxnState.Code)
			return
		}
	}
	c.reply(e.Reply, Result{ProducerID: d.ProducerID, Epoch: d.Epoch})
}

func (c *Core) addPartitions(e AddPartitions) {
	if e.VerifyOnly {
		c.verify(e)
		return
	}
	if c.queueAdd(e.ID, e) {
		return
	}
	t, code := c.check(e.ID, e.ProducerID, e.Epoch)
	if code != 0 {
		c.fail(e.Reply, code)
		return
	}
	missing := false
	for _, tp := range e.Partitions {
		if !slices.Contains(t.st.Partitions, tp) {
			missing = true
			break
		}
	}
	if t.st.Status == txnlog.Ongoing && !missing {
		c.reply(e.Reply, Result{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch})
		return
	}
	c.begin(t)
	for _, tp := range e.Partitions {
		if !slices.Contains(t.st.Partitions, tp) {
			t.st.Partitions = append(t.st.Partitions, tp)
		}
	}
	t.adding = true
	c.persist(t, func() { c.reply(e.Reply, Result{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch}) },
		func() { c.fail(e.Reply, kerr.CoordinatorNotAvailable.Code) })
}

func (c *Core) addOffsets(e AddOffsets) {
	if c.queueAdd(e.ID, e) {
		return
	}
	t, code := c.check(e.ID, e.ProducerID, e.Epoch)
	if code != 0 {
		c.fail(e.Reply, code)
		return
	}
	if t.st.Status == txnlog.Ongoing && slices.Contains(t.st.Groups, e.Group) {
		c.reply(e.Reply, Result{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch})
		return
	}
	c.begin(t)
	t.st.Groups = append(t.st.Groups, e.Group)
	t.adding = true
	c.persist(t, func() { c.reply(e.Reply, Result{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch}) },
		func() { c.fail(e.Reply, kerr.CoordinatorNotAvailable.Code) })
}

func (c *Core) endTxn(e EndTxn) {
	if e.V2 {
		c.endTxnV2(e)
		return
	}
	t, ok := c.txns[e.ID]
	if ok && !t.busy && t.st.ProducerID == e.ProducerID && t.st.Epoch == e.Epoch {
		// A retry of an EndTxn already completed.
		if (e.Commit && t.st.Status == txnlog.CompleteCommit) || (!e.Commit && t.st.Status == txnlog.CompleteAbort) {
			c.reply(e.Reply, Result{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch})
			return
		}
	}
	if ok && t.st.ProducerID == e.ProducerID && e.Epoch == t.st.LastEpoch && t.st.ProducerID == t.st.LastProducerID &&
		!e.Commit && (t.st.Status == txnlog.PrepareAbort || t.st.Status == txnlog.CompleteAbort) {
		// The transaction timed out and was aborted under a bumped epoch:
		// the producer's own abort of it is answered as fenced.
		c.fail(e.Reply, kerr.ProducerFenced.Code)
		return
	}
	t, code := c.check(e.ID, e.ProducerID, e.Epoch)
	if code != 0 {
		c.fail(e.Reply, code)
		return
	}
	if t.st.Status != txnlog.Ongoing {
		c.fail(e.Reply, kerr.InvalidTxnState.Code)
		return
	}
	c.prepare(t, e.Commit, false, -1)
	done := func() { c.reply(e.Reply, Result{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch}) }
	gone := func() { c.fail(e.Reply, kerr.NotCoordinator.Code) }
	c.persist(t, func() { c.writeMarkers(t, done, gone) }, func() { c.fail(e.Reply, kerr.CoordinatorNotAvailable.Code) })
}

// endTxnV2 is EndTxn of the transaction protocol v2 (KIP-890 part 2): every
// end bumps the producer's epoch, so a late write of the ended transaction
// is fenced, and answers the new id and epoch, which the producer's next
// transaction uses. The producer does not know whether its produces added
// partitions (the partition leaders add them), so an abort of no
// transaction is answered too, with a bump. An end retried after its answer
// was lost, or the producer's abort of a transaction the coordinator
// aborted on timeout, names the epoch before the bump: it gets the current
// one back.
func (c *Core) endTxnV2(e EndTxn) {
	t, ok := c.txns[e.ID]
	if ok && t.st.EndBumped && t.st.LastProducerID == e.ProducerID && t.st.LastEpoch == e.Epoch {
		ended := txnlog.CompleteAbort
		if e.Commit {
			ended = txnlog.CompleteCommit
		}
		switch {
		case t.busy || t.st.Status == txnlog.PrepareCommit || t.st.Status == txnlog.PrepareAbort:
			c.fail(e.Reply, kerr.ConcurrentTransactions.Code)
		case t.st.Status == ended:
			c.reply(e.Reply, Result{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch})
		default:
			c.fail(e.Reply, kerr.InvalidTxnState.Code)
		}
		return
	}
	t, code := c.check(e.ID, e.ProducerID, e.Epoch)
	if code != 0 {
		c.fail(e.Reply, code)
		return
	}
	reply := func() { c.reply(e.Reply, Result{ProducerID: t.st.ProducerID, Epoch: t.st.Epoch}) }
	failed := func() { c.fail(e.Reply, kerr.CoordinatorNotAvailable.Code) }
	gone := func() { c.fail(e.Reply, kerr.NotCoordinator.Code) }
	switch {
	case t.st.Status == txnlog.Ongoing:
		c.prepare(t, e.Commit, true, e.NewPID)
		t.st.EndBumped = true
		c.persist(t, func() { c.writeMarkers(t, reply, gone) }, failed)
	case !e.Commit:
		// Nothing to abort: the bump alone.
		c.bump(t, e.NewPID)
		t.st.Status, t.st.Partitions, t.st.Groups, t.st.Marker = txnlog.CompleteAbort, nil, nil, nil
		t.st.EndBumped = true
		c.persist(t, reply, failed)
	default:
		c.fail(e.Reply, kerr.InvalidTxnState.Code)
	}
}

// tick aborts every idle ongoing transaction older than its timeout, under
// a bumped epoch so that its producer is fenced (Kafka's
// transaction.abort.timed.out.transaction.cleanup).
func (c *Core) tick() {
	now := c.now.UnixMilli()
	for _, id := range c.sortedIDs() {
		t := c.txns[id]
		if t.busy || t.st.Status != txnlog.Ongoing {
			continue
		}
		if now-t.st.StartMs > int64(t.st.TimeoutMs) {
			c.abortOngoing(t, -1, true) // the last epoch, MaxInt16, still fences
		}
	}
	c.expire(now)
}

// expire removes the ids idle for IDExpiration: nothing in progress
// (Empty, CompleteCommit, CompleteAbort) and no transition since. An id
// loaded without a stored state and never initialized is only forgotten. While the remove runs the id is busy, so a request
// for it waits (CONCURRENT_TRANSACTIONS) rather than racing the delete.
func (c *Core) expire(now int64) {
	for _, id := range c.sortedIDs() {
		t := c.txns[id]
		if !t.busy && t.st.ProducerID < 0 {
			delete(c.txns, id) // loaded, never initialized: nothing stored
			continue
		}
		if t.busy || !idle(t.st.Status) || now-t.st.UpdateMs <= c.cfg.IDExpiration.Milliseconds() {
			continue
		}
		c.seq++
		t.busy, t.seq, t.then, t.failed = true, c.seq, nil, nil
		c.emit(Remove{ID: id, Seq: c.seq})
	}
}

// idle reports whether status has no transaction in progress.
func idle(s txnlog.Status) bool {
	return s == txnlog.Empty || s == txnlog.CompleteCommit || s == txnlog.CompleteAbort
}

func (c *Core) removed(e Removed) {
	t, ok := c.txns[e.ID]
	if !ok || !t.busy || t.seq != e.Seq {
		return
	}
	if e.Err != nil && !errors.Is(e.Err, txnlog.ErrSuperseded) {
		t.busy = false // kept; the next tick tries again
		return
	}
	// Removed, or claimed by a later coordinator: forgotten either way.
	delete(c.txns, e.ID)
}

func (c *Core) sortedIDs() []string {
	ids := make([]string, 0, len(c.txns))
	for id := range c.txns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
