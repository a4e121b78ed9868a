// Package sharestate persists share-partition state (KIP-932) on the
// shared volume: one file per share group and partition,
// <data-dir>/__share/<group dir>/<topic>-<partition>.state, holding one
// CRC-32C framed snapshot (the topic's id, the start offset, then each
// in-flight record's state and delivery count), replaced atomically (tmp
// file, fsync, rename, fsync dir). The partition's next leader reads it.
// The topic id ties the state to one incarnation of the topic: a topic
// deleted and created again under the same name starts afresh.
//
// In cluster mode (Store.Claims) each snapshot is fenced by its leader's
// claim (storage/claim), <topic>-<partition>.claim beside it: the leader
// that first uses a share-partition records the position of the
// assignment file it leads from before it reads the mark and the snapshot
// (Claim), and replaces the snapshot only under the claim's lock: a
// leader's save is refused when the claim is no longer its own or the
// admin mark is no longer the one its state was loaded under (SaveAt). A
// leader stalled past its fence then never replaces the snapshot its
// successor loaded from. Admin changes write under the lock without a
// claim of their own, and write a new mark (Set). An admin change, like
// removing a share-partition's state (Delete), removes its claim, which
// fences the leader that loaded the old state as a later claim does: it
// loads the share-partition again. A claim is only the position of the
// assignment file, the same for a reload from the same file; the new mark
// refuses the saves of the old state that reach the volume after such a
// reload.
//
// A share-partition's files are named after its topic (the stem) when the
// name fits a file name with every suffix the store and atomicfile append
// (maxPlainStem). A longer topic name (Kafka allows 249 characters) is
// stood for by "~" and a hash of the name ("~" is not a topic character,
// so the stem is never a topic's own name), and the share-partition's
// <stem>-<partition>.topic holds the full name, written before any other
// file of the share-partition and removed with the last: the store's
// listings (Partitions, DropTopics) read the topic from it.
package sharestate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/atomicfile"
	"github.com/kaas-project/kaas/storage/claim"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// Snapshot is one share-partition's state: the start offset and, from it
// on, each record's state and delivery count.
type Snapshot struct {
	// TopicID is the topic the state belongs to; zero in a snapshot
	// written without one (format version 1).
	TopicID [16]byte
	Start   int64
	States  []uint8
	Counts  []int16
}

// Store reads and writes snapshots under a data directory.
type Store struct {
	dir string
	// Claims: a snapshot is replaced only by the leader holding its
	// share-partition's claim (cluster mode, where partitions move
	// between processes). Without it nothing is claimed or locked, and
	// SaveAt always writes.
	Claims bool
}

// ErrSuperseded: a leader with a later claim has loaded the
// share-partition, or an admin changed or removed its state since this
// leader loaded it (its claim is gone, or the admin mark is not the one it
// loaded); this leader writes nothing more of the state it loaded.
var ErrSuperseded = claim.ErrSuperseded

// Dir is the store's directory under the data directory.
const Dir = "__share"

// StateSuffix ends a share-partition's state file, <topic>-<partition>.state.
const StateSuffix = ".state"

// New returns the store under dataDir/__share, creating its directory.
func New(dataDir string) (*Store, error) {
	dir := filepath.Join(dataDir, Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("share state dir: %w", err)
	}
	return &Store{dir: dir}, nil
}

// Suffixes of a share-partition's files other than its snapshot
// (StateSuffix).
const (
	markSuffix  = ".mark"
	claimSuffix = ".claim"
	lockSuffix  = claimSuffix + ".lock"
	// topicSuffix ends the file holding the topic's name, beside the
	// files of a hashed stem only.
	topicSuffix = ".topic"
)

// maxPlainStem is the longest topic name that is its files' stem: a file
// name's limit (NAME_MAX, 255 bytes) less the longest name built on the
// stem, "-" and the partition, then the longest suffix written (".claim",
// ".state") in atomicfile's longer temporary form, "." + name +
// ".tmp-<random>" (the store writes name + ".tmp", and ".claim.lock" is
// shorter: the difference is the margin).
const maxPlainStem = 255 - len("-2147483647") - len(claimSuffix) - len("."+atomicfile.TmpSuffix+"-4294967295")

