package disklog

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

// Defaults for zero LogConfig fields.
const (
	defaultSegmentBytes  = 1 << 30
	defaultIndexInterval = 4096
	// maxSegmentBytes keeps positions within the index's 32 bits.
	maxSegmentBytes = math.MaxInt32
)

// ErrCorruptSegment is returned by reads that reach bytes of a sealed
// segment that fail validation: they are never served.
var ErrCorruptSegment = errors.New("disklog: corrupt segment")

// Log is a partition's on-disk log; see storage.Log for the contract.
type Log struct {
	o    *Opener
	dir  string
	name string
	id   storage.PartitionID
	log  zerolog.Logger

	// mu guards segments, active, epochs, cfg, closed; the owner takes it
	// for writing only to change the segment list (roll, delete).
	mu       sync.RWMutex
	cfg      storage.LogConfig
	segments []*segment // by base offset; the last one is active
	active   *segment
	epochs   []storage.EpochEntry
	// sealed: the base offset below which every segment's trailer matched
	// its successor at Open (the checkpoint's "sealed" line).
	sealed int64
	closed bool
	// pendingSync: sealed segments not yet fdatasync'ed (one handle
	// reference each); dirDirty: a file was created or renamed since the
	// directory was last fsync'ed.
	pendingSync []pendingSeg
	dirDirty    bool
	// durablePt: the active segment as the last Sync covered it, which
	// Release writes an index trailer for (mu).
	durablePt durablePoint
	// closing: Close or Release has begun (mu).
	closing bool

	next     atomic.Int64
	start    atomic.Int64
	durable  atomic.Int64
	interval atomic.Int64 // index.interval.bytes, for readers rebuilding an index
	// unlinkDelay is how long a file renamed aside waits to be unlinked
	// (unlinkDelay of the config in force): atomic, as interval, so that
	// unlinkLater needs no lock whatever its caller holds.
	unlinkDelay atomic.Int64

	// owner-only writer state
	ix indexer

	// claim is the leader claim kept open (local filesystems only; nil:
	// read by path), read after every group commit by Superseded.
	claim *keptFile

	// cleanMu: one compaction pass at a time; cleanedTo: the first dirty
	// offset (-1: not read yet from cleanerFile), under cleanMu.
	cleanMu   sync.Mutex
	cleanedTo int64

	syncMu  sync.Mutex // one Sync (or Close) at a time
	syncErr error      // sticky: after a failed fdatasync the log never claims durability again

	// background chores
	jmu       sync.Mutex
	needIndex []*segment
	// needIndexFiles: new segments whose (empty) index file the janitor
	// creates ahead of their first writeIndex.
	needIndexFiles []*segment
	// spareWanted: a spare-set creation is scheduled; spareDue: its delay
	// has passed and the janitor creates the set.
	spareWanted bool
	spareDue    bool
	startDirty  bool
	timers      map[*time.Timer]struct{}
	due         []string
	kick        chan struct{}
	quit        chan struct{}
	janitorWG   sync.WaitGroup
	fileMode    os.FileMode
}

var _ storage.Log = (*Log)(nil)
var _ storage.Opener = (*Opener)(nil)

func (l *Log) now() time.Time { return l.o.opts.now() }

func (l *Log) segmentBytes() int64 {
	n := l.cfg.SegmentBytes
	if n <= 0 {
		n = defaultSegmentBytes
	}
	return min(n, maxSegmentBytes)
}

func indexInterval(cfg storage.LogConfig) int64 {
	if cfg.IndexInterval <= 0 {
		return defaultIndexInterval
	}
	return int64(cfg.IndexInterval)
}

// NextOffset implements storage.Log.
func (l *Log) NextOffset() int64 { return l.next.Load() }

// StartOffset implements storage.Log.
func (l *Log) StartOffset() int64 { return l.start.Load() }

