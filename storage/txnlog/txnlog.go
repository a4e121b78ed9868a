// Package txnlog keeps the transaction coordinator's durable state: one
// append-only log per transactional id under <data-dir>/__transactions,
// each record the whole state of the transaction after a transition, in the
// group store's CRC-framed format (groupstore.AppendFrame). The last valid
// record is the state; a torn tail is ignored, and a log holding more than
// one record is rewritten to its last one (atomicfile) when it is loaded and
// whenever it grows past compactAfter records. Save returns once the record
// is fsynced, so a coordinator answers a client only after the transition it
// reports survives a crash or a move to another broker.
//
// In cluster mode (File.Claims) each id's log is fenced by a coordinator
// claim (storage/claim), <name>.claim: the coordinator that loads the id
// records the position of the assignment file it coordinates from before it
// reads the log, and rewrites the log when the claim is new, so that a
// stalled earlier coordinator's open descriptor names a file nobody reads.
// Every append reads the claim after its fsync, before the transition
// counts as saved; compaction and removal run under the claim's lock and
// only while the claim is still this coordinator's.
package txnlog

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/atomicfile"
	"github.com/kaas-project/kaas/storage/claim"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// Status is where a transaction stands.
type Status uint8

// The transaction states, as Kafka's TransactionState.
const (
	Empty Status = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
)

func (s Status) String() string {
	switch s {
	case Empty:
		return "Empty"
	case Ongoing:
		return "Ongoing"
	case PrepareCommit:
		return "PrepareCommit"
	case PrepareAbort:
		return "PrepareAbort"
	case CompleteCommit:
		return "CompleteCommit"
	case CompleteAbort:
		return "CompleteAbort"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// TP names a partition.
type TP struct {
	Topic     string `json:"t"`
	Partition int32  `json:"p"`
}

// State is one transactional id's durable state.
type State struct {
	ID         string `json:"id"`
	ProducerID int64  `json:"pid"`
	Epoch      int16  `json:"epoch"`
	// LastProducerID and LastEpoch are the producer id and epoch before
	// the last bump (KIP-360: a producer retrying InitProducerId with them
	// gets the current ones back instead of being fenced).
	LastProducerID int64  `json:"last_pid"`
	LastEpoch      int16  `json:"last_epoch"`
	TimeoutMs      int32  `json:"timeout_ms"`
	Status         Status `json:"status"`
	Partitions     []TP   `json:"partitions,omitempty"`
	// Groups are the consumer groups whose offsets the transaction
	// commits (AddOffsetsToTxn).
	Groups []string `json:"groups,omitempty"`
	// StartMs is when the transaction became Ongoing (Unix ms).
	StartMs  int64 `json:"start_ms"`
	UpdateMs int64 `json:"update_ms"`
	// Marker is the producer id and epoch the markers of a prepared
	// transaction carry, set when it is prepared; nil: ProducerID and
	// Epoch. A prepare that bumps the epoch (transaction protocol v2, or
	// an abort that fences the producer) writes the markers with the old
	// producer id at the next epoch, which fences every earlier write of
	// that id even when the bump moved the producer to a new id.
	Marker *Marker `json:"marker,omitempty"`
	// EndBumped is set when the last bump ended the producer's
	// transaction: an EndTxn's (transaction protocol v2), or the
	// coordinator's abort of it on timeout. A v2 EndTxn retried with
	// LastProducerID and LastEpoch is then answered the current ones,
	// which no other producer that knows the old pair (an incarnation
	// fenced by a new one's InitProducerId) may get.
	EndBumped bool `json:"end_bumped,omitempty"`
}

// Marker is a producer id and epoch for markers.
type Marker struct {
	ProducerID int64 `json:"pid"`
	Epoch      int16 `json:"epoch"`
	// Bumped: Epoch is one past every write of the transaction
	// (messages.WriteTxnMarker.Bumped). Absent in states saved before
	// it existed, whose markers are then checked as unbumped.
	Bumped bool `json:"bumped,omitempty"`
}

// Clone returns a deep copy of s.
func (s State) Clone() State {
	s.Partitions = append([]TP(nil), s.Partitions...)
	s.Groups = append([]string(nil), s.Groups...)
	if s.Marker != nil {
		m := *s.Marker
		s.Marker = &m
	}
	return s
}

// Store persists transaction states. Its methods block on disk and are
// called off the coordinator actor's Receive; calls for one id are never
// concurrent (the coordinator persists one transition of an id at a time).
type Store interface {
	// IDs lists the transactional ids with a stored state.
	IDs() ([]string, error)
	// Load returns the stored state of id; ok is false when there is none.
	Load(id string) (st State, ok bool, err error)
	// Save durably records st as its id's state.
	Save(st State) error
	// Remove deletes id's state (an expired transactional id); none
	// stored is not an error.
	Remove(id string) error
	// Persistent reports whether states survive a restart.
	Persistent() bool
}

// Memory is the in-memory store (local-dev mode without --data-dir).
type Memory struct {
	mu sync.Mutex
	m  map[string]State
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{m: map[string]State{}} }

// IDs implements Store.
func (s *Memory) IDs() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.m))
	for id := range s.m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}

