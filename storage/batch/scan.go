package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
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

// scanPayload walks the records of batch b (header h). A compressed batch is
// walked as it decompresses, through a window of walkWindow bytes: memory
// does not grow with what the batch expands to (up to MaxDecompressed), so
// batches that decompress to much more than they weigh cost no more memory
// than small ones. Raw snappy, which cannot be decoded in pieces, is decoded
// whole (its format expands at most about 32 times).
func scanPayload(b []byte, h Header, keyless bool) (Scan, error) {
	p := b[HeaderSize:h.Size()]
	switch h.Codec() {
	case CodecNone:
		return scanRecords(p, h.NumRecords, h.FirstTimestamp, keyless)
	case CodecSnappy:
		if !bytes.HasPrefix(p, xerialMagic) || len(p) < xerialHeaderSize {
			buf := scanBuffers.Get().(*[]byte)
			defer scanBuffers.Put(buf)
			out, err := snappyBlock((*buf)[:0], p, MaxDecompressed)
			if cap(out) > cap(*buf) && cap(out) <= maxPooledScanBuffer {
				*buf = out[:0]
			}
			if err != nil {
				return Scan{}, decompressError(h.Codec(), err)
			}
			return scanRecords(out, h.NumRecords, h.FirstTimestamp, keyless)
		}
	case CodecGzip, CodecLz4, CodecZstd:
	default:
		return Scan{}, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, h.Codec())
	}
	src, done, err := decompressing(h.Codec(), p)
	if err != nil {
		return Scan{}, decompressError(h.Codec(), err)
	}
	defer done()
	window := walkWindows.Get().(*[]byte)
	defer walkWindows.Put(window)
	c := cursor{buf: (*window)[:0], src: src}
	s, err := walkStream(&c, h.NumRecords, h.FirstTimestamp, keyless)
	if c.err != nil {
		// The records could not be read to their end: that is the batch's
		// fault, whatever the walk made of the bytes before.
		return Scan{}, decompressError(h.Codec(), c.err)
	}
	return s, err
}

// decompressError wraps what a codec said of a batch's records: ErrInvalid
// for records past MaxDecompressed, ErrCorrupt for data it cannot decode.
func decompressError(codec int16, err error) error {
	if errors.Is(err, ErrTooLarge) {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return fmt.Errorf("%w: decompress (codec %d): %v", ErrCorrupt, codec, err)
}

// walkWindow is how many decompressed bytes a walk holds at once; a record
// that fits is read from memory whole, a larger one is skipped through.
const walkWindow = 64 << 10

var (
	// walkWindows are the walks' windows; scanBuffers hold raw snappy
	// batches decoded whole.
	walkWindows = sync.Pool{New: func() any { b := make([]byte, 0, walkWindow); return &b }}
	scanBuffers = sync.Pool{New: func() any { return new([]byte) }}
	// zstdStreams decode one frame at a time without goroutines of their
	// own, within MaxDecompressed.
	zstdStreams = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(MaxDecompressed))
		if err != nil {
			return err
		}
		return d
	}}
)

// maxPooledScanBuffer: a raw snappy batch decoded to more than this is left
// to the garbage collector rather than held by the pool.
const maxPooledScanBuffer = 8 << 20

// decompressing returns a reader of src's records decoded with codec c
// (gzip, lz4, zstd or xerial-framed snappy) and what returns its decoder
// to its pool.
func decompressing(c int16, src []byte) (io.Reader, func(), error) {
	switch c {
	case CodecGzip:
		r, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if r == nil {
			r, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = r.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, nil, err
		}
		return r, func() { gzipReaders.Put(r) }, nil
	case CodecLz4:
		r := lz4Readers.Get().(*lz4.Reader)
		r.Reset(bytes.NewReader(src))
		return r, func() { lz4Readers.Put(r) }, nil
	case CodecZstd:
		d, ok := zstdStreams.Get().(*zstd.Decoder)
		if !ok {
			return nil, nil, errors.New("zstd decoder unavailable")
		}
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			zstdStreams.Put(d)
			return nil, nil, err
		}
		return d, func() { zstdStreams.Put(d) }, nil
	}
	return &xerialReader{src: src[xerialHeaderSize:]}, func() {}, nil
}

