package disklog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/kaas-project/kaas/storage"
)

// SetStartOffset implements storage.Log (DeleteRecords). It is cheap enough
// for the owner's Receive: the new start applies at once, whole segments
// below it are renamed aside, and the start-offset file is rewritten
// (fsync'ed) by the background janitor right after.
func (l *Log) SetStartOffset(off int64) error {
	if l.isClosed() {
		return storage.ErrClosed
	}
	if next := l.next.Load(); off > next {
		return fmt.Errorf("%w: start offset %d beyond log end %d", storage.ErrOffsetOutOfRange, off, next)
	}
	if off <= l.start.Load() {
		return nil
	}
	l.start.Store(off)
	l.mu.RLock()
	n := 0
	for _, s := range l.segments[:len(l.segments)-1] {
		s.mu.RLock()
		below := s.next <= off
		s.mu.RUnlock()
		if !below {
			break
		}
		n++
	}
	l.mu.RUnlock()
	l.dropOldest(n)
	l.markStartDirty()
	return nil
}

// EnforceRetention implements storage.Log: segment.ms rolling of the active
// segment, then retention.ms / retention.bytes over whole sealed and
// durable segments, oldest first. Deletion is a rename aside; unlinks
// happen later. An active segment whose newest record retention.ms has
// passed is rolled first, so that it can go too, as Kafka deletes an
// expired active segment: a quiet topic keeps nothing older than
// retention.ms; so is a non-empty active segment under Kafka's
// retention.bytes=0, which keeps nothing. It is rolled only once all of it
// is durable, as Kafka deletes nothing at or past the high watermark.
func (l *Log) EnforceRetention(now time.Time) error {
	if l.isClosed() {
		return storage.ErrClosed
	}
	l.mu.RLock()
	cfg := l.cfg
	l.mu.RUnlock()
	a := l.active
	a.mu.RLock()
	asize, acreated, ajitter, amaxTS := a.size, a.created, a.jitter, a.maxTS
	a.mu.RUnlock()
	expired := (retentionPassed(cfg, amaxTS, acreated, now) || cfg.Oversize(asize, asize)) && l.durable.Load() >= l.next.Load()
	if asize > 0 && (expired || rollDue(cfg, acreated, ajitter, now)) {
		if err := l.roll(a.epoch, l.next.Load()); err != nil {
			return err
		}
	}
	l.mu.RLock()
	segs := append([]*segment(nil), l.segments...)
	l.mu.RUnlock()
	var total int64
	type meta struct {
		size, next, maxTS int64
		created           time.Time
	}
	// A segment Open left unread (and the background read has not reached
	// yet) is read here only as far as retention needs: every size for
	// retention.bytes, the oldest segments' timestamps for retention.ms.
	ms := make([]meta, len(segs))
	get := func(i int) meta {
		s := segs[i]
		l.loadSealed(s)
		s.mu.RLock()
		defer s.mu.RUnlock()
		return meta{s.size, s.next, s.maxTS, s.created}
	}
	if cfg.RetentionBytes != 0 {
		for i := range segs {
			ms[i] = get(i)
			total += ms[i].size
		}
	}
	// As Kafka, nothing at or past the high watermark (the durable offset)
	// is deleted.
	durable := l.durable.Load()
	n := 0
	newStart := l.start.Load()
	for i := 0; i < len(segs)-1; i++ {
		m := ms[i]
		if cfg.RetentionBytes == 0 {
			m = get(i)
		}
		if m.next > durable || (!retentionPassed(cfg, m.maxTS, m.created, now) && !cfg.Oversize(total, m.size)) {
			break
		}
		total -= m.size
		newStart = max(newStart, m.next)
		n++
	}
	if n == 0 {
		return nil
	}
	l.mu.RLock()
	if len(l.segments) <= n || l.segments[n-1] != segs[n-1] {
		l.mu.RUnlock()
		return nil
	}
	l.mu.RUnlock()
	if newStart > l.start.Load() {
		l.start.Store(newStart)
		l.markStartDirty()
	}
	l.dropOldest(n)
	return nil
}

// dropOldest removes the n oldest (sealed) segments: out of the list, out
// of the descriptor cache, renamed aside (owner).
func (l *Log) dropOldest(n int) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	n = min(n, len(l.segments)-1)
	victims := append([]*segment(nil), l.segments[:n]...)
	l.segments = append([]*segment(nil), l.segments[n:]...)
	l.dirDirty = true
	l.mu.Unlock()
	for _, v := range victims {
		l.setAside(v)
		if l.o.cache.remove(v) {
			v.dropHandle()
		}
	}
	l.log.Debug().Int("segments", n).Int64("log_start", l.start.Load()).Msg("segments deleted")
}

