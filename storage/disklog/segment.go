package disklog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kaas-project/kaas/storage/batch"
)

// File names inside a partition directory.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted"
	tmpSuffix       = ".tmp"
	snapshotSuffix  = ".snapshot"
	epochFile       = "leader-epoch-checkpoint"
	startFile       = "log-start-offset"
	claimFile       = "leader-claim"
	lockSuffix      = ".lock"
	// The spare set: empty files the janitor creates ahead of need, which
	// the next new segment takes by rename (see takeSpares).
	spareLog   = "log.spare"
	spareIndex = "index.spare"
	// spareTimeIndex is the first layout's third spare: set aside on sight.
	spareTimeIndex = "timeindex.spare"
)

// segName is a segment's file name without extension: the leader epoch that
// created it (8 hex digits) and its base offset (20 decimal digits). The
// epoch stamp means a new leader never appends to a file an older leader may
// still hold open: it rolls to a fresh name at takeover.
func segName(epoch int32, base int64) string {
	n := make([]byte, 0, 29)
	n = append(appendPadded(n, uint64(uint32(epoch)), 16, 8), '-')
	if base < 0 {
		return string(appendPadded(append(n, '-'), uint64(-base), 10, 19))
	}
	return string(appendPadded(n, uint64(base), 10, 20))
}

// parseSegName parses segName's output.
func parseSegName(s string) (epoch int32, base int64, ok bool) {
	if len(s) != 29 || s[8] != '-' {
		return 0, 0, false
	}
	e, err := strconv.ParseUint(s[:8], 16, 32)
	if err != nil {
		return 0, 0, false
	}
	b, err := strconv.ParseInt(s[9:], 10, 64)
	if err != nil || b < 0 {
		return 0, 0, false
	}
	return int32(e), b, true
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// indexEntry is one sparse index point: the batch starting at pos, and the
// largest batch max-timestamp of the segment before pos (the time index).
type indexEntry struct {
	rel    uint32 // batch base offset - segment base
	pos    uint32 // byte position of the batch
	maxTS  int64  // max timestamp of every batch before pos (-1: none)
	maxRel int32  // relative base offset of the batch carrying maxTS (-1: none)
}

// indexer accumulates index points while batches are appended or scanned.
type indexer struct {
	interval int64
	since    int64 // bytes since the last entry
	maxTS    int64
	maxOff   int64 // absolute base offset of the batch carrying maxTS
}

func newIndexer(interval int64) indexer {
	return indexer{interval: interval, since: math.MaxInt32, maxTS: -1, maxOff: -1}
}

// add records the batch h at pos and returns the (possibly grown) entries.
func (x *indexer) add(entries []indexEntry, base, pos int64, h batch.Header) []indexEntry {
	if len(entries) == 0 || x.since >= x.interval {
		mr := int32(-1)
		if x.maxOff >= 0 {
			mr = int32(x.maxOff - base)
		}
		entries = append(entries, indexEntry{rel: uint32(h.BaseOffset - base), pos: uint32(pos), maxTS: x.maxTS, maxRel: mr})
		x.since = 0
	}
	x.since += int64(h.Size())
	if h.MaxTimestamp > x.maxTS || x.maxOff < 0 {
		x.maxTS, x.maxOff = h.MaxTimestamp, h.BaseOffset
	}
	return entries
}

// summary is what a segment's index trailer records.
type summary struct {
	base   int64
	next   int64 // offset after the last batch
	size   int64 // bytes of valid batches
	maxTS  int64
	maxOff int64
	count  uint32
	epoch  int32
}

// On-disk index format. ".index": count × (rel u32, pos u32, maxTS i64,
// maxRel i32) then a 64-byte trailer, big-endian, CRC-32C: one file per
// segment beside the ".log", so a new segment costs two files (a create or
// a rename is the dearest part of a leadership move). The trailer doubles as
// the segment's clean marker: it is written only after the segment's bytes up
// to size were fdatasync'ed, so a segment whose file is at least that long is
// trusted up to size without a scan.
//
// Directories written by older kaas hold the first layout: ".index" with
// count × (rel u32, pos u32) and the "KAASIDX1" trailer, and a paired
// ".timeindex" with count × (maxTS i64, maxRel i32) then a 16-byte trailer.
// Both are read; only the current one is written.
const (
	trailerSize    = 64
	tiTrailerSize  = 16
	idxEntrySize   = 20
	idx1EntrySize  = 8
	tidxEntrySize  = 12
	idxMagic       = "KAASIDX2"
	idx1Magic      = "KAASIDX1"
	tidxMagic      = "KAASTIX1"
	trailerCRCSpan = trailerSize - 4
)

func encodeIndex(entries []indexEntry, s summary) []byte {
	b := make([]byte, 0, len(entries)*idxEntrySize+trailerSize)
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
		b = binary.BigEndian.AppendUint64(b, uint64(e.maxTS))
		b = binary.BigEndian.AppendUint32(b, uint32(e.maxRel))
	}
	return appendTrailer(b, idxMagic, s, len(entries))
}

