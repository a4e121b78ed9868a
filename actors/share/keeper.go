package share

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/interbroker"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/groupconfig"
	"github.com/kaas-project/kaas/storage/sharestate"
)

// Options configure the Keeper.
type Options struct {
	Views *routing.Store
	Log   zerolog.Logger
	Clock clock.Clock
	// Partition holds the share-partition settings (record lock
	// duration, delivery count limit, auto offset reset).
	Partition Config
	// MaxRecords is the most records one ShareFetch acquires when the
	// request does not say (v0), Kafka's share.max.fetch.records (500).
	MaxRecords int
	// Store persists share-partition state on the shared volume (nil:
	// memory only).
	Store *sharestate.Store
	// GroupConfigs holds the share groups' config overrides (nil: every
	// group has Partition's settings).
	GroupConfigs *groupconfig.Store
	// MaxSessions is the most share sessions the keeper holds, Kafka's
	// group.share.max.share.sessions (0: its default, 2000); a member
	// opening one more gets SHARE_SESSION_LIMIT_REACHED.
	MaxSessions int
	// Peers reach the other brokers: DescribeShareGroupOffsets asks the
	// leaders of partitions led elsewhere for their end offsets (nil:
	// those partitions' lag is LEADER_NOT_AVAILABLE).
	Peers *interbroker.Clients
	// DeadLetters writes the records share groups give up on to their
	// dead-letter topics (KIP-1191; nil: such records are archived
	// without a write).
	DeadLetters *DeadLetterWriter
}

// DeadLetterStats counts the records given up on with a dead-letter topic.
type DeadLetterStats struct {
	// Written are records written to their group's dead-letter topic.
	Written atomic.Int64
	// Failed are records archived without their write: the topic could
	// not take it (Kafka's checks) or the write failed after its retries.
	Failed atomic.Int64
}

// SessionStats counts the keeper's share sessions, for metrics.
type SessionStats struct {
	// Open is the share sessions held now.
	Open atomic.Int64
	// Evicted counts the sessions dropped because the connection that
	// opened them closed (the client went away without closing them).
	Evicted atomic.Int64
}

// Keeper is this broker's share-partition leader: one actor that holds
// the share-partitions of the partitions led here, for every share group,
// and the share sessions clients open with this broker. It serves
// ShareFetch and ShareAcknowledge (78_share_fetch.go,
// 79_share_acknowledge.go).
type Keeper struct {
	ref     actorsys.Ref
	opts    *Options
	stats   *SessionStats
	letters *DeadLetterStats
	// memStored is the keeper's memory-only state (keeper.memStored),
	// kept across its restarts.
	memStored map[pkey]sharestate.Snapshot
	// configs caches each group's share-partition settings
	// (group -> *cachedConfig) for the request handlers; configReads
	// counts its reads of the store, every 256th sweeping it.
	configs     sync.Map
	configReads atomic.Int64
}

// Start spawns the Keeper under system.
func Start(system *actorsys.System, name string, opts Options) (*Keeper, error) {
	opts.Clock = clock.OrReal(opts.Clock)
	opts.Partition.Defaults()
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = 500
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 2000
	}
	k := &Keeper{opts: &opts, stats: &SessionStats{}, letters: &DeadLetterStats{}, memStored: map[pkey]sharestate.Snapshot{}}
	// A panic restarts the keeper empty: it loads each share-partition's
	// state again at its next use, and clients open new share sessions
	// (heal.go). Past 10 panics a minute it stops, and the broker exits.
	ref, err := system.SpawnRestarting(name, func() actor.Actor {
		kp := newKeeper(&opts, k.stats)
		kp.letters, kp.memStored = k.letters, k.memStored
		return kp
	}, 10, time.Minute, func(reason any) {
		metrics.ActorRestarted("share", "panic")
		opts.Log.Error().Interface("reason", reason).Msg("share-partition keeper panicked; restarting it")
	})
	if err != nil {
		return nil, fmt.Errorf("start share-partition keeper: %w", err)
	}
	k.ref = ref
	if opts.Views != nil {
		opts.Views.OnPublish(func() { ref.Send(&viewChanged{}) })
	}
	return k, nil
}

