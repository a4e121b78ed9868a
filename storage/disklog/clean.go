package disklog

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
	"github.com/kaas-project/kaas/storage/filelock"
)

// cleanerFile records the log's first dirty offset: everything below it was
// cleaned by an earlier pass. Written in place without fsync: a lost or torn
// one reads as absent and only makes the next pass clean from the start.
const cleanerFile = "cleaner-checkpoint"

// oldCleanerFile is where passes that kept committed transactions whole
// (never compacting them, and keeping every tombstone after them) recorded
// their offset. It is ignored, so the first pass over such a log cleans it
// from the start: a transaction those passes skipped is compacted against
// every record after it before a tombstone after it may go.
const oldCleanerFile = "cleaner-offset"

// cleanedSuffix names a cleaned segment being written (".tmp": an open
// sets a stale one aside, see recover).
const cleanedSuffix = ".cleaned" + tmpSuffix

// ErrSuperseded is returned by Compact when a newer leader claimed the
// partition: the pass swaps nothing.
var ErrSuperseded = errors.New("disklog: a newer leader claimed the partition")

// errCleanAborted: the log is closing (a handoff); the pass swaps nothing.
// It is a storage.ErrClosed: the owner is giving the log up.
var errCleanAborted = fmt.Errorf("%w: disklog: log closing, compaction abandoned", storage.ErrClosed)

// cleanHook, when set (crash tests), runs at each step of a segment swap;
// an error stops the swap there, leaving the files as a crash would.
var cleanHook func(step string) error

func runCleanHook(step string) error {
	if cleanHook != nil {
		return cleanHook(step)
	}
	return nil
}

// Compact implements storage.Compactor: one cleaning pass over the sealed,
// durable segments (never the active one). It builds a key map over the
// dirty range (as far as the map holds), then rewrites each segment from the
// log start up to the map's end without the records the map supersedes,
// and swaps each rewritten segment in place (see swapCleaned). Offsets are
// kept: a removed record leaves a hole, and each segment keeps its last
// batch (empty if need be) so it still ends where its successor begins.
func (l *Log) Compact(req storage.CompactRequest) (storage.CompactResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	var res storage.CompactResult
	if l.stopping() {
		return res, storage.ErrClosed
	}
	durable := l.durable.Load()
	l.mu.RLock()
	var segs []*segment
	for _, s := range l.segments[:len(l.segments)-1] {
		if s.next > durable {
			break
		}
		segs = append(segs, s)
	}
	l.mu.RUnlock()
	start := l.start.Load()
	firstDirty := l.firstDirty()
	if firstDirty < start {
		firstDirty = start
	}
	res.CleanedTo = firstDirty
	var stats []compaction.Segment
	for _, s := range segs {
		l.loadSealed(s)
		s.mu.RLock()
		if s.next > start {
			stats = append(stats, compaction.Segment{Base: s.base, Next: s.next, Size: s.size, MaxTS: s.maxTS})
		}
		s.mu.RUnlock()
	}
	for len(segs) > 0 && segs[0].next <= start {
		segs = segs[1:]
	}
	nowMs := req.Now.UnixMilli()
	res.Plan = compaction.Decide(stats, firstDirty, nowMs, req.Config)
	if !res.Plan.Clean {
		return res, nil
	}
	pass := &compaction.Pass{Map: compaction.NewKeyMap(req.MapBytes), MapEnd: res.Plan.DirtyEnd,
		Horizon: nowMs - req.Config.DeleteRetention, LastOfProducer: map[int64]int64{},
		IndexedAborts: req.IndexedAborts, IndexedTo: req.IndexedTo}
	if err := l.buildKeyMap(segs, start, firstDirty, pass, req.Throttle, &res); err != nil {
		return res, err
	}
	if err := pass.EndScan(firstDirty); err != nil {
		return res, fmt.Errorf("disklog: %w", err)
	}
	if pass.MapEnd <= firstDirty {
		// A transaction open from firstDirty on: nothing is cleanable
		// before it ends.
		return res, nil
	}
	for _, s := range segs {
		if s.base >= pass.MapEnd {
			break
		}
		swapped, err := l.cleanSegment(s, start, pass, req.Throttle, &res)
		if err != nil {
			return res, err
		}
		if swapped {
			res.Segments++
		}
	}
	res.Cleaned, res.CleanedTo = true, pass.MapEnd
	res.AbortsEmptied, res.AbortsRemoved = pass.AbortsEmptied, pass.AbortsRemoved
	l.setFirstDirty(pass.MapEnd)
	l.log.Debug().Int64("cleaned_to", pass.MapEnd).Int("segments", res.Segments).Int64("read_bytes", res.BytesRead).
		Int64("written_bytes", res.BytesWritten).Int("keys", pass.Map.Len()).Msg("log compacted")
	return res, nil
}

// stopping reports whether Close or Release has begun.
func (l *Log) stopping() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closing || l.closed
}