// hashedStemPrefix starts a stem that stands for a topic name too long to
// be one; no topic name starts with it.
const hashedStemPrefix = "~"

// stem is what a share-partition's file names hold of its topic: the name
// when it fits (maxPlainStem), else "~" and the hex of the first 16 bytes
// of the name's SHA-256.
func stem(topic string) string {
	if len(topic) <= maxPlainStem {
		return topic
	}
	sum := sha256.Sum256([]byte(topic))
	return hashedStemPrefix + hex.EncodeToString(sum[:16])
}

func (s *Store) path(group, topic string, partition int32) (dir, name string) {
	dir, base := s.files(group, topic, partition)
	return dir, base + StateSuffix
}

// files is a share-partition's directory and its files' name without a
// suffix (<stem>-<partition>).
func (s *Store) files(group, topic string, partition int32) (dir, base string) {
	return filepath.Join(s.dir, groupstore.DirName(group)), stem(topic) + "-" + strconv.Itoa(int(partition))
}

// claimOf is the claim of the share-partition whose files are dir/base*:
// <base>.claim, locked through <base>.claim.lock.
func claimOf(dir, base string) claim.File { return claim.File{Dir: dir, Name: base + claimSuffix} }

// lock takes the claim lock of topic's share-partition whose files are
// dir/base*, creating dir and, for a hashed stem, the topic's record
// (prepareDir): before the lock file, so that file is not left without
// it, and again under the lock, as a Delete or DropTopics that held it may
// have removed the record. Without Claims it takes none.
func (s *Store) lock(dir, base, topic string) (unlock func(), err error) {
	if !s.Claims {
		return func() {}, nil
	}
	if err := prepareDir(dir, base, topic); err != nil {
		return nil, err
	}
	unlock, err = claimOf(dir, base).Lock()
	if err != nil {
		return nil, fmt.Errorf("share state %s/%s: %w", dir, base, err)
	}
	if err := recordTopic(dir, base, topic); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// prepareDir makes the directory of topic's share-partition whose files
// are dir/base* and, for a hashed stem, its topic record: what a write of
// any of its files needs first.
func prepareDir(dir, base, topic string) error {
	if err := atomicfile.Mkdir(dir); err != nil {
		return fmt.Errorf("share state dir: %w", err)
	}
	return recordTopic(dir, base, topic)
}

// recordTopic makes sure dir/base.topic holds topic when base's stem is
// hashed: written when missing, or when what it holds is not a name of
// that stem (damaged). A record of another name of the same stem (a hash
// collision) is an error: the files are that topic's.
func recordTopic(dir, base, topic string) error {
	st := stem(topic)
	if !strings.HasPrefix(st, hashedStemPrefix) {
		return nil
	}
	name := base + topicSuffix
	b, err := os.ReadFile(filepath.Join(dir, name))
	switch {
	case err == nil && string(b) == topic:
		return nil
	case err == nil && stem(string(b)) == st:
		return fmt.Errorf("share state %s/%s: holds topic %q, not %q: both names have stem %s", dir, name, b, topic, st)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("read share state topic %s/%s: %w", dir, name, err)
	}
	// Unique temporary names: brokers sharing the volume may record the
	// same topic at once.
	if _, err := atomicfile.WriteWith(dir, name, []byte(topic), atomicfile.Options{Mode: 0o644, UniqueTmp: true}); err != nil {
		return fmt.Errorf("write share state topic %s/%s: %w", dir, name, err)
	}
	return nil
}

// topicOf is the topic and partition of the share-partition whose files
// are dir/base*: parsed from base, the topic read from base.topic for a
// hashed stem. ok is false for a base that is no share-partition's. A
// record missing, unreadable or not of the stem is an error.
func topicOf(dir, base string) (topic string, partition int32, ok bool, err error) {
	st, partition, ok := splitName(base)
	if !ok || !strings.HasPrefix(st, hashedStemPrefix) {
		return st, partition, ok, nil
	}
	name := base + topicSuffix
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", 0, false, fmt.Errorf("read share state topic %s/%s: %w", dir, name, err)
	}
	if stem(string(b)) != st {
		return "", 0, false, fmt.Errorf("share state topic %s/%s: %w: holds %q, whose stem is not %s", dir, name, ErrCorrupt, b, st)
	}
	return string(b), partition, true, nil
}

