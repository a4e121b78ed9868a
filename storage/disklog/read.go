package disklog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

// segView is a reader's snapshot of a segment plus a descriptor reference.
type segView struct {
	s    *segment
	h    *handle
	size int64
	next int64
	idx  []indexEntry
}

func (v *segView) release() {
	if v.h != nil {
		v.h.release()
		v.h = nil
	}
}

// acquire opens (through the descriptor cache) and snapshots s for reading.
func (l *Log) acquire(s *segment) (segView, error) {
	s.mu.RLock()
	if r := s.replaced; r != nil {
		s.mu.RUnlock()
		return l.acquire(r)
	}
	if s.h != nil && (s.idx != nil || s.size == 0) {
		v := segView{s: s, h: s.h, size: s.size, next: s.next, idx: s.idx}
		v.h.acquire()
		active := s.active
		s.mu.RUnlock()
		if !active {
			l.o.cache.touch(s)
		}
		return v, nil
	}
	s.mu.RUnlock()

	s.mu.Lock()
	if r := s.replaced; r != nil {
		s.mu.Unlock()
		return l.acquire(r)
	}
	l.loadSealedLocked(s)
	fresh := false
	if s.h == nil {
		f, err := openFile(s.path(), os.O_RDONLY, 0)
		if err != nil {
			s.mu.Unlock()
			return segView{}, fmt.Errorf("disklog: open %s: %w", s.name, err)
		}
		s.h = newHandle(f, 1) // the cache's reference
		fresh = true
	}
	if s.idx == nil && s.size > 0 {
		if entries, sum, ok := loadIndex(s.prefix()); ok && sum.size == s.size && sum.next == s.next && sum.base == s.base {
			s.idx = entries
		} else {
			l.rebuildIndexLocked(s)
		}
	}
	v := segView{s: s, h: s.h, size: s.size, next: s.next, idx: s.idx}
	v.h.acquire()
	s.mu.Unlock()
	if fresh {
		for _, victim := range l.o.cache.add(s) {
			victim.dropHandle()
		}
		if l.isClosed() && l.o.cache.remove(s) {
			s.dropHandle()
		}
	}
	return v, nil
}

// readUnreadLater schedules the background read of the segments Open left
// unread, if any (UnreadDelay).
func (l *Log) readUnreadLater() {
	d := l.o.opts.unreadDelay
	if d < 0 {
		return
	}
	l.mu.RLock()
	unread := false
	for _, s := range l.segments {
		unread = unread || s.unread
	}
	l.mu.RUnlock()
	if !unread {
		return
	}
	if d > 0 {
		d += rand.N(d)
	}
	l.jmu.Lock()
	defer l.jmu.Unlock()
	l.afterFunc(d, func() {
		l.mu.RLock()
		segs := append([]*segment(nil), l.segments...)
		l.mu.RUnlock()
		for _, s := range segs {
			if l.isClosed() {
				return
			}
			l.loadSealed(s)
		}
	})
}

// loadSealed reads what Open left unread of a sealed segment (s.unread):
// its trailer, or the segment itself when the trailer no longer matches.
func (l *Log) loadSealed(s *segment) {
	s.mu.RLock()
	unread := s.unread
	s.mu.RUnlock()
	if unread {
		s.mu.Lock()
		l.loadSealedLocked(s)
		s.mu.Unlock()
	}
}

// loadSealedLocked is loadSealed with s.mu held.
func (l *Log) loadSealedLocked(s *segment) {
	if !s.unread {
		return
	}
	s.unread = false
	fi, err := os.Stat(s.path())
	if err == nil {
		s.created = fi.ModTime()
		index := s.prefix() + indexSuffix
		if s.deleted { // retention set it aside meanwhile; a read in flight may still need it
			index += deletedSuffix
		}
		tr, ok := readTrailer(index)
		if ok && tr.base == s.base && tr.epoch == s.epoch && tr.size <= fi.Size() && tr.next == s.next {
			s.size, s.maxTS, s.maxOff = tr.size, tr.maxTS, tr.maxOff
			return
		}
	}
	// The trailer an earlier open found clean is gone or no longer matches
	// (damage, or a deposed leader's clean close past the successor's
	// base): validate the segment itself, up to its successor's base.
	s.indexOnDisk = false
	s.idx = []indexEntry{}
	var res scanResult
	if err == nil {
		var f *os.File
		if f, err = openFile(s.path(), os.O_RDONLY, 0); err == nil {
			ix := newIndexer(l.interval.Load())
			res, err = scanSegment(f, fi.Size(), 0, s.base, s.next, s.base, &ix, nil)
			_ = f.Close()
			s.maxTS, s.maxOff = ix.maxTS, ix.maxOff
			if res.entries != nil {
				s.idx = res.entries
			}
		}
	}
	s.size, s.verified = res.size, res.size
	if err != nil || res.next != s.next {
		reason := res.bad
		if err != nil {
			reason = err
		}
		s.corruptAt = res.size
		l.log.Error().AnErr("reason", reason).Str("segment", s.name).Int64("position", res.size).Int64("offset", res.next).
			Msg("CORRUPTION in a sealed segment: nothing at or past this position is served")
		return
	}
	l.jmu.Lock()
	l.needIndex = append(l.needIndex, s)
	l.jmu.Unlock()
	l.kickJanitor()
	l.log.Warn().Str("segment", s.name).Msg("a sealed segment's index trailer changed since the last open: rebuilt it from the segment")
}

