package compaction

import (
	"fmt"
	"hash/maphash"
	"math"

	"github.com/kaas-project/kaas/storage/batch"
)

// EntryBytes is what one key map entry is budgeted at (a 128-bit key hash,
// an offset and the Go map's own overhead), to turn a byte budget into an
// entry limit.
const EntryBytes = 48

// KeyMap is the cleaner's dedupe buffer (Kafka's SkimpyOffsetMap): a 128-bit
// hash of each key to the offset of its latest record, bounded in entries.
// A pass whose dirty range holds more distinct keys than fit stops where the
// map is full, and the next pass continues from there.
type KeyMap struct {
	m     map[[2]uint64]int64
	limit int
	// reserved: entries held for the keys of transactions not yet
	// committed (Pass.Scan), counted against the limit.
	reserved int
	s1, s2   maphash.Seed
}

// NewKeyMap returns a map holding at most limitBytes/EntryBytes keys (at
// least one).
func NewKeyMap(limitBytes int64) *KeyMap {
	return &KeyMap{m: map[[2]uint64]int64{}, limit: int(max(1, limitBytes/EntryBytes)),
		s1: maphash.MakeSeed(), s2: maphash.MakeSeed()}
}

func (k *KeyMap) hash(key []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(k.s1, key), maphash.Bytes(k.s2, key)}
}

// Len is the number of keys held.
func (k *KeyMap) Len() int { return len(k.m) }

// Limit is the most keys the map holds.
func (k *KeyMap) Limit() int { return k.limit }

// Latest returns the offset recorded for key.
func (k *KeyMap) Latest(key []byte) (int64, bool) {
	off, ok := k.m[k.hash(key)]
	return off, ok
}

// fits reports whether n more entries may go into the map, counting those
// held back for the transactions still open.
func (k *KeyMap) fits(n int) bool {
	return len(k.m)+k.reserved+n <= k.limit
}

// AddBatch records the keys of batch b (header h) at their offsets. It
// returns false, adding nothing, when the batch's records might not fit
// (the pass then ends before this batch). Control and transactional data
// batches add nothing here: a pass adds a transaction's keys when it
// reaches its commit marker (Pass.Scan).
func (k *KeyMap) AddBatch(b []byte, h batch.Header) (bool, error) {
	if h.IsControl() || Opaque(h) || h.NumRecords == 0 {
		return true, nil
	}
	if !k.fits(int(h.NumRecords)) {
		return false, nil
	}
	recs, err := Records(b, h)
	if err != nil {
		return false, err
	}
	for _, r := range recs {
		if !r.NullKey {
			k.m[k.hash(r.Key)] = r.Offset
		}
	}
	return true, nil
}

// keyAt is a key hash and the offset of a record holding it.
type keyAt struct {
	hash [2]uint64
	off  int64
}

// addCommitted records a committed transaction's keys. A record written
// after one of them, outside the transaction, may already be in the map:
// the later offset wins.
func (k *KeyMap) addCommitted(keys []keyAt) {
	for _, e := range keys {
		if cur, ok := k.m[e.hash]; !ok || cur < e.off {
			k.m[e.hash] = e.off
		}
	}
}