// removeTopicRecord removes dir/base.topic when no other file of the
// share-partition is left (the record goes last, so a file is never left
// without it).
func removeTopicRecord(dir, base string) error {
	if !strings.HasPrefix(base, hashedStemPrefix) {
		return nil
	}
	for _, suffix := range []string{StateSuffix, markSuffix, claimSuffix, lockSuffix} {
		_, err := os.Lstat(filepath.Join(dir, base+suffix))
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("share state %s/%s: %w", dir, base+suffix, err)
		}
	}
	return removeSynced(dir, base+topicSuffix)
}

// Claim records at, the position of the assignment file from which this
// broker leads the partition, as the share-partition's claim, and returns
// with the claim's lock held: the caller reads the mark and the snapshot
// (LoadMark, Load, and Discard for a snapshot it does not want), then
// unlocks, and saves the state under that claim and mark (SaveAt). A
// later claim there fails it with ErrSuperseded, recording nothing.
// Without Claims it records and locks nothing.
func (s *Store) Claim(group, topic string, partition int32, at assignment.Position) (unlock func(), err error) {
	dir, base := s.files(group, topic, partition)
	unlock, err = s.lock(dir, base, topic)
	if err != nil || !s.Claims {
		return unlock, err
	}
	if _, err := claimOf(dir, base).Take(at); err != nil {
		unlock()
		return nil, fmt.Errorf("share state %s/%s: %w", dir, base, err)
	}
	return unlock, nil
}

// Load reads a share-partition's snapshot; ok is false when none was
// written. A corrupt file is an error (the caller starts afresh and says so).
func (s *Store) Load(group, topic string, partition int32) (snap Snapshot, ok bool, err error) {
	dir, name := s.path(group, topic, partition)
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return Snapshot{}, false, nil
	}
	if err != nil {
		return Snapshot{}, false, fmt.Errorf("read share state %s/%s: %w", dir, name, err)
	}
	snap, err = Decode(b)
	if err != nil {
		return Snapshot{}, false, fmt.Errorf("share state %s/%s: %w", dir, name, err)
	}
	return snap, true, nil
}

// SaveAt replaces a share-partition's snapshot for its leader, which
// claimed it at at (Claim) and read mark, its admin mark, with the state
// snap was made from (LoadMark). With Claims it writes under the claim's
// lock and only while the claim is still at and the mark on the volume is
// still mark; otherwise it writes nothing and fails with ErrSuperseded: a
// later leader loaded the share-partition, or an admin changed or removed
// its state since this leader loaded it. The mark refuses a save made from
// the state loaded before an admin change even once the leader has
// claimed the share-partition again at the same position (a reload from
// the same assignment file). A mark that cannot be read fails the save
// too, writing nothing, with an error saying so (not ErrSuperseded):
// nothing tells which state the volume holds. The snapshot is renamed into
// place before the lock goes, so a successor's Claim, which waits for the
// lock, reads it. Without Claims it writes, whatever the mark.
func (s *Store) SaveAt(group, topic string, partition int32, at assignment.Position, mark uint64, snap Snapshot) error {
	if !s.Claims {
		return s.Save(group, topic, partition, snap)
	}
	dir, base := s.files(group, topic, partition)
	unlock, err := s.lock(dir, base, topic)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.fence(group, topic, partition, at, mark); err != nil {
		return err
	}
	return s.Save(group, topic, partition, snap)
}

