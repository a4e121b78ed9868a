package disklog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/atomicfile"
	"github.com/kaas-project/kaas/storage/filelock"
)

// openLog creates or recovers the log in dir.
func openLog(o *Opener, dir string, id storage.PartitionID, cfg storage.LogConfig) (*Log, error) {
	l := &Log{
		o: o, dir: dir, name: filepath.Base(dir), id: id, cfg: cfg, fileMode: 0o644,
		timers: map[*time.Timer]struct{}{}, kick: make(chan struct{}, 1), quit: make(chan struct{}),
		cleanedTo: -1,
	}
	l.log = o.log.With().Str("topic", id.Topic).Int32("partition", id.Partition).Str("dir", dir).Logger()
	l.unlinkDelay.Store(int64(unlinkDelay(cfg, o.DeleteDelay()))) // before recover sets debris aside
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := atomicfile.Mkdir(dir); err != nil {
			return nil, fmt.Errorf("disklog: create %s: %w", dir, err)
		}
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return nil, fmt.Errorf("disklog: create %s: %w", dir, err)
		}
	}
	if cfg.Claim {
		// Claim before reading anything: a deposed leader that has not seen
		// this claim when it checks (after its Sync) wrote nothing this
		// recovery could miss.
		if err := claim(dir, cfg.ClaimEpoch, l.fileMode, l.log); err != nil {
			return nil, err
		}
		if o.localFS {
			// Superseded reads it after every group commit: one pread
			// instead of open, read and close. Past the Opener's budget of
			// kept claims, or on failure, it reads by path.
			l.claim = o.keepClaim(filepath.Join(dir, claimFile))
		}
	}
	start := time.Now()
	stats, err := l.recover()
	if err != nil {
		if l.claim != nil {
			o.releaseClaim(l.claim)
		}
		l.stopTimers()
		for _, s := range l.segments {
			s.dropHandle()
		}
		return nil, err
	}
	l.startJanitor()
	l.readUnreadLater()
	// Debug even after a scan: a failover recovers every partition of the
	// dead broker at once. Anything dropped or truncated is a warning.
	ev := l.log.Debug()
	if stats.truncatedBytes > 0 || stats.dropped > 0 {
		ev = l.log.Warn()
	}
	ev.Int("segments", len(l.segments)).Int64("log_start", l.StartOffset()).Int64("log_end", l.NextOffset()).
		Int64("scanned_bytes", stats.scannedBytes).Int64("truncated_bytes", stats.truncatedBytes).
		Int("segments_dropped", stats.dropped).Dur("took", time.Since(start)).Msg("log recovered")
	return l, nil
}

// claimLockWait bounds the wait for the claim lock.
const claimLockWait = 5 * time.Second

// staleTmpAge is how old a temporary file must be before recovery takes it
// for an interrupted write rather than one in flight.
const staleTmpAge = time.Minute

// claim writes epoch to the leader claim unless a higher epoch holds it.
// Brokers acting on assignments of different ages can open one partition
// at once; the read-compare-replace runs under a lock on
// leader-claim.lock, so a lower claim never replaces a higher one.
// The lock is held for microseconds; a holder that died with it (a node
// lost with its NFS lease) is waited for at most claimLockWait, after which
// the claim is written anyway: that holder is gone.
func claim(dir string, epoch int32, mode os.FileMode, log zerolog.Logger) error {
	unlock, locked, err := filelock.Acquire(filepath.Join(dir, claimFile+lockSuffix), mode, claimLockWait)
	if unlock == nil {
		return fmt.Errorf("disklog: open claim lock: %w", err)
	}
	defer unlock()
	if err != nil {
		log.Warn().Err(err).Msg("leader claim lock unavailable; claiming without it")
	} else if !locked {
		log.Warn().Dur("waited", claimLockWait).Msg("leader claim lock still held; claiming without it")
	}
	// An unreadable claim may hold a higher epoch: writing over it could
	// depose a newer leader, so the open fails and is retried.
	e, st, err := readNumberErr(dir, claimFile)
	if err != nil {
		return err
	}
	if c, cst := claimState(e, st); cst == numberValid && c > epoch {
		return fmt.Errorf("disklog: leader epoch %d is below the claimed %d", epoch, c)
	}
	return overwriteFile(filepath.Join(dir, claimFile), encodeClaim(epoch), mode)
}