// rebuildIndexLocked rebuilds a sealed segment's lost or damaged index by
// validating it whole (s.mu held).
func (l *Log) rebuildIndexLocked(s *segment) {
	ix := newIndexer(l.interval.Load())
	res, err := scanSegment(s.h.f, s.size, 0, s.base, s.next, s.base, &ix, nil)
	if err == nil && res.bad == nil && res.size == s.size {
		s.idx, s.verified, s.indexOnDisk = res.entries, s.size, false
		l.jmu.Lock()
		l.needIndex = append(l.needIndex, s)
		l.jmu.Unlock()
		l.kickJanitor()
		l.log.Warn().Str("segment", s.name).Msg("rebuilt a missing or damaged segment index")
		return
	}
	s.idx = res.entries
	if s.idx == nil {
		s.idx = []indexEntry{}
	}
	s.verified = res.size
	s.corruptAt = res.size
	reason := res.bad
	if err != nil {
		reason = err
	}
	l.log.Error().AnErr("reason", reason).Str("segment", s.name).Int64("position", res.size).Int64("offset", res.next).
		Msg("CORRUPTION in a sealed segment: nothing at or past this position is served")
}

// verify CRC-checks s from what was verified so far to at least end and
// returns the position of the first corrupt batch (-1: none).
func (l *Log) verify(v *segView, end int64) int64 {
	s := v.s
	s.mu.RLock()
	vf, ca := s.verified, s.corruptAt
	s.mu.RUnlock()
	if ca >= 0 || vf >= end {
		return ca
	}
	s.vmu.Lock()
	defer s.vmu.Unlock()
	s.mu.RLock()
	vf, ca = s.verified, s.corruptAt
	s.mu.RUnlock()
	if ca >= 0 || vf >= end {
		return ca
	}
	// Verify in steps of at least 8 MiB so sequential readers pay once.
	to := min(v.size, max(end, vf+8<<20))
	res, err := scanSegment(v.h.f, to, vf, -1, v.next, s.base, nil, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && res.bad == nil {
		s.verified = max(s.verified, res.size)
		return -1
	}
	reason := res.bad
	if err != nil {
		reason = err
	}
	s.corruptAt = res.size
	l.log.Error().AnErr("reason", reason).Str("segment", s.name).Int64("position", res.size).
		Msg("CORRUPTION in a sealed segment: nothing at or past this position is served")
	return s.corruptAt
}

// segmentFor returns the segment holding offset (l.mu held).
func (l *Log) segmentFor(off int64) *segment {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].base > off }) - 1
	if i < 0 {
		i = 0
	}
	return l.segments[i]
}

// locate finds the batch containing offset: its position and header; pos ==
// v.size when no batch of the segment contains it.
func (v *segView) locate(w *window, offset int64) (int64, batch.Header, error) {
	rel := offset - v.s.base
	i := sort.Search(len(v.idx), func(i int) bool { return int64(v.idx[i].rel) > rel }) - 1
	pos := int64(0)
	if i >= 0 {
		pos = int64(v.idx[i].pos)
	}
	for pos < v.size {
		h, err := w.header(pos)
		if err != nil {
			return pos, h, err
		}
		if h.NextOffset() > offset {
			return pos, h, nil
		}
		pos += int64(h.Size())
	}
	return v.size, batch.Header{}, nil
}