// fence is SaveAt's check, under the claim's lock: the claim is still at
// and the admin mark still mark.
func (s *Store) fence(group, topic string, partition int32, at assignment.Position, mark uint64) error {
	dir, base := s.files(group, topic, partition)
	if err := claimOf(dir, base).Held(at); err != nil {
		return fmt.Errorf("share state %s/%s: %w", dir, base, err)
	}
	m, err := s.LoadMark(group, topic, partition)
	if err != nil {
		return fmt.Errorf("share state %s/%s: snapshot not written: the admin mark, checked before a leader's save, cannot be read: %w", dir, base, err)
	}
	if m != mark {
		return fmt.Errorf("share state %s/%s: %w: its admin mark is %d, this leader loaded its state under %d (an admin changed it since)", dir, base, ErrSuperseded, m, mark)
	}
	return nil
}

// Set is an admin change of a share-partition's state
// (AlterShareGroupOffsets: snap; DeleteShareGroupOffsets: nil), written by
// the group coordinator's broker, not by the partition's leader: under the
// claim's lock, so it never interleaves with a leader's SaveAt or Claim,
// but without a claim of its own. The snapshot is replaced (or removed),
// then the mark, which the leader compares with the one it loaded (at a
// new share session, and in each SaveAt); then the claim is removed, so a
// leader that loaded the old state writes nothing more of it (it loads the
// share-partition again) even before it rechecks the mark. Without Claims
// there is no claim to remove.
func (s *Store) Set(group, topic string, partition int32, snap *Snapshot, mark uint64) error {
	dir, base := s.files(group, topic, partition)
	unlock, err := s.lock(dir, base, topic)
	if err != nil {
		return err
	}
	defer unlock()
	if snap == nil {
		err = s.Discard(group, topic, partition)
	} else {
		err = s.Save(group, topic, partition, *snap)
	}
	if err != nil {
		return err
	}
	if err := s.SaveMark(group, topic, partition, mark); err != nil {
		return err
	}
	return removeClaim(dir, base)
}

// Save replaces a share-partition's snapshot, unfenced: SaveAt is a
// leader's write, Set an admin's.
func (s *Store) Save(group, topic string, partition int32, snap Snapshot) error {
	dir, base := s.files(group, topic, partition)
	name := base + StateSuffix
	if err := prepareDir(dir, base, topic); err != nil {
		return err
	}
	if err := atomicfile.Write(dir, name, Encode(snap), 0o644); err != nil {
		return fmt.Errorf("write share state %s/%s: %w", dir, name, err)
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxState is the highest record state a snapshot holds: the share
// package's Archiving (available, acquired, acknowledged, archived,
// archiving its dead-letter write).
const maxState = 4

// Format versions: 1 has no topic id, 2 has one after the version byte.
const (
	versionNoID = 1
	version     = 2
)

// Encode frames snap: payload length, CRC-32C of the payload, payload
// (version, topic id, start, record count, then state and count per
// record).
func Encode(snap Snapshot) []byte {
	p := make([]byte, 0, 29+3*len(snap.States))
	p = append(p, version)
	p = append(p, snap.TopicID[:]...)
	p = binary.BigEndian.AppendUint64(p, uint64(snap.Start))
	p = binary.BigEndian.AppendUint32(p, uint32(len(snap.States)))
	for i, st := range snap.States {
		p = append(p, st)
		p = binary.BigEndian.AppendUint16(p, uint16(snap.Counts[i]))
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(p, castagnoli))
	return append(out, p...)
}

// ErrCorrupt is a snapshot whose frame or payload does not check out.
var ErrCorrupt = errors.New("corrupt share-partition snapshot")

// Decode reads a snapshot Encode wrote, or one of format version 1 (its
// TopicID zero).
func Decode(b []byte) (Snapshot, error) {
	if len(b) < 8 {
		return Snapshot{}, ErrCorrupt
	}
	n := binary.BigEndian.Uint32(b)
	p := b[8:]
	if uint32(len(p)) != n || crc32.Checksum(p, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return Snapshot{}, ErrCorrupt
	}
	var snap Snapshot
	switch {
	case len(p) >= 29 && p[0] == version:
		snap.TopicID = [16]byte(p[1:17])
		p = p[16:]
	case len(p) >= 13 && p[0] == versionNoID:
	default:
		return Snapshot{}, ErrCorrupt
	}
	snap.Start = int64(binary.BigEndian.Uint64(p[1:]))
	count := binary.BigEndian.Uint32(p[9:])
	p = p[13:]
	if uint64(len(p)) != 3*uint64(count) {
		return Snapshot{}, ErrCorrupt
	}
	snap.States = make([]uint8, count)
	snap.Counts = make([]int16, count)
	for i := range snap.States {
		snap.States[i] = p[3*i]
		snap.Counts[i] = int16(binary.BigEndian.Uint16(p[3*i+1:]))
		if snap.States[i] > maxState || snap.Counts[i] < 0 {
			return Snapshot{}, ErrCorrupt
		}
	}
	return snap, nil
}

// Of reports whether the snapshot belongs to the topic whose id is id: a
// snapshot without a topic id is taken for the topic's current
// incarnation (nothing tells otherwise), and gets the id when next saved.
func (s Snapshot) Of(id [16]byte) bool { return SameTopic(s.TopicID, id) }

// SameTopic reports whether state stored for the topic whose id is stored
// (zero: written without one) belongs to the topic whose id is current.
func SameTopic(stored, current [16]byte) bool {
	return stored == [16]byte{} || stored == current
}

// Partitions lists the partitions a share group has state for, by topic.
// A snapshot whose topic cannot be told (its hashed stem's record unreadable)
// is left out of the list and reported in the error.
func (s *Store) Partitions(group string) (map[string][]int32, error) {
	dir := filepath.Join(s.dir, groupstore.DirName(group))
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list share state of %q: %w", group, err)
	}
	out := map[string][]int32{}
	var errs []error
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), StateSuffix)
		if !ok {
			continue
		}
		topic, p, ok, err := topicOf(dir, base)
		if err != nil {
			errs = append(errs, fmt.Errorf("list share state of %q: %w", group, err))
		}
		if !ok {
			continue
		}
		out[topic] = append(out[topic], p)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out, errors.Join(errs...)
}

