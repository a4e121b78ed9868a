package disklog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

// mkBatch builds a valid v2 batch of n records with the given payload size,
// at base offset base, timestamps ts, ts+1, ...
func mkBatch(base int64, n int, ts int64, payload int) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		var r []byte
		r = append(r, 0)                           // attributes
		r = binary.AppendVarint(r, int64(i))       // timestamp delta
		r = binary.AppendVarint(r, int64(i))       // offset delta
		r = binary.AppendVarint(r, -1)             // key
		r = binary.AppendVarint(r, int64(payload)) // value length
		v := make([]byte, payload)
		for j := range v {
			v[j] = byte(base + int64(i) + int64(j))
		}
		r = append(r, v...)
		r = binary.AppendVarint(r, 0) // headers
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	b := make([]byte, batch.HeaderSize, batch.HeaderSize+len(recs))
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(batch.HeaderSize-batch.LengthPrefix+len(recs)))
	binary.BigEndian.PutUint32(b[12:], 0)
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], 0)
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(ts))
	binary.BigEndian.PutUint64(b[35:], uint64(ts+int64(n)-1))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0))
	binary.BigEndian.PutUint16(b[51:], 0xffff)
	binary.BigEndian.PutUint32(b[53:], ^uint32(0))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	return b
}

// testOpener opens dir in the broker's default sync mode (syncfs); a test
// passes Sync(SyncFiles) for the other.
func testOpener(t testing.TB, dir string, opts ...Option) *Opener {
	t.Helper()
	o, err := NewOpener(dir, zerolog.New(io.Discard), append([]Option{DeleteDelay(time.Hour), Sync(SyncFilesystem)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	return o
}

var testID = storage.PartitionID{Topic: "t", TopicID: "00000000-0000-4000-8000-000000000001", Partition: 0}

func openLogT(t testing.TB, o *Opener, cfg storage.LogConfig) *Log {
	t.Helper()
	l, err := o.Open(testID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l.(*Log)
}

// appendN appends count batches of recs records each and returns them.
func appendN(t testing.TB, l *Log, count, recs, payload int, ts int64) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < count; i++ {
		b := mkBatch(l.NextOffset(), recs, ts+int64(i)*10, payload)
		h, err := batch.Validate(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(b, h); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func readAll(t testing.TB, l *Log, from int64) []byte {
	t.Helper()
	var out []byte
	for off := from; off < l.NextOffset(); {
		r, err := l.Read(off, 1<<20, l.NextOffset())
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		b, err := r.AppendTo(nil)
		_ = r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			t.Fatalf("read %d: empty before the log end %d", off, l.NextOffset())
		}
		bs, rest, err := batch.Split(b)
		if err != nil || len(rest) != 0 {
			t.Fatalf("read %d: split: %v rest %d", off, err, len(rest))
		}
		h, _ := batch.ParseHeader(bs[len(bs)-1])
		off = h.NextOffset()
		out = append(out, b...)
	}
	return out
}

// crash abandons l as a kill -9 would: no flush, no index, no marker; the
// descriptors are closed so the test can reopen the directory.
func (l *Log) crash() {
	l.stopJanitor()
	l.stopTimers()
	l.mu.Lock()
	l.closed = true
	segs := l.segments
	for _, p := range l.pendingSync {
		p.h.release()
	}
	l.pendingSync = nil
	l.mu.Unlock()
	for _, s := range segs {
		if s.active || l.o.cache.remove(s) {
			s.dropHandle()
		}
	}
	l.o.forget(l.name)
}

func concat(bs [][]byte) []byte { return bytes.Join(bs, nil) }

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func segFiles(t testing.TB, dir, ext string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func isCorrupt(err error) bool { return errors.Is(err, ErrCorruptSegment) }

// stopJanitor stops the background janitor (index writes, unlinks) so a
// test can shape the files without racing it; crash calls it too.
func (l *Log) stopJanitor() {
	select {
	case <-l.quit:
	default:
		close(l.quit)
	}
	l.janitorWG.Wait()
}
