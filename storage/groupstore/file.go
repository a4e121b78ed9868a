package groupstore

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/atomicfile"
)

// DirName is the directory under <data-dir>/__groups holding a group's log:
// "g-" + the URL-safe base64 of the id, or "h-" + its SHA-256 for ids too
// long for a file name. The log's header record names the group either way.
func DirName(group string) string {
	enc := base64.RawURLEncoding.EncodeToString([]byte(group))
	if len(enc) <= 200 {
		return "g-" + enc
	}
	sum := sha256.Sum256([]byte(group))
	return "h-" + hex.EncodeToString(sum[:])
}

const (
	// LogName is a group's offsets log in its directory.
	LogName = "offsets.log"
	// membersName holds the saved membership (SaveMembers), replaced
	// atomically: older brokers that know only the log ignore it.
	membersName = "members"
	// defaultCompactMin is the record count below which a log is never
	// rewritten.
	defaultCompactMin = 1000
)

// File is the file store: one append-only commit log per group under Root.
type File struct {
	// Root is <data-dir>/__groups.
	Root string
	// CompactMin is how many records a log holds before it may be rewritten
	// (it is rewritten once it holds more than twice its live records).
	CompactMin int
	// Claims: OpenAt claims the group for the coordinator (claim.go);
	// cluster mode, where coordinators move between processes.
	Claims bool
}

// Dir is the store's directory under the data directory.
const Dir = "__groups"

// NewFile opens (creating) the store under dataDir/__groups.
func NewFile(dataDir string) (*File, error) {
	root := filepath.Join(dataDir, Dir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("group store: %w", err)
	}
	return &File{Root: root, CompactMin: defaultCompactMin}, nil
}

// Persistent implements Store.
func (s *File) Persistent() bool { return true }