// Read implements storage.Log. The result is a range of one segment file
// (never across segments), served by sendfile when written to a TCP
// connection; it holds its own descriptor reference, so it stays readable
// after the segment is rolled, deleted or the log closed.
func (l *Log) Read(offset int64, maxBytes int, limit int64) (storage.Records, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, storage.ErrClosed
	}
	start, next := l.start.Load(), l.next.Load()
	if offset < start || offset > next {
		l.mu.RUnlock()
		return nil, fmt.Errorf("%w: %d not in [%d, %d]", storage.ErrOffsetOutOfRange, offset, start, next)
	}
	if offset == next || offset >= limit {
		l.mu.RUnlock()
		return storage.BytesRecords(nil), nil
	}
	s := l.segmentFor(offset)
	l.mu.RUnlock()
	v, err := l.acquire(s)
	if err != nil {
		return nil, err
	}
	recs, err := l.readView(&v, offset, maxBytes, limit)
	if recs == nil {
		v.release()
	}
	if err == nil && recs.Len() == batch.HeaderSize && maxBytes > batch.HeaderSize {
		// One empty batch, kept by compaction to end its segment: the
		// records that follow come from the next segment, in the same
		// response. A client that advances only by the records it gets
		// (kafkajs) would otherwise fetch this offset for ever.
		if hb, herr := recs.AppendTo(nil); herr == nil {
			if h, perr := batch.ParseHeader(hb); perr == nil && h.NumRecords == 0 && h.NextOffset() < min(next, limit) {
				if more, merr := l.Read(h.NextOffset(), maxBytes-batch.HeaderSize, limit); merr == nil {
					if more.Len() > 0 {
						return chainedRecords{recs, more}, nil
					}
					_ = more.Close()
				}
			}
		}
	}
	return recs, err
}

func (l *Log) readView(v *segView, offset int64, maxBytes int, limit int64) (storage.Records, error) {
	w := getWindow(v.h.f, v.size)
	defer putWindow(w)
	pos, h, err := v.locate(w, offset)
	if err != nil {
		return nil, l.corruptRead(v, err)
	}
	if pos >= v.size && offset < v.next {
		// No batch holds an offset below the segment's end: its bytes were
		// found short when it was first read (loadSealed).
		v.s.mu.RLock()
		ca := v.s.corruptAt
		v.s.mu.RUnlock()
		if ca >= 0 {
			return nil, fmt.Errorf("%w: %s ends at position %d, before offset %d", ErrCorruptSegment, v.s.name, ca, offset)
		}
	}
	if pos >= v.size || h.BaseOffset >= limit {
		return storage.BytesRecords(nil), nil
	}
	end := pos + int64(h.Size())
	// Jump by the index to the last indexed batch that fits and is below
	// limit, then walk headers from there.
	target := pos + int64(maxBytes)
	limRel := limit - v.s.base
	j := sort.Search(len(v.idx), func(i int) bool {
		e := v.idx[i]
		return int64(e.pos) > target || int64(e.rel) >= limRel
	}) - 1
	if j >= 0 && int64(v.idx[j].pos) > end {
		end = int64(v.idx[j].pos)
	}
	for end < v.size {
		h, err := w.header(end)
		if err != nil {
			return nil, l.corruptRead(v, err)
		}
		if h.BaseOffset >= limit || end+int64(h.Size())-pos > int64(maxBytes) {
			break
		}
		end += int64(h.Size())
	}
	if ca := l.verify(v, end); ca >= 0 && ca < end {
		if ca <= pos {
			return nil, fmt.Errorf("%w: %s at position %d (reading offset %d)", ErrCorruptSegment, v.s.name, ca, offset)
		}
		end = ca
	}
	r := newFileRecords(v.h, pos, end-pos)
	v.h = nil // owned by the records now
	return r, nil
}

func (l *Log) corruptRead(v *segView, err error) error {
	if errors.Is(err, ErrCorruptSegment) {
		l.log.Error().Err(err).Str("segment", v.s.name).Msg("CORRUPTION: unreadable batch header in a segment")
	}
	return err
}

