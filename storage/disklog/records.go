package disklog

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/sendfile"
)

// recRef is the descriptor reference a fileRecords holds; it is released
// by Close, or by a cleanup if the records are dropped unclosed.
type recRef struct {
	h    *handle
	done atomic.Bool
}

func (r *recRef) release() {
	if !r.done.Swap(true) {
		r.h.release()
	}
}

// fileRecords is a range of a segment file.
type fileRecords struct {
	ref *recRef
	off int64
	n   int
}

var _ storage.Records = (*fileRecords)(nil)

func newFileRecords(h *handle, off, n int64) *fileRecords {
	r := &fileRecords{ref: &recRef{h: h}, off: off, n: int(n)}
	runtime.AddCleanup(r, func(ref *recRef) { ref.release() }, r.ref)
	return r
}

// Len implements storage.Records.
func (r *fileRecords) Len() int { return r.n }

// File returns the descriptor and range (for tests and diagnostics).
func (r *fileRecords) File() (*os.File, int64, int) { return r.ref.h.f, r.off, r.n }

// AppendTo implements storage.Records with one pread.
func (r *fileRecords) AppendTo(dst []byte) ([]byte, error) {
	if r.ref.done.Load() {
		return dst, storage.ErrClosed
	}
	l := len(dst)
	dst = append(dst, make([]byte, r.n)...)
	if _, err := r.ref.h.f.ReadAt(dst[l:], r.off); err != nil {
		return dst[:l], fmt.Errorf("disklog: read records: %w", err)
	}
	return dst, nil
}

// WriteTo implements io.WriterTo: sendfile(2) to a TCP connection (no copy
// through user space), a section copy to anything else.
func (r *fileRecords) WriteTo(w io.Writer) (int64, error) {
	if r.ref.done.Load() {
		return 0, storage.ErrClosed
	}
	if tc, ok := w.(*net.TCPConn); ok {
		if n, err, handled := sendfile.Range(tc, r.ref.h.f, r.off, int64(r.n)); handled {
			return n, err
		}
	}
	return io.Copy(w, io.NewSectionReader(r.ref.h.f, r.off, int64(r.n)))
}

// Close implements storage.Records.
func (r *fileRecords) Close() error {
	r.ref.release()
	return nil
}

var windowPool = sync.Pool{New: func() any { return &window{buf: make([]byte, 16<<10)} }}

// getWindow returns a small pooled header window over f.
func getWindow(f *os.File, end int64) *window {
	w := windowPool.Get().(*window)
	w.f, w.end, w.off, w.n = f, end, 0, 0
	return w
}

func putWindow(w *window) {
	w.f = nil
	if len(w.buf) > 64<<10 {
		w.buf = make([]byte, 16<<10)
	}
	windowPool.Put(w)
}

// chainedRecords is two reads served as one (Read past a segment that
// ends with an empty batch).
type chainedRecords struct{ a, b storage.Records }

func (r chainedRecords) Len() int { return r.a.Len() + r.b.Len() }

func (r chainedRecords) AppendTo(dst []byte) ([]byte, error) {
	dst, err := r.a.AppendTo(dst)
	if err != nil {
		return dst, err
	}
	return r.b.AppendTo(dst)
}

func (r chainedRecords) WriteTo(w io.Writer) (int64, error) {
	n, err := r.a.WriteTo(w)
	if err != nil {
		return n, err
	}
	m, err := r.b.WriteTo(w)
	return n + m, err
}

func (r chainedRecords) Close() error {
	err := r.a.Close()
	if e := r.b.Close(); err == nil {
		err = e
	}
	return err
}
