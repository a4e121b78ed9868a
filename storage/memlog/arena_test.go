package memlog

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// fakeFile is an arenaIO in a map of chunk-sized buffers, recording the
// ranges released.
type fakeFile struct {
	data       map[int64][]byte
	released   []int64
	failAt     int64 // WriteAt at this offset fails (-1: never)
	noReleases bool  // Release fails
}

func newFakeArena() (*arena, *fakeFile) {
	f := &fakeFile{data: map[int64][]byte{}, failAt: -1}
	return &arena{io: f}, f
}

func (f *fakeFile) buf(off int64) ([]byte, int64) {
	base := off / ChunkSize * ChunkSize
	if f.data[base] == nil {
		f.data[base] = make([]byte, ChunkSize)
	}
	return f.data[base], off - base
}

func (f *fakeFile) WriteAt(b []byte, off int64) (int, error) {
	if off == f.failAt {
		return 0, errors.New("no memory")
	}
	c, at := f.buf(off)
	return copy(c[at:], b), nil
}

func (f *fakeFile) ReadAt(b []byte, off int64) (int, error) {
	c, at := f.buf(off)
	return copy(b, c[at:]), nil
}

func (f *fakeFile) Release(off, n int64) error {
	if f.noReleases {
		return errors.New("operation not supported")
	}
	f.released = append(f.released, off)
	delete(f.data, off)
	return nil
}

// TestArenaReusesFreedChunks: the allocator hands out new file ranges only
// when nothing is free, reuses the newest freed chunk first, and releases
// every freed chunk's pages before reusing its range; a chunk whose pages
// cannot be released is never handed out again.
func TestArenaReusesFreedChunks(t *testing.T) {
	type op struct {
		get     string // name a chunk taken by get, or
		release string // name a chunk to release
		wantOff int64  // for get: the chunk's file offset
	}
	tests := []struct {
		name         string
		noReleases   bool
		ops          []op
		wantChunks   int64
		wantFree     int
		wantReleased []int64
	}{
		{name: "fresh chunks follow each other",
			ops:        []op{{get: "a", wantOff: 0}, {get: "b", wantOff: ChunkSize}, {get: "c", wantOff: 2 * ChunkSize}},
			wantChunks: 3},
		{name: "a freed chunk is released, then reused before a new one",
			ops:        []op{{get: "a", wantOff: 0}, {get: "b", wantOff: ChunkSize}, {release: "a"}, {get: "c", wantOff: 0}},
			wantChunks: 2, wantReleased: []int64{0}},
		{name: "the newest freed chunk first",
			ops: []op{{get: "a", wantOff: 0}, {get: "b", wantOff: ChunkSize}, {get: "c", wantOff: 2 * ChunkSize},
				{release: "a"}, {release: "c"}, {get: "d", wantOff: 2 * ChunkSize}},
			wantChunks: 3, wantFree: 1, wantReleased: []int64{0, 2 * ChunkSize}},
		{name: "every freed chunk goes back to the kernel",
			ops: []op{{get: "a", wantOff: 0}, {get: "b", wantOff: ChunkSize}, {get: "c", wantOff: 2 * ChunkSize},
				{release: "a"}, {release: "b"}, {release: "c"}},
			wantChunks: 3, wantFree: 3, wantReleased: []int64{0, ChunkSize, 2 * ChunkSize}},
		{name: "a chunk whose pages cannot be released is not reused", noReleases: true,
			ops:        []op{{get: "a", wantOff: 0}, {release: "a"}, {get: "b", wantOff: ChunkSize}},
			wantChunks: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, f := newFakeArena()
			f.noReleases = tt.noReleases
			held := map[string]*chunk{}
			for i, o := range tt.ops {
				if o.get != "" {
					c := a.get()
					if c.off != o.wantOff {
						t.Fatalf("op %d: get %s at %d, want %d", i, o.get, c.off, o.wantOff)
					}
					held[o.get] = c
					continue
				}
				held[o.release].release()
			}
			chunks, free := a.stats()
			if chunks != tt.wantChunks || free != tt.wantFree {
				t.Fatalf("chunks %d free %d, want %d %d", chunks, free, tt.wantChunks, tt.wantFree)
			}
			if fmt.Sprint(f.released) != fmt.Sprint(tt.wantReleased) {
				t.Fatalf("released %v, want %v", f.released, tt.wantReleased)
			}
		})
	}
}