// Durable implements storage.Log.
func (l *Log) Durable() int64 { return l.durable.Load() }

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// SetConfig implements storage.Log.
func (l *Log) SetConfig(cfg storage.LogConfig) {
	l.mu.Lock()
	l.cfg = cfg
	l.mu.Unlock()
	l.ix.interval = indexInterval(cfg)
	l.interval.Store(indexInterval(cfg))
	l.unlinkDelay.Store(int64(unlinkDelay(cfg, l.o.DeleteDelay())))
}

// Append implements storage.Log: one pwrite into the active segment (page
// cache); durability comes from Sync.
func (l *Log) Append(b []byte, h batch.Header) error {
	if l.isClosed() {
		return storage.ErrClosed
	}
	if next := l.next.Load(); h.BaseOffset != next {
		return fmt.Errorf("disklog: append at offset %d, log end is %d", h.BaseOffset, next)
	}
	if len(b) != h.Size() || len(b) < batch.HeaderSize {
		return fmt.Errorf("disklog: batch is %d bytes, header says %d", len(b), h.Size())
	}
	a := l.active
	if a.size > 0 && (a.size+int64(len(b)) > l.segmentBytes() ||
		h.LastOffset()-a.base > math.MaxInt32 ||
		rollDue(l.cfg, a.created, a.jitter, l.now())) {
		if err := l.roll(a.epoch, h.BaseOffset); err != nil {
			return err
		}
		a = l.active
	}
	pos := a.size
	if _, err := a.h.f.WriteAt(b, pos); err != nil {
		// Leave no partial batch behind for a reader or for recovery to
		// mistake; the owner marks the partition unhealthy.
		_ = a.h.f.Truncate(pos)
		return fmt.Errorf("disklog: write %s: %w", a.name, err)
	}
	a.mu.Lock()
	if a.size == 0 {
		a.created = l.now()
	}
	a.idx = l.ix.add(a.idx, a.base, pos, h)
	a.size = pos + int64(len(b))
	a.indexOnDisk = false
	a.next = h.NextOffset()
	a.maxTS, a.maxOff = l.ix.maxTS, l.ix.maxOff
	if a.verified == pos {
		a.verified = a.size // what this process writes was validated on produce
	}
	a.mu.Unlock()
	l.next.Store(h.NextOffset())
	return nil
}

func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

// createSegment creates a fresh, empty segment file (owner). It takes the
// directory's spare set by rename when there is one: a leadership move
// then creates no file on its path (two renames instead of two creates),
// and the janitor makes a new set after the spare delay.
func (l *Log) createSegment(epoch int32, base int64) (*segment, error) {
	s := &segment{base: base, epoch: epoch, dir: l.dir, name: segName(epoch, base), active: true,
		next: base, maxTS: -1, maxOff: -1, corruptAt: -1, created: l.now(), jitter: l.o.opts.rollJitter()}
	path := s.path()
	if _, err := os.Lstat(path); err == nil {
		// Debris of an interrupted roll (or of a deposed leader): never
		// reuse a file someone may hold open. Only this epoch's leader
		// names a segment with this epoch, so nobody races this check.
		if rerr := os.Rename(path, path+deletedSuffix); rerr != nil {
			return nil, fmt.Errorf("disklog: set aside %s: %w", path, rerr)
		}
		l.unlinkLater(path + deletedSuffix)
	}
	f, indexed := l.takeSpares(s.prefix())
	if f == nil {
		var err error
		if f, err = openFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, l.fileMode); err != nil {
			return nil, fmt.Errorf("disklog: create segment: %w", err)
		}
	}
	s.h = newHandle(f, 1)
	l.needSpares()
	if indexed {
		return s, nil
	}
	// Its index file is created now, off the caller's path, so that the
	// close that writes it (a leadership move) overwrites it in place
	// instead of creating a file per partition while a drain waits.
	l.jmu.Lock()
	l.needIndexFiles = append(l.needIndexFiles, s)
	l.jmu.Unlock()
	l.kickJanitor()
	return s, nil
}

