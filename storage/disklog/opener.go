// Package disklog is the segmented on-disk log engine: one directory per
// partition on the (shared) data volume, segment files with a sparse offset
// and time index, crash recovery, group-commit durability and zero-copy reads.
//
// Layout of <dir>/<topic>-<partition>-<topic id>/ (the topic id is the
// topic's incarnation, so a recreated topic never reuses files):
//
//	<epoch %08x>-<base offset %020d>.log        record batches, verbatim
//	<epoch %08x>-<base offset %020d>.index      sparse offset and time index + trailer
//	<epoch %08x>-<base offset %020d>.timeindex  time index of the first layout (read, never written)
//	leader-epoch-checkpoint                     leader-epoch cache
//	log-start-offset                            log start offset (DeleteRecords, retention)
//	leader-claim                                epoch of the last leader to open it (fencing)
//	leader-claim.lock                           serializes concurrent claims
//	<name>.snapshot                             named snapshots (producer state)
//	log.spare, index.spare                      empty files the next new segment takes by rename
//	*.deleted                                   renamed aside, unlinked later
//
// The index files, checkpoint, claim and snapshots are written in place
// (overwriteFile), not through temporary files, and a new segment's index
// file is created empty in the background: a leadership move's close
// creates no file and its open only the new epoch's segment.
//
// The segment name carries the leader epoch that created it: AssignEpoch with
// a higher epoch rolls to a fresh file, so a deposed leader that still holds
// a descriptor can only write into a file the new leader has sealed (and
// whose valid length the new leader knows), never into the new tail.
package disklog

import (
	"container/list"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/storage"
)

// Option configures an Opener.
type Option func(*options)

type options struct {
	maxOpenFiles int
	keptClaims   int // -1: from the open-file limit
	deleteDelay  time.Duration
	now          func() time.Time
	rollJitter   func() float64
	sync         SyncMode
	spareDelay   time.Duration
	spareRate    int
	unreadDelay  time.Duration
	fsyncHook    FsyncHook
}

// FsyncHook runs one durability call of a log's Sync (group commit): real
// is the syscall itself (fdatasync of a segment, fsync of the log's
// directory, or a syncfs round) and dir the log's directory. What the hook
// returns is the call's result, so a hook that fails without running real
// fails the Sync exactly as a failed fdatasync does. The chaos harness
// (storage/faultlog) slows and fails fsyncs here.
type FsyncHook func(dir string, real func() error) error

// WithFsyncHook runs every durability call of the logs' Syncs through h
// (none by default: the syscall is called directly).
func WithFsyncHook(h FsyncHook) Option { return func(o *options) { o.fsyncHook = h } }

// MaxOpenFiles bounds the descriptors kept open for reads of sealed segments
// across every log of the Opener (LRU). Active segments are not counted.
func MaxOpenFiles(n int) Option { return func(o *options) { o.maxOpenFiles = n } }

// MaxKeptClaims bounds the leader-claim files held open across every log of
// the Opener (0: none; each claim check then opens the file). By default
// it is a quarter of the process's open-file limit (keptClaimsShare), so a
// broker leading many partitions keeps descriptors for its active segments
// and its connections.
func MaxKeptClaims(n int) Option { return func(o *options) { o.keptClaims = max(n, 0) } }

// keptClaimsShare is the part of the open-file limit the kept claims may
// use by default: the active segments take one descriptor per partition,
// the sealed-segment LRU and the connections the rest.
const keptClaimsShare = 4

// DeleteDelay is how long a partition directory Remove renamed aside
// (".deleted") is kept before it is deleted, and a log's files renamed aside
// when its LogConfig carries no FileDeleteDelay (topic configs always carry
// file.delete.delay.ms): long enough that no broker still reads them (NFS
// has no delete-on-last-close across clients). Default 60 s, Kafka's.
func DeleteDelay(d time.Duration) Option { return func(o *options) { o.deleteDelay = d } }

// SpareDelay is how long after a log used its spare files (or opened
// without them) the janitor creates new ones; each log adds a random part
// of up to the same again, so that the logs a drain moved do not all create
// at once. The delay keeps those creates out of the move that used the
// spares: a create costs far more CPU than a rename (BenchmarkLeadershipMove,
// "close-created" against "close"). Negative: no spares, every segment
// is created.
func SpareDelay(d time.Duration) Option { return func(o *options) { o.spareDelay = d } }