// Load implements Store.
func (s *Memory) Load(id string) (State, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[id]
	return st.Clone(), ok, nil
}

// Save implements Store.
func (s *Memory) Save(st State) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[st.ID] = st.Clone()
	return nil
}

// Remove implements Store.
func (s *Memory) Remove(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
	return nil
}

// Persistent implements Store.
func (s *Memory) Persistent() bool { return false }

// File is the file store under Root (<data-dir>/__transactions): one log
// per transactional id, named by groupstore.DirName(id) + ".log".
type File struct {
	Root string
	// Claims: LoadAt claims an id's log for the coordinator, and its
	// writes are fenced by the claim (cluster mode, where coordinators
	// move between processes).
	Claims bool

	mu     sync.Mutex
	counts map[string]int // records in each log since it was last compacted
	// claims holds the claim each id was loaded at (Claims).
	claims map[string]assignment.Position
}

// ErrSuperseded: a coordinator with a later claim has loaded the id; what
// this store wrote since does not count.
var ErrSuperseded = claim.ErrSuperseded

const (
	suffix = ".log"
	// compactAfter is how many records a log holds before Save rewrites
	// it to its last one.
	compactAfter = 64
)

// Dir is the log's directory under the data directory.
const Dir = "__transactions"

// NewFile opens (creating) the store under dataDir/__transactions.
func NewFile(dataDir string) (*File, error) {
	root := filepath.Join(dataDir, Dir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("transaction log: %w", err)
	}
	return &File{Root: root, counts: map[string]int{}, claims: map[string]assignment.Position{}}, nil
}

// Persistent implements Store.
func (s *File) Persistent() bool { return true }

// IDs implements Store: the id a log's name encodes, or for a hashed name
// the id its last record names.
func (s *File) IDs() ([]string, error) {
	ents, err := os.ReadDir(s.Root)
	if err != nil {
		return nil, fmt.Errorf("list transaction logs: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		if enc, ok := strings.CutPrefix(strings.TrimSuffix(e.Name(), suffix), "g-"); ok {
			if id, err := base64.RawURLEncoding.DecodeString(enc); err == nil && groupstore.DirName(string(id)) == strings.TrimSuffix(e.Name(), suffix) {
				out = append(out, string(id))
				continue
			}
		}
		st, n, _, err := readLog(filepath.Join(s.Root, e.Name()))
		if err != nil || n == 0 {
			continue
		}
		out = append(out, st.ID)
	}
	sort.Strings(out)
	return out, nil
}

func (s *File) name(id string) string { return groupstore.DirName(id) + suffix }

// claimFile is id's claim, <name>.claim, locked through <name>.claim.lock.
func (s *File) claimFile(id string) claim.File {
	return claim.File{Dir: s.Root, Name: groupstore.DirName(id) + ".claim"}
}