// takeSpares renames the spare set to the segment prefix's names and opens
// the segment. nil: no usable spare segment (create one). indexed: the
// spare index file was taken too. A rename is atomic, so of two brokers taking
// one spare (a deposed leader rolling while the new one opens) exactly one
// gets it; nobody writes into a spare, so one that is not empty is debris
// of something else and is set aside.
func (l *Log) takeSpares(prefix string) (f *os.File, indexed bool) {
	if l.o.opts.spareDelay < 0 {
		return nil, false
	}
	path := prefix + logSuffix
	if err := os.Rename(filepath.Join(l.dir, spareLog), path); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			l.log.Debug().Err(err).Msg("take spare segment")
		}
		return nil, false
	}
	f, err := openFile(path, os.O_RDWR, 0)
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil && fi.Size() != 0 {
			err = fmt.Errorf("spare segment holds %d bytes", fi.Size())
		}
		if err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		l.log.Warn().Err(err).Msg("setting aside an unusable spare segment")
		l.renameAside(path)
		return nil, false
	}
	indexed = os.Rename(filepath.Join(l.dir, spareIndex), prefix+indexSuffix) == nil
	return f, indexed
}

// roll seals the active segment and starts a new one at base (owner).
func (l *Log) roll(epoch int32, base int64) error {
	ns, err := l.createSegment(epoch, base)
	if err != nil {
		return err
	}
	old := l.active
	// A segment already durable to its end (a new epoch right after a
	// clean open) needs no fdatasync, only its index.
	synced := old.next <= l.durable.Load()
	old.mu.Lock()
	old.active = false
	oh := old.h
	onDisk := old.indexOnDisk
	if !synced {
		oh.acquire() // for pendingSync
	}
	old.mu.Unlock()
	l.mu.Lock()
	l.segments = append(l.segments, ns)
	l.active = ns
	if !synced {
		l.pendingSync = append(l.pendingSync, pendingSeg{s: old, h: oh})
	}
	l.dirDirty = true
	l.mu.Unlock()
	// A segment whose index files already describe it (opened after a
	// clean close and sealed by the next leader epoch before any append)
	// needs no new ones: its trailer's end is the new segment's base.
	if synced && !onDisk {
		l.jmu.Lock()
		l.needIndex = append(l.needIndex, old)
		l.jmu.Unlock()
		l.kickJanitor()
	}
	l.ix = newIndexer(indexInterval(l.cfg))
	// The log's writer reference becomes the descriptor cache's.
	for _, v := range l.o.cache.add(old) {
		v.dropHandle()
	}
	return nil
}

// Sync implements storage.Log: fdatasync of every segment rolled since the
// last Sync, of the active segment and, when files were created or renamed,
// of the directory. It returns the end offset as of the call.
func (l *Log) Sync() (int64, error) {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.syncLocked(true)
}