// SpareRate bounds how many spare sets the Opener's logs create per second,
// together (default 100). A drain hands a receiving broker hundreds of
// partitions, and each of them makes a new spare set after its spare delay:
// unpaced, those thousands of creates land in one burst, on top of whatever
// moves next. Paced, they take a small, steady share of a core for as long
// as it takes. <= 0: no pacing.
func SpareRate(n int) Option { return func(o *options) { o.spareRate = n } }

// UnreadDelay is how long after Open the janitor reads the sealed segments
// the open left unread (below the checkpoint's sealed offset), plus up to
// as much again at random so that the partitions of one move do not all
// read at once (default 5 s): off the move's path, and before the
// partition's first retention check, which runs in its actor. Negative:
// they are read only when something needs them.
func UnreadDelay(d time.Duration) Option { return func(o *options) { o.unreadDelay = d } }

// Clock replaces the wall clock (segment.ms rolling, retention.ms).
func Clock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// RollJitter replaces the random source of segment.jitter.ms: f returns a
// fraction in [0, 1) of the jitter a new segment rolls early by.
func RollJitter(f func() float64) Option { return func(o *options) { o.rollJitter = f } }

// Opener opens partition logs under one data directory.
type Opener struct {
	dir   string
	log   zerolog.Logger
	opts  options
	cache *fdCache
	fs    *fsSyncer // SyncFilesystem; nil: each log fdatasyncs its files
	// localFS: the data directory is on a filesystem with one page cache
	// for every reader, so a log may hold its claim file open.
	localFS bool
	// keptClaims counts the claim files held open (at most
	// opts.keptClaims).
	keptClaims atomic.Int64
	// sparePace spaces the creation of spare sets (SpareRate).
	sparePace pacer
	// deleteDelay is DeleteDelay, changed by SetDeleteDelay.
	deleteDelay atomic.Int64

	mu      sync.Mutex
	open    map[string]*Log
	timers  map[*time.Timer]struct{}
	closed  bool
	removes sync.WaitGroup
}