func newKeeper(opts *Options, stats *SessionStats) *keeper {
	return &keeper{opts: opts, parts: map[pkey]*Partition{}, sessions: map[skey]*session{}, dirty: map[pkey]bool{},
		marks: map[pkey]uint64{}, claims: map[pkey]assignment.Position{}, memStored: map[pkey]sharestate.Snapshot{}, ids: map[pkey][16]byte{},
		byConn: map[int64]map[skey]bool{}, stats: stats, letters: &DeadLetterStats{},
		writing: map[pkey]bool{}}
}

// Ref is the keeper actor.
func (k *Keeper) Ref() actorsys.Ref { return k.ref }

// DeadLetters reports the records written to dead-letter topics and those
// archived without their write, so far.
func (k *Keeper) DeadLetters() (written, failed int64) {
	return k.letters.Written.Load(), k.letters.Failed.Load()
}

// Sessions reports the share sessions held and those evicted so far.
func (k *Keeper) Sessions() (open, evicted int64) {
	return k.stats.Open.Load(), k.stats.Evicted.Load()
}

// TP is a partition by topic id, as the share APIs name it.
type TP struct {
	TopicID   [16]byte
	Partition int32
}

type pkey struct {
	group string
	tp    routing.TP
}

type skey struct{ group, member string }

// session is a KIP-932 share session: the partitions a member fetches
// from this broker, the epoch its next request must carry, and the
// connection that opened it (the session goes when that connection
// closes, as on Kafka).
type session struct {
	epoch int32
	parts map[TP]bool
	conn  int64
}

func (s *session) bump() {
	if s.epoch == math.MaxInt32 {
		s.epoch = 1
		return
	}
	s.epoch++
}

// AckBatch is one acknowledgement batch of a request.
type AckBatch struct {
	First, Last int64
	Types       []AckType
}

// PartReq is one partition of a ShareFetch or ShareAcknowledge: the
// acknowledgements it carries (may be none).
type PartReq struct {
	TP
	Acks []AckBatch
}

// Session operations a request asks for.
const (
	opFetch = iota // ShareFetch: open (epoch 0), continue (>0) or close (-1)
	opAck          // ShareAcknowledge: continue (>0) or close (-1)
)

// begin is the first step of a ShareFetch or ShareAcknowledge: validate and
// advance the share session, apply the acknowledgements and (ShareFetch)
// say where to read each partition of the session.
type begin struct {
	op            int
	group, member string
	epoch         int32
	parts         []PartReq
	forgotten     []TP
	renew         bool
	view          *routing.View
	// conn is the connection the request came on (conn.Request.Conn).
	conn  int64
	reply func(beginResult)
}

// PartResult is one partition's part of a response.
type PartResult struct {
	TP
	Topic string
	// AckCode answers the partition's acknowledgements.
	AckCode int16
	// acked: the request acknowledged records of the partition.
	acked bool
	// Code is the partition's fetch error.
	Code int16
	// Read: read from Offset (-1: the share-partition is not initialized,
	// any read reports the log's bounds), read_committed when
	// ReadCommitted.
	Read          bool
	Offset        int64
	ReadCommitted bool
}

type beginResult struct {
	code  int16
	parts []PartResult
	// durable waits until the changes the step made are persisted.
	durable durableWait
}

// durableWait waits until the changes a step made are persisted and
// returns the share-partitions whose state was not written, with why: a
// later leader claimed them, or an admin changed their state since they
// were loaded (sharestate.ErrSuperseded: their changes did not count, and
// the keeper dropped them), or the volume failed the write
// (the changes hold in memory and the next snapshot carries them, but an
// acknowledgement was not made durable).
type durableWait func() map[pkey]error

