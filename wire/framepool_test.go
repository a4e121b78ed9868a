package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFramePoolSizeClasses(t *testing.T) {
	for _, tc := range []struct {
		n, class int
	}{
		{0, -1},
		{1, 0},
		{minPooledFrame, 0},
		{minPooledFrame + 1, 1},
		{1 << 20, 20 - minPooledShift},
		{1<<20 + 1, 21 - minPooledShift},
		{maxPooledFrame, maxPooledShift - minPooledShift},
		{maxPooledFrame + 1, -1},
	} {
		if got := class(tc.n); got != tc.class {
			t.Errorf("class(%d) = %d, want %d", tc.n, got, tc.class)
		}
	}
}

func TestFramePoolReusesReleasedBuffers(t *testing.T) {
	p := NewFramePool(1 << 20)
	a := p.Get(5000)
	if len(a) != 5000 || cap(a) != 8192 {
		t.Fatalf("Get(5000): len %d cap %d, want 5000 and 8192", len(a), cap(a))
	}
	p.Put(a)
	b := p.Get(6000)
	if &b[0] != &a[0] || len(b) != 6000 {
		t.Fatalf("Get(6000) after a release of the same class: a fresh buffer (len %d)", len(b))
	}
	if c := p.Get(6000); &c[0] == &a[0] {
		t.Fatal("one released buffer handed out twice")
	}
	if reused, released := p.Stats(); reused != 1 || released != 1 {
		t.Fatalf("stats: %d reused, %d released; want 1 and 1", reused, released)
	}
}

func TestFramePoolPoisonsReleasedBuffers(t *testing.T) {
	p := NewFramePool(1 << 20)
	p.Poison.Store(true)
	b := p.Get(5000)
	copy(b, "batch bytes")
	held := b[:11] // a reader that kept the bytes past the release
	p.Put(b)
	if !bytes.Equal(held, bytes.Repeat([]byte{PoisonByte}, 11)) {
		t.Fatalf("released bytes still read %q", held)
	}
}

func TestFramePoolKeepsWithinBudget(t *testing.T) {
	p := NewFramePool(3 * minPooledFrame)
	var bufs [][]byte
	for i := 0; i < 5; i++ {
		bufs = append(bufs, p.Get(minPooledFrame))
	}
	for _, b := range bufs {
		p.Put(b)
	}
	if kept := p.kept.Load(); kept != 3*minPooledFrame {
		t.Fatalf("kept %d bytes, budget %d", kept, 3*minPooledFrame)
	}
	// Not the pool's buffers (a capacity that is no size class): dropped.
	p = NewFramePool(1 << 20)
	p.Put(make([]byte, 5000))
	p.Put(make([]byte, maxPooledFrame+1))
	if kept := p.kept.Load(); kept != 0 {
		t.Fatalf("kept %d bytes of buffers that are not the pool's", kept)
	}
}

func TestFramePoolReadFrame(t *testing.T) {
	p := NewFramePool(1 << 20)
	if _, err := p.ReadFrame(bufio.NewReader(bytes.NewReader(nil)), 1024); err != io.EOF {
		t.Fatalf("end of stream between frames: %v, want io.EOF", err)
	}
	if _, err := p.ReadFrame(bufio.NewReader(bytes.NewReader([]byte{0, 0})), 1024); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("torn size prefix: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := p.ReadFrame(bufio.NewReader(bytes.NewReader([]byte{0x10, 0, 0, 0})), 1024); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversize frame: %v", err)
	}
	if _, err := p.ReadFrame(bufio.NewReader(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff})), 1024); !errors.Is(err, ErrMalformed) {
		t.Fatalf("negative size: %v", err)
	}
	if _, released := p.Stats(); released != 0 {
		t.Fatalf("a refused size took a buffer (%d released)", released)
	}
	if _, err := p.ReadFrame(bufio.NewReader(bytes.NewReader([]byte{0, 0, 0, 5, 1})), 1024); err == nil {
		t.Fatal("truncated body read")
	}
	if _, released := p.Stats(); released != 1 {
		t.Fatalf("a truncated body's buffer was not given back (%d released)", released)
	}
	b, err := p.ReadFrame(bufio.NewReader(bytes.NewReader([]byte{0, 0, 0, 2, 7, 8})), 1024)
	if err != nil || !bytes.Equal(b, []byte{7, 8}) {
		t.Fatalf("frame %v, %v", b, err)
	}
}

// BenchmarkReadFrame reads 1 MiB frames (a produce request's size) with a
// fresh buffer per frame (make, zeroed, garbage afterwards) and from the
// pool, given back after each frame.
func BenchmarkReadFrame(b *testing.B) {
	const size = 1 << 20
	frame := append([]byte{0, 0x10, 0, 0}, make([]byte, size)...)
	r := bytes.NewReader(frame)
	br := bufio.NewReaderSize(r, 64<<10)
	b.Run("make", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			r.Reset(frame)
			br.Reset(r)
			if _, err := ReadFrame(br, DefaultMaxRequestSize); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pool", func(b *testing.B) {
		p := NewFramePool(64 << 20)
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			r.Reset(frame)
			br.Reset(r)
			f, err := p.ReadFrame(br, DefaultMaxRequestSize)
			if err != nil {
				b.Fatal(err)
			}
			p.Put(f)
		}
	})
}