type recoveryStats struct {
	scannedBytes   int64
	truncatedBytes int64
	dropped        int
}

// recover rebuilds the in-memory state from the directory. Only
// CRC-checked batches are trusted; indexes and checkpoints are
// accelerators that are rebuilt when missing or damaged.
func (l *Log) recover() (recoveryStats, error) {
	var st recoveryStats
	// Unsorted (os.ReadDir would sort every name): the segments are sorted
	// below, and a long-lived partition has thousands of files.
	d, err := openFile(l.dir, os.O_RDONLY, 0)
	if err != nil {
		return st, fmt.Errorf("disklog: read %s: %w", l.dir, err)
	}
	ents, err := d.ReadDir(-1)
	_ = d.Close()
	if err != nil {
		return st, fmt.Errorf("disklog: read %s: %w", l.dir, err)
	}
	var cands []*segment
	logs := map[string]bool{}
	var indexes []string
	spares := 0
	for _, e := range ents {
		n := e.Name()
		full := func() string { return filepath.Join(l.dir, n) }
		switch {
		case e.IsDir():
		case n == spareLog || n == spareIndex:
			spares++
		case n == spareTimeIndex:
			l.renameAside(full()) // the first layout's, unused
		case strings.HasSuffix(n, deletedSuffix):
			l.unlinkLater(full())
		case strings.HasSuffix(n, tmpSuffix):
			// An interrupted atomic write (ours, or a deposed leader's;
			// today only the log start offset is written that way). A
			// fresh one may be another broker's write in flight: it is
			// left for a later open.
			if fi, err := e.Info(); err == nil && l.o.opts.now().Sub(fi.ModTime()) > staleTmpAge {
				l.renameAside(full())
			}
		case strings.HasSuffix(n, logSuffix):
			p := strings.TrimSuffix(n, logSuffix)
			epoch, base, ok := parseSegName(p)
			if !ok {
				l.log.Warn().Str("file", n).Msg("ignoring a .log file with an unexpected name")
				continue
			}
			logs[p] = true
			cands = append(cands, &segment{base: base, epoch: epoch, dir: l.dir, name: p, next: base, maxTS: -1, maxOff: -1, corruptAt: -1})
		case strings.HasSuffix(n, indexSuffix):
			indexes = append(indexes, strings.TrimSuffix(n, indexSuffix))
		case strings.HasSuffix(n, timeIndexSuffix):
			indexes = append(indexes, strings.TrimSuffix(n, timeIndexSuffix))
		}
	}
	if spares < 2 {
		l.needSpares()
	}
	for _, p := range indexes {
		if !logs[p] {
			l.renameAside(filepath.Join(l.dir, p+indexSuffix))
			l.renameAside(filepath.Join(l.dir, p+timeIndexSuffix))
		}
	}
	eps, sealed, found, eerr := readEpochs(l.dir)
	if eerr != nil && !errors.Is(eerr, errDamaged) {
		return st, eerr
	}
	if eerr != nil {
		l.log.Warn().Err(eerr).Msg("leader-epoch checkpoint is damaged; rebuilding it from the segments")
		eps = nil
	}
	sortSegments(cands)

	// Segments a deposed leader created after a newer epoch took over, and
	// an older empty segment replaced at the same base offset, are set aside.
	var kept []*segment
	maxEpoch := int32(math.MinInt32)
	for _, s := range cands {
		stale := s.epoch < maxEpoch
		for _, e := range eps {
			if e.Epoch > s.epoch && e.StartOffset <= s.base {
				stale = true
			}
		}
		if stale {
			l.log.Warn().Str("segment", s.name).Msg("setting aside a segment of a superseded leader epoch")
			l.setAside(s)
			st.dropped++
			continue
		}
		if k := len(kept); k > 0 && kept[k-1].base == s.base {
			l.log.Warn().Str("segment", kept[k-1].name).Str("replaced_by", s.name).Msg("setting aside a segment replaced at the same base offset")
			l.setAside(kept[k-1])
			st.dropped++
			kept = kept[:k-1]
		}
		maxEpoch = max(maxEpoch, s.epoch)
		kept = append(kept, s)
	}

	interval := indexInterval(l.cfg)
	l.interval.Store(interval)
	var scanned []*segment
	lastIx := newIndexer(interval)
	haveIndex := map[string]bool{}
	for _, p := range indexes {
		haveIndex[p] = true
	}
	// trustedTo: the segments below it, from the first, all had a trailer
	// matching their successor (or were taken unread, below the last
	// open's sealed offset); the next open may take them unread.
	trustedTo, trusting := int64(0), true
	for i := 0; i < len(kept); i++ {
		s := kept[i]
		var succ *segment
		if i+1 < len(kept) {
			succ = kept[i+1]
		}
		if succ != nil && s.base < sealed && st.dropped == 0 && haveIndex[s.name] {
			// Sealed and found clean by an earlier open: its trailer is read
			// when a read, a timestamp lookup or retention first needs it
			// (loadSealed), not here. An open then costs the same for a
			// partition of ten segments or of a thousand.
			s.next, s.unread, s.indexOnDisk = succ.base, true, true
			if trusting {
				trustedTo = succ.base
			}
			continue
		}
		fi, err := os.Stat(s.path())
		if err != nil {
			return st, fmt.Errorf("disklog: %w", err)
		}
		fileSize := fi.Size()
		s.created = fi.ModTime()
		s.jitter = l.o.opts.rollJitter()
		var tr summary
		var tok, loadedOK bool
		var loaded []indexEntry
		if succ == nil {
			// The last segment: its entries are needed whenever its trailer
			// holds, so the index is read once, whole.
			trailerReads.Add(1)
			loaded, tr, tok, loadedOK = readIndex(s.prefix())
		} else {
			tr, tok = readTrailer(s.prefix() + indexSuffix)
		}
		tok = tok && tr.base == s.base && tr.epoch == s.epoch && tr.size <= fileSize
		if tok && succ != nil && tr.next > succ.base {
			// A trailer past the successor's base: a deposed leader kept
			// appending (and closed cleanly) after the next leader rolled.
			// Those batches are not part of the log: scan from the start,
			// stopping at the successor's base.
			l.log.Warn().Str("segment", s.name).Int64("trailer_next", tr.next).Int64("successor_base", succ.base).
				Msg("index trailer extends past the next segment: a deposed leader's writes, ignored")
			tok = false
		}
		if tok && succ != nil && tr.next == succ.base {
			// Sealed and clean: trusted up to its recorded size without a
			// scan; its bytes are CRC-checked lazily on first read.
			s.size, s.next, s.maxTS, s.maxOff = tr.size, tr.next, tr.maxTS, tr.maxOff
			s.indexOnDisk = true
			if trusting {
				trustedTo = succ.base
			}
			continue
		}
		trusting = false
		ix := newIndexer(interval)
		var entries []indexEntry
		from, expect := int64(0), s.base
		if tok && succ != nil {
			var sum summary
			loaded, sum, loadedOK = loadIndex(s.prefix())
			loadedOK = loadedOK && sum == tr
		}
		if tok && loadedOK {
			entries, from, expect = loaded, tr.size, tr.next
			ix.maxTS, ix.maxOff = tr.maxTS, tr.maxOff
		}
		limitOff := int64(math.MaxInt64)
		if succ != nil {
			limitOff = succ.base
		}
		f, err := openFile(s.path(), os.O_RDWR, 0)
		if err != nil {
			return st, fmt.Errorf("disklog: %w", err)
		}
		res, err := scanSegment(f, fileSize, from, expect, limitOff, s.base, &ix, entries)
		st.scannedBytes += res.size - from
		if err != nil {
			_ = f.Close()
			return st, fmt.Errorf("disklog: recover %s: %w", s.name, err)
		}
		s.size, s.next, s.idx = res.size, res.next, res.entries
		s.maxTS, s.maxOff = ix.maxTS, ix.maxOff
		if from == 0 {
			s.verified = s.size
		} // else [0, from) was trusted from the trailer: verified lazily on read
		s.h = newHandle(f, 1)
		s.cleanTail = tok && from == tr.size && res.size == from && fileSize == res.size
		s.trusted = expect // below: durable (its trailer says so, or nothing)
		scanned = append(scanned, s)
		if from == tr.size && tok && res.size == tr.size {
			s.indexOnDisk = true // clean close: nothing appended since
		}
		if succ == nil {
			lastIx = ix
			if res.size < fileSize {
				st.truncatedBytes += fileSize - res.size
				l.log.Warn().AnErr("reason", res.bad).Str("segment", s.name).Int64("valid_bytes", res.size).
					Int64("dropped_bytes", fileSize-res.size).Msg("truncating the torn tail of the active segment")
				if err := f.Truncate(res.size); err != nil {
					return st, fmt.Errorf("disklog: truncate %s: %w", s.name, err)
				}
			}
			break
		}
		if res.next == succ.base {
			if res.size < fileSize {
				// Bytes past the successor's base offset: written by a deposed
				// leader after the roll, or garbage. Never served.
				l.log.Warn().Str("segment", s.name).Int64("ignored_bytes", fileSize-res.size).Msg("ignoring bytes past the end of a sealed segment")
			}
			continue
		}
		// The segment ends before its successor starts: its tail never
		// reached the disk, so nothing after it was acknowledged (a
		// segment is fdatasync'ed no later than its successors). Unless a
		// later segment says it was synced, in which case this is damage
		// in the middle of the log.
		for _, t := range kept[i+1:] {
			if ttr, ok := readTrailer(t.prefix() + indexSuffix); ok && ttr.base == t.base && ttr.epoch == t.epoch {
				l.log.Error().AnErr("reason", res.bad).Str("segment", s.name).Int64("position", res.size).
					Str("synced_successor", t.name).Msg("CORRUPTION in the middle of the log: refusing to open the partition")
				return st, fmt.Errorf("%w: %s at position %d (offset %d): %v; later segment %s is complete, so this is not a torn tail",
					ErrCorruptSegment, s.name, res.size, res.next, res.bad, t.name)
			}
		}
		l.log.Warn().AnErr("reason", res.bad).Str("segment", s.name).Int64("valid_bytes", res.size).
			Int("later_segments", len(kept)-i-1).Msg("truncating a torn tail that spans segments")
		st.truncatedBytes += fileSize - res.size
		if err := f.Truncate(res.size); err != nil {
			return st, fmt.Errorf("disklog: truncate %s: %w", s.name, err)
		}
		for _, t := range kept[i+1:] {
			if fi, err := os.Stat(t.path()); err == nil {
				st.truncatedBytes += fi.Size()
			}
			l.setAside(t)
			st.dropped++
		}
		kept = kept[:i+1]
		lastIx = ix
		break
	}

	// What the next open may take unread: AssignEpoch writes it into the
	// checkpoint with the new epoch.
	l.sealed = trustedTo

	// Start offset and leader epochs.
	startOff, haveStart, err := readStart(l.dir)
	if err != nil {
		return st, err
	}
	if len(kept) == 0 {
		base := int64(0)
		if haveStart {
			base = startOff
		}
		epoch := int32(0)
		if n := len(eps); n > 0 {
			epoch = eps[n-1].Epoch
			base = max(base, eps[n-1].StartOffset)
		}
		if l.cfg.Claim {
			// Brokers acting on assignments of different ages may open a new
			// partition at once: each names its first segment with its own
			// claim, so none takes another's file for debris and sets it
			// aside (the lower claimant is superseded, the higher one's
			// file stays where it writes).
			epoch = max(epoch, l.cfg.ClaimEpoch)
		}
		s, err := l.createSegment(epoch, base)
		if err != nil {
			return st, err
		}
		s.verified = 0
		kept = append(kept, s)
		l.dirDirty = true
	}
	a := kept[len(kept)-1]
	a.active = true
	if a.h == nil {
		f, err := openFile(a.path(), os.O_RDWR, 0)
		if err != nil {
			return st, fmt.Errorf("disklog: %w", err)
		}
		a.h = newHandle(f, 1)
	}
	l.segments, l.active, l.ix = kept, a, lastIx
	l.ix.since = math.MaxInt32 // index the next append
	next := a.next
	l.next.Store(next)

	// A scanned tail may be only in the page cache: the previous leader
	// released the log without syncing it, or was killed. Durable stays
	// below it, and the first Sync makes it durable (with --fsync=syncfs
	// in a round shared with every log of the broker): opening costs no
	// fsync, and a failover or a drain opens hundreds of logs at once. A
	// segment whose index trailer covers the whole file was synced before
	// that trailer was written.
	durable := next
	l.dirDirty = true
	for _, s := range scanned {
		if !s.cleanTail {
			durable = min(durable, s.trusted)
		}
		if s != a {
			s.active = false
			h := s.h
			s.h = nil
			if !s.cleanTail {
				// Sealed but not known durable: the first Sync fdatasyncs
				// it, then the janitor writes its index.
				l.pendingSync = append(l.pendingSync, pendingSeg{s: s, h: h})
				continue
			}
			if !s.indexOnDisk {
				l.writeIndex(s)
			}
			h.release()
		}
	}
	l.durable.Store(durable)

	start := kept[0].base
	if haveStart && startOff > start {
		start = startOff
	}
	start = min(start, next)
	l.start.Store(start)

	merged, changed := mergeEpochs(eps, kept, next)
	if !found || eerr != nil || changed {
		if len(merged) > 0 || found {
			if err := writeEpochs(l.dir, merged, l.sealed, l.fileMode); err != nil {
				return st, err
			}
		}
	}
	l.epochs = merged
	return st, nil
}