// setAside renames a segment's files to *.deleted and schedules their
// unlink after the delete delay: a descriptor open elsewhere keeps working.
func (l *Log) setAside(s *segment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted {
		return
	}
	for _, ext := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		l.renameAside(s.prefix() + ext)
	}
	s.deleted = true
}

func (l *Log) renameAside(p string) {
	if err := os.Rename(p, p+deletedSuffix); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			l.log.Error().Err(err).Str("file", p).Msg("rename aside")
		}
		return
	}
	l.unlinkLater(p + deletedSuffix)
}

// unlinkLater unlinks path after the log's delete delay (the config in
// force when it is called), from the janitor. A log closed before then
// leaves the file to the next Open.
func (l *Log) unlinkLater(path string) {
	l.jmu.Lock()
	defer l.jmu.Unlock()
	l.afterFunc(time.Duration(l.unlinkDelay.Load()), func() {
		l.jmu.Lock()
		l.due = append(l.due, path)
		l.jmu.Unlock()
		l.kickJanitor()
	})
}

// unlinkDelay is how long a log under cfg keeps a file it renamed aside:
// the topic's file.delete.delay.ms (negative: at once, Kafka's 0), or def,
// the Opener's DeleteDelay, for a config that carries none (built by hand,
// not by topicconfig).
func unlinkDelay(cfg storage.LogConfig, def time.Duration) time.Duration {
	switch d := cfg.FileDeleteDelay; {
	case d < 0:
		return 0
	case d == 0:
		return def
	default:
		return d
	}
}

// afterFunc runs fn after d unless the log stops its timers first (its
// close). The caller holds jmu.
func (l *Log) afterFunc(d time.Duration, fn func()) {
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		l.jmu.Lock()
		_, live := l.timers[t]
		delete(l.timers, t)
		l.jmu.Unlock()
		if live {
			fn()
		}
	})
	l.timers[t] = struct{}{}
}

func (l *Log) stopTimers() {
	l.jmu.Lock()
	for t := range l.timers {
		t.Stop()
		delete(l.timers, t)
	}
	l.jmu.Unlock()
}

func (l *Log) markStartDirty() {
	l.jmu.Lock()
	l.startDirty = true
	l.jmu.Unlock()
	l.kickJanitor()
}

func (l *Log) startJanitor() {
	l.janitorWG.Add(1)
	go func() {
		defer l.janitorWG.Done()
		for {
			select {
			case <-l.kick:
				_ = l.chores(false)
			case <-l.quit:
				return
			}
		}
	}()
}

func (l *Log) kickJanitor() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// chores writes the indexes of newly synced segments, persists the log
// start offset and unlinks files whose delete delay has passed.
func (l *Log) chores(final bool) error {
	l.jmu.Lock()
	idx := l.needIndex
	l.needIndex = nil
	files := l.needIndexFiles
	l.needIndexFiles = nil
	sd := l.startDirty
	l.startDirty = false
	due := l.due
	l.due = nil
	spares := l.spareDue && !final
	if spares {
		l.spareDue, l.spareWanted = false, false
	}
	l.jmu.Unlock()
	var err error
	for _, s := range idx {
		if e := l.writeIndex(s); e != nil && err == nil {
			err = e
		}
	}
	if !final { // a closing log writes what indexes it needs itself
		for _, s := range files {
			l.createIndexFiles(s)
		}
	}
	if spares {
		l.createSpares()
	}
	if sd {
		if e := writeFileAtomic(l.dir, startFile, encodeStart(l.start.Load()), l.fileMode); e != nil {
			l.log.Error().Err(e).Msg("persist log start offset")
			if err == nil {
				err = e
			}
			if !final {
				l.jmu.Lock()
				l.startDirty = true
				l.jmu.Unlock()
			}
		}
	}
	for _, p := range due {
		if e := os.Remove(p); e != nil && !errors.Is(e, os.ErrNotExist) {
			l.log.Error().Err(e).Str("file", p).Msg("unlink")
		}
	}
	return err
}

// needSpares schedules the creation of a spare set after the spare delay
// (plus up to as much again, at random), then at this log's turn in the
// Opener's pace (SpareRate), unless one is scheduled already.
func (l *Log) needSpares() {
	d := l.o.opts.spareDelay
	if d < 0 {
		return
	}
	if d > 0 {
		d += rand.N(d)
	}
	l.jmu.Lock()
	defer l.jmu.Unlock()
	if l.spareWanted {
		return
	}
	l.spareWanted = true
	l.spareTimer(d, false)
}

