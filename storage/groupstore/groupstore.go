// Package groupstore keeps consumer groups' committed offsets: an in-memory
// store for local-dev mode and a file store for --data-dir, where every group
// has an append-only commit log under <data-dir>/__groups/<group dir>/.
//
// A Log is owned by exactly one group actor at a time. Its methods block on
// disk and are called from that actor's goroutines, never from Receive.
// Append returns only once the records are durable (fsynced for files), so a
// commit may be acknowledged as soon as Append returns nil.
package groupstore

import (
	"errors"
	"maps"
	"slices"
	"sort"
	"sync"
)

// TP names a partition.
type TP struct {
	Topic     string
	Partition int32
}

// Commit is one committed offset.
type Commit struct {
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// CommitTime is when the commit was accepted, in Unix milliseconds.
	CommitTime int64
	// ExpireTime is an explicit expiry in Unix milliseconds (OffsetCommit
	// v1-v4 retention), or -1 for the KIP-211 rules.
	ExpireTime int64
	// TopicID is the id of the topic the offset was committed to (zero in
	// commits stored before ids were): an offset of a topic since deleted
	// and re-created under the same name is not the new topic's.
	TopicID [16]byte
}

// Meta is the little group metadata that persists beside the offsets: enough
// to apply the offsets-retention rules after a restart.
type Meta struct {
	// Kind is "classic" or "consumer" (KIP-848).
	Kind string
	// ProtocolType is the classic group's protocol type ("" = simple group).
	ProtocolType string
	// EmptySince is when the group last became empty, in Unix milliseconds;
	// 0 while it has members.
	EmptySince int64
}

// Record is one change to a group's stored state: exactly one of Commit,
// Delete (a tombstone for TP), Meta or TxnEnd. A Commit with Txn set is a
// transactional offset (TxnOffsetCommit) pending until its TxnEnd.
type Record struct {
	TP     TP
	Commit *Commit
	Txn    *TxnProducer
	Delete bool
	Meta   *Meta
	TxnEnd *TxnEnd
}

// TxnProducer is the producer whose transaction a pending offset belongs to.
type TxnProducer struct {
	ProducerID int64
	Epoch      int16
}

// TxnEnd is a transaction's marker as the group stores it: its producer's
// pending offsets become committed offsets (Commit) or are dropped.
type TxnEnd struct {
	TxnProducer
	Commit bool
}

// Pending is one producer's transactional offsets awaiting its marker.
type Pending struct {
	Epoch   int16
	Offsets map[TP]Commit
}

// State is a group's stored state after replaying its log.
type State struct {
	Offsets map[TP]Commit
	Meta    *Meta
	// Members is the group's last saved membership (Log.SaveMembers), nil
	// when none: the group package's encoding, opaque here.
	Members []byte
	// Pending are the transactional offsets whose transaction has not
	// ended, by producer id.
	Pending map[int64]Pending
}

// apply is the one home of the replay rules, Kafka's for transactional
// offsets: a pending offset of an older epoch than its producer's pending
// ones is fenced (dropped), one of a newer epoch drops the older epoch's;
// a commit marker of the pending epoch or newer makes the pending offsets
// committed offsets, any other marker drops them.
func (s *State) apply(r Record) {
	switch {
	case r.Meta != nil:
		m := *r.Meta
		s.Meta = &m
	case r.Delete:
		delete(s.Offsets, r.TP)
	case r.TxnEnd != nil:
		p, ok := s.Pending[r.TxnEnd.ProducerID]
		if !ok {
			return
		}
		delete(s.Pending, r.TxnEnd.ProducerID)
		if r.TxnEnd.Commit && r.TxnEnd.Epoch >= p.Epoch {
			if s.Offsets == nil {
				s.Offsets = map[TP]Commit{}
			}
			maps.Copy(s.Offsets, p.Offsets)
		}
	case r.Commit != nil && r.Txn != nil:
		if s.Pending == nil {
			s.Pending = map[int64]Pending{}
		}
		p, ok := s.Pending[r.Txn.ProducerID]
		switch {
		case ok && r.Txn.Epoch < p.Epoch:
			return
		case !ok || r.Txn.Epoch > p.Epoch:
			p = Pending{Epoch: r.Txn.Epoch, Offsets: map[TP]Commit{}}
			s.Pending[r.Txn.ProducerID] = p
		}
		p.Offsets[r.TP] = *r.Commit
	case r.Commit != nil:
		if s.Offsets == nil {
			s.Offsets = map[TP]Commit{}
		}
		s.Offsets[r.TP] = *r.Commit
	}
}