// xerialReader decodes xerial-framed snappy one block at a time.
type xerialReader struct {
	src   []byte // blocks not decoded yet
	block []byte // the current block, decoded
	pos   int
}

func (x *xerialReader) Read(p []byte) (int, error) {
	for x.pos == len(x.block) {
		if len(x.src) == 0 {
			return 0, io.EOF
		}
		if len(x.src) < 4 {
			return 0, errors.New("xerial snappy: truncated block length")
		}
		size := binary.BigEndian.Uint32(x.src)
		if uint64(size) > uint64(len(x.src)-4) {
			return 0, errors.New("xerial snappy: block longer than the data")
		}
		out, err := snappyBlock(x.block[:0], x.src[4:4+size], MaxDecompressed)
		if err != nil {
			return 0, err
		}
		x.block, x.pos, x.src = out, 0, x.src[4+size:]
	}
	n := copy(p, x.block[x.pos:])
	x.pos += n
	return n, nil
}

// cursor reads a batch's records section through buf, a window onto src,
// as the records decompress.
type cursor struct {
	buf      []byte
	pos      int
	src      io.Reader
	consumed int64 // bytes of src read and dropped from buf
	eof      bool  // src has no more
	err      error // src failed before its end (ErrTooLarge past MaxDecompressed)
}

// off is the offset in the records section of the next byte.
func (c *cursor) off() int64 { return c.consumed + int64(c.pos) }

// fill makes at least need bytes available from pos (need at most the
// window's size), reading src; false when the records end first.
func (c *cursor) fill(need int) bool {
	if len(c.buf)-c.pos >= need {
		return true
	}
	if c.err != nil || c.eof {
		return false
	}
	rest := copy(c.buf[:cap(c.buf)], c.buf[c.pos:])
	c.consumed += int64(c.pos)
	c.buf, c.pos = c.buf[:rest], 0
	for len(c.buf) < need {
		n, err := c.src.Read(c.buf[len(c.buf):cap(c.buf)])
		c.buf = c.buf[:len(c.buf)+n]
		if c.consumed+int64(len(c.buf)) > MaxDecompressed {
			c.err = fmt.Errorf("%w (%d bytes)", ErrTooLarge, MaxDecompressed)
			return false
		}
		if err == io.EOF {
			c.eof = true
			return len(c.buf) >= need
		}
		if err != nil {
			c.err = err
			return false
		}
	}
	return true
}

// varint reads a zig-zag varint that must end at or before end. A
// one-byte one is read inline.
func (c *cursor) varint(end int64) (int64, bool) {
	if p := c.pos; p < len(c.buf) && c.buf[p] < 0x80 && c.consumed+int64(p) < end {
		c.pos = p + 1
		return zigzag(c.buf[p]), true
	}
	return c.varintLonger(end)
}

func (c *cursor) varintLonger(end int64) (int64, bool) {
	if c.off() >= end {
		return 0, false
	}
	c.fill(binary.MaxVarintLen64)
	v, next, ok := varintAt(c.buf, c.pos)
	c.pos = next
	return v, ok && c.off() <= end
}

// skip passes n bytes; false when the records end first.
func (c *cursor) skip(n int64) bool {
	if int64(len(c.buf)-c.pos) >= n {
		c.pos += int(n)
		return true
	}
	return c.skipLonger(n)
}

func (c *cursor) skipLonger(n int64) bool {
	n -= int64(len(c.buf) - c.pos)
	c.pos = len(c.buf)
	for n > 0 {
		if !c.fill(1) {
			return false
		}
		k := min(n, int64(len(c.buf)-c.pos))
		c.pos += int(k)
		n -= k
	}
	return true
}

