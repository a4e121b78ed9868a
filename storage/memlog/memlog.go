// Package memlog is the in-memory log engine of local-dev mode. It keeps
// batches in memory, honours retention (so a long dev run does not grow
// without bound) and loses everything when the process exits.
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

type entry struct {
	base, next int64
	maxTS      int64
	b          []byte
}

type segment struct {
	entries []entry
	size    int64
	created time.Time
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
	now      func() time.Time
	// defaultCap applies when the topic sets no retention.bytes.
	defaultCap int64
	// cleanMu: one compaction pass at a time; cleanedTo: the first dirty
	// offset (compact.go), under cleanMu.
	cleanMu   sync.Mutex
	cleanedTo int64
}

// New returns an empty log.
func New(cfg storage.LogConfig) *Log {
	return &Log{cfg: cfg, snaps: map[string][]byte{}, now: time.Now, defaultCap: DefaultRetentionBytes}
}

// Opener opens in-memory logs; a partition re-opened in the same process
// (a leadership bounce) finds its data again.
type Opener struct {
	mu   sync.Mutex
	logs map[storage.PartitionID]*Log
}

// NewOpener returns an Opener with no logs.
func NewOpener() *Opener { return &Opener{logs: map[storage.PartitionID]*Log{}} }

// Open implements storage.Opener.
func (o *Opener) Open(id storage.PartitionID, cfg storage.LogConfig) (storage.Log, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l, ok := o.logs[id]
	if !ok {
		l = New(cfg)
		o.logs[id] = l
	}
	l.mu.Lock()
	l.closed = false
	l.cfg = cfg
	l.mu.Unlock()
	return l, nil
}

// Remove implements storage.Opener.
func (o *Opener) Remove(id storage.PartitionID) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.logs, id)
	return nil
}

// Persistent implements storage.Opener.
func (o *Opener) Persistent() bool { return false }

func (l *Log) segmentBytes() int64 {
	if l.cfg.SegmentBytes > 0 {
		return min(l.cfg.SegmentBytes, defaultSegmentBytes)
	}
	return defaultSegmentBytes
}

// Append implements storage.Log. The log keeps its own copy of b.
func (l *Log) Append(b []byte, h batch.Header) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return storage.ErrClosed
	}
	if h.BaseOffset != l.next {
		return fmt.Errorf("append at offset %d, log end is %d", h.BaseOffset, l.next)
	}
	var seg *segment
	if n := len(l.segments); n > 0 && l.segments[n-1].size < l.segmentBytes() {
		seg = l.segments[n-1]
	} else {
		seg = &segment{created: l.now()}
		l.segments = append(l.segments, seg)
	}
	cp := append([]byte(nil), b...)
	seg.entries = append(seg.entries, entry{base: h.BaseOffset, next: h.NextOffset(), maxTS: h.MaxTimestamp, b: cp})
	seg.size += int64(len(cp))
	l.size += int64(len(cp))
	l.next = h.NextOffset()
	return nil
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
		return s.entries[len(s.entries)-1].next > off
	})
	if si == len(l.segments) {
		return 0, 0, false
	}
	es := l.segments[si].entries
	ei := sort.Search(len(es), func(i int) bool { return es[i].next > off })
	return si, ei, true
}

// Read implements storage.Log.
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
	var out []byte
	for ; si < len(l.segments); si, ei = si+1, 0 {
		for _, e := range l.segments[si].entries[ei:] {
			if e.base >= limit || (len(out) > 0 && len(out)+len(e.b) > maxBytes) {
				return storage.BytesRecords(out), nil
			}
			out = append(out, e.b...)
		}
	}
	return storage.BytesRecords(out), nil
}

// FindTimestamp implements storage.Log.
func (l *Log) FindTimestamp(ts int64, limit int64) ([]byte, bool, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.segments {
		for _, e := range s.entries {
			if e.base >= limit {
				return nil, false, nil
			}
			if e.next > l.start && e.maxTS >= ts {
				return e.b, true, nil
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
		for _, e := range s.entries {
			if e.base >= limit {
				return ts, off, nil
			}
			if e.next > l.start && e.maxTS > ts {
				ts, off = e.maxTS, e.base
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
		if s.entries[len(s.entries)-1].next > l.start {
			return
		}
		l.size -= s.size
		l.segments = l.segments[1:]
	}
}

// EnforceRetention implements storage.Log: whole segments are dropped, never
// the active one, as Kafka does.
func (l *Log) EnforceRetention(now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	limit := l.cfg.RetentionBytes
	if limit <= 0 {
		limit = l.defaultCap
	}
	for len(l.segments) > 1 {
		s := l.segments[0]
		last := s.entries[len(s.entries)-1]
		expired := l.cfg.RetentionMs > 0 && now.UnixMilli()-last.maxTS > l.cfg.RetentionMs.Milliseconds()
		oversize := limit > 0 && l.size-s.size >= limit
		if !expired && !oversize {
			break
		}
		l.size -= s.size
		l.segments = l.segments[1:]
		l.start = max(l.start, last.next)
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

// ScanHeaders implements storage.Log.
func (l *Log) ScanHeaders(from int64, fn func(batch.Header) error) error {
	l.mu.RLock()
	var bs [][]byte
	for _, s := range l.segments {
		for _, e := range s.entries {
			if e.next > from {
				bs = append(bs, e.b)
			}
		}
	}
	l.mu.RUnlock()
	for _, b := range bs {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return err
		}
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