// syncLocked makes the data durable and, with dir, the directory too (Close
// leaves the directory to its own final fsync). The active segment is not
// fdatasync'ed when nothing was appended since the last Sync: a handoff
// closes a log whose data group commit already made durable.
func (l *Log) syncLocked(dir bool) (int64, error) {
	if l.syncErr != nil {
		return l.durable.Load(), l.syncErr
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return l.durable.Load(), storage.ErrClosed
	}
	pend := l.pendingSync
	l.pendingSync = nil
	dirty := l.dirDirty && dir
	if dir {
		l.dirDirty = false
	}
	// The end is the active segment's as of now (the log end, possibly
	// ahead of l.next by an append finishing): every byte below it was
	// written before the fsync below starts.
	a := l.active
	a.mu.RLock()
	ah := a.h
	ah.acquire()
	pt := durablePoint{s: a, next: a.next, size: a.size, maxTS: a.maxTS, maxOff: a.maxOff, entries: len(a.idx)}
	a.mu.RUnlock()
	end := pt.next
	clean := len(pend) == 0 && end <= l.durable.Load()
	l.mu.Unlock()
	fail := func(err error) (int64, error) {
		l.syncErr = fmt.Errorf("disklog: fdatasync %s: %w", l.name, err)
		l.log.Error().Err(err).Str("dir", l.dir).Msg("fdatasync failed; the log no longer acknowledges writes until it is reopened")
		return l.durable.Load(), l.syncErr
	}
	var err error
	if fs := l.o.fs; fs != nil {
		// One syncfs round covers the segments, the directory and every
		// other log asking at the same time.
		if !clean || dirty {
			err = l.syncfsRound(fs)
		}
		ah.release()
	} else {
		for _, p := range pend {
			if err == nil {
				err = l.fdatasync(p.h.f)
			}
		}
		if err == nil && !clean {
			err = l.fdatasync(ah.f)
		}
		ah.release()
		if err == nil && dirty {
			err = l.syncDir()
		}
	}
	for _, p := range pend {
		p.h.release()
	}
	if err != nil {
		return fail(err)
	}
	for {
		d := l.durable.Load()
		if end <= d || l.durable.CompareAndSwap(d, end) {
			break
		}
	}
	l.mu.Lock()
	if l.durablePt.s != pt.s || pt.next > l.durablePt.next {
		l.durablePt = pt
	}
	l.mu.Unlock()
	if len(pend) > 0 {
		l.jmu.Lock()
		for _, p := range pend {
			l.needIndex = append(l.needIndex, p.s)
		}
		l.jmu.Unlock()
		l.kickJanitor()
	}
	return l.durable.Load(), nil
}

// fdatasync, syncDir and syncfsRound are Sync's durability calls, through
// the Opener's FsyncHook when it has one (the closures exist only then).
func (l *Log) fdatasync(f *os.File) error {
	if h := l.o.opts.fsyncHook; h != nil {
		return h(l.dir, func() error { return fdatasync(f) })
	}
	return fdatasync(f)
}

func (l *Log) syncDir() error {
	if h := l.o.opts.fsyncHook; h != nil {
		return h(l.dir, func() error { return syncDir(l.dir) })
	}
	return syncDir(l.dir)
}

func (l *Log) syncfsRound(fs *fsSyncer) error {
	if h := l.o.opts.fsyncHook; h != nil {
		return h(l.dir, fs.sync)
	}
	return fs.sync()
}

// durablePoint is a segment's state as a Sync covered it: the segment's
// first `entries` index entries describe its bytes below size.
type durablePoint struct {
	s                         *segment
	next, size, maxTS, maxOff int64
	entries                   int
}

// pendingSeg is a sealed segment awaiting its fdatasync, with a descriptor
// reference of its own (independent of the cache).
type pendingSeg struct {
	s *segment
	h *handle
}

// AssignEpoch implements storage.Log. A higher epoch is persisted before it
// is used and rolls to a fresh, epoch-stamped active segment.
func (l *Log) AssignEpoch(epoch int32, startOffset int64) error {
	l.mu.RLock()
	closed := l.closed
	eps := append([]storage.EpochEntry(nil), l.epochs...)
	l.mu.RUnlock()
	if closed {
		return storage.ErrClosed
	}
	if n := len(eps); n > 0 {
		last := eps[n-1]
		if epoch < last.Epoch {
			return fmt.Errorf("disklog: leader epoch %d is below the cached %d", epoch, last.Epoch)
		}
		if epoch == last.Epoch {
			return nil
		}
		if startOffset < last.StartOffset {
			return fmt.Errorf("disklog: leader epoch %d starts at %d, before epoch %d's start %d", epoch, startOffset, last.Epoch, last.StartOffset)
		}
	}
	eps = append(eps, storage.EpochEntry{Epoch: epoch, StartOffset: startOffset})
	if err := writeEpochs(l.dir, eps, l.sealed, l.fileMode); err != nil {
		return err
	}
	l.mu.Lock()
	l.epochs = eps
	l.mu.Unlock()
	a := l.active
	if epoch <= a.epoch || startOffset != l.next.Load() {
		return nil
	}
	if a.size > 0 {
		return l.roll(epoch, startOffset)
	}
	// Replace the empty active segment by one stamped with the new epoch;
	// the old file is set aside, never reused.
	ns, err := l.createSegment(epoch, startOffset)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.segments[len(l.segments)-1] = ns
	l.active = ns
	l.dirDirty = true
	l.mu.Unlock()
	l.ix = newIndexer(indexInterval(l.cfg))
	l.setAside(a)
	a.dropHandle()
	return nil
}