// Groups implements Store: the group named by each log's header record.
func (s *File) Groups() ([]string, error) {
	ents, err := os.ReadDir(s.Root)
	if err != nil {
		return nil, fmt.Errorf("group store: list %s: %w", s.Root, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		g, ok := readHeader(filepath.Join(s.Root, e.Name(), LogName))
		if !ok {
			// Members saved before any commit: the directory names
			// the group (a long id's hashed directory has its log's
			// header from the first save, SaveMembers).
			g, ok = membersOnly(filepath.Join(s.Root, e.Name()))
		}
		if ok && DirName(g) == e.Name() {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}

// membersOnly returns the group of a "g-" directory holding saved members.
func membersOnly(dir string) (string, bool) {
	enc, ok := strings.CutPrefix(filepath.Base(dir), "g-")
	if !ok {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(dir, membersName)); err != nil {
		return "", false
	}
	g, err := base64.RawURLEncoding.DecodeString(enc)
	return string(g), err == nil
}

func readHeader(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	payload, _, err := readFrame(bufio.NewReader(f))
	if err != nil {
		return "", false
	}
	d := decoder{b: payload}
	if d.byte() != kindHeader {
		return "", false
	}
	g := d.str()
	return g, d.err == nil
}

// Open implements Store. A torn or corrupt tail is cut off; a log holding
// superseded records is rewritten compacted before it is returned.
func (s *File) Open(group string) (Log, State, error) { return s.open(group, nil) }

// OpenAt is Open for the coordinator that loads the group from the
// assignment file at claim. With Claims, it records the claim before it
// reads anything (ErrSuperseded if a later one holds the group) and
// rewrites the log it loaded, so a stalled earlier coordinator's late
// appends go to a file nobody reads; a group without files is claimed at
// its first write.
func (s *File) OpenAt(group string, claim assignment.Position) (Log, State, error) {
	return s.open(group, &claim)
}

func (s *File) open(group string, claim *assignment.Position) (Log, State, error) {
	dir := filepath.Join(s.Root, DirName(group))
	l := &fileLog{root: s.Root, dir: dir, path: filepath.Join(dir, LogName), group: group, compactMin: s.CompactMin}
	if l.compactMin <= 0 {
		l.compactMin = defaultCompactMin
	}
	l.state = State{Offsets: map[TP]Commit{}}
	if s.Claims && claim != nil {
		l.claims, l.claim = true, *claim
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			l.lazy = true
		} else if err := l.fenced(func() error { return nil }); err != nil {
			return nil, State{}, err
		}
	}
	_ = os.Remove(l.path + atomicfile.TmpSuffix) // an interrupted compaction
	members, err := os.ReadFile(filepath.Join(dir, membersName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, State{}, fmt.Errorf("group store: read %s members: %w", dir, err)
	}
	l.state.Members = members
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		return l, l.state.clone(), nil
	}
	if err != nil {
		return nil, State{}, fmt.Errorf("group store: open %s: %w", l.path, err)
	}
	good, records, err := l.replay(f)
	if err != nil {
		_ = f.Close()
		return nil, State{}, err
	}
	if records == 0 {
		// No valid header: nothing was ever committed through this file.
		_ = f.Close()
		return l, l.state.clone(), nil
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, State{}, fmt.Errorf("group store: %w", err)
	}
	if st.Size() != good {
		// Torn tail (a crash mid-append): drop it so appends follow
		// valid records.
		if err := f.Truncate(good); err != nil {
			_ = f.Close()
			return nil, State{}, fmt.Errorf("group store: truncate torn tail of %s: %w", l.path, err)
		}
		if err := f.Sync(); err != nil {
			_ = f.Close()
			return nil, State{}, fmt.Errorf("group store: %w", err)
		}
	}
	l.f, l.size, l.records = f, good, records
	if l.records > l.live()+1 || l.claimed {
		if err := l.compact(); err != nil {
			_ = l.Close()
			return nil, State{}, err
		}
	}
	return l, l.state.clone(), nil
}

// replay reads every valid record and returns the size of the valid prefix.
func (l *fileLog) replay(f *os.File) (good int64, records int, err error) {
	good, err = ReadLog(f, func(fr Frame) error {
		if fr.Record == nil {
			if fr.Group != l.group {
				return fmt.Errorf("group store: %s holds group %q, not %q", l.path, fr.Group, l.group)
			}
		} else {
			l.state.apply(*fr.Record)
		}
		records++
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return good, records, nil
}

// Frame is one whole frame of a group's offsets log: the header that names
// the group (the first frame), or a record.
type Frame struct {
	Pos    int64   // where the frame starts in the file
	Group  string  // the header's group; "" in a record's frame
	Record *Record // nil in the header's frame
}

// ReadLog walks the frames of an offsets log read from r, in order, as a
// coordinator replays them (and tools read them: kaas dump-log). It stops
// at the end or at the first frame that is torn, fails its CRC or does not
// decode (the log is the valid prefix before it; one that does not start
// with its header has none), or when fn fails, and returns the size of
// the frames handed to fn.
func ReadLog(r io.Reader, fn func(Frame) error) (good int64, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for first := true; ; first = false {
		payload, n, err := readFrame(br)
		if err != nil {
			// io.EOF at a record boundary, or a torn/corrupt record:
			// the valid prefix ends here either way.
			return good, nil
		}
		fr := Frame{Pos: good}
		if first {
			d := decoder{b: payload}
			if d.byte() != kindHeader {
				return 0, nil
			}
			if fr.Group = d.str(); d.err != nil {
				return 0, nil
			}
		} else {
			rec, ok := decodeRecord(payload)
			if !ok {
				return good, nil
			}
			fr.Record = &rec
		}
		if err := fn(fr); err != nil {
			return good, err
		}
		good += int64(n)
	}
}

type fileLog struct {
	root, dir, path string
	group           string
	compactMin      int

	// claims: the log is fenced by a claim (claim.go); claimed: the
	// claim is recorded; lazy: opened on no files, so claimed at the
	// first write.
	claims, claimed, lazy bool
	claim                 assignment.Position

	f       *os.File // nil until the first Append creates the file
	size    int64
	records int   // records in the file, header included
	state   State // mirror of the file's live state, for compaction
	broken  error
	closed  bool
}

func (l *fileLog) live() int {
	n := len(l.state.Offsets)
	if l.state.Meta != nil {
		n++
	}
	for _, p := range l.state.Pending {
		n += len(p.Offsets)
	}
	return n
}

func (l *fileLog) create() error {
	if err := atomicfile.Mkdir(l.dir); err != nil {
		return fmt.Errorf("group store: %w", err)
	}
	if err := syncDir(l.root); err != nil {
		return err
	}
	return l.fenced(l.createFile)
}

func (l *fileLog) createFile() error {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("group store: create %s: %w", l.path, err)
	}
	hdr := appendFrame(nil, encodeHeader(l.group))
	if _, err := f.Write(hdr); err != nil {
		_ = f.Close()
		return fmt.Errorf("group store: write %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("group store: sync %s: %w", l.path, err)
	}
	if err := syncDir(l.dir); err != nil {
		_ = f.Close()
		return err
	}
	l.f, l.size, l.records = f, int64(len(hdr)), 1
	return nil
}

// Append implements Log: write, fsync, then (maybe) compact.
func (l *fileLog) Append(recs []Record) error {
	if l.closed {
		return ErrClosed
	}
	if l.broken != nil {
		return l.broken
	}
	if len(recs) == 0 {
		return nil
	}
	if l.f == nil {
		if err := l.create(); err != nil {
			return err
		}
	}
	var buf []byte
	for _, r := range recs {
		buf = appendFrame(buf, encodeRecord(r))
	}
	if _, err := l.f.Write(buf); err != nil {
		l.rollback()
		return fmt.Errorf("group store: write %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		l.rollback()
		return fmt.Errorf("group store: sync %s: %w", l.path, err)
	}
	if l.claims {
		// After the fsync: if no later claim is there now, the next
		// coordinator claims after it and reads these records.
		if err := l.superseded(); err != nil {
			l.broken = err
			return err
		}
	}
	l.size += int64(len(buf))
	l.records += len(recs)
	for _, r := range recs {
		l.state.apply(r)
	}
	if l.records > l.compactMin && l.records > 2*(l.live()+1) {
		// The records are durable already; a failed rewrite leaves the
		// old (longer) file in place, or marks the log broken.
		_ = l.compact()
	}
	return nil
}

// rollback cuts a partial append off so later appends follow valid records.
func (l *fileLog) rollback() {
	if err := l.f.Truncate(l.size); err != nil {
		l.broken = fmt.Errorf("group store: %s is unusable after a failed write: %w", l.path, err)
	}
}

// compact rewrites the log as header + live records (atomicfile: tmp file,
// fsync, rename over the log, fsync the directory).
func (l *fileLog) compact() error {
	buf := appendFrame(nil, encodeHeader(l.group))
	n := 1
	if l.state.Meta != nil {
		buf = appendFrame(buf, encodeRecord(Record{Meta: l.state.Meta}))
		n++
	}
	for _, tp := range sortedTPs(l.state.Offsets) {
		c := l.state.Offsets[tp]
		buf = appendFrame(buf, encodeRecord(Record{TP: tp, Commit: &c}))
		n++
	}
	for _, r := range l.state.pendingRecords() {
		buf = appendFrame(buf, encodeRecord(r))
		n++
	}
	renamed := false
	var f *os.File
	// The reopen runs under the claim lock too: a later claimant's own
	// rewrite may not come between the rename and it.
	if err := l.fenced(func() error {
		if _, err := atomicfile.WriteWith(l.dir, LogName, buf, atomicfile.Options{Mode: 0o644, Renamed: func() { renamed = true }}); err != nil {
			return fmt.Errorf("group store: %w", err)
		}
		var err error
		if f, err = os.OpenFile(l.path, os.O_RDWR|os.O_APPEND, 0o644); err != nil {
			l.broken = fmt.Errorf("group store: reopen %s after compaction: %w", l.path, err)
			return l.broken
		}
		return nil
	}); err != nil {
		if renamed && l.broken == nil {
			// The compacted log is in place but its rename may not be
			// durable: appends after it could be lost with it.
			l.broken = err
		}
		return err
	}
	if l.f != nil {
		_ = l.f.Close()
	}
	l.f, l.size, l.records = f, int64(len(buf)), n
	return nil
}

// SaveMembers implements Log: tmp file, fsync, rename, directory fsync.
// A group whose directory name is a hash (a long id) gets its log's header
// first, before any commit: Groups names a hashed directory by it.
func (l *fileLog) SaveMembers(b []byte) error {
	if l.closed {
		return ErrClosed
	}
	if b != nil && l.f == nil && strings.HasPrefix(filepath.Base(l.dir), "h-") {
		if err := l.create(); err != nil {
			return err
		}
	}
	if l.claims {
		if _, err := os.Stat(l.dir); errors.Is(err, os.ErrNotExist) {
			if b == nil {
				return nil // nothing saved to remove
			}
			if err := atomicfile.Mkdir(l.dir); err != nil {
				return fmt.Errorf("group store: %w", err)
			}
			if err := syncDir(l.root); err != nil {
				return err
			}
		}
		return l.fenced(func() error { return l.saveMembers(b) })
	}
	return l.saveMembers(b)
}

func (l *fileLog) saveMembers(b []byte) error {
	if b == nil {
		err := os.Remove(filepath.Join(l.dir, membersName))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("group store: remove %s members: %w", l.dir, err)
		}
		return syncDir(l.dir)
	}
	if _, err := os.Stat(l.dir); errors.Is(err, os.ErrNotExist) {
		if err := atomicfile.Mkdir(l.dir); err != nil {
			return fmt.Errorf("group store: %w", err)
		}
		if err := syncDir(l.root); err != nil {
			return err
		}
	}
	if err := atomicfile.Write(l.dir, membersName, b, 0o644); err != nil {
		return fmt.Errorf("group store: save members: %w", err)
	}
	return nil
}

// Destroy implements Log: the directory is renamed aside, then removed. A
// log a later claim superseded removes nothing.
func (l *fileLog) Destroy() error {
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
	l.closed = true
	if l.claims {
		if _, err := os.Stat(l.dir); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return l.fenced(l.removeDir)
	}
	return l.removeDir()
}

func (l *fileLog) removeDir() error {
	ents, err := os.ReadDir(l.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("group store: delete %s: %w", l.dir, err)
	}
	if slices.ContainsFunc(ents, func(e os.DirEntry) bool { return !ownFile(e.Name()) }) {
		// Another store keeps a file here (the group's configs, which
		// outlive the group, as Kafka's GROUP config resource does):
		// only the group store's own files go, the membership first,
		// so that a crash between leaves a group with offsets and no
		// members, not members of a deleted group.
		for _, name := range []string{membersName, LogName} {
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("group store: delete %s: %w", l.dir, err)
			}
		}
		return syncDir(l.dir)
	}
	if testHookBeforeRenameAside != nil {
		testHookBeforeRenameAside(l.dir)
	}
	trash := filepath.Join(l.root, "."+filepath.Base(l.dir)+"-deleted-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(l.dir, trash); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("group store: delete %s: %w", l.dir, err)
	}
	if err := syncDir(l.root); err != nil {
		return err
	}
	if err := l.restoreOthers(trash); err != nil {
		return err
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("group store: remove %s: %w", trash, err)
	}
	return nil
}

// testHookBeforeRenameAside, when set (tests), runs between removeDir's
// read of a group's directory and its rename aside.
var testHookBeforeRenameAside func(dir string)

// restoreOthers moves back into the group's directory the files of other
// stores that the directory renamed aside to trash holds: one written
// between removeDir's read of the directory and its rename (another
// broker's change of the group's configs) outlives the group, as the
// files seen before it do. After the rename every write by path goes to
// a new directory, so a file already there is newer and is kept.
func (l *fileLog) restoreOthers(trash string) error {
	ents, err := os.ReadDir(trash)
	if err != nil {
		return fmt.Errorf("group store: read %s: %w", trash, err)
	}
	restored := false
	for _, e := range ents {
		name := e.Name()
		if ownFile(name) || strings.HasPrefix(name, ".") || strings.HasSuffix(name, atomicfile.LockSuffix) {
			continue // temporary and lock files belong to the writes that made them
		}
		if err := atomicfile.Mkdir(l.dir); err != nil {
			return fmt.Errorf("group store: restore %s: %w", name, err)
		}
		if err := os.Link(filepath.Join(trash, name), filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("group store: restore %s: %w", name, err)
		}
		restored = true
	}
	if !restored {
		return nil
	}
	if err := syncDir(l.dir); err != nil {
		return err
	}
	return syncDir(l.root)
}

// ownFile reports whether name is one of the group store's files in a
// group's directory: its log, its saved membership, its claim, or a
// temporary file of one of them.
func ownFile(name string) bool {
	name = strings.TrimPrefix(name, ".")
	for _, own := range []string{LogName, membersName, "claim"} {
		if name == own || strings.HasPrefix(name, own+".") {
			return true
		}
	}
	return false
}

// Close implements Log.
func (l *fileLog) Close() error {
	l.closed = true
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

func syncDir(dir string) error {
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("group store: sync dir %s: %w", dir, err)
	}
	return nil
}

// --- record format -----------------------------------------------------
//
// frame:   length uint32 | crc32c(payload) uint32 | payload
// payload: kind byte, then
//   header: group string
//   commit: topic string, partition int32, offset int64, leader epoch int32,
//           metadata string, commit time int64, expire time int64
//   delete: topic string, partition int32
//   meta:   kind string, protocol type string, empty since int64
//   txn commit: producer id int64, epoch int16, then a commit's fields
//   txn end:    producer id int64, epoch int16, commit byte (1 = commit)
// strings are a uvarint length and the bytes; integers are big endian.

const (
	kindHeader byte = 1
	kindCommit byte = 2
	kindDelete byte = 3
	kindMeta   byte = 4
	kindTxn    byte = 5
	kindTxnEnd byte = 6

	maxPayload = 16 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func appendFrame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

var errBadFrame = errors.New("bad frame")

// readFrame returns one frame's payload and the frame's size on disk.
func readFrame(r *bufio.Reader) ([]byte, int, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, 0, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n == 0 || n > maxPayload {
		return nil, 0, errBadFrame
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, 0, err
	}
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(hdr[4:]) {
		return nil, 0, errBadFrame
	}
	return payload, 8 + int(n), nil
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func encodeHeader(group string) []byte {
	return appendStr([]byte{kindHeader}, group)
}

func encodeRecord(r Record) []byte {
	switch {
	case r.TxnEnd != nil:
		b := binary.BigEndian.AppendUint64([]byte{kindTxnEnd}, uint64(r.TxnEnd.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(r.TxnEnd.Epoch))
		if r.TxnEnd.Commit {
			return append(b, 1)
		}
		return append(b, 0)
	case r.Meta != nil:
		b := []byte{kindMeta}
		b = appendStr(b, r.Meta.Kind)
		b = appendStr(b, r.Meta.ProtocolType)
		return binary.BigEndian.AppendUint64(b, uint64(r.Meta.EmptySince))
	case r.Delete:
		b := appendStr([]byte{kindDelete}, r.TP.Topic)
		return binary.BigEndian.AppendUint32(b, uint32(r.TP.Partition))
	default:
		c := r.Commit
		b := []byte{kindCommit}
		if r.Txn != nil {
			b = binary.BigEndian.AppendUint64([]byte{kindTxn}, uint64(r.Txn.ProducerID))
			b = binary.BigEndian.AppendUint16(b, uint16(r.Txn.Epoch))
		}
		b = appendStr(b, r.TP.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(r.TP.Partition))
		b = binary.BigEndian.AppendUint64(b, uint64(c.Offset))
		b = binary.BigEndian.AppendUint32(b, uint32(c.LeaderEpoch))
		b = appendStr(b, c.Metadata)
		b = binary.BigEndian.AppendUint64(b, uint64(c.CommitTime))
		b = binary.BigEndian.AppendUint64(b, uint64(c.ExpireTime))
		if c.TopicID != ([16]byte{}) {
			b = append(b, c.TopicID[:]...) // optional: older commits end before it
		}
		return b
	}
}

func decodeRecord(payload []byte) (Record, bool) {
	d := decoder{b: payload}
	var r Record
	switch kind := d.byte(); kind {
	case kindTxnEnd:
		e := TxnEnd{}
		e.ProducerID = int64(d.u64())
		e.Epoch = int16(d.u16())
		e.Commit = d.byte() == 1
		r.TxnEnd = &e
	case kindCommit, kindTxn:
		if kind == kindTxn {
			r.Txn = &TxnProducer{ProducerID: int64(d.u64()), Epoch: int16(d.u16())}
		}
		r.TP.Topic = d.str()
		r.TP.Partition = int32(d.u32())
		c := Commit{}
		c.Offset = int64(d.u64())
		c.LeaderEpoch = int32(d.u32())
		c.Metadata = d.str()
		c.CommitTime = int64(d.u64())
		c.ExpireTime = int64(d.u64())
		if len(d.b) == len(c.TopicID) {
			copy(c.TopicID[:], d.b)
			d.b = d.b[len(c.TopicID):]
		}
		r.Commit = &c
	case kindDelete:
		r.TP.Topic = d.str()
		r.TP.Partition = int32(d.u32())
		r.Delete = true
	case kindMeta:
		m := Meta{}
		m.Kind = d.str()
		m.ProtocolType = d.str()
		m.EmptySince = int64(d.u64())
		r.Meta = &m
	default:
		return Record{}, false
	}
	return r, d.err == nil && len(d.b) == 0
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) need(n int) bool {
	if d.err != nil || len(d.b) < n {
		d.err = errBadFrame
		return false
	}
	return true
}

func (d *decoder) byte() byte {
	if !d.need(1) {
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) u16() uint16 {
	if !d.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(d.b)
	d.b = d.b[2:]
	return v
}

func (d *decoder) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) u64() uint64 {
	if !d.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) str() string {
	if d.err != nil {
		return ""
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 || n > uint64(len(d.b)-k) {
		d.err = errBadFrame
		return ""
	}
	s := string(d.b[k : k+int(n)])
	d.b = d.b[k+int(n):]
	return s
}
