package memlog

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

// appendValue appends one batch of one record with value v and returns the
// batch as appended.
func appendValue(t testing.TB, l *Log, v []byte) []byte {
	t.Helper()
	b := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: time.Now().UnixMilli(), Values: [][]byte{v}})
	batch.SetBaseOffset(b, l.NextOffset())
	h, err := batch.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(b, h); err != nil {
		t.Fatal(err)
	}
	return b
}

func value(i, n int) []byte { return bytes.Repeat([]byte{byte(i)}, n) }

// openLog opens a log of a fresh Opener, which has its own arena.
func openLog(t *testing.T, cfg storage.LogConfig) (*Opener, *Log) {
	t.Helper()
	o := NewOpener()
	switch {
	case o.ar == nil && runtime.GOOS != "linux":
		t.Skip("the arena is a memfd: Linux only")
	case o.ar == nil:
		t.Fatal("no arena: memfd_create failed")
	}
	l, err := o.Open(storage.PartitionID{Topic: "t", TopicID: "id", Partition: 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o, l.(*Log)
}

// TestReadHoldsItsChunks: records read before retention drops their batches
// still read those batches, however much is appended after, and their
// chunk is free for reuse once they are closed.
func TestReadHoldsItsChunks(t *testing.T) {
	o, l := openLog(t, storage.LogConfig{SegmentBytes: 1 << 20, RetentionBytes: 2 << 20})
	first := appendValue(t, l, value(1, 100_000))
	second := appendValue(t, l, value(2, 100_000))
	r, err := l.Read(0, 1<<20, l.NextOffset())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ { // ~30 MB: the first chunk's batches all expire
		appendValue(t, l, value(i, 100_000))
		if err := l.EnforceRetention(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if l.StartOffset() < 200 {
		t.Fatalf("retention kept the start at %d", l.StartOffset())
	}
	_, freeBefore := o.ar.stats()
	if got := readAll(t, r); !bytes.Equal(got, append(append([]byte(nil), first...), second...)) {
		t.Fatal("records read before retention changed after it")
	}
	if _, free := o.ar.stats(); free != freeBefore+1 {
		t.Fatalf("closing the last reader of a dropped chunk left %d free chunks, want %d", free, freeBefore+1)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := r.WriteTo(io.Discard); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

// TestRecordsToTCP: records go to a TCP connection (sendfile from the
// arena, and the heap for a batch larger than a chunk) and to any other
// writer byte for byte as appended.
func TestRecordsToTCP(t *testing.T) {
	_, l := openLog(t, storage.LogConfig{})
	var want []byte
	for i, n := range []int{1000, 3_000_000, ChunkSize + 10, 2_000_000, 50} {
		want = append(want, appendValue(t, l, value(i+1, n))...)
	}
	r, err := l.Read(0, 64<<20, l.NextOffset())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != len(want) {
		t.Fatalf("read %d bytes, appended %d", r.Len(), len(want))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.WriteTo(c.(*net.TCPConn))
	if err != nil || n != int64(len(want)) {
		t.Fatalf("wrote %d of %d: %v", n, len(want), err)
	}
	_ = c.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the connection got %d bytes, not the %d appended", len(b), len(want))
	}
	var buf bytes.Buffer
	if _, err := r.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("copy to a buffer: %v", err)
	}
	if b, err := r.AppendTo([]byte("x")); err != nil || !bytes.Equal(b[1:], want) {
		t.Fatalf("append: %v", err)
	}
}

// TestRemoveFreesTheArena: a removed log's chunks all go back to the arena.
func TestRemoveFreesTheArena(t *testing.T) {
	o, l := openLog(t, storage.LogConfig{})
	for i := 0; i < 100; i++ {
		appendValue(t, l, value(i, 100_000))
	}
	if chunks, free := o.ar.stats(); chunks < 3 || free != 0 {
		t.Fatalf("10 MB in %d chunks, %d free", chunks, free)
	}
	if err := o.Remove(storage.PartitionID{Topic: "t", TopicID: "id", Partition: 0}); err != nil {
		t.Fatal(err)
	}
	if chunks, free := o.ar.stats(); int64(free) != chunks {
		t.Fatalf("after Remove %d of %d chunks free", free, chunks)
	}
	if err := l.Append(nil, batch.Header{}); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("append to a removed log: %v", err)
	}
}

// TestUnclosedRecordsReleaseTheirChunks: records dropped without Close
// (a response that was never written) free their chunks once collected.
func TestUnclosedRecordsReleaseTheirChunks(t *testing.T) {
	o, l := openLog(t, storage.LogConfig{SegmentBytes: 1 << 20, RetentionBytes: 1 << 20})
	appendValue(t, l, value(1, 100_000))
	if _, err := l.Read(0, 1, 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		appendValue(t, l, value(i, 100_000))
		_ = l.EnforceRetention(time.Now())
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		runtime.GC()
		if _, free := o.ar.stats(); free > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the first chunk is still held by records nobody references")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConcurrentReadsSeeWholeBatches: readers racing appends, retention and
// compaction always get whole, valid batches from where they asked, never
// bytes of a chunk reused under them.
func TestConcurrentReadsSeeWholeBatches(t *testing.T) {
	_, l := openLog(t, storage.LogConfig{SegmentBytes: 256 << 10, RetentionBytes: 1 << 20})
	appendValue(t, l, value(0, 30_000))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				off := l.StartOffset()
				r, err := l.Read(off, 200_000, l.NextOffset())
				if errors.Is(err, storage.ErrOffsetOutOfRange) {
					continue // retention moved the start meanwhile
				}
				if err != nil {
					errs <- err
					return
				}
				time.Sleep(time.Millisecond) // hold the records while the writer goes on
				b, err := r.AppendTo(nil)
				_ = r.Close()
				if err != nil {
					errs <- err
					return
				}
				bs, rest, err := batch.Split(b)
				if err != nil || len(rest) != 0 || len(bs) == 0 {
					errs <- errors.New("records are not whole batches")
					return
				}
				for i, x := range bs {
					h, err := batch.Validate(x)
					if err != nil {
						errs <- err
						return
					}
					if i == 0 && (h.BaseOffset > off || h.NextOffset() <= off) {
						errs <- errors.New("first batch does not contain the offset read")
						return
					}
				}
			}
		}()
	}
	for i := 0; i < 1500; i++ {
		appendValue(t, l, value(i, 30_000))
		if i%20 == 0 {
			if err := l.EnforceRetention(time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}