// firstDirty returns the persisted first dirty offset (0 when unknown).
func (l *Log) firstDirty() int64 {
	if l.cleanedTo < 0 {
		l.cleanedTo = 0
		if n, ok := readNumber(l.dir, cleanerFile); ok && n >= 0 {
			l.cleanedTo = n
		}
	}
	return l.cleanedTo
}

func (l *Log) setFirstDirty(off int64) {
	l.cleanedTo = off
	if err := overwriteFile(filepath.Join(l.dir, cleanerFile), encodeNumber(off), l.fileMode); err != nil {
		l.log.Warn().Err(err).Msg("persist the cleaner's offset")
		return
	}
	if err := os.Remove(filepath.Join(l.dir, oldCleanerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.log.Warn().Err(err).Msg("remove the old cleaner offset")
	}
}

// eachBatch calls fn for every batch of s whose next offset is above from,
// CRC-checked, with its position; fn returning false stops the walk.
func (l *Log) eachBatch(s *segment, from int64, th *compaction.Throttle, read *int64, fn func(b []byte, h batch.Header, pos, size int64) (bool, error)) error {
	v, err := l.acquire(s)
	if err != nil {
		return err
	}
	defer v.release()
	w := newWindow(v.h.f, v.size, 1<<20)
	pos := int64(0)
	if from > s.base {
		if pos, _, err = v.locate(w, from); err != nil {
			return err
		}
	}
	for pos < v.size {
		if l.stopping() {
			return errCleanAborted
		}
		h, err := w.header(pos)
		if err != nil {
			return err
		}
		b, err := w.get(pos, h.Size())
		if err != nil {
			return err
		}
		if _, err := batch.Validate(b); err != nil {
			return fmt.Errorf("%w: %s at position %d: %v", ErrCorruptSegment, s.name, pos, err)
		}
		th.Wait(int64(len(b)))
		*read += int64(len(b))
		more, err := fn(b, h, pos, v.size)
		if err != nil || !more {
			return err
		}
		pos += int64(h.Size())
	}
	return nil
}

// buildKeyMap runs the pass's first walk (compaction.Pass.Scan) from the
// log start: it fills the key map from firstDirty up to where it is full
// (moving pass.MapEnd there), and notes each producer's last batch and the
// transactions that end below pass.MapEnd (Compact then closes the walk
// with EndScan).
func (l *Log) buildKeyMap(segs []*segment, start, firstDirty int64, pass *compaction.Pass, th *compaction.Throttle, res *storage.CompactResult) error {
	for _, s := range segs {
		if s.base >= pass.MapEnd {
			break
		}
		done := false
		err := l.eachBatch(s, start, th, &res.BytesRead, func(b []byte, h batch.Header, _, _ int64) (bool, error) {
			if h.BaseOffset >= pass.MapEnd {
				done = true
				return false, nil
			}
			ok, err := pass.Scan(b, h, firstDirty)
			if err != nil {
				return false, fmt.Errorf("disklog: compaction of %s: %w", s.name, err)
			}
			done = !ok
			return ok, nil
		})
		if err != nil || done {
			return err
		}
	}
	return nil
}

// cleanSegment rewrites s through the pass into a new file and swaps it in
// when anything changed.
func (l *Log) cleanSegment(s *segment, start int64, pass *compaction.Pass, th *compaction.Throttle, res *storage.CompactResult) (bool, error) {
	tmp := s.prefix() + cleanedSuffix
	f, err := openFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, l.fileMode)
	if err != nil {
		return false, fmt.Errorf("disklog: compaction: %w", err)
	}
	keep := false
	defer func() {
		_ = f.Close()
		if !keep {
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	ix := newIndexer(l.interval.Load())
	var entries []indexEntry
	var size int64
	next := int64(-1)
	changed := false
	err = l.eachBatch(s, start, th, &res.BytesRead, func(b []byte, h batch.Header, pos, end int64) (bool, error) {
		last := pos+int64(h.Size()) == end
		out, err := pass.Batch(b, h, last)
		if err != nil {
			return false, fmt.Errorf("disklog: compaction of %s at offset %d: %w", s.name, h.BaseOffset, err)
		}
		if len(out) != len(b) {
			changed = true
		}
		if out == nil {
			return true, nil
		}
		oh := h
		if len(out) != len(b) {
			if oh, err = batch.ParseHeader(out); err != nil {
				return false, err
			}
		}
		entries = ix.add(entries, s.base, size, oh)
		if _, err := bw.Write(out); err != nil {
			return false, err
		}
		th.Wait(int64(len(out)))
		size += int64(len(out))
		next = oh.NextOffset()
		return true, nil
	})
	if err != nil {
		return false, err
	}
	if !changed {
		return false, nil
	}
	// Segments below the log start were skipped by eachBatch's from; a
	// segment partly below it keeps its batches from the start on.
	s.mu.RLock()
	want := s.next
	s.mu.RUnlock()
	if next != want {
		return false, fmt.Errorf("disklog: compaction of %s ends at offset %d, not at the segment's end %d", s.name, next, want)
	}
	if err := bw.Flush(); err != nil {
		return false, fmt.Errorf("disklog: compaction write: %w", err)
	}
	if err := fdatasync(f); err != nil {
		return false, fmt.Errorf("disklog: compaction fdatasync: %w", err)
	}
	res.BytesWritten += size
	sum := summary{base: s.base, next: next, size: size, maxTS: ix.maxTS, maxOff: ix.maxOff, count: uint32(len(entries)), epoch: s.epoch}
	if err := runCleanHook("written"); err != nil {
		keep = true
		return false, err
	}
	swapped, err := l.swapCleaned(s, tmp, entries, sum)
	// A crash test's stop leaves the files as they are; otherwise the
	// cleaned file is either renamed into place or removed.
	keep = swapped || errors.Is(err, errHookStop)
	return swapped, err
}

// errHookStop marks an error from cleanHook (the files stay as they are).
var errHookStop = errors.New("clean hook stop")

// swapCleaned replaces segment s by the cleaned file tmp. Fenced: under
// the claim lock (the one a new leader's Open takes to claim), and only
// while no newer leader has claimed the partition, so a leader deposed
// mid-pass never replaces a file its successor reads: the successor either
// claimed first (the swap is abandoned) or opens after the swap (and reads
// the cleaned file). Crash-safe at every step: the index is emptied first
// (a log without a trusted index is scanned), the rename is atomic and made
// durable before the new index is written. The emptied index is made durable
// before the rename, so an old trailer never describes the new file (a
// recompressed batch may be longer than the one it replaces).
func (l *Log) swapCleaned(s *segment, tmp string, entries []indexEntry, sum summary) (bool, error) {
	l.mu.RLock()
	claimed, epoch := l.cfg.Claim, l.cfg.ClaimEpoch
	l.mu.RUnlock()
	if claimed {
		unlock, _, err := filelock.Acquire(filepath.Join(l.dir, claimFile+lockSuffix), l.fileMode, claimLockWait)
		if unlock == nil {
			return false, fmt.Errorf("disklog: compaction: claim lock: %w", err)
		}
		defer unlock()
		if e, ok := readClaim(l.dir); ok && e > epoch {
			return false, ErrSuperseded
		}
	}
	l.mu.Lock()
	i := -1
	for j, t := range l.segments[:len(l.segments)-1] {
		if t == s {
			i = j
		}
	}
	s.mu.RLock()
	gone := s.deleted
	s.mu.RUnlock()
	if l.closing || l.closed || i < 0 || gone {
		closing := l.closing || l.closed
		l.mu.Unlock()
		if closing {
			return false, errCleanAborted
		}
		return false, nil // retention removed it meanwhile
	}
	prefix := s.prefix()
	err := emptyIndex(prefix + indexSuffix)
	if err == nil {
		err = hookErr("index-cleared")
	}
	if err == nil {
		if err = os.Rename(tmp, s.path()); err != nil {
			err = fmt.Errorf("disklog: compaction swap: %w", err)
		}
	}
	if err == nil {
		err = hookErr("renamed")
	}
	if err != nil {
		l.mu.Unlock()
		return false, err
	}
	// Renamed: the file under the name is the cleaned one from here on,
	// whatever else fails. The new index is written only once the rename
	// is durable: an index describing the cleaned file beside the old
	// file (a crash undoing the rename) would be trusted.
	indexOK := true
	if derr := syncDir(l.dir); derr != nil {
		indexOK = false
		l.log.Warn().Err(derr).Str("segment", s.name).Msg("fsync the directory after a compaction swap (the next open scans the segment)")
	}
	ns := &segment{base: s.base, epoch: s.epoch, dir: s.dir, name: s.name, size: sum.size, next: sum.next,
		maxTS: sum.maxTS, maxOff: sum.maxOff, idx: entries, verified: sum.size, corruptAt: -1}
	s.mu.Lock()
	ns.created = s.created
	s.replaced = ns
	s.mu.Unlock()
	l.segments[i] = ns
	l.mu.Unlock()
	if l.o.cache.remove(s) {
		s.dropHandle()
	}
	if err := hookErr("swapped"); err != nil {
		return true, err
	}
	if !indexOK {
		return true, nil
	}
	if err := l.writeIndexFiles(prefix, entries, sum); err != nil {
		l.log.Warn().Err(err).Str("segment", s.name).Msg("write a cleaned segment's index (the next open scans it)")
		return true, nil
	}
	ns.mu.Lock()
	ns.indexOnDisk = true
	ns.mu.Unlock()
	return true, nil
}

func hookErr(step string) error {
	if err := runCleanHook(step); err != nil {
		return fmt.Errorf("%w: %w", errHookStop, err)
	}
	return nil
}

// emptyIndex truncates a segment's index to nothing and makes that durable
// (a missing index is fine: there is nothing to trust).
func emptyIndex(path string) error {
	f, err := openFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		err = fdatasync(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("disklog: compaction: empty index: %w", err)
	}
	return nil
}