// spareTimer marks the spare set due after d; unless paced already, it
// first takes a slot in the Opener's pace and waits for that too. The
// caller holds jmu.
func (l *Log) spareTimer(d time.Duration, paced bool) {
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		var wait time.Duration
		if !paced {
			wait = l.o.sparePace.reserve(time.Now())
		}
		l.jmu.Lock()
		_, live := l.timers[t]
		delete(l.timers, t)
		switch {
		case live && wait > 0:
			l.spareTimer(wait, true)
		case live:
			l.spareDue = true
		}
		l.jmu.Unlock()
		if live && wait == 0 {
			l.kickJanitor()
		}
	})
	l.timers[t] = struct{}{}
}

// createSpares creates the spare set's missing files, empty. The segment
// comes last: takeSpares takes the index file only after it. Failing here
// only means the next segment is created on the spot.
func (l *Log) createSpares() {
	for _, n := range []string{spareIndex, spareLog} {
		if _, err := createEmpty(filepath.Join(l.dir, n), l.fileMode); err != nil {
			l.log.Debug().Err(err).Str("file", n).Msg("create spare")
			return
		}
	}
}

// createEmpty creates an empty file at path unless one exists; made says
// whether this call created it.
func createEmpty(path string, mode os.FileMode) (made bool, err error) {
	f, err := openFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, f.Close()
}

// writeIndexFiles writes the index file of the segment at prefix: entries
// and a trailer asserting that the segment's bytes below sum.size are
// durable.
func (l *Log) writeIndexFiles(prefix string, entries []indexEntry, sum summary) error {
	if err := overwriteFile(prefix+indexSuffix, encodeIndex(entries, sum), l.fileMode); err != nil {
		return fmt.Errorf("disklog: write index: %w", err)
	}
	return nil
}

// createIndexFiles creates a segment's index file empty unless it exists
// (an empty index reads as absent, like a missing one). Failing here only
// means writeIndex creates it later.
func (l *Log) createIndexFiles(s *segment) {
	deleted := func() bool {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return s.deleted
	}
	if deleted() {
		return
	}
	path := s.prefix() + indexSuffix
	made, err := createEmpty(path, l.fileMode)
	if err != nil {
		l.log.Debug().Err(err).Str("segment", s.name).Msg("create index file")
	}
	// Set aside meanwhile (setAside renames and marks under s.mu): a file
	// created after its rename would be an orphan.
	if made && deleted() {
		_ = os.Remove(path)
	}
}

// writeIndex writes a segment's index file (in place, no fsync: an index
// lost or torn in a crash fails its checksums and is rebuilt). Callers guarantee the segment's bytes
// are durable, which is what the trailer asserts.
func (l *Log) writeIndex(s *segment) error {
	s.mu.RLock()
	if s.deleted || s.replaced != nil || (s.idx == nil && s.size > 0) {
		s.mu.RUnlock()
		return nil
	}
	entries := s.idx
	sum := s.summary()
	prefix := s.prefix()
	s.mu.RUnlock()
	sum.count = uint32(len(entries))
	if err := l.writeIndexFiles(prefix, entries, sum); err != nil {
		return err
	}
	s.mu.Lock()
	if s.size == sum.size {
		s.indexOnDisk = true
	}
	s.mu.Unlock()
	return nil
}

// Size implements storage.Log. A segment Open left unread is read as far as
// its size, as retention.bytes does.
func (l *Log) Size() int64 {
	l.mu.RLock()
	segs := append([]*segment(nil), l.segments...)
	l.mu.RUnlock()
	var total int64
	for _, s := range segs {
		l.loadSealed(s)
		s.mu.RLock()
		total += s.size
		s.mu.RUnlock()
	}
	return total
}

// retentionPassed reports whether retention.ms has passed a segment's newest
// timestamp (maxTS; when it was created if no batch has one, as Kafka falls
// back to the segment file's modification time).
func retentionPassed(cfg storage.LogConfig, maxTS int64, created, now time.Time) bool {
	if maxTS < 0 {
		maxTS = created.UnixMilli()
	}
	return cfg.Expired(maxTS, now)
}

// rollDue reports whether an active segment created at created rolls by
// time at now: segment.ms after its first append, less its share (jitter)
// of segment.jitter.ms, the jitter capped at segment.ms as Kafka caps it.
func rollDue(cfg storage.LogConfig, created time.Time, jitter float64, now time.Time) bool {
	if cfg.SegmentMs <= 0 {
		return false
	}
	early := time.Duration(jitter * float64(min(max(cfg.SegmentJitter, 0), cfg.SegmentMs)))
	return now.Sub(created) >= cfg.SegmentMs-early
}
