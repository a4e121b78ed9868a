// Package txnlog keeps the transaction coordinator's durable state: one
// append-only log per transactional id under <data-dir>/__transactions,
// each record the whole state of the transaction after a transition, in the
// group store's CRC-framed format (groupstore.AppendFrame). The last valid
// record is the state; a torn tail is ignored, and a log holding more than
// one record is rewritten to its last one (atomicfile) when it is loaded and
// whenever it grows past compactAfter records. Save returns once the record
// is fsynced, so a coordinator answers a client only after the transition it
// reports survives a crash or a move to another broker.
package txnlog

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kaas-project/kaas/storage/atomicfile"
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
// called off the coordinator actor's Receive.
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

	mu     sync.Mutex
	counts map[string]int // records in each log since it was last compacted
}

const (
	suffix = ".log"
	// compactAfter is how many records a log holds before Save rewrites
	// it to its last one.
	compactAfter = 64
)

// NewFile opens (creating) the store under dataDir/__transactions.
func NewFile(dataDir string) (*File, error) {
	root := filepath.Join(dataDir, "__transactions")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("transaction log: %w", err)
	}
	return &File{Root: root, counts: map[string]int{}}, nil
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

// Load implements Store; a log of more than one record is compacted.
func (s *File) Load(id string) (State, bool, error) {
	name := s.name(id)
	st, n, torn, err := readLog(filepath.Join(s.Root, name))
	if err != nil {
		return State{}, false, err
	}
	if n == 0 {
		if torn {
			// Not one whole record: a first Save torn by a crash.
			if err := os.Remove(filepath.Join(s.Root, name)); err != nil {
				return State{}, false, fmt.Errorf("remove torn transaction log: %w", err)
			}
		}
		return State{}, false, nil
	}
	if st.ID != id {
		return State{}, false, fmt.Errorf("transaction log %s names %q, not %q", name, st.ID, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > 1 || torn {
		if err := s.rewrite(st); err != nil {
			return State{}, false, err
		}
	} else {
		s.counts[id] = 1
	}
	return st, true, nil
}

// Save implements Store: append and fsync, compacting a long log.
func (s *File) Save(st State) error {
	payload, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode transaction %q: %w", st.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts[st.ID] >= compactAfter {
		return s.rewrite(st)
	}
	path := filepath.Join(s.Root, s.name(st.ID))
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open transaction log: %w", err)
	}
	_, werr := f.Write(groupstore.AppendFrame(nil, payload))
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("append transaction log of %q: %w", st.ID, werr)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(s.Root); err != nil {
			return err
		}
	}
	s.counts[st.ID]++
	return nil
}

// Remove implements Store: the log goes, and its directory entry is
// synced so that a crash does not bring it back.
func (s *File) Remove(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := os.Remove(filepath.Join(s.Root, s.name(id)))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove transaction log of %q: %w", id, err)
	}
	delete(s.counts, id)
	return syncDir(s.Root)
}

// rewrite replaces id's log with the single record st (s.mu held).
func (s *File) rewrite(st State) error {
	payload, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode transaction %q: %w", st.ID, err)
	}
	if err := atomicfile.Write(s.Root, s.name(st.ID), groupstore.AppendFrame(nil, payload), 0o644); err != nil {
		return fmt.Errorf("compact transaction log of %q: %w", st.ID, err)
	}
	s.counts[st.ID] = 1
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
	last, n, good, err := readRecords(bufio.NewReader(f))
	return last, n, good < fi.Size(), err
}

func readRecords(r *bufio.Reader) (last State, n int, good int64, err error) {
	for {
		payload, size, err := groupstore.ReadFrame(r)
		if err != nil {
			// EOF, a torn tail or a corrupt frame: the valid prefix is the
			// log; anything after it is cut off by the next rewrite.
			return last, n, good, nil
		}
		var st State
		if json.Unmarshal(payload, &st) != nil {
			return last, n, good, nil
		}
		last = st
		n++
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
