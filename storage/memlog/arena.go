package memlog

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// ChunkSize is the unit in which an arena hands out memory: a log copies
// its batches one after another into its current chunk and takes a new one
// when a batch does not fit. A batch larger than a chunk is kept on the Go
// heap instead.
const ChunkSize = 4 << 20

// An arena is the memory of every log an Opener holds: one anonymous
// in-memory file (memfd) cut into chunks. Batches go in with pwrite and out
// with sendfile or pread, as they do through the page cache on disk: the
// data stays off the Go heap (the garbage collector never scans or paces on
// it) and new pages are filled by the kernel, not first touched through a
// user mapping, which under nested virtualization costs more than the copy.
//
// A chunk is reference counted: the log appending into it, every segment
// with a batch in it and every Records read from it hold one reference, so
// a chunk is freed only once nothing can read it any more. A freed chunk's
// pages go back to the kernel before its range is reused: sendfile hands
// the socket the file's pages themselves, and a socket can hold them well
// after sendfile returns (a reader that has not read them yet, segments
// not yet acknowledged), so bytes written into the same pages would reach
// that reader. Punching the hole leaves those pages to the socket; the
// range's next writes get new ones.
type arena struct {
	f      *os.File
	io     arenaIO
	mu     sync.Mutex
	chunks int64    // chunks cut from the file so far (its offset space)
	free   []*chunk // freed chunks whose pages were released, newest last
}

// arenaIO is the arena's file: real on Linux (memfd), fake in tests.
type arenaIO interface {
	WriteAt(b []byte, off int64) (int, error)
	ReadAt(b []byte, off int64) (int, error)
	// Release gives the pages of [off, off+n) back to the kernel; the range
	// reads as zeros afterwards and can be written again.
	Release(off, n int64) error
}

// chunk is ChunkSize bytes of the arena's file from off.
type chunk struct {
	ar   *arena
	off  int64
	refs atomic.Int32
}

// newArena returns an arena over a fresh in-memory file, or nil where the
// platform has none (batches then stay on the Go heap).
func newArena() *arena {
	f, err := newMemFile()
	if err != nil {
		return nil
	}
	return &arena{f: f, io: memFile{f}}
}

// get returns a chunk holding one reference: the newest freed one if any,
// else a new range of the file.
func (a *arena) get() *chunk {
	a.mu.Lock()
	defer a.mu.Unlock()
	var c *chunk
	if len(a.free) > 0 {
		c, a.free = a.free[len(a.free)-1], a.free[:len(a.free)-1]
	} else {
		c = &chunk{ar: a, off: a.chunks * ChunkSize}
		a.chunks++
	}
	c.refs.Store(1)
	return c
}

// put takes back a chunk nothing references, releasing its pages first. A
// chunk whose pages cannot be released is never reused (its pages may
// still be in a socket): its range and memory stay taken.
func (a *arena) put(c *chunk) {
	if err := a.io.Release(c.off, ChunkSize); err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.free = append(a.free, c)
}

// stats reports the file's chunks, and how many of them are free.
func (a *arena) stats() (chunks int64, free int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.chunks, len(a.free)
}

func (c *chunk) acquire() { c.refs.Add(1) }

func (c *chunk) release() {
	switch n := c.refs.Add(-1); {
	case n == 0:
		c.ar.put(c)
	case n < 0:
		panic(fmt.Sprintf("memlog: chunk at %d released more often than acquired", c.off))
	}
}

// appender copies batches into consecutive chunks of an arena. It holds a
// reference on its current chunk until the next one or close.
type appender struct {
	ar   *arena
	cur  *chunk
	used int64
}

// fits reports whether a batch of n bytes goes into the current chunk at
// used: a batch never straddles two chunks.
func fits(used, n int64) bool { return used+n <= ChunkSize }

// put copies b into the arena and returns its chunk and file offset; a nil
// chunk means b is larger than a chunk and was not stored.
func (p *appender) put(b []byte) (*chunk, int64, error) {
	n := int64(len(b))
	if n > ChunkSize {
		return nil, 0, nil
	}
	if p.cur == nil || !fits(p.used, n) {
		p.close()
		p.cur, p.used = p.ar.get(), 0
	}
	off := p.cur.off + p.used
	if _, err := p.ar.io.WriteAt(b, off); err != nil {
		return nil, 0, fmt.Errorf("memlog: copy a batch of %d bytes into memory: %w", n, err)
	}
	p.used += n
	return p.cur, off, nil
}

// close drops the reference on the current chunk.
func (p *appender) close() {
	if p.cur != nil {
		p.cur.release()
		p.cur = nil
	}
}