// Pass is one cleaning pass: a key map built over the dirty range
// [first dirty offset, MapEnd) by Scan (closed by EndScan), applied by Batch
// to every batch from the log start up to MapEnd, oldest first (both must
// see the batches in offset order).
type Pass struct {
	Map *KeyMap
	// MapEnd is the first offset the map does not cover: batches at or
	// above it are kept as they are, and a map entry at or above it (left
	// by EndScan's cut) decides nothing.
	MapEnd int64
	// Horizon (Unix ms): a tombstone or a commit marker in a batch whose
	// max timestamp is below it has outlived delete.retention.ms and may be
	// removed.
	Horizon int64
	// LastOfProducer is the base offset of each producer id's last batch
	// in the range the pass rewrites: that batch is kept, empty if need be.
	LastOfProducer map[int64]int64
	// IndexedAborts holds the offsets of the abort markers whose
	// transactions the partition's aborted-transaction index may still
	// name to a read_committed fetch: those markers stay (a client told of
	// the transaction skips its producer's records until it reads one).
	// It covers the markers below IndexedTo; those at or past it stay too.
	IndexedAborts map[int64]bool
	IndexedTo     int64

	// AbortsEmptied lists the abort markers Batch walked (offset order):
	// no record of their transactions is left once the pass is swapped
	// in. AbortsRemoved lists the abort markers the pass removed.
	AbortsEmptied, AbortsRemoved []int64

	// open: producer id -> its transaction open at the point Scan has
	// reached. notCommitted: producer id -> its transactions Scan saw
	// abort, or could not see end (an unreadable marker, or still open
	// where it stopped: EndScan adds those), in offset order; every other
	// transactional batch Scan walked is of a committed transaction (so
	// the pass keeps one span per abort, as Kafka's cleaner keeps the
	// aborted ones, not one per commit). cursor: producer id -> the first
	// span Batch has not walked past.
	open         map[int64]*openTxn
	notCommitted map[int64][]txnSpan
	cursor       map[int64]int
	// full: Scan stopped because the map could take no more. scanned:
	// EndScan ran (before that, no transaction is known committed).
	full, scanned bool
	// kept: producers with a transactional data batch kept since their
	// last marker, as Batch walks the log.
	kept map[int64]bool
	// opaqueSeen: Batch has walked past the kept data of a transaction
	// whose outcome the pass does not know.
	opaqueSeen bool
}

// openTxn is a transaction Scan is inside of.
type openTxn struct {
	first int64 // base offset of its first data batch
	dirty int64 // base offset of its first batch reaching the dirty range (-1: none)
	keys  []keyAt
	held  int // entries reserved in the map for it
}

// txnSpan is a transaction that did not commit: from its first data batch
// to its marker (math.MaxInt64: none seen).
type txnSpan struct {
	first, marker int64
	aborted       bool // false: its outcome is unknown
}

// Scan feeds the pass's first walk one batch (offset order, from the log
// start up to MapEnd): a batch whose records reach the dirty range (its
// next offset is above firstDirty) goes into the key map, a transactional
// one once Scan reaches its commit marker; every batch records its
// producer's last batch and the transactions that end in the walk. It
// returns false when the map cannot take the batch: the pass then ends
// there (MapEnd moves to its base offset). EndScan closes the walk.
func (p *Pass) Scan(b []byte, h batch.Header, firstDirty int64) (bool, error) {
	dirty := h.NextOffset() > firstDirty
	if dirty && !p.scanKeys(h) {
		return false, nil
	}
	if Opaque(h) {
		t := p.txn(h)
		// Its keys are held apart until its marker says whether they count.
		if dirty {
			if err := p.holdKeys(t, b, h); err != nil {
				return false, err
			}
		}
	} else if dirty {
		if _, err := p.Map.AddBatch(b, h); err != nil {
			return false, err
		}
	}
	if !h.HasProducer() {
		return true, nil
	}
	if p.LastOfProducer == nil {
		p.LastOfProducer = map[int64]int64{}
	}
	p.LastOfProducer[h.ProducerID] = h.BaseOffset
	if h.IsControl() {
		p.endTxn(b, h)
	}
	return true, nil
}

// scanKeys reports whether the map can take batch h's keys, ending the
// pass before it (MapEnd, full) when it cannot.
func (p *Pass) scanKeys(h batch.Header) bool {
	if h.IsControl() || h.NumRecords == 0 || p.Map.fits(int(h.NumRecords)) {
		return true
	}
	p.MapEnd, p.full = h.BaseOffset, true
	return false
}

