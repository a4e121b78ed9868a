package memlog

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/sendfile"
)

// piece is a run of whole batches: a range of the arena's file, or bytes on
// the Go heap when b is set.
type piece struct {
	b   []byte
	off int64
	n   int
}

// recRef is the chunk references a Records holds; Close releases them, or a
// cleanup if the records are dropped unclosed.
type recRef struct {
	chunks []*chunk
	done   atomic.Bool
}

func (r *recRef) release() {
	if !r.done.Swap(true) {
		for _, c := range r.chunks {
			c.release()
		}
	}
}

// records is what Read returns: the stored batches themselves, not a copy.
// A TCP connection gets the arena's ranges with sendfile, as a disk log's
// segment ranges.
type records struct {
	ar     *arena
	ref    *recRef
	pieces []piece
	n      int
}

var _ storage.Records = (*records)(nil)

func newRecords(ar *arena, pieces []piece, chunks []*chunk, n int) *records {
	r := &records{ar: ar, ref: &recRef{chunks: chunks}, pieces: pieces, n: n}
	if len(chunks) > 0 {
		runtime.AddCleanup(r, func(ref *recRef) { ref.release() }, r.ref)
	}
	return r
}

// Len implements storage.Records.
func (r *records) Len() int { return r.n }

// AppendTo implements storage.Records: one pread per range.
func (r *records) AppendTo(dst []byte) ([]byte, error) {
	if r.ref.done.Load() {
		return dst, storage.ErrClosed
	}
	for _, p := range r.pieces {
		if p.b != nil {
			dst = append(dst, p.b...)
			continue
		}
		l := len(dst)
		dst = append(dst, make([]byte, p.n)...)
		if _, err := r.ar.io.ReadAt(dst[l:], p.off); err != nil {
			return dst[:l], fmt.Errorf("memlog: read records: %w", err)
		}
	}
	return dst, nil
}

// WriteTo implements io.WriterTo: sendfile(2) to a TCP connection, a copy
// to anything else.
func (r *records) WriteTo(w io.Writer) (int64, error) {
	if r.ref.done.Load() {
		return 0, storage.ErrClosed
	}
	var total int64
	for _, p := range r.pieces {
		var n int64
		var err error
		switch tc, ok := w.(*net.TCPConn); {
		case p.b != nil:
			var m int
			m, err = w.Write(p.b)
			n = int64(m)
		case ok && r.ar.f != nil:
			var handled bool
			if n, err, handled = sendfile.Range(tc, r.ar.f, p.off, int64(p.n)); handled {
				break
			}
			n, err = io.Copy(w, io.NewSectionReader(r.ar.io, p.off, int64(p.n)))
		default:
			n, err = io.Copy(w, io.NewSectionReader(r.ar.io, p.off, int64(p.n)))
		}
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Close implements storage.Records.
func (r *records) Close() error {
	r.ref.release()
	return nil
}