// Read is what a read of one partition found.
type Read struct {
	TP
	Topic                   string
	Code                    int16
	LogStart, HighWatermark int64
	// First and Last bound the batches read (Last < First: none).
	First, Last int64
	// Aborted are the offsets of the batches read that aborted
	// transactions wrote (read_committed): archived, not acquired.
	Aborted []Range
	// Stored is the share-partition's persisted state, read for a
	// share-partition not initialized here (nil: none).
	Stored *sharestate.Snapshot
	// Config is the share-partition's settings with its group's config
	// overrides as last read (nil: unchanged, the broker's at first).
	Config *Config
	// Mark is the share-partition's admin mark, read with Stored.
	Mark uint64
	// Claim is the claim under which Stored and Mark were read (the
	// position of the assignment file this broker leads the partition
	// from; sharestate.Store.Claim), nil for a read that did not load
	// the stored state. With a store only such a read initializes a
	// share-partition.
	Claim *assignment.Position
}

// acquire is the second step of a ShareFetch: acquire what the reads
// returned for the member.
type acquire struct {
	group, member string
	maxRecords    int
	reads         []Read
	reply         func(acquireResult)
}

type acquireResult struct {
	ranges map[TP][]Range
	// again: a share-partition was initialized or moved by a read; read
	// again at once.
	again bool
	// durable waits until the acquisitions are persisted.
	durable durableWait
	// lock is the longest lock of the records acquired (their group's
	// share.record.lock.duration.ms); 0 when none were.
	lock time.Duration
}

// keeper is the Keeper's actor. Every operation is plain computation on
// Partition values; the reads happen in the connection's request handler.
type keeper struct {
	opts     *Options
	parts    map[pkey]*Partition
	sessions map[skey]*session
	// byConn are the sessions each connection opened.
	byConn map[int64]map[skey]bool
	stats  *SessionStats
	// dirty are the share-partitions changed while serving the current
	// message; their snapshots go to the writer after it.
	dirty  map[pkey]bool
	writer *writer
	// marks are the admin marks the share-partitions were loaded with
	// (admin.go): with claims, a snapshot is written only while its mark
	// is still the one on the volume (sharestate.Store.SaveAt).
	marks map[pkey]uint64
	// claims are the claims the share-partitions were loaded under: a
	// snapshot is written only while its claim is still the one on the
	// volume (sharestate.Store.SaveAt).
	claims map[pkey]assignment.Position
	// memStored is, without a store, the share-partitions' state kept
	// apart from them: the state admins set, and the last state flushed
	// of each; a share-partition's initialization takes it. The Keeper
	// hands it to every incarnation of the actor, so a keeper restarted
	// after a panic loads what the last one flushed, as from a store.
	memStored map[pkey]sharestate.Snapshot
	// ids is the topic id of each share-partition in parts: its state
	// belongs to that incarnation of the topic only.
	ids map[pkey][16]byte
	// known is each topic's id in the last view that knew which topics
	// exist (nil before one): a topic missing from the next, or there
	// with another id, was deleted.
	known map[string][16]byte
	// self and system reach the keeper from the dead-letter writes it
	// starts; stop ends them.
	self    *actor.PID
	system  *actor.ActorSystem
	stop    context.CancelFunc
	stopCtx context.Context
	letters *DeadLetterStats
	// writing are the share-partitions with a dead-letter write under way.
	writing map[pkey]bool
}

