package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
)

// Scan is what a walk over every record of a produced batch finds.
type Scan struct {
	// MinTimestamp and MaxTimestamp are the lowest and highest record
	// timestamps (FirstTimestamp plus each record's delta); MinTimestamp
	// leaves out records without a timestamp (-1), as Kafka's
	// message.timestamp checks do, and is math.MaxInt64 when none has one.
	// MaxTimestamp is -1 when no record has a timestamp.
	MinTimestamp, MaxTimestamp int64
	// Keyless lists the index in the batch of each record without a key,
	// when the scan was asked for them.
	Keyless []int32
}

// noTimestamp is a record timestamp that was not set.
const noTimestamp = -1

// scanBuffers holds decompression output between produced batches.
var scanBuffers = sync.Pool{New: func() any { return new([]byte) }}

// scanPayload walks the records of batch b (header h), decompressing them
// into a pooled buffer first when the batch is compressed.
func scanPayload(b []byte, h Header, keyless bool) (Scan, error) {
	p := b[HeaderSize:h.Size()]
	if h.Codec() == CodecNone {
		return scanRecords(p, h.NumRecords, h.FirstTimestamp, keyless)
	}
	if h.Codec() > CodecZstd {
		return Scan{}, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, h.Codec())
	}
	buf := scanBuffers.Get().(*[]byte)
	defer scanBuffers.Put(buf)
	out, err := decompressTo((*buf)[:0], h.Codec(), p, MaxDecompressed)
	if cap(out) > cap(*buf) && cap(out) <= maxPooledScanBuffer {
		*buf = out[:0]
	}
	if errors.Is(err, ErrTooLarge) {
		return Scan{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return Scan{}, fmt.Errorf("%w: decompress (codec %d): %v", ErrCorrupt, h.Codec(), err)
	}
	return scanRecords(out, h.NumRecords, h.FirstTimestamp, keyless)
}

// maxPooledScanBuffer: a decompression buffer larger than this (a batch of
// more than a few MiB of records) is left to the garbage collector rather
// than held by the pool.
const maxPooledScanBuffer = 8 << 20

// scanRecords walks the records section p of a batch holding n records
// whose first timestamp is firstTS, reading each record as Kafka's
// validation of a produced batch does: each record's fields fill its
// length exactly, its header count is not negative and no header key is
// null, the offset deltas run 0..n-1, and the n records fill p. A breach
// is ErrInvalid (Kafka's INVALID_RECORD). With keyless, the records
// without a key are listed.
func scanRecords(p []byte, n int32, firstTS int64, keyless bool) (Scan, error) {
	s := Scan{MinTimestamp: math.MaxInt64, MaxTimestamp: noTimestamp}
	var (
		pos, next          int
		ok                 bool
		length, v, tsDelta int64
	)
	for i := int32(0); i < n; i++ {
		if length, next, ok = varintAt(p, pos); !ok {
			length = -1
		}
		if length < 1 || length > int64(len(p)-next) {
			return s, fmt.Errorf("%w: record %d of %d: bad length", ErrInvalid, i, n)
		}
		rec := p[:next+int(length)]
		pos = next + 1 // attributes
		// The timestamp delta, the offset delta, the key, the value and
		// the header count, in order.
		if tsDelta, pos, ok = varintAt(rec, pos); !ok {
			return s, fmt.Errorf("%w: record %d: bad timestamp delta", ErrInvalid, i)
		}
		if v, pos, ok = varintAt(rec, pos); !ok {
			return s, fmt.Errorf("%w: record %d: bad offset delta", ErrInvalid, i)
		}
		if v != int64(i) {
			return s, fmt.Errorf("%w: record %d has offset delta %d; a producer's records have the deltas 0..%d in order", ErrInvalid, i, v, n-1)
		}
		if v, pos, ok = varintAt(rec, pos); !ok || v > int64(len(rec)-pos) {
			return s, fmt.Errorf("%w: record %d: bad key", ErrInvalid, i)
		}
		if v >= 0 {
			pos += int(v)
		} else if keyless {
			s.Keyless = append(s.Keyless, i)
		}
		if v, pos, ok = varintAt(rec, pos); !ok || v > int64(len(rec)-pos) {
			return s, fmt.Errorf("%w: record %d: bad value", ErrInvalid, i)
		}
		if v > 0 {
			pos += int(v)
		}
		var headers int64
		if headers, pos, ok = varintAt(rec, pos); !ok || headers < 0 || headers > int64(len(rec)-pos)/2 {
			return s, fmt.Errorf("%w: record %d: bad header count", ErrInvalid, i)
		}
		for range headers {
			if v, pos, ok = varintAt(rec, pos); !ok || v < 0 || v > int64(len(rec)-pos) {
				return s, fmt.Errorf("%w: record %d: bad header key", ErrInvalid, i)
			}
			pos += int(v)
			if v, pos, ok = varintAt(rec, pos); !ok || v > int64(len(rec)-pos) {
				return s, fmt.Errorf("%w: record %d: bad header value", ErrInvalid, i)
			}
			if v > 0 {
				pos += int(v)
			}
		}
		if pos != len(rec) {
			return s, fmt.Errorf("%w: record %d: its fields fill %d of its %d bytes", ErrInvalid, i, pos-next, length)
		}
		ts := firstTS + tsDelta
		s.MaxTimestamp = max(s.MaxTimestamp, ts)
		if ts != noTimestamp {
			s.MinTimestamp = min(s.MinTimestamp, ts)
		}
	}
	if pos != len(p) {
		return s, fmt.Errorf("%w: %d bytes after the last of %d records", ErrInvalid, len(p)-pos, n)
	}
	return s, nil
}

// zigzag decodes a one-byte zig-zag varint.
func zigzag(b byte) int64 { u := int64(b); return u>>1 ^ -(u & 1) }

// zigzag2 decodes a two-byte zig-zag varint.
func zigzag2(b0, b1 byte) int64 {
	u := int64(b0&0x7f) | int64(b1)<<7
	return u>>1 ^ -(u & 1)
}

// varintAt reads the zig-zag varint at p[pos:], returning it and the
// position after it; ok is false when p ends first or the varint is longer
// than a 64-bit one.
func varintAt(p []byte, pos int) (v int64, next int, ok bool) {
	if pos < len(p) && p[pos] < 0x80 {
		return zigzag(p[pos]), pos + 1, true
	}
	return varintLonger(p, pos)
}

// varintLonger is varintAt past one byte; two bytes (below 8192: most
// record and value lengths) skip the general loop.
func varintLonger(p []byte, pos int) (v int64, next int, ok bool) {
	if pos+1 < len(p) && p[pos+1] < 0x80 {
		return zigzag2(p[pos], p[pos+1]), pos + 2, true
	}
	if pos >= len(p) {
		return 0, pos, false
	}
	v, k := binary.Varint(p[pos:])
	if k <= 0 {
		return 0, pos, false
	}
	return v, pos + k, true
}