// txn returns the transaction producer h.ProducerID has open, opening one
// at h.
func (p *Pass) txn(h batch.Header) *openTxn {
	if p.open == nil {
		p.open = map[int64]*openTxn{}
	}
	t := p.open[h.ProducerID]
	if t == nil {
		t = &openTxn{first: h.BaseOffset, dirty: -1}
		p.open[h.ProducerID] = t
	}
	return t
}

// holdKeys notes the keys of transactional data batch h (in the dirty
// range) for its transaction t, reserving their room in the map.
func (p *Pass) holdKeys(t *openTxn, b []byte, h batch.Header) error {
	if t.dirty < 0 {
		t.dirty = h.BaseOffset
	}
	recs, err := Records(b, h)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if !r.NullKey {
			t.keys = append(t.keys, keyAt{p.Map.hash(r.Key), r.Offset})
		}
	}
	t.held += int(h.NumRecords)
	p.Map.reserved += int(h.NumRecords)
	return nil
}

// endTxn closes the transaction of control batch h's producer: a commit
// puts its keys in the map, an abort drops them. An unreadable marker
// resolves nothing: the transaction's data stays as it is.
func (p *Pass) endTxn(b []byte, h batch.Header) {
	t := p.open[h.ProducerID]
	if t == nil {
		return
	}
	delete(p.open, h.ProducerID)
	p.Map.reserved -= t.held
	typ, err := batch.ControlType(b)
	if err == nil && typ == batch.ControlCommit {
		p.Map.addCommitted(t.keys)
		return
	}
	p.notCommit(h.ProducerID, txnSpan{t.first, h.BaseOffset, err == nil && typ == batch.ControlAbort})
}

func (p *Pass) notCommit(pid int64, s txnSpan) {
	if p.notCommitted == nil {
		p.notCommitted = map[int64][]txnSpan{}
	}
	p.notCommitted[pid] = append(p.notCommitted[pid], s)
}

// EndScan closes the first walk. A transaction still open there, with data
// in the dirty range, has an outcome the pass does not know, so the pass
// ends before its first such batch, as Kafka's cleaner stops at the last
// stable offset: data whose transaction was not decided is never rewritten
// below MapEnd, so no record is ever left out of a pass that should have
// compacted it (a later pass reaching the marker rescans it from its start).
// It returns an error when the pass cannot move past firstDirty because the
// map cannot hold one batch, or one transaction, there.
func (p *Pass) EndScan(firstDirty int64) error {
	p.scanned = true
	for pid, t := range p.open {
		p.notCommit(pid, txnSpan{first: t.first, marker: math.MaxInt64})
		if t.dirty >= 0 && t.dirty < p.MapEnd {
			p.MapEnd = t.dirty
		}
	}
	if p.MapEnd > firstDirty || !p.full {
		return nil
	}
	return fmt.Errorf("compaction key map (%d keys) cannot hold the batch or transaction at offset %d", p.Map.Limit(), p.MapEnd)
}

// outcome says what became of the transaction holding data batch h:
// committed, and whether the pass knows it at all (false: undecided).
// Batch asks in offset order, so each producer's cursor only moves forward.
func (p *Pass) outcome(h batch.Header) (commit, known bool) {
	if !p.scanned {
		return false, false
	}
	spans := p.notCommitted[h.ProducerID]
	i := p.cursor[h.ProducerID]
	for i < len(spans) && spans[i].marker < h.BaseOffset {
		i++
	}
	if i > 0 {
		if p.cursor == nil {
			p.cursor = map[int64]int{}
		}
		p.cursor[h.ProducerID] = i
	}
	if i == len(spans) || spans[i].first > h.BaseOffset {
		return true, true
	}
	return false, spans[i].aborted
}

// Keep decides one record of a batch with max timestamp maxTS.
func (p *Pass) Keep(r Record, maxTS int64) bool {
	if r.NullKey {
		return false
	}
	latest, ok := p.Map.Latest(r.Key)
	if ok && latest >= p.MapEnd {
		// Its latest record lies past the pass (EndScan moved MapEnd
		// back): nothing is known of the key within the pass.
		return true
	}
	if ok && latest > r.Offset {
		return false
	}
	if r.Tombstone && maxTS < p.Horizon && !p.opaqueSeen {
		return false
	}
	return true
}