// TestChunkFreedWithItsLastReference: a chunk goes back to the arena only
// when the last of its holders lets go, and releasing it once too often
// panics rather than handing it out twice.
func TestChunkFreedWithItsLastReference(t *testing.T) {
	a, _ := newFakeArena()
	c := a.get()
	c.acquire()
	c.acquire()
	for i := 0; i < 2; i++ {
		c.release()
		if _, free := a.stats(); free != 0 {
			t.Fatalf("chunk freed with %d references left", 2-i)
		}
	}
	c.release()
	if _, free := a.stats(); free != 1 {
		t.Fatal("chunk not freed with its last reference")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a release without a reference did not panic")
		}
	}()
	c.release()
}

// TestAppenderPlacesBatches: batches go one after another into a chunk, a
// batch that does not fit the rest of it starts the next, and a batch
// larger than a chunk is not stored in the arena.
func TestAppenderPlacesBatches(t *testing.T) {
	type placed struct {
		off     int64 // file offset; -1: not stored
		chunkAt int64
	}
	tests := []struct {
		name  string
		sizes []int
		want  []placed
	}{
		{name: "consecutive", sizes: []int{100, 200, 300},
			want: []placed{{0, 0}, {100, 0}, {300, 0}}},
		{name: "exactly full, then the next chunk", sizes: []int{ChunkSize - 100, 100, 1},
			want: []placed{{0, 0}, {ChunkSize - 100, 0}, {ChunkSize, ChunkSize}}},
		{name: "one byte too many starts a chunk", sizes: []int{ChunkSize - 100, 101},
			want: []placed{{0, 0}, {ChunkSize, ChunkSize}}},
		{name: "a whole chunk", sizes: []int{ChunkSize, 1},
			want: []placed{{0, 0}, {ChunkSize, ChunkSize}}},
		{name: "larger than a chunk stays out", sizes: []int{10, ChunkSize + 1, 10},
			want: []placed{{0, 0}, {-1, -1}, {10, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, f := newFakeArena()
			p := appender{ar: a}
			var held []*chunk // as a segment holds the chunks of its batches
			for i, n := range tt.sizes {
				b := bytes.Repeat([]byte{byte(i + 1)}, n)
				c, off, err := p.put(b)
				if err != nil {
					t.Fatal(err)
				}
				got := placed{-1, -1}
				if c != nil {
					if len(held) == 0 || held[len(held)-1] != c {
						c.acquire()
						held = append(held, c)
					}
					got = placed{off, c.off}
					back := make([]byte, n)
					_, _ = f.ReadAt(back, off)
					if !bytes.Equal(back, b) {
						t.Fatalf("batch %d not stored at %d", i, off)
					}
				}
				if got != tt.want[i] {
					t.Fatalf("batch %d of %d bytes placed %+v, want %+v", i, n, got, tt.want[i])
				}
			}
			p.close()
			for _, c := range held {
				c.release()
			}
			chunks, free := a.stats()
			if int64(free) != chunks {
				t.Fatalf("%d of %d chunks free after close", free, chunks)
			}
		})
	}
}

// TestAppenderWriteErrorStoresNothing: a failed copy is an error and the
// next batch takes the same place.
func TestAppenderWriteErrorStoresNothing(t *testing.T) {
	a, f := newFakeArena()
	p := appender{ar: a}
	if _, _, err := p.put(make([]byte, 50)); err != nil {
		t.Fatal(err)
	}
	f.failAt = 50
	if _, _, err := p.put(make([]byte, 10)); err == nil {
		t.Fatal("write error not reported")
	}
	f.failAt = -1
	if _, off, err := p.put(make([]byte, 10)); err != nil || off != 50 {
		t.Fatalf("after an error: offset %d, %v", off, err)
	}
}