// Load implements Store; a log of more than one record is compacted.
// With Claims, use LoadAt.
func (s *File) Load(id string) (State, bool, error) { return s.load(id, nil) }

// LoadAt is Load for a coordinator that follows the assignment file at
// position at: with Claims, it records that claim before it reads the log
// (ErrSuperseded when a later one is there) and fences the id's writes by
// it from then on.
func (s *File) LoadAt(id string, at assignment.Position) (State, bool, error) {
	return s.load(id, &at)
}

func (s *File) load(id string, at *assignment.Position) (State, bool, error) {
	claimed := false
	if s.Claims {
		if at == nil {
			return State{}, false, fmt.Errorf("load transaction log of %q: claims need the coordinator's assignment position", id)
		}
		cf := s.claimFile(id)
		unlock, err := cf.Lock()
		if err != nil {
			return State{}, false, fmt.Errorf("load transaction log of %q: %w", id, err)
		}
		defer unlock()
		if claimed, err = cf.Take(*at); err != nil {
			return State{}, false, fmt.Errorf("load transaction log of %q: %w", id, err)
		}
	}
	name := s.name(id)
	st, n, torn, err := readLog(filepath.Join(s.Root, name))
	if err != nil {
		return State{}, false, err
	}
	if n == 0 {
		if torn || claimed {
			// Not one whole record: a first Save torn by a crash, or
			// (with a new claim) the empty file an earlier
			// coordinator's first Save opened, which then writes to a
			// file nobody reads.
			if err := os.Remove(filepath.Join(s.Root, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return State{}, false, fmt.Errorf("remove torn transaction log: %w", err)
			}
		}
		s.loaded(id, at, 0)
		return State{}, false, nil
	}
	if st.ID != id {
		return State{}, false, fmt.Errorf("transaction log %s names %q, not %q", name, st.ID, id)
	}
	if n > 1 || torn || claimed {
		// A new claim rewrites even a one-record log: a coordinator
		// that opened it before the claim then appends to a file
		// nobody reads.
		if err := s.rewrite(st); err != nil {
			return State{}, false, err
		}
	}
	s.loaded(id, at, 1)
	return st, true, nil
}

// loaded records what a load of id found: records in its log, and the
// claim it was loaded at.
func (s *File) loaded(id string, at *assignment.Position, records int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[id] = records
	if at != nil && s.Claims {
		s.claims[id] = *at
	}
}

// claimOf returns the claim id was loaded at (Claims).
func (s *File) claimOf(id string) (assignment.Position, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.claims[id]
	if !ok {
		return assignment.Position{}, fmt.Errorf("transaction log of %q: written before this coordinator loaded it", id)
	}
	return at, nil
}

// fenced runs op under id's claim lock while the claim is still the one
// id was loaded at; without Claims it runs op.
func (s *File) fenced(id string, op func() error) error {
	if !s.Claims {
		return op()
	}
	at, err := s.claimOf(id)
	if err != nil {
		return err
	}
	cf := s.claimFile(id)
	unlock, err := cf.Lock()
	if err != nil {
		return fmt.Errorf("transaction log of %q: %w", id, err)
	}
	defer unlock()
	if err := cf.Held(at); err != nil {
		return fmt.Errorf("transaction log of %q: %w", id, err)
	}
	return op()
}

// Save implements Store: append and fsync, compacting a long log. With
// Claims it fails with ErrSuperseded, and st does not count as saved, when
// the id's claim is no longer the one it was loaded at.
func (s *File) Save(st State) error {
	payload, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode transaction %q: %w", st.ID, err)
	}
	s.mu.Lock()
	long := s.counts[st.ID] >= compactAfter
	s.mu.Unlock()
	if long {
		return s.fenced(st.ID, func() error { return s.rewrite(st) })
	}
	held := func() error { return nil }
	if s.Claims {
		at, err := s.claimOf(st.ID)
		if err != nil {
			return err
		}
		held = func() error {
			if err := s.claimFile(st.ID).Held(at); err != nil {
				return fmt.Errorf("transaction log of %q: %w", st.ID, err)
			}
			return nil
		}
	}
	if err := s.append(st.ID, payload, held); err != nil {
		return err
	}
	// After the fsync: if the claim is still this coordinator's, the next
	// one claims after it and reads this record.
	if err := held(); err != nil {
		return err
	}
	s.mu.Lock()
	s.counts[st.ID]++
	s.mu.Unlock()
	return nil
}

