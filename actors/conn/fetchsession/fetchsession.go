// Package fetchsession is a broker's cache of incremental fetch sessions
// (KIP-227). A consumer of many partitions opens a session with a full
// fetch (epoch 0); its later fetches (epoch 1, 2, ...) name only the
// partitions whose fetch position changed and the partitions to forget, and
// the answers carry only the partitions with something new: records, a
// moved high watermark, log start or last stable offset, a diverging epoch
// or an error. The cache holds a bounded number of sessions and evicts as
// Kafka's FetchSessionCache does. It is plain data behind one mutex, with
// the time passed in: the connection's Fetch handler calls Begin when a
// request arrives and Finish with the partitions' answers.
package fetchsession

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Session epochs with a meaning of their own (Kafka's FetchMetadata).
const (
	// InitialEpoch asks for a full fetch that opens a new session.
	InitialEpoch int32 = 0
	// FinalEpoch asks for a full fetch without a session (closing the one
	// named, if any). Fetch v4-6 carry no session fields and read as this.
	FinalEpoch int32 = -1
)

// Key names a partition in a session: by topic id from Fetch v13, by topic
// name before.
type Key struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// Params are what a fetch asks of one partition. An incremental fetch sends
// them only when they change; the session remembers them.
type Params struct {
	FetchOffset        int64
	LogStartOffset     int64
	MaxBytes           int32
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
}

// Entry is one partition of a fetch: which, and what is asked of it.
type Entry struct {
	Key
	Params
}

// Outcome is one partition's answer, as the session compares it with what
// it last sent.
type Outcome struct {
	ErrorCode        int16
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	// Records: the answer carries records.
	Records bool
	// Diverging: the answer carries a diverging epoch.
	Diverging bool
}

// Request is the session part of a Fetch request.
type Request struct {
	SessionID int32
	Epoch     int32
	// UsesTopicIDs: Fetch v13+, which names topics by id.
	UsesTopicIDs bool
	// Partitions are the request's partitions in request order: every
	// partition of a full fetch, the added and changed ones of an
	// incremental fetch.
	Partitions []Entry
	// Forgotten are the partitions an incremental fetch drops from its
	// session.
	Forgotten []Key
}

// Config bounds a cache.
type Config struct {
	// Slots is the most sessions kept (Kafka's
	// max.incremental.fetch.session.cache.slots); 0 offers none, and every
	// fetch is answered as a full fetch without a session.
	Slots int
	// EvictAfter is how long a session must go unused before any new
	// session may take its slot (Kafka's
	// min.incremental.fetch.session.eviction.ms).
	EvictAfter time.Duration
	// NewID draws a session id candidate (nil: random); ids that are zero
	// or in use are drawn again.
	NewID func() int32
}

// Cache is one broker's fetch sessions. Its methods are safe for
// concurrent use.
type Cache struct {
	cfg Config

	mu        sync.Mutex
	sessions  map[int32]*session
	evictions int64
}

type cached struct {
	Entry
	// What the partition's last answer sent; -1 before any (and after an
	// error), so the next answer always carries it.
	hw, lso, logStart int64
}

type session struct {
	id      int32
	epoch   int32 // the epoch the next incremental fetch must carry
	usesIDs bool
	// parts in answer order: a partition that is answered moves to the
	// end, so partitions not answered this time come first next time and
	// get their share of the request's byte limit (as Kafka does).
	parts    []*cached
	index    map[Key]*cached
	lastUsed time.Time
	closed   bool
}

// New returns an empty cache.
func New(cfg Config) *Cache {
	if cfg.NewID == nil {
		cfg.NewID = func() int32 { return rand.Int32() }
	}
	return &Cache{cfg: cfg, sessions: map[int32]*session{}}
}

// kind is how a fetch is served.
type kind int

const (
	sessionless kind = iota // full fetch, no session
	full                    // full fetch that opens a session at Finish
	incremental             // a fetch in an open session
)

// Fetch is one request's view of its session.
type Fetch struct {
	kind    kind
	s       *session
	usesIDs bool
	// Partitions are the partitions to read and answer, in answer order:
	// the request's for a full fetch, the session's for an incremental one.
	Partitions []Entry
}

// Incremental reports whether the fetch is in an open session (its answer
// omits unchanged partitions).
func (f *Fetch) Incremental() bool { return f.kind == incremental }

// Begin checks a request's session fields and applies an incremental
// fetch's changes to its session. A non-zero code (FETCH_SESSION_ID_NOT_FOUND,
// INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR) is the whole
// answer, with session id 0.
func (c *Cache) Begin(now time.Time, r Request) (*Fetch, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Epoch == InitialEpoch || r.Epoch == FinalEpoch {
		// A full fetch closes the session it names.
		if r.SessionID != 0 {
			c.removeLocked(r.SessionID)
		}
		k := full
		if r.Epoch == FinalEpoch || c.cfg.Slots <= 0 {
			k = sessionless
		}
		return &Fetch{kind: k, usesIDs: r.UsesTopicIDs, Partitions: r.Partitions}, 0
	}
	s := c.sessions[r.SessionID]
	switch {
	case s == nil:
		return nil, kerr.FetchSessionIDNotFound.Code
	case s.epoch != r.Epoch:
		return nil, kerr.InvalidFetchSessionEpoch.Code
	case s.usesIDs != r.UsesTopicIDs:
		return nil, kerr.FetchSessionTopicIDError.Code
	}
	for _, e := range r.Partitions {
		if p, ok := s.index[e.Key]; ok {
			p.Params = e.Params
			continue
		}
		p := &cached{Entry: e, hw: -1, lso: -1, logStart: -1}
		s.index[e.Key] = p
		s.parts = append(s.parts, p)
	}
	if len(r.Forgotten) > 0 {
		for _, k := range r.Forgotten {
			delete(s.index, k)
		}
		kept := s.parts[:0]
		for _, p := range s.parts {
			if s.index[p.Key] == p {
				kept = append(kept, p)
			}
		}
		clear(s.parts[len(kept):])
		s.parts = kept
	}
	if len(s.parts) == 0 {
		// Nothing left to fetch: the session closes and the (empty) answer
		// carries no session, as Kafka does.
		c.removeLocked(s.id)
		return &Fetch{kind: sessionless, usesIDs: r.UsesTopicIDs}, 0
	}
	s.lastUsed = now
	s.epoch = nextEpoch(s.epoch)
	f := &Fetch{kind: incremental, s: s, usesIDs: s.usesIDs, Partitions: make([]Entry, len(s.parts))}
	for i, p := range s.parts {
		f.Partitions[i] = p.Entry
	}
	return f, 0
}

// Throttled answers a fetch whose answer a quota throttle emptied, as
// Kafka's throttled responses do: a full fetch opens no session (0), and
// an incremental one keeps its session with nothing remembered, so every
// change it did not carry is still reported next time.
func (c *Cache) Throttled(now time.Time, f *Fetch) (sessionID int32) {
	if f.kind != incremental {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f.s.lastUsed = now
	return f.s.id
}

// Finish takes the answers of f.Partitions (same order) and returns the
// session id the response carries (0 for none) and which partitions it
// includes: all of a full fetch's, and of an incremental fetch's those with
// something new. A full fetch at InitialEpoch opens its session here, if a
// slot is free or can be freed.
func (c *Cache) Finish(now time.Time, f *Fetch, out []Outcome) (sessionID int32, include []bool) {
	include = make([]bool, len(f.Partitions))
	c.mu.Lock()
	defer c.mu.Unlock()
	switch f.kind {
	case sessionless:
		for i := range include {
			include[i] = true
		}
		return 0, include
	case full:
		for i := range include {
			include[i] = true
		}
		if len(c.sessions) >= c.cfg.Slots && !c.evictLocked(now, len(f.Partitions)) {
			return 0, include
		}
		s := &session{id: c.newIDLocked(), epoch: nextEpoch(InitialEpoch), usesIDs: f.usesIDs, index: make(map[Key]*cached, len(f.Partitions)), lastUsed: now}
		for i, e := range f.Partitions {
			p := &cached{Entry: e}
			p.remember(out[i])
			if old, dup := s.index[e.Key]; dup {
				*old = *p
				continue
			}
			s.index[e.Key] = p
			s.parts = append(s.parts, p)
		}
		c.sessions[s.id] = s
		return s.id, include
	}
	s := f.s
	var answered []*cached
	for i, e := range f.Partitions {
		p := s.index[e.Key]
		if p == nil { // forgotten by a later request meanwhile
			include[i] = true
			continue
		}
		include[i] = p.changed(out[i])
		p.remember(out[i])
		if include[i] {
			answered = append(answered, p)
		}
	}
	if len(answered) > 0 && !s.closed {
		moved := make(map[*cached]bool, len(answered))
		for _, p := range answered {
			moved[p] = true
		}
		kept := s.parts[:0]
		for _, p := range s.parts {
			if !moved[p] {
				kept = append(kept, p)
			}
		}
		s.parts = append(kept, answered...)
	}
	if s.closed {
		return 0, include
	}
	return s.id, include
}

// changed reports whether an answer must be sent (Kafka's
// CachedPartition.maybeUpdateResponseData).
func (p *cached) changed(o Outcome) bool {
	return o.Records || o.Diverging || o.ErrorCode != 0 ||
		o.HighWatermark != p.hw || o.LastStableOffset != p.lso || o.LogStartOffset != p.logStart
}

// remember records what an answer sent; an error clears it, so the
// partition is sent again once the error goes away.
func (p *cached) remember(o Outcome) {
	if o.ErrorCode != 0 {
		p.hw, p.lso, p.logStart = -1, -1, -1
		return
	}
	p.hw, p.lso, p.logStart = o.HighWatermark, o.LastStableOffset, o.LogStartOffset
}

// evictLocked frees a slot for a session of size partitions: the least
// recently used session if it has gone unused for EvictAfter, else the
// smallest session if it is smaller than the newcomer (Kafka's tryEvict
// for unprivileged sessions).
func (c *Cache) evictLocked(now time.Time, size int) bool {
	if c.cfg.Slots <= 0 {
		return false
	}
	var oldest, smallest *session
	for _, s := range c.sessions {
		if oldest == nil || s.lastUsed.Before(oldest.lastUsed) {
			oldest = s
		}
		if smallest == nil || len(s.parts) < len(smallest.parts) || (len(s.parts) == len(smallest.parts) && s.id < smallest.id) {
			smallest = s
		}
	}
	switch {
	case oldest == nil:
		return false
	case now.Sub(oldest.lastUsed) > c.cfg.EvictAfter:
		c.removeLocked(oldest.id)
	case size > len(smallest.parts):
		c.removeLocked(smallest.id)
	default:
		return false
	}
	c.evictions++
	return true
}

func (c *Cache) removeLocked(id int32) {
	if s, ok := c.sessions[id]; ok {
		s.closed = true
		delete(c.sessions, id)
	}
}

func (c *Cache) newIDLocked() int32 {
	for {
		id := c.cfg.NewID()
		if _, used := c.sessions[id]; id != 0 && !used {
			return id
		}
	}
}

// nextEpoch follows e, wrapping past the largest int32 to 1 (Kafka's
// FetchMetadata.nextEpoch).
func nextEpoch(e int32) int32 {
	if e < 0 {
		return FinalEpoch
	}
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// Stats are a cache's counters.
type Stats struct {
	// Sessions open now, and the partitions they hold.
	Sessions, Partitions int
	// Evictions since the cache was made.
	Evictions int64
}

// Stats reports the cache's size and evictions.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Stats{Sessions: len(c.sessions), Evictions: c.evictions}
	for _, s := range c.sessions {
		st.Partitions += len(s.parts)
	}
	return st
}