func (k *keeper) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		k.self, k.system = ctx.Self(), ctx.ActorSystem()
		k.stopCtx, k.stop = context.WithCancel(context.Background())
		k.stats.Open.Store(int64(len(k.sessions)))
		if k.opts.Store != nil {
			self, system := k.self, k.system
			k.writer = startWriter(k.opts.Store, k.opts.Log, func(key pkey, at assignment.Position, mark uint64) {
				system.Root.Send(self, &superseded{from: k, key: key, at: at, mark: mark})
			})
		}
		k.dropDeleted()
	case *viewChanged:
		k.dropDeleted()
	case *actor.Stopping, *actor.Restarting:
		if k.writer != nil {
			k.writer.stop()
		}
		if k.stop != nil {
			k.stop()
		}
	case *begin:
		res := k.begin(m)
		k.sendDeadLetters()
		res.durable = k.flushDirty()
		m.reply(res)
	case *acquire:
		res := k.acquire(m)
		k.sendDeadLetters()
		res.durable = k.flushDirty()
		m.reply(res)
	case *deadLettered:
		k.deadLettered(m)
		k.sendDeadLetters()
		k.flushDirty()
	case *where:
		m.reply(k.where(m))
		k.sendDeadLetters()
		k.flushDirty()
	case *starts:
		m.reply(k.starts(m))
	case *adminSet:
		m.reply(k.adminSet(m))
	case *recheck:
		m.reply(k.recheck(m))
	case *connClosed:
		k.connClosed(m.conn)
		k.sendDeadLetters()
		k.flushDirty()
	case *superseded:
		k.superseded(m)
	}
}

// superseded: the writer found a later claim on a share-partition this
// keeper saved, its claim gone, or an admin mark other than the one its
// state was loaded under: a leader that loaded it since, or an admin,
// owns its state, and nothing this one changed since then was written.
type superseded struct {
	// from is the keeper incarnation whose writer reported it.
	from *keeper
	key  pkey
	// at and mark are the claim and the admin mark of the refused save.
	at   assignment.Position
	mark uint64
}

// superseded drops the share-partition if it is still the one loaded under
// the refused claim and mark (not one loaded again since: a reload from
// the same assignment file takes the same claim, but reads the admin's
// new mark). Its next use loads it again, which the later claim refuses
// while this broker follows an earlier assignment file.
func (k *keeper) superseded(m *superseded) {
	if m.from != k {
		return
	}
	if c, ok := k.claims[m.key]; !ok || c != m.at || k.marks[m.key] != m.mark {
		return
	}
	k.forget(m.key)
	k.opts.Log.Warn().Str("group", m.key.group).Str("topic", m.key.tp.Topic).Int32("partition", m.key.tp.Partition).
		Msg("share-partition dropped: a later leader claimed it")
}

// deadLettered: the dead-letter writes of a share-partition's runs ended.
type deadLettered struct {
	// from is the keeper incarnation that started the writes: one
	// restarted since (after a panic) ignores them, having loaded the
	// records' state again and started their writes anew.
	from    *keeper
	key     pkey
	id      [16]byte
	letters []DeadLetter
	// written is how many records of each run were written; err says why
	// the rest were not.
	written []int
	err     error
}

// sendDeadLetters starts the dead-letter writes of the runs the
// share-partitions changed by the last message gave up on: one write at a
// time per share-partition, its runs in offset order, so that its
// dead-letter records keep their order. Each write runs off the keeper's
// mailbox and reports back with deadLettered.
func (k *keeper) sendDeadLetters() {
	for key := range k.dirty {
		p, ok := k.parts[key]
		if !ok || k.writing[key] {
			continue
		}
		letters := p.DeadLetters()
		if len(letters) == 0 {
			continue
		}
		if k.opts.DeadLetters == nil || k.self == nil {
			for _, d := range letters {
				p.DeadLettered(d.First, d.Last)
			}
			continue
		}
		k.writing[key] = true
		job := deadLetterJob{group: key.group, topic: key.tp.Topic, topicID: k.ids[key], partition: key.tp.Partition, cfg: p.cfg}
		self, system, w, ctx := k.self, k.system, k.opts.DeadLetters, k.stopCtx
		go func() {
			done := &deadLettered{from: k, key: key, id: job.topicID, letters: letters, written: make([]int, len(letters))}
			for i, d := range letters {
				job.letter = d
				done.written[i], done.err = w.write(ctx, job)
				if done.err != nil {
					break
				}
			}
			system.Root.Send(self, done)
		}()
	}
}