// Batch decides batch b (header h): it returns b itself when the batch is
// kept unchanged, nil when it goes whole, or a rewritten copy. keepHeader
// keeps at least an empty batch (the engine's own rule, e.g. a segment's
// last batch, which holds the segment's end offset).
func (p *Pass) Batch(b []byte, h batch.Header, keepHeader bool) ([]byte, error) {
	if h.BaseOffset >= p.MapEnd {
		return b, nil
	}
	retain := keepHeader || (h.HasProducer() && p.LastOfProducer[h.ProducerID] == h.BaseOffset)
	if h.IsControl() {
		return p.marker(b, h, retain), nil
	}
	var out []byte
	var err error
	commit, known := false, true
	if Opaque(h) {
		commit, known = p.outcome(h)
	}
	switch {
	case !known:
		// Undecided: kept whole; a tombstone after it could hide a value
		// inside it, so none is removed from here on.
		p.opaqueSeen = true
		out = b
	case Opaque(h) && !commit:
		out = p.aborted(b, h, retain)
	default:
		// Plain data and committed transactions: record by record.
		if out, err = p.records(b, h, retain); err != nil {
			return nil, err
		}
	}
	if out != nil && Opaque(h) {
		if p.kept == nil {
			p.kept = map[int64]bool{}
		}
		p.kept[h.ProducerID] = true
	}
	return out, nil
}

// aborted decides a data batch of an aborted transaction: all its records
// go, and the batch with them unless retain.
func (p *Pass) aborted(b []byte, h batch.Header, retain bool) []byte {
	switch {
	case !retain:
		return nil
	case h.NumRecords == 0:
		return b
	}
	return Rebuild(b, h, nil)
}

// records decides a data batch record by record.
func (p *Pass) records(b []byte, h batch.Header, retain bool) ([]byte, error) {
	recs, err := Records(b, h)
	if err != nil {
		return nil, err
	}
	kept := make([]Record, 0, len(recs))
	for _, r := range recs {
		if p.Keep(r, h.MaxTimestamp) {
			kept = append(kept, r)
		}
	}
	switch {
	case len(kept) == len(recs) && (len(recs) > 0 || retain):
		return b, nil
	case len(kept) == 0 && !retain:
		return nil, nil
	}
	return Rebuild(b, h, kept), nil
}

// marker decides a control batch, as Kafka's cleaner does: a marker goes
// once no data batch of its transaction is left before it (none kept since
// the producer's previous marker: a batch left without its marker would
// reopen the transaction when the producer state is rebuilt from the log)
// and it has outlived delete.retention.ms; otherwise it stays whole (an
// emptied marker would no longer say what it ends). An abort marker also
// stays while IndexedAborts names it. Every abort marker walked is noted
// in AbortsEmptied: Batch removes all the records of an aborted
// transaction whose marker the pass reached.
func (p *Pass) marker(b []byte, h batch.Header, retain bool) []byte {
	seen := p.kept[h.ProducerID]
	delete(p.kept, h.ProducerID)
	typ, err := batch.ControlType(b)
	if err != nil {
		return b
	}
	abort := typ == batch.ControlAbort
	if abort {
		p.AbortsEmptied = append(p.AbortsEmptied, h.BaseOffset)
	}
	switch {
	case retain || seen || h.MaxTimestamp >= p.Horizon:
		return b
	case abort && h.BaseOffset < p.IndexedTo && !p.IndexedAborts[h.BaseOffset]:
		p.AbortsRemoved = append(p.AbortsRemoved, h.BaseOffset)
		return nil
	case typ == batch.ControlCommit:
		return nil
	}
	return b
}
