// Package sharestate persists share-partition state (KIP-932) on the
// shared volume: one file per share group and partition,
// <data-dir>/__share/<group dir>/<topic>-<partition>.state, holding one
// CRC-32C framed snapshot (the topic's id, the start offset, then each
// in-flight record's state and delivery count), replaced atomically (tmp
// file, fsync, rename, fsync dir). The partition's next leader reads it.
// The topic id ties the state to one incarnation of the topic: a topic
// deleted and created again under the same name starts afresh.
package sharestate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kaas-project/kaas/storage/atomicfile"
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
type Store struct{ dir string }

// New returns the store under dataDir, creating its directory.
func New(dataDir string) (*Store, error) {
	dir := filepath.Join(dataDir, "__share")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("share state dir: %w", err)
	}
	return &Store{dir: dir}, nil
}

func (s *Store) path(group, topic string, partition int32) (dir, name string) {
	return filepath.Join(s.dir, groupstore.DirName(group)), topic + "-" + strconv.Itoa(int(partition)) + ".state"
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

// Save replaces a share-partition's snapshot.
func (s *Store) Save(group, topic string, partition int32, snap Snapshot) error {
	dir, name := s.path(group, topic, partition)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("share state dir: %w", err)
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
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".state")
		if !ok {
			continue
		}
		topic, p, ok := splitName(name)
		if !ok {
			continue
		}
		out[topic] = append(out[topic], p)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out, nil
}

// Delete removes a share-partition's snapshot (DeleteShareGroupOffsets);
// none is not an error.
func (s *Store) Delete(group, topic string, partition int32) error {
	dir, name := s.path(group, topic, partition)
	err := os.Remove(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove share state %s/%s: %w", dir, name, err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("remove share state %s/%s: %w", dir, name, err)
	}
	return nil
}

// markName is the file holding a share-partition's admin mark: a token an
// admin change (AlterShareGroupOffsets, DeleteShareGroupOffsets) replaces,
// so the partition's leader, wherever it runs, sees that the snapshot it
// holds in memory is no longer the share-partition's state.
func markName(topic string, partition int32) string {
	return topic + "-" + strconv.Itoa(int(partition)) + ".mark"
}

// SaveMark replaces a share-partition's admin mark.
func (s *Store) SaveMark(group, topic string, partition int32, mark uint64) error {
	dir, _ := s.path(group, topic, partition)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("share state dir: %w", err)
	}
	name := markName(topic, partition)
	if err := atomicfile.Write(dir, name, binary.BigEndian.AppendUint64(nil, mark), 0o644); err != nil {
		return fmt.Errorf("write share state mark %s/%s: %w", dir, name, err)
	}
	return nil
}

// LoadMark reads a share-partition's admin mark; 0 when no admin changed
// it.
func (s *Store) LoadMark(group, topic string, partition int32) (uint64, error) {
	dir, _ := s.path(group, topic, partition)
	name := markName(topic, partition)
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

// DropTopics removes, in every share group, the snapshots and admin marks
// of the share-partitions gone reports as its topic's state (a deleted
// topic's: Kafka drops share state with its topic). gone is asked with the
// topic's name and the snapshot's topic id (zero for a snapshot without
// one, or a mark without a snapshot). An unreadable snapshot is left
// alone. It returns how many share-partitions it removed.
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
		states := map[string]bool{}
		for _, e := range entries {
			if base, ok := strings.CutSuffix(e.Name(), ".state"); ok {
				states[base] = true
			}
		}
		changed := false
		for _, e := range entries {
			base, isState := strings.CutSuffix(e.Name(), ".state")
			if !isState {
				b, isMark := strings.CutSuffix(e.Name(), ".mark")
				if !isMark || states[b] {
					continue // a mark goes with its snapshot
				}
				base = b
			}
			topic, _, ok := splitName(base)
			if !ok {
				continue
			}
			var id [16]byte
			if isState {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					errs = append(errs, fmt.Errorf("read share state %s/%s: %w", dir, e.Name(), err))
					continue
				}
				snap, err := Decode(b)
				if err != nil {
					continue
				}
				id = snap.TopicID
			}
			if !gone(topic, id) {
				continue
			}
			for _, name := range []string{base + ".state", base + ".mark"} {
				if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, fmt.Errorf("remove share state %s/%s: %w", dir, name, err))
				}
			}
			removed++
			changed = true
		}
		if changed {
			if err := atomicfile.SyncDir(dir); err != nil {
				errs = append(errs, fmt.Errorf("remove share state in %s: %w", dir, err))
			}
		}
	}
	return removed, errors.Join(errs...)
}

// splitName is the topic and partition of a share-partition's file name
// without its suffix (<topic>-<partition>).
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