// appendTrailer appends the 64-byte trailer over the entries in b.
func appendTrailer(b []byte, magic string, s summary, count int) []byte {
	body := crc32.Checksum(b, castagnoli)
	t := len(b)
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint64(b, uint64(s.base))
	b = binary.BigEndian.AppendUint64(b, uint64(s.next))
	b = binary.BigEndian.AppendUint64(b, uint64(s.size))
	b = binary.BigEndian.AppendUint64(b, uint64(s.maxTS))
	b = binary.BigEndian.AppendUint64(b, uint64(s.maxOff))
	b = binary.BigEndian.AppendUint32(b, uint32(count))
	b = binary.BigEndian.AppendUint32(b, uint32(s.epoch))
	b = binary.BigEndian.AppendUint32(b, body)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b[t:], castagnoli))
	return b
}

// Why an index is not trusted (ReadIndexFile tells them apart).
var (
	errTrailerMagic = errors.New("no index trailer (magic not KAASIDX2 or KAASIDX1)")
	errTrailerCRC   = errors.New("index trailer fails its CRC-32C")
	errTrailerSpan  = errors.New("index trailer records an impossible segment (next below base, or size out of range)")
	errIndexLength  = errors.New("index length does not match the trailer's entry count")
	errEntriesCRC   = errors.New("index entries fail their CRC-32C")
	errEntryOrder   = errors.New("index entries out of order (positions not increasing from 0 below the covered length)")
	errTimeIndex    = errors.New(".timeindex missing, damaged or not matching the .index")
)

// decodeTrailer checks and decodes a 64-byte index trailer of either
// layout; bodyCRC is the CRC the entries must have, entrySize the size of
// an entry in the index file (idx1EntrySize: the first layout, whose
// timestamps are in the ".timeindex").
func decodeTrailer(t []byte) (s summary, bodyCRC uint32, entrySize int64, err error) {
	if len(t) != trailerSize {
		return s, 0, 0, errTrailerMagic
	}
	switch string(t[:8]) {
	case idxMagic:
		entrySize = idxEntrySize
	case idx1Magic:
		entrySize = idx1EntrySize
	default:
		return s, 0, 0, errTrailerMagic
	}
	if crc32.Checksum(t[:trailerCRCSpan], castagnoli) != binary.BigEndian.Uint32(t[trailerCRCSpan:]) {
		return s, 0, 0, errTrailerCRC
	}
	s.base = int64(binary.BigEndian.Uint64(t[8:]))
	s.next = int64(binary.BigEndian.Uint64(t[16:]))
	s.size = int64(binary.BigEndian.Uint64(t[24:]))
	s.maxTS = int64(binary.BigEndian.Uint64(t[32:]))
	s.maxOff = int64(binary.BigEndian.Uint64(t[40:]))
	s.count = binary.BigEndian.Uint32(t[48:])
	s.epoch = int32(binary.BigEndian.Uint32(t[52:]))
	if s.size < 0 || s.next < s.base || s.size > math.MaxUint32 {
		return s, 0, 0, errTrailerSpan
	}
	return s, binary.BigEndian.Uint32(t[56:]), entrySize, nil
}

// trailerReads counts readTrailer calls (tests: what an Open reads).
var trailerReads atomic.Int64

// readTrailer reads only the trailer of an index file (used at Open for
// the sealed segments not below the checkpoint's sealed offset).
func readTrailer(path string) (summary, bool) {
	trailerReads.Add(1)
	t, size, err := readTailRaw(path, trailerSize)
	if err != nil || size < trailerSize || len(t) != trailerSize {
		return summary{}, false
	}
	s, _, es, err := decodeTrailer(t)
	if err != nil || int64(s.count)*es != size-trailerSize {
		return summary{}, false
	}
	return s, true
}

// loadIndex reads and fully checks a segment's index (and, in the first
// layout, its ".timeindex").
func loadIndex(prefix string) ([]indexEntry, summary, bool) {
	entries, s, _, ok := readIndex(prefix)
	return entries, s, ok
}