// Superseded implements storage.Log: it reads the claim file. No claim
// (a log from before claims existed) is not superseded. A claim that does
// not read as valid is being overwritten by a claimant right now, or was
// torn by a claimant's crash: it is read again, and if it stays damaged
// the answer is yes, since only a newer leader writes over a claim and
// acknowledging anyway could acknowledge what that leader never read.
func (l *Log) Superseded(epoch int32) bool {
	for try := 1; ; try++ {
		e, st := l.readClaim()
		switch {
		case st == numberMissing:
			return false
		case st == numberValid:
			return e > epoch
		case try == claimReadTries:
			l.log.Warn().Int32("leader_epoch", epoch).Msg("leader claim stays damaged; taking this leader as superseded")
			return true
		}
		time.Sleep(time.Millisecond)
	}
}

// readClaim reads the claim through the kept descriptor when there is one
// and it still names the file, else by path.
func (l *Log) readClaim() (int32, numberState) {
	if l.claim != nil {
		var buf numberBuf
		if b, ok := l.claim.read(buf[:]); ok {
			return claimState(parseNumber(b))
		}
	}
	return readClaimState(l.dir)
}

// claimReadTries bounds the reads of a damaged claim (a 32-byte overwrite
// in flight takes microseconds).
const claimReadTries = 5

// Epochs implements storage.Log.
func (l *Log) Epochs() []storage.EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]storage.EpochEntry(nil), l.epochs...)
}

// WriteSnapshot implements storage.Log: a checksummed file written in
// place (overwriteFile), without any fsync. A snapshot only speeds up recovery: one lost
// or torn by a crash reads as absent and the log is scanned instead.
// Leadership moves write one per partition, so this keeps fsyncs out of
// every handoff.
func (l *Log) WriteSnapshot(name string, data []byte) error {
	if !validSnapshotName(name) {
		return fmt.Errorf("disklog: invalid snapshot name %q", name)
	}
	if l.isClosed() {
		return storage.ErrClosed
	}
	return overwriteFile(filepath.Join(l.dir, name+snapshotSuffix), frameSnapshot(data), l.fileMode)
}

// ReadSnapshot implements storage.Log. A snapshot that fails its checksum
// (a crash before it was durable) reads as absent: snapshots only speed up
// recovery, the log is the authority.
func (l *Log) ReadSnapshot(name string) ([]byte, error) {
	if !validSnapshotName(name) {
		return nil, fmt.Errorf("disklog: invalid snapshot name %q", name)
	}
	b, err := readFileRaw(filepath.Join(l.dir, name+snapshotSuffix))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	body, ok := unframeSnapshot(b)
	if !ok {
		l.log.Warn().Str("snapshot", name).Int("bytes", len(b)).Msg("snapshot fails its checksum; ignoring it")
		return nil, nil
	}
	return body, nil
}

// frameSnapshot appends a newline and the checksum line to any blob.
func frameSnapshot(data []byte) []byte {
	return checksummed(append(append(make([]byte, 0, len(data)+16), data...), '\n'))
}

func unframeSnapshot(b []byte) ([]byte, bool) {
	body, ok := unchecksummed(b)
	if !ok || len(body) == 0 {
		return nil, false
	}
	return body[:len(body)-1], true
}