// pendingRecords are the records that restore s.Pending, in a stable order.
func (s *State) pendingRecords() []Record {
	pids := make([]int64, 0, len(s.Pending))
	for pid := range s.Pending {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	var out []Record
	for _, pid := range pids {
		p := s.Pending[pid]
		for _, tp := range sortedTPs(p.Offsets) {
			c := p.Offsets[tp]
			out = append(out, Record{TP: tp, Commit: &c, Txn: &TxnProducer{ProducerID: pid, Epoch: p.Epoch}})
		}
	}
	return out
}

func sortedTPs(m map[TP]Commit) []TP {
	tps := make([]TP, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	return tps
}

func (s *State) clone() State {
	out := State{Offsets: maps.Clone(s.Offsets)}
	if out.Offsets == nil {
		out.Offsets = map[TP]Commit{}
	}
	if s.Meta != nil {
		m := *s.Meta
		out.Meta = &m
	}
	out.Members = slices.Clone(s.Members)
	for pid, p := range s.Pending {
		if out.Pending == nil {
			out.Pending = map[int64]Pending{}
		}
		out.Pending[pid] = Pending{Epoch: p.Epoch, Offsets: maps.Clone(p.Offsets)}
	}
	return out
}

// Store opens groups' logs.
type Store interface {
	// Persistent reports whether state survives a restart.
	Persistent() bool
	// Groups lists the groups that have stored state.
	Groups() ([]string, error)
	// Open loads a group's state and returns its log. A group without
	// stored state opens empty; nothing is created until the first Append.
	Open(group string) (Log, State, error)
}

// Log is one group's commit log.
type Log interface {
	// Append makes recs durable, in order.
	Append(recs []Record) error
	// SaveMembers makes b the group's saved membership, replacing the
	// last one whole (nil removes it). It is kept apart from the records:
	// a membership is one snapshot, not a history.
	SaveMembers(b []byte) error
	// Destroy removes the group's stored state (DeleteGroups, or nothing
	// left to keep). The log is closed afterwards.
	Destroy() error
	// Close releases the log.
	Close() error
}

// ErrClosed is returned by a closed log.
var ErrClosed = errors.New("group log closed")

// Memory is the in-memory twin of the file store: state lives as long as the
// process, so a group actor stopped and spawned again finds its offsets.
type Memory struct {
	mu     sync.Mutex
	groups map[string]*State
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{groups: map[string]*State{}} }

// Persistent implements Store.
func (m *Memory) Persistent() bool { return false }

// Groups implements Store.
func (m *Memory) Groups() ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.groups))
	for g, s := range m.groups {
		if len(s.Offsets) > 0 || len(s.Pending) > 0 || s.Members != nil {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Open implements Store.
func (m *Memory) Open(group string) (Log, State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := State{Offsets: map[TP]Commit{}}
	if s, ok := m.groups[group]; ok {
		st = s.clone()
	}
	return &memLog{m: m, group: group}, st, nil
}

type memLog struct {
	m      *Memory
	group  string
	closed bool
}

func (l *memLog) Append(recs []Record) error {
	return l.update(func(s *State) {
		for _, r := range recs {
			s.apply(r)
		}
	})
}

func (l *memLog) SaveMembers(b []byte) error {
	return l.update(func(s *State) { s.Members = slices.Clone(b) })
}

// update runs fn on the group's state (created when missing) under the
// store's lock.
func (l *memLog) update(fn func(*State)) error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	s, ok := l.m.groups[l.group]
	if !ok {
		s = &State{Offsets: map[TP]Commit{}}
		l.m.groups[l.group] = s
	}
	fn(s)
	return nil
}

func (l *memLog) Destroy() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	delete(l.m.groups, l.group)
	l.closed = true
	return nil
}

func (l *memLog) Close() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	l.closed = true
	return nil
}
