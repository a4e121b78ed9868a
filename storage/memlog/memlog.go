// Package memlog is the in-memory log engine of local-dev mode. It keeps
// batches in memory (an arena of chunks in an in-memory file, arena.go),
// honours retention (so a long dev run does not grow without bound) and
// loses everything when the process exits.
package memlog

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

// DefaultRetentionBytes caps a partition in memory when its topic sets no
// retention.bytes: local-dev mode must not grow without bound.
const DefaultRetentionBytes = 256 << 20

const defaultSegmentBytes = 8 << 20

// entry is one stored batch: a range of the arena's file (c set), or bytes
// on the Go heap (a batch larger than a chunk, or no arena).
type entry struct {
	h   batch.Header // parsed from the stored bytes
	c   *chunk
	off int64
	n   int
	b   []byte
}

func (e *entry) base() int64  { return e.h.BaseOffset }
func (e *entry) next() int64  { return e.h.NextOffset() }
func (e *entry) maxTS() int64 { return e.h.MaxTimestamp }

// bytes returns the batch: the heap bytes, or a copy read from the arena.
// The caller holds the log's lock or a reference on e.c.
func (e *entry) bytes(ar *arena) ([]byte, error) {
	if e.c == nil {
		return e.b, nil
	}
	b := make([]byte, e.n)
	if _, err := ar.io.ReadAt(b, e.off); err != nil {
		return nil, fmt.Errorf("memlog: read batch at offset %d: %w", e.base(), err)
	}
	return b, nil
}

// segment is a run of batches dropped together by retention. It holds a
// reference on every chunk its batches are in.
type segment struct {
	entries []entry
	chunks  []*chunk
	size    int64
	created time.Time
	// maxTS is the newest timestamp of its batches (-1: none), what
	// retention.ms is measured from.
	maxTS int64
	gone  bool // dropped from its log
}

// add appends e, taking a reference on its chunk the first time.
func (s *segment) add(e entry) {
	if e.c != nil && (len(s.chunks) == 0 || s.chunks[len(s.chunks)-1] != e.c) {
		e.c.acquire()
		s.chunks = append(s.chunks, e.c)
	}
	s.entries = append(s.entries, e)
	s.size += int64(e.n)
	s.maxTS = max(s.maxTS, e.maxTS())
}

// newest is the time retention.ms is measured from: its newest timestamp,
// or when it was created if no batch has one (as Kafka falls back to the
// segment file's modification time).
func (s *segment) newest() int64 {
	if s.maxTS >= 0 {
		return s.maxTS
	}
	return s.created.UnixMilli()
}

// drop releases the segment's chunks.
func (s *segment) drop() {
	for _, c := range s.chunks {
		c.release()
	}
	s.chunks, s.gone = nil, true
}

// Log is an in-memory storage.Log.
type Log struct {
	mu       sync.RWMutex
	cfg      storage.LogConfig
	segments []*segment
	start    int64
	next     int64
	size     int64
	epochs   []storage.EpochEntry
	snaps    map[string][]byte
	closed   bool
	// ar holds the batches (nil: the Go heap); app is the owner's cursor in
	// it, under mu.
	ar  *arena
	app appender
	now func() time.Time
	// defaultCap applies when the topic sets no retention.bytes.
	defaultCap int64
	// cleanMu: one compaction pass at a time; cleanedTo: the first dirty
	// offset (compact.go), under cleanMu.
	cleanMu   sync.Mutex
	cleanedTo int64
}

// sharedArena holds the logs made by New.
var sharedArena = sync.OnceValue(newArena)

// New returns an empty log.
func New(cfg storage.LogConfig) *Log { return newLog(cfg, sharedArena()) }

func newLog(cfg storage.LogConfig, ar *arena) *Log {
	return &Log{cfg: cfg, snaps: map[string][]byte{}, now: time.Now, defaultCap: DefaultRetentionBytes,
		ar: ar, app: appender{ar: ar}}
}

// Opener opens in-memory logs; a partition re-opened in the same process
// (a leadership bounce) finds its data again. Its logs share one arena.
type Opener struct {
	mu   sync.Mutex
	logs map[storage.PartitionID]*Log
	ar   *arena
}

// NewOpener returns an Opener with no logs.
func NewOpener() *Opener { return &Opener{logs: map[storage.PartitionID]*Log{}, ar: newArena()} }

// Open implements storage.Opener.
func (o *Opener) Open(id storage.PartitionID, cfg storage.LogConfig) (storage.Log, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l, ok := o.logs[id]
	if !ok {
		l = newLog(cfg, o.ar)
		o.logs[id] = l
	}
	l.mu.Lock()
	l.closed = false
	l.cfg = cfg
	l.mu.Unlock()
	return l, nil
}

