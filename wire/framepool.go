package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync/atomic"
)

// Frame pool size classes: powers of two from minPooledFrame to
// maxPooledFrame. Smaller frames cost little to allocate; larger ones are
// rare enough that keeping them would only pin memory.
const (
	minPooledShift = 12 // 4 KiB
	maxPooledShift = 24 // 16 MiB
	minPooledFrame = 1 << minPooledShift
	maxPooledFrame = 1 << maxPooledShift
	// classDepth bounds the free buffers of one size class.
	classDepth = 64
	// PoisonByte fills a released frame while poisoning is on.
	PoisonByte = 0xA5
)

// FramePool hands out request frame buffers and takes them back, so the
// produce path neither allocates nor zeroes a fresh buffer per frame (a
// make of a large slice clears it, and the garbage collector then scans
// and frees it). Buffers are grouped in power-of-two size classes; the
// pool keeps at most Budget bytes of free buffers and drops the rest. Safe
// for concurrent use.
type FramePool struct {
	classes [maxPooledShift - minPooledShift + 1]chan []byte
	budget  int64
	kept    atomic.Int64 // bytes of free buffers held
	// Poison fills every released buffer with PoisonByte before it is
	// kept or dropped: a reader that still holds the bytes after release
	// then sees garbage (a debug mode for tests).
	Poison atomic.Bool

	reused, released atomic.Int64
}

// NewFramePool returns a pool keeping at most budget bytes of free buffers.
func NewFramePool(budget int64) *FramePool {
	p := &FramePool{budget: budget}
	for i := range p.classes {
		p.classes[i] = make(chan []byte, classDepth)
	}
	return p
}

// class is the size class index for a frame of n bytes, or -1 when n is
// not pooled.
func class(n int) int {
	if n <= 0 || n > maxPooledFrame {
		return -1
	}
	shift := bits.Len(uint(n - 1))
	if shift < minPooledShift {
		shift = minPooledShift
	}
	return shift - minPooledShift
}

// Get returns a buffer of length n. Its contents are undefined (not
// zeroed): the caller overwrites all of it.
func (p *FramePool) Get(n int) []byte {
	c := class(n)
	if c < 0 {
		return make([]byte, n)
	}
	select {
	case b := <-p.classes[c]:
		p.kept.Add(-int64(cap(b)))
		p.reused.Add(1)
		return b[:n]
	default:
		return make([]byte, n, 1<<(c+minPooledShift))
	}
}

// Put gives b back: the caller and everyone it lent b to are done with it.
// Buffers not from Get (another capacity) are dropped.
func (p *FramePool) Put(b []byte) {
	p.released.Add(1)
	b = b[:cap(b)]
	if p.Poison.Load() {
		for i := range b {
			b[i] = PoisonByte
		}
	}
	c := class(len(b))
	if c < 0 || cap(b) != 1<<(c+minPooledShift) {
		return
	}
	if p.kept.Add(int64(cap(b))) > p.budget {
		p.kept.Add(-int64(cap(b)))
		return
	}
	select {
	case p.classes[c] <- b:
	default:
		p.kept.Add(-int64(cap(b)))
	}
}

// Stats reports how many buffers Get handed out again and how many were
// released (tests use them to show the pool is in use).
func (p *FramePool) Stats() (reused, released int64) {
	return p.reused.Load(), p.released.Load()
}

// ReadFrame reads one size-prefixed frame into a buffer from the pool; the
// size is checked against max before any buffer is taken. The body's bytes
// beyond what r holds buffered are read straight into the frame when the
// rest is at least r's size (bufio.Reader.Read does so). The caller Puts
// the frame back once nothing refers to its bytes, or drops it.
func (p *FramePool) ReadFrame(r *bufio.Reader, max int32) ([]byte, error) {
	prefix, err := r.Peek(4) // no scratch array to escape to the heap per frame
	if err != nil {
		if errors.Is(err, io.EOF) && len(prefix) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	n, err := frameSize([4]byte(prefix), max)
	if err != nil {
		return nil, err
	}
	_, _ = r.Discard(4)
	buf := p.Get(int(n))
	if _, err := io.ReadFull(r, buf); err != nil {
		p.Put(buf)
		return nil, fmt.Errorf("read frame body: %w", err)
	}
	return buf, nil
}

// frameSize decodes a frame's size prefix and checks it against max.
func frameSize(sz [4]byte, max int32) (int32, error) {
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 {
		return 0, fmt.Errorf("%w: negative frame size %d", ErrMalformed, n)
	}
	if n > max {
		return 0, fmt.Errorf("%w: %d bytes > %d", ErrFrameTooLarge, n, max)
	}
	return n, nil
}