// atEnd reports whether the records section ends at the cursor.
func (c *cursor) atEnd() bool { return !c.fill(1) && c.err == nil }

// walkStream is scanRecords over records read through c's window as they
// decompress: the same rules, the same errors (TestWalkStreamAgrees holds
// them to it), with memory bounded by the window whatever a record's size.
// scanRecords, over records held whole, is the fast path of uncompressed
// batches.
func walkStream(c *cursor, n int32, firstTS int64, keyless bool) (Scan, error) {
	s := Scan{MinTimestamp: math.MaxInt64, MaxTimestamp: noTimestamp}
	for i := int32(0); i < n; i++ {
		c.fill(binary.MaxVarintLen64)
		length, next, ok := varintAt(c.buf, c.pos)
		c.pos = next
		// A record that fits the window is read into it whole, so a record
		// longer than the records left is found at once; a longer one must
		// reach its end as it is skipped through.
		whole := ok && length >= 1 && (length > int64(cap(c.buf)) || c.fill(int(length)))
		start := c.off()
		end := start + length
		if !whole || !c.skip(1) { // and the attributes
			return s, fmt.Errorf("%w: record %d of %d: bad length", ErrInvalid, i, n)
		}
		tsDelta, ok := c.varint(end)
		if !ok {
			return s, fmt.Errorf("%w: record %d: bad timestamp delta", ErrInvalid, i)
		}
		v, ok := c.varint(end)
		if !ok {
			return s, fmt.Errorf("%w: record %d: bad offset delta", ErrInvalid, i)
		}
		if v != int64(i) {
			return s, fmt.Errorf("%w: record %d has offset delta %d; a producer's records have the deltas 0..%d in order", ErrInvalid, i, v, n-1)
		}
		if v, ok = c.varint(end); !ok || v > end-c.off() {
			return s, fmt.Errorf("%w: record %d: bad key", ErrInvalid, i)
		}
		if v < 0 && keyless {
			s.Keyless = append(s.Keyless, i)
		}
		if v > 0 && !c.skip(v) {
			return s, fmt.Errorf("%w: record %d of %d: bad length", ErrInvalid, i, n)
		}
		if v, ok = c.varint(end); !ok || v > end-c.off() {
			return s, fmt.Errorf("%w: record %d: bad value", ErrInvalid, i)
		}
		if v > 0 && !c.skip(v) {
			return s, fmt.Errorf("%w: record %d of %d: bad length", ErrInvalid, i, n)
		}
		headers, ok := c.varint(end)
		if !ok || headers < 0 || headers > (end-c.off())/2 {
			return s, fmt.Errorf("%w: record %d: bad header count", ErrInvalid, i)
		}
		for range headers {
			if v, ok = c.varint(end); !ok || v < 0 || v > end-c.off() || !c.skip(v) {
				return s, fmt.Errorf("%w: record %d: bad header key", ErrInvalid, i)
			}
			if v, ok = c.varint(end); !ok || v > end-c.off() || v > 0 && !c.skip(v) {
				return s, fmt.Errorf("%w: record %d: bad header value", ErrInvalid, i)
			}
		}
		if c.off() != end {
			return s, fmt.Errorf("%w: record %d: its fields fill %d of its %d bytes", ErrInvalid, i, c.off()-start, length)
		}
		ts := firstTS + tsDelta
		s.MaxTimestamp = max(s.MaxTimestamp, ts)
		if ts != noTimestamp {
			s.MinTimestamp = min(s.MinTimestamp, ts)
		}
	}
	if !c.atEnd() {
		if c.err != nil {
			return s, c.err
		}
		return s, fmt.Errorf("%w: bytes after the last of %d records", ErrInvalid, n)
	}
	return s, nil
}

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
