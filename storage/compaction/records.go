// Package compaction holds the pure decisions of log compaction
// (cleanup.policy=compact): which records of a batch a cleaning pass keeps,
// and how a batch is rewritten without the others. It works on plain byte
// slices of v2 record batches and knows nothing of files; the log engines
// (storage/disklog, storage/memlog) drive it over their batches.
//
// The rules are Kafka's log cleaner's:
//   - a record is kept when no later record of the pass's key map has its key;
//   - a tombstone (null value) is kept until delete.retention.ms after its
//     batch's timestamp, then removed;
//   - a record without a key is removed (Kafka refuses them on compacted topics);
//   - a transaction is decided when the pass's first walk, Pass.Scan, reaches
//     its marker. The records of a committed one are compacted like any
//     others: its keys enter the map at the commit marker (the later offset
//     wins against a record written meanwhile outside it), and its batches
//     are decided record by record, tombstones included. The records of an
//     aborted one are removed;
//   - a pass never reaches past the first batch, in its dirty range, of a
//     transaction it has not seen end (Pass.EndScan), as Kafka's cleaner
//     stops at the last stable offset: every record is compacted by the
//     first pass that rewrites it, and a map entry beyond the pass's end
//     decides nothing;
//   - a marker is removed once no batch of its transaction is left before it
//     and it is older than delete.retention.ms, an abort marker only once
//     the partition's aborted-transaction index no longer names it
//     (Pass.IndexedAborts); until then it is kept as it is;
//   - the last batch of each producer id is kept, as an empty batch if all its
//     records go, so the producer's sequence and epoch survive;
//   - a rewritten batch keeps its base offset, last offset delta, producer
//     fields, transactional attribute and timestamps; its length, record
//     count and CRC are recomputed.
//
// A compressed batch is decompressed, decided record by record, and
// recompressed with its own codec. Data of a transaction whose marker the
// pass cannot read (or, below the dirty range, did not reach) is opaque to
// it: kept whole and out of the key map, and while one lies below a
// tombstone that tombstone is kept (removing it could bring back a value
// hidden inside).
package compaction

import (
	"encoding/binary"
	"fmt"

	"github.com/kaas-project/kaas/storage/batch"
)

// Record is one record of an uncompressed batch.
type Record struct {
	Offset    int64
	Key       []byte
	NullKey   bool
	Tombstone bool   // null value
	Value     []byte // nil for a tombstone
	Raw       []byte // the record's bytes in the batch: length varint and body
}

// Opaque reports whether h is transactional data, whose records count only
// once the pass knows its transaction's outcome (control batches are
// markers, decided apart).
func Opaque(h batch.Header) bool {
	return h.IsTransactional() && !h.IsControl()
}

// Records decodes the records of batch b (header h), decompressing them
// when the batch is compressed; Raw then points into the decompressed bytes.
func Records(b []byte, h batch.Header) ([]Record, error) {
	if h.Size() > len(b) {
		return nil, fmt.Errorf("%w: batch truncated", batch.ErrCorrupt)
	}
	p, err := batch.Payload(b, h)
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, batch.RecordsCap(h.NumRecords, p))
	for i := int32(0); i < h.NumRecords; i++ {
		length, n := binary.Varint(p)
		if n <= 0 || length < 1 || int64(len(p)-n) < length {
			return nil, fmt.Errorf("%w: record %d length", batch.ErrCorrupt, i)
		}
		raw := p[:n+int(length)]
		rec := p[n+1 : n+int(length)] // after the attributes byte
		p = p[n+int(length):]
		if _, rec, err = varint(rec); err != nil { // timestamp delta
			return nil, fmt.Errorf("%w: record %d timestamp", batch.ErrCorrupt, i)
		}
		offDelta, rec, err := varint(rec)
		if err != nil {
			return nil, fmt.Errorf("%w: record %d offset delta", batch.ErrCorrupt, i)
		}
		r := Record{Offset: h.BaseOffset + offDelta, Raw: raw}
		if r.Key, r.NullKey, rec, err = field(rec); err != nil {
			return nil, fmt.Errorf("%w: record %d key", batch.ErrCorrupt, i)
		}
		if r.Value, r.Tombstone, _, err = field(rec); err != nil {
			return nil, fmt.Errorf("%w: record %d value", batch.ErrCorrupt, i)
		}
		out = append(out, r)
	}
	return out, nil
}

func varint(b []byte) (int64, []byte, error) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, batch.ErrCorrupt
	}
	return v, b[n:], nil
}

// field decodes a varint-length-prefixed byte field (-1: null).
func field(b []byte) (v []byte, null bool, rest []byte, err error) {
	n, b, err := varint(b)
	if err != nil {
		return nil, false, nil, err
	}
	if n < 0 {
		return nil, true, b, nil
	}
	if int64(len(b)) < n {
		return nil, false, nil, batch.ErrCorrupt
	}
	return b[:n], false, b[n:], nil
}

// Rebuild returns a copy of batch b (header h) holding only the records
// kept (each a Record.Raw of b, in order): same base offset, last offset
// delta, producer fields and timestamps, recomputed length, count and CRC.
// A compressed batch is recompressed with its codec (written uncompressed
// if that fails). No record gives an empty batch, as Kafka's cleaner
// writes to keep a producer's last batch or an offset range's end.
func Rebuild(b []byte, h batch.Header, kept []Record) []byte {
	var recs []byte
	for _, r := range kept {
		recs = append(recs, r.Raw...)
	}
	attrs := h.Attributes
	if c := h.Codec(); c != 0 && len(kept) > 0 {
		if z, ok := batch.Compress(c, recs); ok {
			recs = z
		} else {
			attrs &^= batch.AttrCompressionMask
		}
	} else if len(kept) == 0 {
		attrs &^= batch.AttrCompressionMask
	}
	n := batch.HeaderSize + len(recs)
	out := make([]byte, batch.HeaderSize, n)
	copy(out, b[:batch.HeaderSize])
	out = append(out, recs...)
	binary.BigEndian.PutUint16(out[21:], uint16(attrs))
	binary.BigEndian.PutUint32(out[8:], uint32(n-batch.LengthPrefix))
	binary.BigEndian.PutUint32(out[57:], uint32(len(kept)))
	binary.BigEndian.PutUint32(out[17:], batch.Checksum(out))
	return out
}