// NewOpener returns an Opener for dir (created if missing). Partition
// directories renamed aside by an earlier Remove are deleted after the
// delete delay.
func NewOpener(dir string, log zerolog.Logger, opts ...Option) (*Opener, error) {
	o := &Opener{dir: dir, log: log, open: map[string]*Log{}, timers: map[*time.Timer]struct{}{}}
	o.opts = options{maxOpenFiles: 512, keptClaims: -1, deleteDelay: time.Minute, now: time.Now, rollJitter: rand.Float64, spareDelay: 5 * time.Second, spareRate: 100, unreadDelay: 5 * time.Second}
	for _, fn := range opts {
		fn(&o.opts)
	}
	o.deleteDelay.Store(int64(o.opts.deleteDelay))
	if o.opts.spareRate > 0 {
		o.sparePace.every = time.Second / time.Duration(o.opts.spareRate)
	}
	if o.opts.maxOpenFiles < 1 {
		o.opts.maxOpenFiles = 1
	}
	o.cache = &fdCache{max: o.opts.maxOpenFiles}
	if o.opts.keptClaims < 0 {
		o.opts.keptClaims = int(openFileLimit() / keptClaimsShare)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("disklog: create data dir: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("disklog: read data dir: %w", err)
	}
	for _, e := range ents {
		if e.IsDir() && strings.HasSuffix(e.Name(), deletedSuffix) {
			o.removeLater(filepath.Join(dir, e.Name()))
		}
	}
	o.localFS = localFilesystem(dir)
	if o.opts.sync == SyncFilesystem {
		if o.fs, err = newFSSyncer(dir); err != nil {
			log.Warn().Err(err).Msg("syncfs unavailable; each log fdatasyncs its own files")
		}
	}
	return o, nil
}

// Dir returns the data directory.
func (o *Opener) Dir() string { return o.dir }

// Persistent implements storage.Opener.
func (o *Opener) Persistent() bool { return true }

// PartitionDir is the directory of a partition's files.
func (o *Opener) PartitionDir(id storage.PartitionID) string {
	return filepath.Join(o.dir, dirName(id))
}

// maxDirName is the longest partition directory name: a file name's limit
// (NAME_MAX, 255 bytes) less what Remove appends to set a directory aside.
const maxDirName = 255 - len(".-9223372036854775808") - len(deletedSuffix)

// dirName is <topic>-<partition>-<topic id>. The topic id names the topic;
// the name is there for people, and a name too long to fit (Kafka allows
// 249 characters) is cut to its first characters. A cut name's dirName is
// itself, so ParseDirName's result names the same directory.
func dirName(id storage.PartitionID) string {
	suffix := fmt.Sprintf("-%d-%s", id.Partition, id.TopicID)
	topic := id.Topic
	if len(topic)+len(suffix) > maxDirName {
		topic = topic[:max(maxDirName-len(suffix), 0)]
	}
	return topic + suffix
}

// ParseDirName parses a partition directory's name (dirName) whose topic
// id is a UUID in its text form, the form kaas gives every topic; false for
// anything else (a directory set aside, the registry, the groups). The
// topic is as the name holds it: the first characters of a long one, so
// callers match directories to topics by topic id.
func ParseDirName(name string) (storage.PartitionID, bool) {
	const uuidLen = 36
	if len(name) < uuidLen+4 || name[len(name)-uuidLen-1] != '-' {
		return storage.PartitionID{}, false
	}
	id := name[len(name)-uuidLen:]
	for i, c := range id {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return storage.PartitionID{}, false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f'):
			return storage.PartitionID{}, false
		}
	}
	rest := name[:len(name)-uuidLen-1]
	dash := strings.LastIndexByte(rest, '-')
	if dash <= 0 || dash == len(rest)-1 {
		return storage.PartitionID{}, false
	}
	p, err := strconv.ParseInt(rest[dash+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != rest[dash+1:] {
		return storage.PartitionID{}, false
	}
	out := storage.PartitionID{Topic: rest[:dash], TopicID: id, Partition: int32(p)}
	if checkID(out) != nil {
		return storage.PartitionID{}, false
	}
	return out, true
}

// Partitions lists the partitions that have a directory under the data
// directory (ParseDirName), whoever leads them.
func (o *Opener) Partitions() ([]storage.PartitionID, error) {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		return nil, fmt.Errorf("disklog: list %s: %w", o.dir, err)
	}
	var out []storage.PartitionID
	for _, e := range ents {
		if id, ok := ParseDirName(e.Name()); ok && e.IsDir() {
			out = append(out, id)
		}
	}
	return out, nil
}

func checkID(id storage.PartitionID) error {
	bad := func(s string) bool {
		return s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\\x00")
	}
	if bad(id.Topic) || bad(id.TopicID) || id.Partition < 0 {
		return fmt.Errorf("disklog: invalid partition id %+v (topic, topic id and partition are required)", id)
	}
	return nil
}

// Open implements storage.Opener: it creates the partition directory if
// needed and recovers the log in it.
func (o *Opener) Open(id storage.PartitionID, cfg storage.LogConfig) (storage.Log, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	name := dirName(id)
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil, storage.ErrClosed
	}
	if _, busy := o.open[name]; busy {
		o.mu.Unlock()
		return nil, fmt.Errorf("disklog: %s is already open", name)
	}
	o.open[name] = nil
	o.mu.Unlock()
	l, err := openLog(o, filepath.Join(o.dir, name), id, cfg)
	o.mu.Lock()
	if err != nil {
		delete(o.open, name)
	} else {
		o.open[name] = l
	}
	o.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (o *Opener) forget(name string) {
	o.mu.Lock()
	delete(o.open, name)
	o.mu.Unlock()
}

// Remove implements storage.Opener: the partition directory is renamed
// aside at once and deleted after the delete delay.
func (o *Opener) Remove(id storage.PartitionID) error {
	if err := checkID(id); err != nil {
		return err
	}
	name := dirName(id)
	o.mu.Lock()
	_, busy := o.open[name]
	o.mu.Unlock()
	if busy {
		return fmt.Errorf("disklog: remove %s: the log is open", name)
	}
	src := filepath.Join(o.dir, name)
	dst := fmt.Sprintf("%s.%d%s", src, time.Now().UnixNano(), deletedSuffix)
	if err := os.Rename(src, dst); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("disklog: remove %s: %w", name, err)
	}
	if err := syncDir(o.dir); err != nil {
		return fmt.Errorf("disklog: remove %s: %w", name, err)
	}
	o.removeLater(dst)
	return nil
}