// deadLettered archives the runs whose dead-letter write ended, written or
// not (a record that cannot be written must not hold the start for ever),
// and lets the share-partition's next runs go.
func (k *keeper) deadLettered(m *deadLettered) {
	if m.from != k {
		return
	}
	delete(k.writing, m.key)
	for i, d := range m.letters {
		k.letters.Written.Add(int64(m.written[i]))
		if failed := d.Last - d.First + 1 - int64(m.written[i]); failed > 0 {
			k.letters.Failed.Add(failed)
			k.opts.Log.Warn().Err(m.err).Str("group", m.key.group).Str("topic", m.key.tp.Topic).Int32("partition", m.key.tp.Partition).
				Int64("first_offset", d.First).Int64("last_offset", d.Last).Int64("records", failed).
				Msg("records archived without their dead-letter write")
		}
	}
	p, ok := k.parts[m.key]
	if !ok {
		return
	}
	k.dirty[m.key] = true // its next runs go, and its state is saved
	if k.ids[m.key] != m.id {
		return // a topic of the same name created since
	}
	for _, d := range m.letters {
		p.DeadLettered(d.First, d.Last)
	}
}

// connClosed is sent when a client connection closes.
type connClosed struct{ conn int64 }

// connClosed drops the sessions the connection opened, and the records
// their members hold in them go back to the others, as Kafka's share
// session cache does when a client disconnects: a client gone without
// closing its session holds nothing until its locks run out.
func (k *keeper) connClosed(conn int64) {
	var v *routing.View
	if k.opts.Views != nil {
		v = k.opts.Views.Load()
	}
	for key := range k.byConn[conn] {
		if v != nil {
			k.releaseSession(key.group, key.member, k.sessions[key], v)
		}
		k.removeSession(key)
		k.stats.Evicted.Add(1)
	}
}

func (k *keeper) addSession(key skey, s *session) {
	k.sessions[key] = s
	if k.byConn[s.conn] == nil {
		k.byConn[s.conn] = map[skey]bool{}
	}
	k.byConn[s.conn][key] = true
	k.stats.Open.Store(int64(len(k.sessions)))
}

func (k *keeper) removeSession(key skey) {
	if s, ok := k.sessions[key]; ok {
		delete(k.byConn[s.conn], key)
		if len(k.byConn[s.conn]) == 0 {
			delete(k.byConn, s.conn)
		}
	}
	delete(k.sessions, key)
	k.stats.Open.Store(int64(len(k.sessions)))
}

func (k *keeper) partition(group string, tp routing.TP, id [16]byte) *Partition {
	key := pkey{group, tp}
	p, ok := k.parts[key]
	if !ok {
		p = NewPartition(k.opts.Partition)
		k.parts[key] = p
		k.ids[key] = id
	}
	return p
}

// forget drops a share-partition's state from memory.
func (k *keeper) forget(key pkey) {
	delete(k.parts, key)
	delete(k.ids, key)
	delete(k.marks, key)
	delete(k.claims, key)
	delete(k.dirty, key)
}

// resolve maps a partition to its name, or to the error a client sees:
// UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER
// (whose share-partition state is dropped: the partition's new leader
// keeps it).
func (k *keeper) resolve(v *routing.View, group string, tp TP) (routing.TP, string, int16) {
	t, ok := v.TopicIDs[tp.TopicID]
	if !ok {
		return routing.TP{}, "", kerr.UnknownTopicID.Code
	}
	if tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return routing.TP{}, t.Name, kerr.UnknownTopicOrPartition.Code
	}
	rtp := routing.TP{Topic: t.Name, Partition: tp.Partition}
	key := pkey{group, rtp}
	if _, led := v.Local[rtp]; !led {
		k.forget(key)
		return rtp, t.Name, kerr.NotLeaderForPartition.Code
	}
	// State of an earlier topic of this name is not this one's.
	if _, ok := k.parts[key]; ok && k.ids[key] != tp.TopicID {
		k.forget(key)
	}
	if snap, ok := k.memStored[key]; ok && !snap.Of(tp.TopicID) {
		delete(k.memStored, key)
	}
	return rtp, t.Name, 0
}