// append appends one record to id's log and fsyncs it (and the directory,
// for a new log). held runs once the log is open, before the write: a log
// opened after a later coordinator claimed the id is its, and a log opened
// before is the file its load replaces, so that what this writes after the
// load is never read.
func (s *File) append(id string, payload []byte, held func() error) error {
	path := filepath.Join(s.Root, s.name(id))
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open transaction log: %w", err)
	}
	if err := held(); err != nil {
		_ = f.Close()
		return err
	}
	_, werr := f.Write(groupstore.AppendFrame(nil, payload))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("append transaction log of %q: %w", id, werr)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		return syncDir(s.Root)
	}
	return nil
}

// Remove implements Store: the log goes, and its directory entry is
// synced so that a crash does not bring it back. With Claims, only while
// the claim is the one the id was loaded at; the claim and its lock file
// go with the log, and a coordinator that loaded the id earlier finds no
// claim of its own and writes nothing more.
func (s *File) Remove(id string) error {
	err := s.fenced(id, func() error {
		err := os.Remove(filepath.Join(s.Root, s.name(id)))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove transaction log of %q: %w", id, err)
		}
		if s.Claims {
			cf := s.claimFile(id)
			for _, name := range []string{cf.Name, cf.Name + ".lock"} {
				if err := os.Remove(filepath.Join(s.Root, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("remove transaction claim of %q: %w", id, err)
				}
			}
		}
		return syncDir(s.Root)
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.counts, id)
	delete(s.claims, id)
	s.mu.Unlock()
	return nil
}

// rewrite replaces id's log with the single record st.
func (s *File) rewrite(st State) error {
	payload, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode transaction %q: %w", st.ID, err)
	}
	if err := atomicfile.Write(s.Root, s.name(st.ID), groupstore.AppendFrame(nil, payload), 0o644); err != nil {
		return fmt.Errorf("compact transaction log of %q: %w", st.ID, err)
	}
	s.mu.Lock()
	s.counts[st.ID] = 1
	s.mu.Unlock()
	return nil
}

// readLog returns the last valid record of a log, how many valid records
// precede a torn or corrupt tail (0: none, or no file), and whether bytes
// follow them.
func readLog(path string) (State, int, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return State{}, 0, false, nil
	}
	if err != nil {
		return State{}, 0, false, fmt.Errorf("open transaction log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return State{}, 0, false, fmt.Errorf("stat transaction log: %w", err)
	}
	var last State
	n := 0
	good := ReadLog(f, func(_ int64, st State) {
		last = st
		n++
	})
	return last, n, good < fi.Size(), nil
}

// ReadLog walks the states a transactional id's log read from r holds, in
// order, with where each starts (tools read them with it: kaas dump-log).
// It stops at the end or at the first record that is torn, fails its CRC
// or does not decode (the log is the valid prefix before it, and its last
// state the id's), and returns the size of the records handed to fn.
func ReadLog(r io.Reader, fn func(pos int64, st State)) (good int64) {
	br := bufio.NewReader(r)
	for {
		payload, size, err := groupstore.ReadFrame(br)
		if err != nil {
			// EOF, a torn tail or a corrupt frame: the valid prefix is the
			// log; anything after it is cut off by the next rewrite.
			return good
		}
		var st State
		if json.Unmarshal(payload, &st) != nil {
			return good
		}
		fn(good, st)
		good += int64(size)
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync transaction log dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync transaction log dir: %w", err)
	}
	return nil
}