func (o *Opener) removeLater(path string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.removes.Add(1)
	var t *time.Timer
	t = time.AfterFunc(o.DeleteDelay(), func() {
		defer o.removes.Done()
		o.mu.Lock()
		_, live := o.timers[t]
		delete(o.timers, t)
		o.mu.Unlock()
		if !live {
			return
		}
		if err := os.RemoveAll(path); err != nil {
			o.log.Error().Err(err).Str("path", path).Msg("delete partition directory")
		}
	})
	o.timers[t] = struct{}{}
}

// SetDeleteDelay replaces the DeleteDelay option from now on: the broker's
// log.segment.delete.delay.ms, which Kafka applies to a deleted
// partition's directory and which may change at runtime. Zero or less
// deletes at once.
func (o *Opener) SetDeleteDelay(d time.Duration) { o.deleteDelay.Store(int64(max(d, 0))) }

// DeleteDelay is the delay in force (DeleteDelay, SetDeleteDelay).
func (o *Opener) DeleteDelay() time.Duration { return time.Duration(o.deleteDelay.Load()) }

// Close stops pending background deletions (they resume at the next
// NewOpener on the same directory). Logs must be closed first.
func (o *Opener) Close() error {
	o.mu.Lock()
	o.closed = true
	for t := range o.timers {
		if t.Stop() {
			o.removes.Done()
		}
		delete(o.timers, t)
	}
	o.mu.Unlock()
	o.removes.Wait()
	if o.fs != nil {
		return o.fs.close()
	}
	return nil
}

// OpenFiles reports how many sealed-segment descriptors the cache holds.
func (o *Opener) OpenFiles() int {
	o.cache.mu.Lock()
	defer o.cache.mu.Unlock()
	return o.cache.ll.Len()
}

// fdCache is the per-Opener LRU of open sealed-segment descriptors.
type fdCache struct {
	mu  sync.Mutex
	max int
	ll  list.List // of *segment, most recent first
}

// add inserts s (whose descriptor was just opened, or which was just
// sealed) and returns the segments evicted to stay within the bound; the
// caller drops their handles outside the lock.
func (c *fdCache) add(s *segment) []*segment {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.elem != nil {
		c.ll.MoveToFront(s.elem.(*list.Element))
		return nil
	}
	s.elem = c.ll.PushFront(s)
	s.cache = c
	var out []*segment
	for c.ll.Len() > c.max {
		e := c.ll.Back()
		v := e.Value.(*segment)
		c.ll.Remove(e)
		v.elem = nil
		out = append(out, v)
	}
	return out
}

func (c *fdCache) touch(s *segment) {
	c.mu.Lock()
	if s.elem != nil {
		c.ll.MoveToFront(s.elem.(*list.Element))
	}
	c.mu.Unlock()
}

// remove takes s out of the cache; true means the caller now owns the
// cache's reference and must drop it.
func (c *fdCache) remove(s *segment) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.elem == nil {
		return false
	}
	c.ll.Remove(s.elem.(*list.Element))
	s.elem = nil
	return true
}

// pacer hands out evenly spaced slots, one per interval, in request order.
type pacer struct {
	mu    sync.Mutex
	every time.Duration // 0: no pacing
	next  time.Time
}

// reserve takes the next slot and returns how long until it (0: now).
func (p *pacer) reserve(now time.Time) time.Duration {
	if p.every <= 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.every)
	return at.Sub(now)
}

// keepClaim opens the claim file at path to be held open, when the
// Opener's budget of kept claims allows; nil otherwise (the log then reads
// the claim by path). releaseClaim gives the budget back.
func (o *Opener) keepClaim(path string) *keptFile {
	if o.keptClaims.Add(1) > int64(o.opts.keptClaims) {
		o.keptClaims.Add(-1)
		return nil
	}
	k, err := openKept(path)
	if err != nil {
		o.keptClaims.Add(-1)
		return nil
	}
	return k
}

// releaseClaim closes a claim keepClaim opened.
func (o *Opener) releaseClaim(k *keptFile) {
	k.close()
	o.keptClaims.Add(-1)
}