func (k *keeper) begin(m *begin) beginResult {
	now := k.opts.Clock.Now()
	key := skey{m.group, m.member}
	s := k.sessions[key]
	hasAcks := false
	for _, p := range m.parts {
		hasAcks = hasAcks || len(p.Acks) > 0
	}
	switch {
	case m.epoch == 0 && m.op == opAck:
		return beginResult{code: kerr.InvalidShareSessionEpoch.Code}
	case m.epoch == 0 && hasAcks:
		return beginResult{code: kerr.InvalidRequest.Code}
	case m.epoch == 0:
		// A new session replaces the member's old one here, whose
		// records go back to the others.
		if s != nil {
			k.releaseSession(m.group, m.member, s, m.view)
			k.removeSession(key)
		}
		if len(k.sessions) >= k.opts.MaxSessions {
			return beginResult{code: kerr.ShareSessionLimitReached.Code}
		}
		s = &session{parts: map[TP]bool{}, conn: m.conn}
		k.addSession(key, s)
	case s == nil:
		return beginResult{code: kerr.ShareSessionNotFound.Code}
	case m.epoch > 0 && m.epoch != s.epoch:
		return beginResult{code: kerr.InvalidShareSessionEpoch.Code}
	}
	var out []PartResult
	seen := map[TP]int{}
	add := func(r PartResult) *PartResult {
		if i, ok := seen[r.TP]; ok {
			return &out[i]
		}
		seen[r.TP] = len(out)
		out = append(out, r)
		return &out[len(out)-1]
	}
	for _, pr := range m.parts {
		rtp, name, code := k.resolve(m.view, m.group, pr.TP)
		r := add(PartResult{TP: pr.TP, Topic: name, Code: code})
		if len(pr.Acks) > 0 {
			r.AckCode, r.acked = code, true
			if code == 0 {
				r.AckCode = k.applyAcks(now, m.group, m.member, rtp, pr.Acks, m.renew)
			}
		}
		if m.op == opFetch && m.epoch >= 0 {
			s.parts[pr.TP] = true
		}
	}
	for _, tp := range m.forgotten {
		delete(s.parts, tp)
	}
	if m.epoch == -1 {
		k.releaseSession(m.group, m.member, s, m.view)
		k.removeSession(key)
		return beginResult{parts: out}
	}
	s.bump()
	if m.op == opAck || m.renew {
		return beginResult{parts: out}
	}
	for tp := range s.parts {
		rtp, name, code := k.resolve(m.view, m.group, tp)
		r := add(PartResult{TP: tp, Topic: name, Code: code})
		if code != 0 {
			continue
		}
		p := k.partition(m.group, rtp, tp.TopicID)
		r.Offset = -1
		if p.Initialized() {
			off, ok := p.FetchOffset(now)
			if !ok {
				continue // the in-flight window is full
			}
			r.Offset, r.ReadCommitted = off, p.ReadCommitted()
		}
		r.Read = true
	}
	return beginResult{parts: out}
}

func (k *keeper) applyAcks(now time.Time, group, member string, tp routing.TP, acks []AckBatch, renew bool) int16 {
	p, ok := k.parts[pkey{group, tp}]
	if !ok {
		return kerr.InvalidRecordState.Code
	}
	for _, a := range acks {
		for _, t := range a.Types {
			if t == AckRenew && !renew {
				return kerr.InvalidRequest.Code
			}
		}
		if code := p.Acknowledge(now, member, a.First, a.Last, a.Types); code != 0 {
			return code
		}
		k.dirty[pkey{group, tp}] = true
	}
	return 0
}