// Delete removes a share-partition's snapshot and its claim, under the
// claim's lock, and the topic's record when no admin mark is left; none is
// not an error. A leader that loaded the share-partition finds no claim of
// its own and writes nothing more of it.
func (s *Store) Delete(group, topic string, partition int32) error {
	dir, base := s.files(group, topic, partition)
	unlock, err := s.lock(dir, base, topic)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.Discard(group, topic, partition); err != nil {
		return err
	}
	if err := removeClaim(dir, base); err != nil {
		return err
	}
	return removeTopicRecord(dir, base)
}

// Discard removes a share-partition's snapshot and leaves its claim: for
// a leader holding the claim's lock (Claim) that found the snapshot of an
// earlier topic of the same name, and for Delete and Set.
func (s *Store) Discard(group, topic string, partition int32) error {
	dir, name := s.path(group, topic, partition)
	return removeSynced(dir, name)
}

// removeClaim removes the claim of the share-partition whose files are
// dir/base*, and its lock file (a waiter for the lock then takes the one
// created at the path, filelock.Acquire).
func removeClaim(dir, base string) error {
	c := claimOf(dir, base)
	return removeSynced(dir, c.Name, c.Name+".lock")
}

// removeSynced removes names from dir and syncs dir if any was there.
func removeSynced(dir string, names ...string) error {
	removed := false
	for _, name := range names {
		err := os.Remove(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove share state %s/%s: %w", dir, name, err)
		}
		removed = removed || err == nil
	}
	if !removed {
		return nil
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("remove share state in %s: %w", dir, err)
	}
	return nil
}

// markName is the file holding the admin mark of the share-partition
// whose files are base*: a token an admin change (AlterShareGroupOffsets,
// DeleteShareGroupOffsets) replaces, so the partition's leader, wherever
// it runs, sees that the snapshot it holds in memory is no longer the
// share-partition's state.
func markName(base string) string { return base + markSuffix }