// Remove implements storage.Opener: the log's memory goes back to the
// arena once no Records read from it is open.
func (o *Opener) Remove(id storage.PartitionID) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if l, ok := o.logs[id]; ok {
		l.free()
		delete(o.logs, id)
	}
	return nil
}

// free closes the log and releases every chunk it holds.
func (l *Log) free() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segments {
		s.drop()
	}
	l.segments, l.size, l.closed = nil, 0, true
	l.app.close()
}

// Persistent implements storage.Opener.
func (o *Opener) Persistent() bool { return false }

func (l *Log) segmentBytes() int64 {
	if l.cfg.SegmentBytes > 0 {
		return min(l.cfg.SegmentBytes, defaultSegmentBytes)
	}
	return defaultSegmentBytes
}

// Append implements storage.Log. The log keeps its own copy of b: one copy
// of the whole batch into the arena, no work per record.
func (l *Log) Append(b []byte, h batch.Header) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return storage.ErrClosed
	}
	if h.BaseOffset != l.next {
		return fmt.Errorf("append at offset %d, log end is %d", h.BaseOffset, l.next)
	}
	// The header as stored: the caller may have stamped b since validating.
	sh, err := batch.ParseHeader(b)
	if err != nil {
		return fmt.Errorf("memlog: append at offset %d: %w", h.BaseOffset, err)
	}
	e, err := store(&l.app, b, sh)
	if err != nil {
		return err
	}
	var seg *segment
	if n := len(l.segments); n > 0 && l.segments[n-1].size < l.segmentBytes() {
		seg = l.segments[n-1]
	} else {
		seg = &segment{created: l.now(), maxTS: -1}
		l.segments = append(l.segments, seg)
	}
	seg.add(e)
	l.size += int64(e.n)
	l.next = h.NextOffset()
	return nil
}

// store copies b into p's arena (onto the heap when there is none or b is
// larger than a chunk).
func store(p *appender, b []byte, h batch.Header) (entry, error) {
	e := entry{h: h, n: len(b)}
	if p.ar != nil {
		c, off, err := p.put(b)
		if err != nil {
			return e, err
		}
		if c != nil {
			e.c, e.off = c, off
			return e, nil
		}
	}
	e.b = append([]byte(nil), b...)
	return e, nil
}

// NextOffset implements storage.Log.
func (l *Log) NextOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.next
}

// StartOffset implements storage.Log.
func (l *Log) StartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.start
}

// Sync implements storage.Log; memory is as durable as it gets.
func (l *Log) Sync() (int64, error) { return l.NextOffset(), nil }

// Durable implements storage.Log.
func (l *Log) Durable() int64 { return l.NextOffset() }

// locate returns the segment and entry index of the batch containing off.
func (l *Log) locate(off int64) (int, int, bool) {
	si := sort.Search(len(l.segments), func(i int) bool {
		s := l.segments[i]
		return s.entries[len(s.entries)-1].next() > off
	})
	if si == len(l.segments) {
		return 0, 0, false
	}
	es := l.segments[si].entries
	ei := sort.Search(len(es), func(i int) bool { return es[i].next() > off })
	return si, ei, true
}

// Read implements storage.Log. The records are the stored batches, not a
// copy: they hold a reference on their chunks until closed.
func (l *Log) Read(offset int64, maxBytes int, limit int64) (storage.Records, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, storage.ErrClosed
	}
	if offset < l.start || offset > l.next {
		return nil, fmt.Errorf("%w: %d not in [%d, %d]", storage.ErrOffsetOutOfRange, offset, l.start, l.next)
	}
	si, ei, ok := l.locate(offset)
	if !ok {
		return storage.BytesRecords(nil), nil
	}
	var pieces []piece
	var chunks []*chunk
	n := 0
segments:
	for ; si < len(l.segments); si, ei = si+1, 0 {
		es := l.segments[si].entries
		for i := ei; i < len(es); i++ {
			e := &es[i]
			if e.base() >= limit || (n > 0 && n+e.n > maxBytes) {
				break segments
			}
			n += e.n
			switch last := len(pieces) - 1; {
			case e.c == nil:
				pieces = append(pieces, piece{b: e.b, n: e.n})
				continue
			case last >= 0 && pieces[last].b == nil && pieces[last].off+int64(pieces[last].n) == e.off:
				pieces[last].n += e.n // batches written one after another: one range
			default:
				pieces = append(pieces, piece{off: e.off, n: e.n})
			}
			if len(chunks) == 0 || chunks[len(chunks)-1] != e.c {
				e.c.acquire()
				chunks = append(chunks, e.c)
			}
		}
	}
	if n == 0 {
		return storage.BytesRecords(nil), nil
	}
	return newRecords(l.ar, pieces, chunks, n), nil
}