// releaseSession makes the records member acquired in the session's
// partitions available to the others.
func (k *keeper) releaseSession(group, member string, s *session, v *routing.View) {
	for tp := range s.parts {
		t, ok := v.TopicIDs[tp.TopicID]
		if !ok {
			continue
		}
		key := pkey{group, routing.TP{Topic: t.Name, Partition: tp.Partition}}
		if p, ok := k.parts[key]; ok && p.ReleaseMember(member) {
			k.dirty[key] = true
		}
	}
}

func (k *keeper) acquire(m *acquire) acquireResult {
	now := k.opts.Clock.Now()
	res := acquireResult{ranges: map[TP][]Range{}}
	left := m.maxRecords
	for _, r := range m.reads {
		key := pkey{m.group, routing.TP{Topic: r.Topic, Partition: r.Partition}}
		p, ok := k.parts[key]
		if !ok || k.ids[key] != r.TopicID || (r.Code != 0 && r.Code != kerr.OffsetOutOfRange.Code) {
			continue
		}
		if r.Config != nil {
			// The group's settings apply from their next use on.
			p.SetConfig(*r.Config)
		}
		if !p.Initialized() {
			if k.opts.Store != nil && r.Claim == nil {
				// Read before the share-partition was dropped (by
				// an admin change, a later claim): the next read
				// loads its state.
				res.again = true
				continue
			}
			k.marks[key] = r.Mark
			if r.Claim != nil {
				k.claims[key] = *r.Claim
			}
			if snap, ok := k.memStored[key]; ok && r.Stored == nil && snap.Of(r.TopicID) {
				r.Stored = &snap
				delete(k.memStored, key)
			}
			if r.Stored != nil {
				states := make([]State, len(r.Stored.States))
				for i, s := range r.Stored.States {
					states[i] = State(s)
				}
				p.Restore(r.Stored.Start, states, r.Stored.Counts)
				p.Truncate(r.LogStart)
			} else {
				p.Initialize(r.LogStart, r.HighWatermark)
			}
			k.dirty[key] = true
			res.again = true
			continue
		}
		if r.LogStart > p.Start() {
			p.Truncate(r.LogStart)
			k.dirty[key] = true
			res.again = true
		}
		for _, a := range r.Aborted {
			// Read again at once: what follows may be deliverable.
			p.Archive(a.First, a.Last)
			k.dirty[key], res.again = true, true
		}
		if r.Last < r.First || left <= 0 {
			continue
		}
		got := p.Acquire(now, m.member, r.First, r.Last, left)
		if len(got) > 0 || p.DeadLettersDue() {
			k.dirty[key] = true
		}
		for _, g := range got {
			left -= int(g.Last - g.First + 1)
		}
		if len(got) > 0 {
			res.ranges[r.TP] = got
			res.lock = max(res.lock, p.LockDuration())
		}
	}
	return res
}

// where says again where to read partitions (after a wait, or after a
// read initialized or moved a share-partition).
type where struct {
	group string
	parts []PartResult
	reply func([]PartResult)
}

func (k *keeper) where(m *where) []PartResult {
	now := k.opts.Clock.Now()
	out := make([]PartResult, 0, len(m.parts))
	for _, r := range m.parts {
		p, ok := k.parts[pkey{m.group, routing.TP{Topic: r.Topic, Partition: r.Partition}}]
		if !ok {
			continue
		}
		r.Read, r.Offset = true, -1
		if p.Initialized() {
			off, ok := p.FetchOffset(now)
			if p.DeadLettersDue() {
				k.dirty[pkey{m.group, routing.TP{Topic: r.Topic, Partition: r.Partition}}] = true
			}
			if !ok {
				continue
			}
			r.Offset, r.ReadCommitted = off, p.ReadCommitted()
		}
		out = append(out, r)
	}
	return out
}