// readIndex reads a segment's index file once, whole: trailerOK says what
// readTrailer would (an intact trailer agreeing with the file's length),
// ok that the entries check too (loadIndex). Open reads the active
// segment's index this way, since it needs the entries whenever the trailer
// holds.
func readIndex(prefix string) (entries []indexEntry, s summary, trailerOK, ok bool) {
	ib, err := readFileRaw(prefix + indexSuffix)
	if err != nil || len(ib) < trailerSize {
		return nil, summary{}, false, false
	}
	s, bodyCRC, es, err := decodeTrailer(ib[len(ib)-trailerSize:])
	body := ib[:len(ib)-trailerSize]
	if err != nil || int64(len(body)) != int64(s.count)*es {
		return nil, summary{}, false, false
	}
	entries, err = decodeEntries(prefix, body, s, bodyCRC, es)
	if err != nil {
		return nil, s, true, false
	}
	return entries, s, true, true
}

// IndexEntry is one entry of a segment's sparse index (ReadIndexFile).
type IndexEntry struct {
	Offset   int64 // base offset of the batch at Position
	Position int64 // byte position of that batch in the segment
	// MaxTimestamp is the largest max timestamp of the segment's batches
	// before Position, MaxTimestampOffset the base offset of the batch
	// carrying it (-1 both: none before it).
	MaxTimestamp       int64
	MaxTimestampOffset int64
}

// IndexTrailer is what a segment index's trailer records of the segment.
type IndexTrailer struct {
	BaseOffset         int64
	NextOffset         int64 // offset after the last batch covered
	Size               int64 // bytes of the segment the index covers
	MaxTimestamp       int64
	MaxTimestampOffset int64 // base offset of the batch carrying MaxTimestamp
	LeaderEpoch        int32
	// FirstLayout: a "KAASIDX1" index whose timestamps are in the paired
	// ".timeindex".
	FirstLayout bool
}

// IndexFile is a segment's index as ReadIndexFile reads it.
type IndexFile struct {
	Trailer IndexTrailer
	Entries []IndexEntry
}

// ErrIndexInvalid is what ReadIndexFile's error wraps when the index is one
// Open would not trust (it rebuilds such an index from the segment).
var ErrIndexInvalid = errors.New("invalid index")

// ReadIndexFile reads the index of the segment path names (its ".index",
// or the ".timeindex" of the first layout: both files are read then) for
// tools that print it, checking it as Open does. It only reads. An error
// wrapping ErrIndexInvalid says why Open would rebuild the index; when the
// trailer itself held, the IndexFile still carries it and the entries as
// decoded (none when the file's length does not match the trailer).
func ReadIndexFile(path string) (IndexFile, error) {
	prefix := strings.TrimSuffix(strings.TrimSuffix(path, indexSuffix), timeIndexSuffix)
	ib, err := readFileRaw(prefix + indexSuffix)
	if err != nil {
		return IndexFile{}, err
	}
	if len(ib) < trailerSize {
		return IndexFile{}, fmt.Errorf("%w: %d bytes, shorter than a trailer: %w", ErrIndexInvalid, len(ib), errTrailerMagic)
	}
	s, bodyCRC, es, err := decodeTrailer(ib[len(ib)-trailerSize:])
	if err != nil {
		return IndexFile{}, fmt.Errorf("%w: %w", ErrIndexInvalid, err)
	}
	f := IndexFile{Trailer: IndexTrailer{BaseOffset: s.base, NextOffset: s.next, Size: s.size, MaxTimestamp: s.maxTS,
		MaxTimestampOffset: s.maxOff, LeaderEpoch: s.epoch, FirstLayout: es == idx1EntrySize}}
	body := ib[:len(ib)-trailerSize]
	if int64(len(body)) != int64(s.count)*es {
		return f, fmt.Errorf("%w: %w (%d entries of %d bytes, %d bytes before the trailer)", ErrIndexInvalid, errIndexLength, s.count, es, len(body))
	}
	entries, err := decodeEntries(prefix, body, s, bodyCRC, es)
	f.Entries = make([]IndexEntry, len(entries))
	for i, e := range entries {
		f.Entries[i] = IndexEntry{Offset: s.base + int64(e.rel), Position: int64(e.pos), MaxTimestamp: e.maxTS, MaxTimestampOffset: -1}
		if e.maxRel >= 0 {
			f.Entries[i].MaxTimestampOffset = s.base + int64(e.maxRel)
		}
	}
	if err != nil {
		return f, fmt.Errorf("%w: %w", ErrIndexInvalid, err)
	}
	return f, nil
}