// SaveMark replaces a share-partition's admin mark.
func (s *Store) SaveMark(group, topic string, partition int32, mark uint64) error {
	dir, base := s.files(group, topic, partition)
	if err := prepareDir(dir, base, topic); err != nil {
		return err
	}
	name := markName(base)
	if err := atomicfile.Write(dir, name, binary.BigEndian.AppendUint64(nil, mark), 0o644); err != nil {
		return fmt.Errorf("write share state mark %s/%s: %w", dir, name, err)
	}
	return nil
}

// LoadMark reads a share-partition's admin mark; 0 when no admin changed
// it.
func (s *Store) LoadMark(group, topic string, partition int32) (uint64, error) {
	dir, base := s.files(group, topic, partition)
	name := markName(base)
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read share state mark %s/%s: %w", dir, name, err)
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("share state mark %s/%s: %w", dir, name, ErrCorrupt)
	}
	return binary.BigEndian.Uint64(b), nil
}

// DropTopics removes, in every share group, the snapshots, admin marks and
// claims of the share-partitions gone reports as its topic's state (a
// deleted topic's: Kafka drops share state with its topic). gone is asked
// with the topic's name and the snapshot's topic id (zero for a
// share-partition with a mark or a claim but no snapshot). An unreadable
// snapshot is left alone, and so is a share-partition whose topic cannot be
// told (its hashed stem's record unreadable: an error). With Claims a
// share-partition is judged again under its claim's lock before its files
// go, so a snapshot a leader of a topic created again wrote meanwhile
// stays. It returns how many share-partitions it removed.
func (s *Store) DropTopics(gone func(topic string, id [16]byte) bool) (int, error) {
	groups, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("list share state: %w", err)
	}
	removed := 0
	var errs []error
	for _, g := range groups {
		if !g.IsDir() {
			continue
		}
		dir := filepath.Join(s.dir, g.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("list share state %s: %w", dir, err))
			continue
		}
		var bases []string
		seen := map[string]bool{}
		for _, e := range entries {
			for _, suffix := range []string{StateSuffix, markSuffix, claimSuffix, lockSuffix, topicSuffix} {
				if base, ok := strings.CutSuffix(e.Name(), suffix); ok && !seen[base] {
					seen[base] = true
					bases = append(bases, base)
				}
			}
		}
		slices.Sort(bases)
		for _, base := range bases {
			topic, _, ok, err := topicOf(dir, base)
			if err != nil {
				errs = append(errs, err)
			}
			if !ok {
				continue
			}
			drop, err := s.dropGone(dir, base, topic, gone)
			if err != nil {
				errs = append(errs, err)
			}
			if drop {
				removed++
			}
		}
	}
	return removed, errors.Join(errs...)
}

// dropGone removes the files of topic's share-partition dir/base* when gone
// says its state is a deleted topic's, judged again under the claim's
// lock (with Claims).
func (s *Store) dropGone(dir, base, topic string, gone func(topic string, id [16]byte) bool) (bool, error) {
	judge := func() (bool, error) {
		var id [16]byte
		b, err := os.ReadFile(filepath.Join(dir, base+StateSuffix))
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return false, fmt.Errorf("read share state %s/%s.state: %w", dir, base, err)
		default:
			snap, err := Decode(b)
			if err != nil {
				return false, nil
			}
			id = snap.TopicID
		}
		return gone(topic, id), nil
	}
	if drop, err := judge(); !drop || err != nil {
		return false, err
	}
	unlock, err := s.lock(dir, base, topic)
	if err != nil {
		return false, err
	}
	defer unlock()
	if drop, err := judge(); !drop || err != nil {
		return false, err
	}
	// The topic's record goes last: a file left by a failure still tells
	// its topic.
	return true, removeSynced(dir, base+StateSuffix, markName(base), base+claimSuffix, base+lockSuffix, base+topicSuffix)
}

// splitName is the stem and partition of a share-partition's file name
// without its suffix (<stem>-<partition>); topicOf tells the topic.
func splitName(base string) (string, int32, bool) {
	i := strings.LastIndexByte(base, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(base[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, false
	}
	return base[:i], int32(p), true
}