// flushDirty hands the snapshots of the share-partitions the last message
// changed to the writer and returns a wait for them to be written (the
// request's answer waits: acknowledgements and delivery counts are on the
// volume before the client hears of them).
func (k *keeper) flushDirty() durableWait {
	written := map[pkey]<-chan error{}
	defer clear(k.dirty)
	for key := range k.dirty {
		p, ok := k.parts[key]
		if !ok || !p.Initialized() {
			continue
		}
		start, states, counts := p.Snapshot()
		snap := sharestate.Snapshot{TopicID: k.ids[key], Start: start, States: make([]uint8, len(states)), Counts: counts}
		for i, s := range states {
			snap.States[i] = uint8(s)
		}
		if k.writer == nil {
			// Without a store the state outlives this incarnation of
			// the keeper in memory (a panic restarts it empty).
			k.memStored[key] = snap
			continue
		}
		written[key] = k.writer.put(key, k.claims[key], k.marks[key], snap)
	}
	return func() map[pkey]error {
		var failed map[pkey]error
		for key, ch := range written {
			if err := <-ch; err != nil {
				if failed == nil {
					failed = map[pkey]error{}
				}
				failed[key] = err
			}
		}
		return failed
	}
}

// viewChanged: the broker's view was published again; the keeper drops
// the state of topics it no longer has.
type viewChanged struct{}

// ofDeletedTopic reports whether state kept for topic, of the topic whose
// id is id (zero: not known), belongs to a topic since deleted: v has no
// topic of that name, or one with another id (deleted and created again).
// Kafka keys share-partition state by topic id and drops it with the
// topic; without this a new topic of the same name would start from the
// old one's offsets and delivery counts. A view that cannot tell which
// topics exist judges nothing.
func ofDeletedTopic(v *routing.View, topic string, id [16]byte) bool {
	if !v.KnowsTopics() {
		return false
	}
	t, ok := v.Topics[topic]
	return !ok || !sharestate.SameTopic(id, t.ID)
}

// dropDeleted removes the state of deleted topics' share-partitions: from
// memory, and (through the writer, after what it has queued) from the
// volume. On the volume only the incarnations this keeper saw deleted go
// (a snapshot without an id with them): in a cluster, a leader whose view
// is newer than this broker's may already have written state for a topic
// created again, or for a topic this view does not have yet. A snapshot of
// a topic deleted while no broker ran stays on the volume, unread: a
// leader discards it when it loads it for a topic of the same name, and
// DescribeShareGroupOffsets leaves it out. A local-dev broker, the only
// one, removes every snapshot of a deleted topic at start.
func (k *keeper) dropDeleted() {
	if k.opts.Views == nil {
		return
	}
	v := k.opts.Views.Load()
	if !v.KnowsTopics() {
		return
	}
	dropped := 0
	for key := range k.parts {
		if ofDeletedTopic(v, key.tp.Topic, k.ids[key]) {
			k.forget(key)
			dropped++
		}
	}
	for key, snap := range k.memStored {
		if ofDeletedTopic(v, key.tp.Topic, snap.TopicID) {
			delete(k.memStored, key)
			dropped++
		}
	}
	if dropped > 0 {
		k.opts.Log.Info().Int("share_partitions", dropped).Msg("dropped share-partition state of deleted topics")
	}
	prev := k.known
	k.known = make(map[string][16]byte, len(v.Topics))
	for name, t := range v.Topics {
		k.known[name] = t.ID
	}
	if k.writer == nil {
		return
	}
	if prev == nil {
		if v.Role == "local" {
			// Judged by the view when the writer gets to it: a topic
			// created meanwhile keeps the state written for it.
			views := k.opts.Views
			k.writer.dropTopics(func(topic string, id [16]byte) bool { return ofDeletedTopic(views.Load(), topic, id) })
		}
		return
	}
	deleted := map[string][16]byte{}
	for name, id := range prev {
		if ofDeletedTopic(v, name, id) {
			deleted[name] = id
		}
	}
	if len(deleted) > 0 {
		k.writer.dropTopics(func(topic string, id [16]byte) bool {
			old, ok := deleted[topic]
			return ok && sharestate.SameTopic(id, old)
		})
	}
}