// FindTimestamp implements storage.Log; the batch is a copy.
func (l *Log) FindTimestamp(ts, from, limit int64) ([]byte, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	from = max(from, l.start)
	for _, s := range l.segments {
		for i := range s.entries {
			e := &s.entries[i]
			if e.base() >= limit {
				return nil, false, nil
			}
			if e.next() > from && e.maxTS() >= ts {
				b, err := e.bytes(l.ar)
				return b, err == nil, err
			}
		}
	}
	return nil, false, nil
}

// MaxTimestamp implements storage.Log.
func (l *Log) MaxTimestamp(limit int64) (int64, int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ts, off := int64(-1), int64(-1)
	for _, s := range l.segments {
		for i := range s.entries {
			e := &s.entries[i]
			if e.base() >= limit {
				return ts, off, nil
			}
			if e.next() > l.start && e.maxTS() > ts {
				ts, off = e.maxTS(), e.base()
			}
		}
	}
	return ts, off, nil
}

// SetStartOffset implements storage.Log.
func (l *Log) SetStartOffset(off int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if off > l.next {
		return fmt.Errorf("%w: start offset %d beyond log end %d", storage.ErrOffsetOutOfRange, off, l.next)
	}
	if off > l.start {
		l.start = off
	}
	l.dropBelowStart()
	return nil
}

// dropBelowStart removes whole segments that end at or before the start offset.
func (l *Log) dropBelowStart() {
	for len(l.segments) > 1 {
		s := l.segments[0]
		if s.entries[len(s.entries)-1].next() > l.start {
			return
		}
		l.size -= s.size
		s.drop()
		l.segments = l.segments[1:]
	}
}

// EnforceRetention implements storage.Log: whole segments are dropped,
// oldest first, while retention.ms has passed their newest record or the
// log without them still holds retention.bytes (the default cap when the
// topic sets no limit). The last segment goes too when retention.ms has
// passed its newest record, as Kafka deletes an expired active segment
// (after rolling a new one), so a quiet topic keeps nothing older than
// retention.ms, and under Kafka's retention.bytes=0, which keeps nothing.
func (l *Log) EnforceRetention(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	cfg := l.cfg
	if cfg.RetentionBytes == 0 {
		cfg.RetentionBytes = l.defaultCap
	}
	for len(l.segments) > 0 {
		s := l.segments[0]
		last := s.entries[len(s.entries)-1]
		if !cfg.Expired(s.newest(), now) && !cfg.Oversize(l.size, s.size) {
			break
		}
		l.size -= s.size
		s.drop()
		l.segments = l.segments[1:]
		l.start = max(l.start, last.next())
	}
	return nil
}

// SetConfig implements storage.Log.
func (l *Log) SetConfig(cfg storage.LogConfig) {
	l.mu.Lock()
	l.cfg = cfg
	l.mu.Unlock()
}

// AssignEpoch implements storage.Log.
func (l *Log) AssignEpoch(epoch int32, startOffset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.epochs); n > 0 {
		last := l.epochs[n-1]
		if epoch < last.Epoch {
			return fmt.Errorf("leader epoch %d is below the cached %d", epoch, last.Epoch)
		}
		if epoch == last.Epoch {
			return nil
		}
	}
	l.epochs = append(l.epochs, storage.EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return nil
}

// Epochs implements storage.Log.
func (l *Log) Epochs() []storage.EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]storage.EpochEntry(nil), l.epochs...)
}

// ScanHeaders implements storage.Log from the headers kept beside the
// batches; fn runs outside the lock.
func (l *Log) ScanHeaders(from int64, fn func(batch.Header) error) error {
	l.mu.RLock()
	var hs []batch.Header
	for _, s := range l.segments {
		for i := range s.entries {
			if s.entries[i].next() > from {
				hs = append(hs, s.entries[i].h)
			}
		}
	}
	l.mu.RUnlock()
	for _, h := range hs {
		if err := fn(h); err != nil {
			return err
		}
	}
	return nil
}

// WriteSnapshot implements storage.Log.
func (l *Log) WriteSnapshot(name string, data []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.snaps[name] = append([]byte(nil), data...)
	return nil
}

// ReadSnapshot implements storage.Log.
// Size implements storage.Log.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.size
}

// Superseded implements storage.Log: an in-memory log has one process.
func (l *Log) Superseded(int32) bool { return false }

func (l *Log) ReadSnapshot(name string) ([]byte, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.snaps[name], nil
}

// Close implements storage.Log.
func (l *Log) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return nil
}

// Release implements storage.Log: a memory log is durable as written, so it
// is Close.
func (l *Log) Release() error { return l.Close() }