// ReadSnapshotFile reads a snapshot file (<name>.snapshot, written by
// WriteSnapshot) for tools that print it, and returns the blob it frames.
// It only reads; a file that fails its checksum is an error here, where
// ReadSnapshot takes it as absent.
func ReadSnapshotFile(path string) ([]byte, error) {
	b, err := readFileRaw(path)
	if err != nil {
		return nil, err
	}
	body, ok := unframeSnapshot(b)
	if !ok {
		return nil, fmt.Errorf("%s: not a snapshot, or it fails its checksum (%d bytes)", path, len(b))
	}
	return body, nil
}

func validSnapshotName(n string) bool {
	if n == "" || len(n) > 100 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Close implements storage.Log: a final flush (segments, indexes with their
// clean trailers, the log start offset), then every descriptor the log holds
// is closed. Records still held by readers keep their own descriptor until
// they are closed.
func (l *Log) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if !l.beginClose() {
		return nil
	}
	// Data first (and the directory if segments were created since the
	// last Sync), then the index trailers that assert it is durable. The
	// trailers' renames need no directory fsync: a trailer lost in a crash
	// only costs the next Open a scan. A handoff after group commit thus
	// closes without any fsync.
	_, err := l.syncLocked(true)
	if err == nil {
		// The active segment's index trailer is the clean-shutdown marker.
		a := l.active
		l.jmu.Lock()
		l.needIndex = append(l.needIndex, a)
		l.jmu.Unlock()
		err = l.chores(true)
	}
	l.finishClose()
	return err
}

// Release implements storage.Log: it closes the log for a leadership
// handoff without making its tail durable and without waiting for a Sync
// in flight. The active segment's index trailer describes what the last
// Sync covered, so the next leader trusts that prefix and scans only the
// bytes after it (this leader's appends since), and its first Sync makes
// them durable: what the next leader reads after claiming the files is what
// this one wrote, in the page cache of the one machine or, over NFS,
// flushed to the server by the close. Nothing past Durable() is
// acknowledged by this leader: those producers retry at the next one.
func (l *Log) Release() error {
	if !l.beginClose() {
		return nil
	}
	l.mu.RLock()
	a, pt := l.active, l.durablePt
	l.mu.RUnlock()
	a.mu.RLock()
	whole := a.next <= l.durable.Load()
	a.mu.RUnlock()
	var err error
	switch {
	case whole: // durable to its end: the trailer Close would write
		l.jmu.Lock()
		l.needIndex = append(l.needIndex, a)
		l.jmu.Unlock()
	case pt.s == a && pt.entries <= len(a.idx):
		a.mu.RLock()
		entries := a.idx[:pt.entries:pt.entries]
		a.mu.RUnlock()
		sum := summary{base: a.base, next: pt.next, size: pt.size, maxTS: pt.maxTS, maxOff: pt.maxOff, count: uint32(pt.entries), epoch: a.epoch}
		err = l.writeIndexFiles(a.prefix(), entries, sum)
	} // else no Sync covered this segment: the next leader scans it whole
	if e := l.chores(true); err == nil {
		err = e
	}
	l.finishClose()
	return err
}

// beginClose stops the janitor and its timers; false: the log is closing
// or closed already.
func (l *Log) beginClose() bool {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return false
	}
	l.closing = true
	l.mu.Unlock()
	close(l.quit)
	l.janitorWG.Wait()
	l.stopTimers()
	return true
}

// finishClose closes every descriptor the log holds.
func (l *Log) finishClose() {
	l.mu.Lock()
	l.closed = true
	segs := l.segments
	pend := l.pendingSync
	l.pendingSync = nil
	l.mu.Unlock()
	for _, p := range pend {
		p.h.release()
	}
	for _, s := range segs {
		if s.active || l.o.cache.remove(s) {
			s.dropHandle()
		}
	}
	if l.claim != nil {
		l.o.releaseClaim(l.claim)
	}
	l.o.forget(l.name)
}

// sortSegments orders by base offset then epoch.
func sortSegments(ss []*segment) {
	sort.Slice(ss, func(i, j int) bool {
		if ss[i].base != ss[j].base {
			return ss[i].base < ss[j].base
		}
		return ss[i].epoch < ss[j].epoch
	})
}