// ScanHeaders implements storage.Log.
func (l *Log) ScanHeaders(from int64, fn func(h batch.Header) error) error {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return storage.ErrClosed
	}
	if from >= l.next.Load() {
		// Nothing to scan: a producer snapshot taken at the log end (every
		// clean close) must not cost a window and a read of the tail.
		l.mu.RUnlock()
		return nil
	}
	first := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].base > from }) - 1
	segs := append([]*segment(nil), l.segments[max(first, 0):]...)
	l.mu.RUnlock()
	for i, s := range segs {
		v, err := l.acquire(s)
		if err != nil {
			return err
		}
		err = func() error {
			defer v.release()
			w := newWindow(v.h.f, v.size, 1<<20)
			pos := int64(0)
			if i == 0 {
				p, _, err := v.locate(w, from)
				if err != nil {
					return err
				}
				pos = p
			}
			for pos < v.size {
				h, err := w.header(pos)
				if err != nil {
					return err
				}
				if err := fn(h); err != nil {
					return err
				}
				pos += int64(h.Size())
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// FindTimestamp implements storage.Log.
func (l *Log) FindTimestamp(ts, from, limit int64) ([]byte, bool, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, false, storage.ErrClosed
	}
	start := max(l.start.Load(), from)
	segs := append([]*segment(nil), l.segments...)
	l.mu.RUnlock()
	for _, s := range segs {
		l.loadSealed(s)
		s.mu.RLock()
		base, next, maxTS := s.base, s.next, s.maxTS
		s.mu.RUnlock()
		if base >= limit {
			return nil, false, nil
		}
		if next <= start || maxTS < ts {
			continue
		}
		b, found, err := l.findInSegment(s, ts, limit, start)
		if err != nil || found {
			return b, found, err
		}
	}
	return nil, false, nil
}

func (l *Log) findInSegment(s *segment, ts, limit, start int64) ([]byte, bool, error) {
	v, err := l.acquire(s)
	if err != nil {
		return nil, false, err
	}
	defer v.release()
	w := newWindow(v.h.f, v.size, 64<<10)
	// Every batch before the last index point whose running max is below ts
	// is below ts too.
	j := sort.Search(len(v.idx), func(i int) bool { return v.idx[i].maxTS >= ts }) - 1
	pos := int64(0)
	if j >= 0 {
		pos = int64(v.idx[j].pos)
	}
	if start > s.base {
		p, _, err := v.locate(w, start)
		if err != nil {
			return nil, false, err
		}
		pos = max(pos, p)
	}
	for pos < v.size {
		h, err := w.header(pos)
		if err != nil {
			return nil, false, err
		}
		if h.BaseOffset >= limit {
			return nil, false, nil
		}
		if h.MaxTimestamp >= ts && h.NextOffset() > start {
			b := make([]byte, h.Size())
			if _, err := v.h.f.ReadAt(b, pos); err != nil {
				return nil, false, err
			}
			if _, err := batch.Validate(b); err != nil {
				l.log.Error().Err(err).Str("segment", s.name).Int64("position", pos).Msg("CORRUPTION: batch failed validation")
				return nil, false, fmt.Errorf("%w: %v", ErrCorruptSegment, err)
			}
			return b, true, nil
		}
		pos += int64(h.Size())
	}
	return nil, false, nil
}

// MaxTimestamp implements storage.Log.
func (l *Log) MaxTimestamp(limit int64) (int64, int64, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return -1, -1, storage.ErrClosed
	}
	start := l.start.Load()
	segs := append([]*segment(nil), l.segments...)
	l.mu.RUnlock()
	bestTS, bestOff := int64(-1), int64(-1)
	take := func(ts, off int64) {
		if off >= 0 && ts > bestTS {
			bestTS, bestOff = ts, off
		}
	}
	for _, s := range segs {
		l.loadSealed(s)
		s.mu.RLock()
		base, next, maxTS, maxOff := s.base, s.next, s.maxTS, s.maxOff
		s.mu.RUnlock()
		if base >= limit {
			break
		}
		if next <= start {
			continue
		}
		if next <= limit && base >= start {
			take(maxTS, maxOff)
			continue
		}
		// Partly below the start offset or partly past limit: walk the
		// headers of the part that counts.
		err := func() error {
			v, err := l.acquire(s)
			if err != nil {
				return err
			}
			defer v.release()
			w := newWindow(v.h.f, v.size, 64<<10)
			pos := int64(0)
			if start > base {
				p, _, err := v.locate(w, start)
				if err != nil {
					return err
				}
				pos = p
			} else {
				limRel := limit - base
				j := sort.Search(len(v.idx), func(i int) bool { return int64(v.idx[i].rel) >= limRel }) - 1
				if j >= 0 {
					e := v.idx[j]
					if e.maxRel >= 0 {
						take(e.maxTS, base+int64(e.maxRel))
					}
					pos = int64(e.pos)
				}
			}
			for pos < v.size {
				h, err := w.header(pos)
				if err != nil {
					return err
				}
				if h.BaseOffset >= limit {
					break
				}
				take(h.MaxTimestamp, h.BaseOffset)
				pos += int64(h.Size())
			}
			return nil
		}()
		if err != nil {
			return -1, -1, err
		}
	}
	return bestTS, bestOff, nil
}