// decodeEntries checks and decodes an index body of entrySize entries. On
// a failed check it still returns what it decoded (ReadIndexFile shows
// it); the log never uses such entries.
func decodeEntries(prefix string, body []byte, s summary, bodyCRC uint32, es int64) ([]indexEntry, error) {
	var failed error
	if crc32.Checksum(body, castagnoli) != bodyCRC {
		failed = errEntriesCRC
	}
	// The timestamp half of entry i is at ts[toff+i*tstride:].
	ts, toff, tstride := body, 8, idxEntrySize
	if es == idx1EntrySize {
		tb, err := readFileRaw(prefix + timeIndexSuffix)
		if err != nil || len(tb) < tiTrailerSize {
			return nil, errTimeIndex
		}
		tt := tb[len(tb)-tiTrailerSize:]
		tbody := tb[:len(tb)-tiTrailerSize]
		if string(tt[:8]) != tidxMagic || binary.BigEndian.Uint32(tt[8:]) != s.count ||
			int64(len(tbody)) != int64(s.count)*tidxEntrySize || crc32.Checksum(tbody, castagnoli) != binary.BigEndian.Uint32(tt[12:]) {
			return nil, errTimeIndex
		}
		ts, toff, tstride = tbody, 0, tidxEntrySize
	}
	entries := make([]indexEntry, s.count)
	var lastPos uint32
	for i := range entries {
		e := &entries[i]
		e.rel = binary.BigEndian.Uint32(body[i*int(es):])
		e.pos = binary.BigEndian.Uint32(body[i*int(es)+4:])
		e.maxTS = int64(binary.BigEndian.Uint64(ts[toff+i*tstride:]))
		e.maxRel = int32(binary.BigEndian.Uint32(ts[toff+i*tstride+8:]))
		if failed == nil && ((i > 0 && e.pos <= lastPos) || int64(e.pos) >= s.size || (i == 0 && e.pos != 0)) {
			failed = errEntryOrder
		}
		lastPos = e.pos
	}
	if failed == nil && s.size > 0 && len(entries) == 0 {
		failed = errEntryOrder
	}
	return entries, failed
}

// handle is a reference-counted open segment file. The log holds one
// reference for the active segment, the descriptor cache one for a sealed
// segment it keeps open, and every Records or read in flight one more; the
// descriptor is closed when the last reference goes.
type handle struct {
	f    *os.File
	refs atomic.Int64
}

func newHandle(f *os.File, refs int64) *handle {
	h := &handle{f: f}
	h.refs.Store(refs)
	return h
}

func (h *handle) acquire() { h.refs.Add(1) }

func (h *handle) release() {
	if n := h.refs.Add(-1); n == 0 {
		_ = h.f.Close()
	} else if n < 0 {
		panic("disklog: handle released too often")
	}
}

// segment is one segment file and what is known about it.
type segment struct {
	base  int64
	epoch int32
	dir   string

	mu      sync.RWMutex
	name    string // file name prefix (changes when renamed aside)
	active  bool
	size    int64 // valid bytes
	next    int64
	maxTS   int64
	maxOff  int64
	idx     []indexEntry // nil while a sealed segment's index is not loaded
	h       *handle      // open descriptor or nil
	created time.Time    // first append (segment.ms rolling)
	// jitter is the fraction of segment.jitter.ms this segment rolls
	// early by, drawn when it is created or opened (as Kafka draws a
	// segment's roll jitter).
	jitter float64
	// indexOnDisk: the index files on disk describe the segment up to size.
	indexOnDisk bool
	// unread: a sealed segment below the checkpoint's sealed offset, taken
	// at Open without reading its trailer: size, maxTS, maxOff and created
	// are not known until loadSealed (next is its successor's base).
	unread bool
	// cleanTail: at Open, the index trailer covered the whole file (it was
	// fdatasync'ed before a clean close wrote the trailer).
	cleanTail bool
	// trusted: at Open, the offset below which the segment was known
	// durable (its index trailer's end, or its base).
	trusted int64
	deleted bool
	// replaced: the segment a compaction pass swapped in for this one (same
	// name, new file); a reader holding this one is sent there.
	replaced *segment
	// verified is how many bytes were CRC-checked in this process; sealed
	// segments trusted from their trailer at Open are verified lazily on
	// first read. corruptAt is where verification failed (-1: never).
	verified  int64
	corruptAt int64

	vmu   sync.Mutex // serialises verification I/O
	cache *fdCache   // owner of the LRU element
	elem  any        // *list.Element in the descriptor cache (guarded by cache.mu)
}

func (s *segment) prefix() string { return s.dir + string(os.PathSeparator) + s.name }

func (s *segment) path() string {
	if s.deleted {
		return s.prefix() + logSuffix + deletedSuffix
	}
	return s.prefix() + logSuffix
}

func (s *segment) summary() summary {
	return summary{base: s.base, next: s.next, size: s.size, maxTS: s.maxTS, maxOff: s.maxOff, count: uint32(len(s.idx)), epoch: s.epoch}
}

// dropHandle releases the log's or cache's reference to the descriptor.
func (s *segment) dropHandle() {
	s.mu.Lock()
	h := s.h
	s.h = nil
	if !s.active && s.indexOnDisk {
		s.idx = nil // reloaded from disk on the next read
	}
	s.mu.Unlock()
	if h != nil {
		h.release()
	}
}