// mergeEpochs combines the checkpoint with what segment names say (each
// segment was created under the epoch in its name), drops entries past the
// log end, and reports whether the result differs from the checkpoint.
func mergeEpochs(eps []storage.EpochEntry, segs []*segment, next int64) ([]storage.EpochEntry, bool) {
	starts := map[int32]int64{}
	for _, e := range eps {
		starts[e.Epoch] = e.StartOffset
	}
	for _, s := range segs {
		if s.size == 0 && s.base == next {
			continue // an empty tail segment adds nothing the checkpoint lacks
		}
		if v, ok := starts[s.epoch]; !ok || s.base < v {
			starts[s.epoch] = s.base
		}
	}
	out := make([]storage.EpochEntry, 0, len(starts))
	for e, off := range starts {
		out = append(out, storage.EpochEntry{Epoch: e, StartOffset: off})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Epoch < out[j].Epoch })
	n := 0
	for _, e := range out {
		if e.StartOffset > next {
			continue
		}
		if n > 0 && e.StartOffset < out[n-1].StartOffset {
			e.StartOffset = out[n-1].StartOffset
		}
		out[n] = e
		n++
	}
	out = out[:n]
	changed := len(out) != len(eps)
	for i := 0; !changed && i < len(out); i++ {
		changed = out[i] != eps[i]
	}
	return out, changed
}
