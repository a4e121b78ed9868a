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
// [first dirty offset, MapEnd), applied to every batch from the log start
// up to MapEnd, oldest first (Batch must see them in offset order).
type Pass struct {
	Map *KeyMap
	// MapEnd is the first offset the map does not cover: batches at or
	// above it are kept as they are.
	MapEnd int64
	// Horizon (Unix ms): a tombstone in a batch whose max timestamp is
	// below it has outlived delete.retention.ms and is removed.
	Horizon int64
	// LastOfProducer is the base offset of each producer id's last batch
	// in the range the pass rewrites: that batch is kept, empty if need be.
	LastOfProducer map[int64]int64

	opaqueSeen bool
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
	if h.BaseOffset >= p.MapEnd || h.IsControl() {
		return b, nil
	}
	if Opaque(h) {
		p.opaqueSeen = true
		return b, nil
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
	retain := keepHeader || (h.HasProducer() && p.LastOfProducer[h.ProducerID] == h.BaseOffset)
	switch {
	case len(kept) == len(recs) && (len(recs) > 0 || retain):
		return b, nil
	case len(kept) == 0 && !retain:
		return nil, nil
	}
	return Rebuild(b, h, kept), nil
}
