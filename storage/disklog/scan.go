package disklog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"

	"github.com/kaas-project/kaas/storage/batch"
)

// window serves byte ranges of a file through one reusable buffer, reading
// with pread (safe concurrently with appends and other readers).
type window struct {
	f     *os.File
	end   int64 // bytes past end are never read
	limit int   // the buffer's size at most
	buf   []byte
	off   int64 // file position of buf[0]
	n     int
}

// newWindow returns a window of at most size bytes. The buffer is made on
// first use, no larger than the bytes left from there to end: reading the
// last batch's header (a producer snapshot's check at every open) must not
// cost a 1 MiB allocation per partition in a 1,000-partition move.
func newWindow(f *os.File, end int64, size int) *window {
	return &window{f: f, end: end, limit: size}
}

var errShort = errors.New("read past the end of the valid data")

// get returns the bytes [pos, pos+size); the slice is valid until the next
// call.
func (w *window) get(pos int64, size int) ([]byte, error) {
	if pos < 0 || pos+int64(size) > w.end {
		return nil, errShort
	}
	if pos >= w.off && pos+int64(size) <= w.off+int64(w.n) {
		i := int(pos - w.off)
		return w.buf[i : i+size], nil
	}
	if want := max(size, int(min(int64(w.limit), w.end-pos))); want > len(w.buf) {
		w.buf = make([]byte, want)
	}
	n := int(min(int64(len(w.buf)), w.end-pos))
	m, err := w.f.ReadAt(w.buf[:n], pos)
	if m < n {
		w.n = 0
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	w.off, w.n = pos, n
	return w.buf[:size], nil
}

// header reads and frames the batch header at pos.
func (w *window) header(pos int64) (batch.Header, error) {
	b, err := w.get(pos, batch.HeaderSize)
	if err != nil {
		if errors.Is(err, errShort) {
			return batch.Header{}, fmt.Errorf("%w: truncated batch header at position %d", ErrCorruptSegment, pos)
		}
		return batch.Header{}, err
	}
	h, err := batch.ParseHeader(b)
	if err != nil {
		return h, fmt.Errorf("%w: at position %d: %v", ErrCorruptSegment, pos, err)
	}
	if pos+int64(h.Size()) > w.end {
		return h, fmt.Errorf("%w: batch at position %d runs past the segment end", ErrCorruptSegment, pos)
	}
	return h, nil
}

// scanResult is what validating a segment range found.
type scanResult struct {
	size    int64 // end of the last valid batch
	next    int64 // offset after the last valid batch
	entries []indexEntry
	// bad says why the scan stopped before the end of the range (nil: it
	// reached the end, or a batch at or beyond limitOff).
	bad    error
	beyond bool // stopped at a batch at or beyond limitOff
}

// maxBufferedBatch is the largest batch validated in one buffer with
// batch.Validate; larger ones are checked streaming.
const maxBufferedBatch = 16 << 20

// scanSegment validates batches from position from (a batch boundary) to
// end: framing, CRC-32C and offset order (expect is the base offset
// the first batch must have; -1 accepts any). It stops at the first invalid
// batch, or before a batch that reaches limitOff. Index points are added
// to entries through ix. An I/O error is returned as err.
func scanSegment(f *os.File, end, from, expect, limitOff, base int64, ix *indexer, entries []indexEntry) (scanResult, error) {
	res := scanResult{size: from, next: expect, entries: entries}
	// The window is no larger than what is left to scan: a cleanly closed
	// tail (every planned leadership move) scans nothing and must not pay
	// for zeroing a 4 MiB buffer.
	w := newWindow(f, end, int(min(4<<20, max(end-from, 0))))
	pos := from
	for pos < end {
		if end-pos < batch.HeaderSize {
			res.bad = fmt.Errorf("%d trailing bytes are shorter than a batch header", end-pos)
			break
		}
		hb, err := w.get(pos, batch.HeaderSize)
		if err != nil {
			return res, err
		}
		length := int64(int32(binary.BigEndian.Uint32(hb[8:])))
		size := length + batch.LengthPrefix
		if length < batch.HeaderSize-batch.LengthPrefix || pos+size > end {
			res.bad = fmt.Errorf("batch length %d at position %d does not fit the %d bytes left", length, pos, end-pos)
			break
		}
		var h batch.Header
		if size <= maxBufferedBatch {
			b, err := w.get(pos, int(size))
			if err != nil {
				return res, err
			}
			h, err = batch.Validate(b)
			if err != nil {
				res.bad = fmt.Errorf("at position %d: %w", pos, err)
				break
			}
		} else {
			h, err = validateStreaming(f, pos, size)
			if err != nil {
				if errors.Is(err, batch.ErrCorrupt) || errors.Is(err, batch.ErrUnsupportedMagic) {
					res.bad = fmt.Errorf("at position %d: %w", pos, err)
					break
				}
				return res, err
			}
		}
		if h.BaseOffset >= limitOff || h.NextOffset() > limitOff {
			res.beyond = true
			break
		}
		// In a sealed segment (one with a successor, limitOff) a gap is
		// allowed: compaction removes batches and keeps offsets. A step back
		// is not, and the segment must still end at its successor's base,
		// so a flipped base offset (outside the CRC) is still caught. The
		// last segment, never compacted, must be contiguous: the end of
		// its last batch is checked against nothing else.
		gapOK := limitOff != math.MaxInt64
		if res.next >= 0 && (h.BaseOffset < res.next || (!gapOK && h.BaseOffset != res.next)) {
			res.bad = fmt.Errorf("batch at position %d has base offset %d, expected %d", pos, h.BaseOffset, res.next)
			break
		}
		if h.BaseOffset-base > 1<<31-1 || h.BaseOffset < base {
			res.bad = fmt.Errorf("batch at position %d has offset %d outside the segment based at %d", pos, h.BaseOffset, base)
			break
		}
		if ix != nil {
			res.entries = ix.add(res.entries, base, pos, h)
		}
		pos += size
		res.size, res.next = pos, h.NextOffset()
	}
	return res, nil
}

// validateStreaming checks a batch too large to buffer.
func validateStreaming(f *os.File, pos, size int64) (batch.Header, error) {
	hb := make([]byte, batch.HeaderSize)
	if _, err := f.ReadAt(hb, pos); err != nil {
		return batch.Header{}, err
	}
	h, err := batch.ParseHeader(hb)
	if err != nil {
		return h, err
	}
	if int64(h.Size()) != size {
		return h, fmt.Errorf("%w: length mismatch", batch.ErrCorrupt)
	}
	crc := crc32.Update(0, castagnoli, hb[21:])
	buf := make([]byte, 1<<20)
	for p := pos + batch.HeaderSize; p < pos+size; {
		n := int(min(int64(len(buf)), pos+size-p))
		if _, err := f.ReadAt(buf[:n], p); err != nil {
			return h, err
		}
		crc = crc32.Update(crc, castagnoli, buf[:n])
		p += int64(n)
	}
	if crc != h.CRC {
		return h, fmt.Errorf("%w: crc32c mismatch", batch.ErrCorrupt)
	}
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 {
		return h, fmt.Errorf("%w: negative counts", batch.ErrCorrupt)
	}
	return h, nil
}
