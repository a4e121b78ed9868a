package compaction

import (
	"hash/maphash"

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
	m      map[[2]uint64]int64
	limit  int
	s1, s2 maphash.Seed
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

// AddBatch records the keys of batch b (header h) at their offsets. It
// returns false, adding nothing, when the batch's records might not fit
// (the pass then ends before this batch). Control and opaque batches add
// nothing.
func (k *KeyMap) AddBatch(b []byte, h batch.Header) (bool, error) {
	if h.IsControl() || Opaque(h) || h.NumRecords == 0 {
		return true, nil
	}
	if len(k.m)+int(h.NumRecords) > k.limit {
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

// Pass is one cleaning pass: a key map built over the dirty range
// [first dirty offset, MapEnd) by Scan, applied by Batch to every batch from
// the log start up to MapEnd, oldest first (both must see the batches in
// offset order).
type Pass struct {
	Map *KeyMap
	// MapEnd is the first offset the map does not cover: batches at or
	// above it are kept as they are.
	MapEnd int64
	// Horizon (Unix ms): a tombstone or a commit marker in a batch whose
	// max timestamp is below it has outlived delete.retention.ms and may be
	// removed.
	Horizon int64
	// LastOfProducer is the base offset of each producer id's last batch
	// in the range the pass rewrites: that batch is kept, empty if need be.
	LastOfProducer map[int64]int64

	// open: producer id -> first offset of its transaction open at the
	// point Scan has reached; aborted: producer id -> the aborted
	// transactions Scan found, each [first offset, abort marker offset].
	open    map[int64]int64
	aborted map[int64][][2]int64
	// txnSeen: producers with a transactional data batch since their last
	// marker, as Batch walks the log.
	txnSeen    map[int64]bool
	opaqueSeen bool
}

// Scan feeds the pass's first walk one batch (offset order, from the log
// start up to MapEnd): a batch whose records reach the dirty range (its
// next offset is above firstDirty) goes into the key map; every batch
// records its producer's last batch and the transactions that end in the
// walk. It returns false when the map cannot take the batch: the pass then
// ends there (MapEnd moves to its base offset).
func (p *Pass) Scan(b []byte, h batch.Header, firstDirty int64) (bool, error) {
	if h.NextOffset() > firstDirty {
		ok, err := p.Map.AddBatch(b, h)
		if err != nil {
			return false, err
		}
		if !ok {
			p.MapEnd = h.BaseOffset
			return false, nil
		}
	}
	if !h.HasProducer() {
		return true, nil
	}
	if p.LastOfProducer == nil {
		p.LastOfProducer = map[int64]int64{}
	}
	p.LastOfProducer[h.ProducerID] = h.BaseOffset
	switch {
	case Opaque(h):
		if p.open == nil {
			p.open = map[int64]int64{}
		}
		if _, ok := p.open[h.ProducerID]; !ok {
			p.open[h.ProducerID] = h.BaseOffset
		}
	case h.IsControl():
		first, ok := p.open[h.ProducerID]
		if !ok {
			break
		}
		delete(p.open, h.ProducerID)
		// An unreadable marker resolves nothing: the transaction's data
		// stays as it is.
		if typ, err := batch.ControlType(b); err == nil && typ == batch.ControlAbort {
			if p.aborted == nil {
				p.aborted = map[int64][][2]int64{}
			}
			p.aborted[h.ProducerID] = append(p.aborted[h.ProducerID], [2]int64{first, h.BaseOffset})
		}
	}
	return true, nil
}

// isAborted reports whether the transactional data batch h belongs to a
// transaction Scan saw aborted.
func (p *Pass) isAborted(h batch.Header) bool {
	for _, span := range p.aborted[h.ProducerID] {
		if h.BaseOffset >= span[0] && h.BaseOffset < span[1] {
			return true
		}
	}
	return false
}

// Keep decides one record of a batch with max timestamp maxTS.
func (p *Pass) Keep(r Record, maxTS int64) bool {
	if r.NullKey {
		return false
	}
	if latest, ok := p.Map.Latest(r.Key); ok && latest > r.Offset {
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
	if Opaque(h) {
		if p.txnSeen == nil {
			p.txnSeen = map[int64]bool{}
		}
		p.txnSeen[h.ProducerID] = true
		if !p.isAborted(h) {
			p.opaqueSeen = true
			return b, nil
		}
		switch {
		case !retain:
			return nil, nil
		case h.NumRecords == 0:
			return b, nil
		}
		return Rebuild(b, h, nil), nil
	}
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

// marker decides a control batch: a commit marker goes once no data batch
// of its transaction is left before it (none seen since the producer's
// previous marker) and it has outlived delete.retention.ms, as Kafka's
// cleaner removes it; otherwise it stays whole (an emptied marker would no
// longer say what it ends). An abort marker always stays: the partition's
// aborted-transaction index (kept with the producer state, which a pass
// does not rewrite) goes on listing its transaction to read_committed
// fetches, and a client skips that producer's records from the
// transaction's first offset until it reads the marker.
func (p *Pass) marker(b []byte, h batch.Header, retain bool) []byte {
	seen := p.txnSeen[h.ProducerID]
	delete(p.txnSeen, h.ProducerID)
	if retain || seen || h.MaxTimestamp >= p.Horizon {
		return b
	}
	if typ, err := batch.ControlType(b); err != nil || typ != batch.ControlCommit {
		return b
	}
	return nil
}
