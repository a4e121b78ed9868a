// Package partition is the partition actor: it owns one partition's log while
// this broker leads it, and serves Produce, Fetch, ListOffsets,
// OffsetForLeaderEpoch and DeleteRecords for it. Slow storage work (opening
// and recovering the log, fsync, reads of a disk log, closing) runs on
// goroutines that answer with messages, so Receive never blocks on disk.
package partition

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/runtime"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// Config is what a partition actor needs besides its identity.
type Config struct {
	Opener storage.Opener
	Log    zerolog.Logger
	// SyncTimeout bounds how long acks=all produces wait for one fsync
	// before they get a retriable error (NFS stall watchdog).
	SyncTimeout time.Duration
	// MaintenanceInterval is how often retention is enforced.
	MaintenanceInterval time.Duration
	// ProducerExpiration is Kafka's producer.id.expiration.ms.
	ProducerExpiration time.Duration
	// Now is the wall clock for timestamps (LogAppendTime, retention).
	Now func() time.Time
	// Fence, when set, refuses writes while the broker has not completed a
	// heartbeat exchange recently (cluster mode self-fencing).
	Fence interface{ Fenced() bool }
	// Revoked, when set, is raised by the supervisor the moment it applies
	// an assignment that takes the partition away, before the broker's
	// next heartbeat can report that file (and lift a fence): requests
	// still queued ahead of the Relinquish are refused, never appended.
	Revoked *atomic.Bool
	// RunHandoff runs an open or a close (runtime.HandoffPool when nil).
	RunHandoff func(func())
}

func (c *Config) defaults() {
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = 15 * time.Second
	}
	if c.MaintenanceInterval <= 0 {
		c.MaintenanceInterval = 30 * time.Second
	}
	if c.ProducerExpiration <= 0 {
		c.ProducerExpiration = 24 * time.Hour
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.RunHandoff == nil {
		c.RunHandoff = runtime.HandoffPool().Schedule
	}
}

type state int

const (
	stateIdle    state = iota // not leading
	stateOpening              // Take received, log opening
	stateLeading
	stateClosing // Relinquish received, log closing
)

// internal messages from the actor's own goroutines
type (
	logOpened struct {
		gen       uint64
		epoch     int32 // the leader epoch the open stamped
		log       storage.Log
		producers *Producers
		err       error
	}
	syncDone struct {
		gen, syncSeq uint64
		upTo         int64
		err          error
		start        time.Time
	}
	syncWatchdog struct {
		gen, syncSeq uint64
	}
	logClosed struct {
		took time.Duration
		gen  uint64
		upTo int64
		err  error
		done func(error)
	}
	maintenanceTick struct{ gen uint64 }
	openRetry       struct {
		gen  uint64
		take *messages.TakeLeadership
	}
)

// openRetryDelay spaces the attempts to open a partition this broker leads.
const openRetryDelay = time.Second

// Actor is the partition actor.
type Actor struct {
	id  storage.PartitionID
	cfg Config
	log zerolog.Logger

	state       state
	gen         uint64 // bumps on every Take/Relinquish; stale goroutine replies are dropped
	leaderEpoch int32
	topicConfig map[string]string
	maxMessage  int
	appendTime  bool

	plog      storage.Log
	persisted bool // plog is a disk log: do reads off the actor goroutine
	producers *Producers
	hw        int64 // durable high watermark
	// epochStart is the log end this leader opened with. Recovery hides
	// an inherited tail (a killed or released leader's) below the high
	// watermark until this leader's first Sync; until then ListOffsets
	// answers OFFSET_NOT_AVAILABLE (as Kafka's leader does while its high
	// watermark lags its epoch's start offset), not an end offset below
	// records already acknowledged.
	epochStart int64

	syncing bool
	// lastSyncGen: the generation of the group commit in flight when the
	// partition was relinquished (its waiters are acknowledged by it, not
	// by the close); 0: none.
	lastSyncGen uint64
	syncSeq     uint64
	// syncTimer is the watchdog of the group commit in flight, stopped
	// when it returns: a timer left to fire for every commit would wake a
	// goroutine and this actor thousands of times a second per broker
	// under load, for nothing.
	syncTimer  *time.Timer
	waiters    []ackWaiter
	watchers   []messages.WatchHighWatermark
	pending    []any // requests that arrived while opening
	superseded bool  // a newer leader claimed the files (Log.Superseded)
	// closeOnOpen is a relinquish that arrived while the log was opening.
	closeOnOpen *closeRequest
	lastTake    *messages.TakeLeadership // what the open in flight (or failed) was for
	openAbort   *atomic.Bool             // tells the open goroutine it was relinquished
	onOpened    func(error)              // the Take's Opened, until the open finishes
	healthy     bool
	lastSyncAt  time.Time
}

// New returns a producer for the partition actor of id.
func New(id storage.PartitionID, cfg Config) func() actor.Actor {
	cfg.defaults()
	return func() actor.Actor {
		return &Actor{
			id:  id,
			cfg: cfg,
			log: cfg.Log.With().Str("topic", id.Topic).Int32("partition", id.Partition).Logger(),
		}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
	case *actor.Stopping:
		a.stop()
	case *messages.TakeLeadership:
		a.take(ctx, m)
	case *messages.RelinquishLeadership:
		a.relinquish(ctx, m)
	case *messages.UpdateConfig:
		a.applyConfig(m.Config)
		if a.plog != nil {
			a.plog.SetConfig(topicconfig.LogConfig(m.Config))
		}
	case *logOpened:
		a.opened(ctx, m)
	case *syncDone:
		a.synced(ctx, m)
	case *syncWatchdog:
		a.watchdog(m)
	case *logClosed:
		a.closed(m)
	case *maintenanceTick:
		a.maintain(ctx, m)
	case *openRetry:
		if m.gen == a.gen && a.state == stateIdle && a.lastTake != nil {
			a.take(ctx, m.take)
			a.onOpened = nil // reported after the first attempt
		}
	case *messages.PartitionStatus:
		r := messages.PartitionStatusResult{Leading: a.state == stateLeading, LeaderEpoch: a.leaderEpoch, HighWatermark: a.hw}
		if a.plog != nil {
			r.LogStartOffset, r.LogEndOffset = a.plog.StartOffset(), a.plog.NextOffset()
		}
		m.Reply(r)
	case *messages.Produce, *messages.Fetch, *messages.ListOffsets, *messages.OffsetForLeaderEpoch,
		*messages.DeleteRecords, *messages.WatchHighWatermark:
		a.request(ctx, m)
	}
}

func (a *Actor) request(ctx actor.Context, m any) {
	if a.state == stateOpening && len(a.pending) < maxPendingWhileOpening {
		a.pending = append(a.pending, m)
		return
	}
	switch m := m.(type) {
	case *messages.Produce:
		a.produce(ctx, m)
	case *messages.Fetch:
		a.fetch(m)
	case *messages.ListOffsets:
		a.listOffsets(m)
	case *messages.OffsetForLeaderEpoch:
		a.offsetForLeaderEpoch(m)
	case *messages.DeleteRecords:
		a.deleteRecords(m)
	case *messages.WatchHighWatermark:
		if a.state != stateLeading || a.hw > m.Offset {
			m.Notify()
			return
		}
		a.watchers = append(a.watchers, *m)
	}
}

func (a *Actor) applyConfig(cfg map[string]string) {
	a.topicConfig = cfg
	a.maxMessage = topicconfig.MaxMessageBytes(cfg)
	a.appendTime = topicconfig.LogAppendTime(cfg)
}

// --- leadership ------------------------------------------------------------

func (a *Actor) take(ctx actor.Context, m *messages.TakeLeadership) {
	switch a.state {
	case stateLeading, stateOpening:
		if m.LeaderEpoch > a.leaderEpoch {
			a.leaderEpoch = m.LeaderEpoch
			a.lastTake = m
			if a.state == stateLeading {
				if err := a.plog.AssignEpoch(m.LeaderEpoch, a.plog.NextOffset()); err != nil {
					a.log.Error().Err(err).Msg("assign leader epoch")
				}
			}
		}
		a.applyConfig(m.Config)
		return
	case stateClosing:
		// The close finishes first; the supervisor re-sends Take after Done.
		a.log.Warn().Msg("take while closing ignored")
		return
	}
	a.gen++
	gen := a.gen
	a.state = stateOpening
	a.lastTake = m
	a.onOpened = m.Opened
	a.leaderEpoch = m.LeaderEpoch
	a.id.TopicID = m.TopicID
	a.applyConfig(m.Config)
	self := ctx.Self()
	system := ctx.ActorSystem()
	id, opener, logCfg, epoch := a.id, a.cfg.Opener, topicconfig.LogConfig(m.Config), m.LeaderEpoch
	logCfg.Claim, logCfg.ClaimEpoch = true, epoch
	log := a.log
	abort := &atomic.Bool{}
	a.openAbort = abort
	fence := a.cfg.Fence
	a.cfg.RunHandoff(func() {
		start := time.Now()
		l, err := opener.Open(id, logCfg)
		var prods *Producers
		var hadSnapshot bool
		if err == nil {
			prods, hadSnapshot, err = recoverProducers(l)
			if err == nil {
				err = waitToStamp(fence, abort)
			}
			if err == nil && l.Superseded(epoch) {
				err = errSuperseded // a newer leader opened it meanwhile
			}
			if err == nil {
				err = l.AssignEpoch(epoch, l.NextOffset())
			}
			if err == nil && !hadSnapshot && opener.Persistent() {
				// Create the snapshot file now (a new partition's first
				// open), so that the release of a drain overwrites it in
				// place instead of creating a thousand files on its path.
				if werr := writeProducerSnapshot(l, prods); werr != nil {
					log.Warn().Err(werr).Msg("write producer snapshot")
				}
			}
			if err != nil {
				_ = l.Close()
			}
		}
		if err != nil {
			err = fmt.Errorf("open partition %s-%d: %w", id.Topic, id.Partition, err)
		} else {
			// Debug: a move logs one line per partition; the supervisor
			// logs each assignment applied with its counts at Info.
			log.Debug().Int32("leader_epoch", epoch).Int64("log_start", l.StartOffset()).Int64("log_end", l.NextOffset()).
				Dur("took", time.Since(start)).Msg("partition opened")
		}
		system.Root.Send(self, &logOpened{gen: gen, epoch: epoch, log: l, producers: prods, err: err})
	})
}

// errOpenAbandoned: the partition was relinquished while it was opening.
var errOpenAbandoned = errors.New("relinquished while opening")

// waitToStamp runs before an open stamps its leader epoch on the files (a
// write the next leader must never race): not once the open was abandoned,
// and not while the broker is fenced (it may have been declared dead and
// the partition given away); a fenced broker waits for its next heartbeat
// exchange or for the relinquish.
func waitToStamp(fence interface{ Fenced() bool }, abort *atomic.Bool) error {
	for {
		if abort.Load() {
			return errOpenAbandoned
		}
		if fence == nil || !fence.Fenced() {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// producerSnapshotName names the idempotent-producer table's snapshot beside the log.
const producerSnapshotName = "producers"

// writeProducerSnapshot writes prods as of the log end. An encoding error
// writes nothing (the next open rebuilds the table from the log).
func writeProducerSnapshot(l storage.Log, prods *Producers) error {
	snap, err := prods.Snapshot(l.NextOffset())
	if err != nil {
		return nil
	}
	return l.WriteSnapshot(producerSnapshotName, snap)
}

// recoverProducers rebuilds idempotent-producer state: the snapshot (if any)
// plus every batch header after it. The log is the authority.
func recoverProducers(l storage.Log) (prods *Producers, hadSnapshot bool, err error) {
	prods = NewProducers()
	from := l.StartOffset()
	if snap, err := l.ReadSnapshot(producerSnapshotName); err == nil && snap != nil {
		hadSnapshot = true
		if p, off, err := LoadSnapshot(snap); err == nil && off <= l.NextOffset() && off >= from && snapshotFits(l, off, p) {
			prods, from = p, off
		}
	}
	err = l.ScanHeaders(from, func(h batch.Header) error {
		if h.NextOffset() > from {
			prods.Record(h)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("rebuild producer state: %w", err)
	}
	return prods, hadSnapshot, nil
}

// snapshotFits reports whether the log holds, just below off, the batch a
// snapshot's table says ends there. A snapshot that names none (an older
// broker's, or one naming another offset) is not checked.
func snapshotFits(l storage.Log, off int64, p *Producers) bool {
	end, ok := p.endsAt(off)
	if !ok {
		return !p.hasLast
	}
	if off <= l.StartOffset() {
		return false
	}
	fits := false
	_ = l.ScanHeaders(end.Base, func(h batch.Header) error {
		fits = end.Matches(h)
		return errStopScan
	})
	return fits
}

var errStopScan = errors.New("stop scan")

func (a *Actor) opened(ctx actor.Context, m *logOpened) {
	if m.gen == a.gen || (a.closeOnOpen != nil && m.gen == a.closeOnOpen.openGen) {
		if report := a.onOpened; report != nil {
			a.onOpened = nil
			report(m.err)
		}
	}
	if req := a.closeOnOpen; req != nil && m.gen == req.openGen {
		// Relinquished while opening: close what the open produced, then
		// report the release.
		a.closeOnOpen = nil
		if m.err != nil {
			a.state = stateIdle
			if req.del {
				req.done(a.cfg.Opener.Remove(a.id))
				return
			}
			req.done(nil)
			return
		}
		a.startClose(ctx, m.log, m.producers, *req)
		return
	}
	if m.gen != a.gen {
		if m.log != nil {
			_ = m.log.Close()
		}
		return
	}
	pending := a.pending
	a.pending = nil
	if m.err != nil {
		a.log.Error().Err(m.err).Dur("retry_in", openRetryDelay).Msg("partition open failed")
		a.state = stateIdle
		a.healthy = false
		for _, p := range pending {
			a.request(ctx, p)
		}
		// Still the leader in the file: try again (a transient storage
		// error, or a newer file on its way that moves the partition).
		self, system, retry := ctx.Self(), ctx.ActorSystem(), &openRetry{gen: a.gen, take: a.lastTake}
		time.AfterFunc(openRetryDelay, func() { system.Root.Send(self, retry) })
		return
	}
	a.state = stateLeading
	a.healthy = true
	a.plog = m.log
	if a.leaderEpoch > m.epoch {
		// A newer epoch arrived while the log was opening.
		if err := a.plog.AssignEpoch(a.leaderEpoch, a.plog.NextOffset()); err != nil {
			a.log.Error().Err(err).Msg("assign leader epoch")
		}
	}
	a.persisted = a.cfg.Opener.Persistent()
	a.producers = m.producers
	a.hw = m.log.Durable()
	a.epochStart = a.plog.NextOffset()
	a.scheduleMaintenance(ctx)
	if a.plog.NextOffset() > a.hw {
		// A tail the previous leader released unsynced: its producers'
		// retries are answered as duplicates once this Sync covers it.
		a.startSync(ctx)
	}
	for _, p := range pending {
		a.request(ctx, p)
	}
}

func (a *Actor) relinquish(ctx actor.Context, m *messages.RelinquishLeadership) {
	done := m.Done
	if done == nil {
		done = func(error) {}
	}
	if a.state == stateIdle {
		// A failed open's retry must not lead it again after the release.
		a.gen++
		a.lastTake = nil
	}
	if a.state == stateIdle || a.state == stateClosing {
		if m.Delete && a.state == stateIdle {
			done(a.cfg.Opener.Remove(a.id))
			return
		}
		done(nil)
		return
	}
	openGen := a.gen
	a.gen++
	prev := a.state
	a.state = stateClosing
	a.failPending(ctx)
	a.notifyWatchers(true)
	// Release makes nothing more durable: the group commit in flight (if
	// any) acknowledges what it covers, and every other waiter is answered
	// at once, not after the close, so their producers retry at the next
	// leader while this broker is still closing.
	a.lastSyncGen = 0
	if prev == stateLeading && a.syncing {
		a.lastSyncGen = openGen
	} else {
		a.failWaiters()
	}
	// A fenced broker may already have lost the partition to another: it
	// closes its files without writing anything more beside the log.
	req := closeRequest{del: m.Delete, fenced: a.cfg.Fence != nil && a.cfg.Fence.Fenced(), done: done}
	if prev == stateOpening {
		a.openAbort.Store(true)
		// The open goroutine may still be recovering the log and stamping
		// the new epoch on it: the release is only done once that log is
		// closed again (opened hands it over), or the files would have two
		// writers, this broker's late open and the next leader's.
		req.openGen = openGen
		a.closeOnOpen = &req
		return
	}
	a.startClose(ctx, a.plog, a.producers, req)
}

// startClose closes l on a goroutine and answers with logClosed.
func (a *Actor) startClose(ctx actor.Context, l storage.Log, prods *Producers, req closeRequest) {
	gen, id, opener, epoch, hw := a.gen, a.id, a.cfg.Opener, a.leaderEpoch, a.hw
	self, system := ctx.Self(), ctx.ActorSystem()
	a.cfg.RunHandoff(func() {
		// The snapshot costs no fsync of its own, and Release leaves the
		// tail group commit has not synced yet to the next leader's first
		// Sync instead of waiting for one here: a 1,000-partition drain's
		// closes then wait for no fsync at all. A deleted log is closed.
		start := time.Now()
		var err error
		if !req.del && !req.fenced && prods != nil {
			err = writeProducerSnapshot(l, prods)
		}
		closeLog := l.Release
		if req.del {
			closeLog = l.Close
		}
		if cerr := closeLog(); err == nil {
			err = cerr
		}
		upTo := l.Durable()
		if l.Superseded(epoch) {
			upTo = hw // acknowledge nothing the claimant may not have
		}
		if req.del {
			if rerr := opener.Remove(id); err == nil {
				err = rerr
			}
		}
		system.Root.Send(self, &logClosed{gen: gen, upTo: upTo, err: err, done: req.done, took: time.Since(start)})
	})
}

func (a *Actor) closed(m *logClosed) {
	if m.err == nil {
		a.advanceHW(m.upTo)
	} else {
		a.log.Error().Err(m.err).Msg("partition close")
	}
	a.lastSyncGen = 0
	a.failWaiters()
	// A Sync still in flight on the closed log answers a generation that
	// is gone: a later Take of this actor must be able to start its own.
	a.syncing = false
	a.plog = nil
	a.producers = nil
	if m.gen == a.gen {
		a.state = stateIdle
	}
	a.log.Debug().Dur("took", m.took).Msg("partition closed")
	m.done(m.err)
}

// failWaiters answers every acks=all waiter NOT_LEADER_OR_FOLLOWER: this
// broker will not make their batches durable (the next leader's first Sync
// does, and the producers' retries are answered as duplicates there).
func (a *Actor) failWaiters() {
	for _, w := range a.waiters {
		w.reply(messages.ProduceResult{ErrorCode: kerr.NotLeaderForPartition.Code})
	}
	a.waiters = nil
}

// failPending answers requests queued during an open that will not finish.
func (a *Actor) failPending(ctx actor.Context) {
	pending := a.pending
	a.pending = nil
	st := a.state
	a.state = stateIdle
	for _, p := range pending {
		a.request(ctx, p)
	}
	a.state = st
}

func (a *Actor) stop() {
	a.gen++
	a.stopSyncTimer()
	a.notifyWatchers(true)
	if a.plog != nil {
		// Actor stopped without Relinquish (system shutdown): close quickly.
		_, _ = a.plog.Sync()
		_ = a.plog.Close()
		a.plog = nil
	}
	for _, w := range a.waiters {
		w.reply(messages.ProduceResult{ErrorCode: kerr.NotLeaderForPartition.Code})
	}
	a.waiters = nil
}

// --- produce and group commit --------------------------------------------

func (a *Actor) produce(ctx actor.Context, m *messages.Produce) {
	reply := func(code int16, msg string) {
		m.Reply(messages.ProduceResult{ErrorCode: code, ErrorMessage: msg, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
	}
	if a.state != stateLeading {
		reply(kerr.NotLeaderForPartition.Code, "")
		return
	}
	if !a.healthy {
		reply(kerr.KafkaStorageError.Code, "partition storage is unhealthy")
		return
	}
	if a.cfg.Fence != nil && a.cfg.Fence.Fenced() {
		// No heartbeat exchange within fence_after: the controller may be
		// about to give this partition away. Refuse rather than risk two
		// writers; the client refreshes metadata and retries.
		reply(kerr.NotLeaderForPartition.Code, "broker fenced: no recent heartbeat exchange with the controller")
		return
	}
	if a.revoked() || a.superseded {
		reply(kerr.NotLeaderForPartition.Code, "partition moving away from this broker")
		return
	}
	if len(m.Batch) > a.maxMessage {
		reply(kerr.MessageTooLarge.Code, fmt.Sprintf("batch of %d bytes exceeds max.message.bytes %d", len(m.Batch), a.maxMessage))
		return
	}
	batches, rest, err := batch.Split(m.Batch)
	if err != nil || len(rest) > 0 || len(batches) == 0 {
		reply(kerr.CorruptMessage.Code, "records are not a whole number of record batches")
		return
	}
	if len(batches) != 1 {
		reply(kerr.InvalidRecord.Code, "produce requests v3+ must carry exactly one record batch per partition")
		return
	}
	b := batches[0]
	h, err := batch.ValidateProduce(b)
	switch {
	case errors.Is(err, batch.ErrUnsupportedMagic):
		reply(kerr.UnsupportedForMessageFormat.Code, err.Error())
		return
	case errors.Is(err, batch.ErrCorrupt):
		reply(kerr.CorruptMessage.Code, err.Error())
		return
	case err != nil:
		reply(kerr.InvalidRecord.Code, err.Error())
		return
	}
	if h.IsTransactional() {
		reply(kerr.InvalidRecord.Code, "transactional batches are not supported by kaas")
		return
	}
	check := a.producers.Check(h)
	if check.ErrorCode != 0 {
		reply(check.ErrorCode, check.Message)
		return
	}
	res := messages.ProduceResult{LogAppendTime: -1, LogStartOffset: a.plog.StartOffset()}
	if d := check.Duplicate; d != nil {
		res.BaseOffset = d.FirstOffset
		a.ack(m, res, d.LastOffset+1)
		return
	}
	base := a.plog.NextOffset()
	batch.SetBaseOffset(b, base)
	batch.SetLeaderEpoch(b, a.leaderEpoch)
	if a.appendTime {
		now := a.cfg.Now().UnixMilli()
		batch.SetLogAppendTime(b, now)
		res.LogAppendTime = now
		h.MaxTimestamp = now
		if ph, err := batch.ParseHeader(b); err == nil {
			h.CRC = ph.CRC // rewritten with the timestamp
		}
	}
	h.BaseOffset, h.LeaderEpoch = base, a.leaderEpoch
	if err := a.plog.Append(b, h); err != nil {
		a.healthy = false
		a.log.Error().Err(err).Int64("offset", base).Msg("append failed; partition marked unhealthy")
		reply(kerr.KafkaStorageError.Code, err.Error())
		return
	}
	a.producers.Record(h)
	res.BaseOffset = base
	a.ack(m, res, h.NextOffset())
	a.afterAppend(ctx)
}

func (a *Actor) revoked() bool { return a.cfg.Revoked != nil && a.cfg.Revoked.Load() }

// ack answers acks=0/1 at once and queues acks=all until the batch is durable.
func (a *Actor) ack(m *messages.Produce, res messages.ProduceResult, end int64) {
	if m.Acks != -1 || a.hw >= end {
		m.Reply(res)
		return
	}
	a.waiters = append(a.waiters, ackWaiter{end: end, res: res, reply: m.Reply})
}

// afterAppend advances the high watermark: at once for a log that is durable
// as soon as written (memory), else through one group-commit fsync.
func (a *Actor) afterAppend(ctx actor.Context) {
	if d := a.plog.Durable(); d > a.hw {
		a.advanceHW(d)
	}
	if a.plog.NextOffset() > a.hw {
		a.startSync(ctx)
	}
}

func (a *Actor) startSync(ctx actor.Context) {
	if a.syncing {
		return
	}
	a.syncing = true
	a.syncSeq++
	gen, seq, l, epoch := a.gen, a.syncSeq, a.plog, a.leaderEpoch
	self, system := ctx.Self(), ctx.ActorSystem()
	start := time.Now()
	go func() {
		upTo, err := l.Sync()
		if err == nil && l.Superseded(epoch) {
			err = errSuperseded
		}
		system.Root.Send(self, &syncDone{gen: gen, syncSeq: seq, upTo: upTo, err: err, start: start})
	}()
	a.syncTimer = time.AfterFunc(a.cfg.SyncTimeout, func() {
		watchdogsFired.Add(1)
		system.Root.Send(self, &syncWatchdog{gen: gen, syncSeq: seq})
	})
}

// watchdogsFired counts group-commit watchdogs that went off (tests).
var watchdogsFired atomic.Int64

// stopSyncTimer stops the watchdog of the latest group commit, which just
// returned (or because the actor stops).
func (a *Actor) stopSyncTimer() {
	if a.syncTimer != nil {
		a.syncTimer.Stop()
		a.syncTimer = nil
	}
}

func (a *Actor) synced(ctx actor.Context, m *syncDone) {
	// Only the latest commit's answer stops the watchdog: after a close
	// and a retake, the closed log's commit may still answer while the
	// new one is in flight.
	if m.syncSeq == a.syncSeq {
		a.stopSyncTimer()
	}
	if a.state == stateClosing && a.lastSyncGen != 0 && m.gen == a.lastSyncGen {
		// The last group commit of a relinquished partition.
		a.lastSyncGen = 0
		a.syncing = false
		if m.err == nil {
			a.advanceHW(m.upTo)
		}
		a.failWaiters()
		return
	}
	if m.gen != a.gen {
		return
	}
	a.syncing = false
	if errors.Is(m.err, errSuperseded) {
		// A newer leader claimed the files while this broker still wrote
		// (it stalled past dead-after): what this Sync covered may not be
		// in that leader's log, so nothing is acknowledged, and nothing
		// more is written here.
		a.superseded = true
		a.log.Warn().Int32("leader_epoch", a.leaderEpoch).Int("waiters", len(a.waiters)).
			Msg("a newer leader claimed the partition; not acknowledging")
		for _, w := range a.waiters {
			w.reply(messages.ProduceResult{ErrorCode: kerr.NotLeaderForPartition.Code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
		}
		a.waiters = nil
		return
	}
	if m.err != nil {
		a.healthy = false
		a.log.Error().Err(m.err).Msg("fsync failed; partition marked unhealthy")
		for _, w := range a.waiters {
			w.reply(messages.ProduceResult{ErrorCode: kerr.KafkaStorageError.Code, ErrorMessage: m.err.Error(), BaseOffset: -1})
		}
		a.waiters = nil
		return
	}
	if !a.healthy && a.state == stateLeading {
		a.log.Info().Msg("fsync recovered; partition healthy again")
		a.healthy = true
	}
	a.advanceHW(m.upTo)
	if a.state == stateLeading && a.plog.NextOffset() > a.hw {
		a.startSync(ctx)
	}
}

// watchdog fails acks=all waiters of a hung fsync with a retriable error so
// producers retry (their idempotent retries are de-duplicated) instead of
// hanging, and marks the partition unhealthy until the fsync returns.
func (a *Actor) watchdog(m *syncWatchdog) {
	if m.gen != a.gen || !a.syncing || m.syncSeq != a.syncSeq {
		return
	}
	a.healthy = false
	a.log.Error().Dur("timeout", a.cfg.SyncTimeout).Int("waiters", len(a.waiters)).Msg("fsync hung; failing acks=all waiters")
	for _, w := range a.waiters {
		w.reply(messages.ProduceResult{ErrorCode: kerr.RequestTimedOut.Code, ErrorMessage: "fsync did not complete in time", BaseOffset: -1})
	}
	a.waiters = nil
}

func (a *Actor) advanceHW(upTo int64) {
	if upTo <= a.hw {
		return
	}
	a.hw = upTo
	n := 0
	for _, w := range a.waiters {
		if w.end <= a.hw {
			w.reply(w.res)
			continue
		}
		a.waiters[n] = w
		n++
	}
	a.waiters = a.waiters[:n]
	a.notifyWatchers(false)
}

func (a *Actor) notifyWatchers(all bool) {
	n := 0
	for _, w := range a.watchers {
		if all || a.hw > w.Offset {
			w.Notify()
			continue
		}
		a.watchers[n] = w
		n++
	}
	clear(a.watchers[n:])
	a.watchers = a.watchers[:n]
}

// --- reads -------------------------------------------------------------------

// checkEpoch applies KIP-320's current-leader-epoch check.
func (a *Actor) checkEpoch(current int32) int16 {
	switch {
	case current < 0 || current == a.leaderEpoch:
		return 0
	case current < a.leaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// offLoop runs storage reads inline for an in-memory log and on a goroutine
// for a disk log, so the mailbox never waits on disk.
func (a *Actor) offLoop(fn func()) {
	if a.persisted {
		go fn()
		return
	}
	fn()
}

func (a *Actor) fetch(m *messages.Fetch) {
	if a.state != stateLeading {
		m.Reply(messages.FetchResult{ErrorCode: kerr.NotLeaderForPartition.Code, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1})
		return
	}
	res := messages.FetchResult{HighWatermark: a.hw, LastStableOffset: a.hw, LogStartOffset: a.plog.StartOffset(), LeaderEpoch: a.leaderEpoch}
	if code := a.checkEpoch(m.CurrentLeaderEpoch); code != 0 {
		res.ErrorCode = code
		m.Reply(res)
		return
	}
	if m.LastFetchedEpoch >= 0 {
		epoch, end := EndOffsetForEpoch(a.plog.Epochs(), a.leaderEpoch, a.plog.NextOffset(), m.LastFetchedEpoch)
		if epoch != m.LastFetchedEpoch || end < m.Offset {
			res.Diverging, res.DivergingEpoch, res.DivergingEndOffset = true, epoch, end
			m.Reply(res)
			return
		}
	}
	if m.Offset < res.LogStartOffset || m.Offset > a.plog.NextOffset() {
		res.ErrorCode = kerr.OffsetOutOfRange.Code
		m.Reply(res)
		return
	}
	if m.Offset >= a.hw {
		res.Records = storage.BytesRecords(nil)
		m.Reply(res)
		return
	}
	l, hw := a.plog, a.hw
	a.offLoop(func() {
		recs, err := l.Read(m.Offset, int(m.MaxBytes), hw)
		switch {
		case errors.Is(err, storage.ErrOffsetOutOfRange):
			res.ErrorCode = kerr.OffsetOutOfRange.Code
		case errors.Is(err, storage.ErrClosed):
			res.ErrorCode = kerr.NotLeaderForPartition.Code
		case err != nil:
			a.log.Error().Err(err).Int64("offset", m.Offset).Msg("read failed")
			res.ErrorCode = kerr.KafkaStorageError.Code
		default:
			res.Records = recs
		}
		m.Reply(res)
	})
}

func (a *Actor) listOffsets(m *messages.ListOffsets) {
	res := messages.ListOffsetsResult{Timestamp: -1, Offset: -1, LeaderEpoch: a.leaderEpoch}
	if a.state != stateLeading {
		res.ErrorCode = kerr.NotLeaderForPartition.Code
		m.Reply(res)
		return
	}
	if code := a.checkEpoch(m.CurrentLeaderEpoch); code != 0 {
		res.ErrorCode = code
		m.Reply(res)
		return
	}
	if a.hw < a.epochStart {
		res.ErrorCode = kerr.OffsetNotAvailable.Code
		m.Reply(res)
		return
	}
	l, hw, epochs := a.plog, a.hw, a.plog.Epochs()
	switch m.Timestamp {
	case -1: // latest (read_uncommitted and read_committed alike: no transactions)
		res.Offset = hw
		m.Reply(res)
		return
	case -2, -4: // earliest, earliest-local
		res.Offset = l.StartOffset()
		res.LeaderEpoch = epochAt(epochs, res.Offset, a.leaderEpoch)
		m.Reply(res)
		return
	}
	a.offLoop(func() {
		if m.Timestamp == -3 { // max timestamp (KIP-734)
			ts, off, err := l.MaxTimestamp(hw)
			if err != nil {
				res.ErrorCode = kerr.KafkaStorageError.Code
			} else if off >= 0 {
				b, _, _ := l.FindTimestamp(ts, hw)
				res.Timestamp, res.Offset = ts, offsetOfTimestamp(b, ts, true)
				res.LeaderEpoch = epochAt(epochs, res.Offset, a.leaderEpoch)
			}
			m.Reply(res)
			return
		}
		if m.Timestamp < 0 {
			res.ErrorCode = kerr.InvalidRequest.Code
			m.Reply(res)
			return
		}
		b, ok, err := l.FindTimestamp(m.Timestamp, hw)
		switch {
		case err != nil:
			res.ErrorCode = kerr.KafkaStorageError.Code
		case ok:
			res.Offset, res.Timestamp = recordAtOrAfter(b, m.Timestamp)
			res.LeaderEpoch = epochAt(epochs, res.Offset, a.leaderEpoch)
		}
		m.Reply(res)
	})
}

func (a *Actor) offsetForLeaderEpoch(m *messages.OffsetForLeaderEpoch) {
	res := messages.OffsetForLeaderEpochResult{LeaderEpoch: -1, EndOffset: -1}
	if a.state != stateLeading {
		res.ErrorCode = kerr.NotLeaderForPartition.Code
		m.Reply(res)
		return
	}
	if code := a.checkEpoch(m.CurrentLeaderEpoch); code != 0 {
		res.ErrorCode = code
		m.Reply(res)
		return
	}
	res.LeaderEpoch, res.EndOffset = EndOffsetForEpoch(a.plog.Epochs(), a.leaderEpoch, a.plog.NextOffset(), m.LeaderEpoch)
	m.Reply(res)
}

func (a *Actor) deleteRecords(m *messages.DeleteRecords) {
	if a.state != stateLeading || (a.cfg.Fence != nil && a.cfg.Fence.Fenced()) || a.revoked() {
		m.Reply(messages.DeleteRecordsResult{ErrorCode: kerr.NotLeaderForPartition.Code, LowWatermark: -1})
		return
	}
	off := m.Offset
	if off == -1 {
		off = a.hw
	}
	if off < 0 || off > a.hw {
		m.Reply(messages.DeleteRecordsResult{ErrorCode: kerr.OffsetOutOfRange.Code, LowWatermark: a.plog.StartOffset()})
		return
	}
	if err := a.plog.SetStartOffset(off); err != nil {
		a.log.Error().Err(err).Int64("offset", off).Msg("delete records")
		m.Reply(messages.DeleteRecordsResult{ErrorCode: kerr.KafkaStorageError.Code, LowWatermark: a.plog.StartOffset()})
		return
	}
	m.Reply(messages.DeleteRecordsResult{LowWatermark: a.plog.StartOffset()})
}

// --- maintenance -------------------------------------------------------------

func (a *Actor) scheduleMaintenance(ctx actor.Context) {
	self, system, gen := ctx.Self(), ctx.ActorSystem(), a.gen
	time.AfterFunc(a.cfg.MaintenanceInterval, func() { system.Root.Send(self, &maintenanceTick{gen: gen}) })
}

func (a *Actor) maintain(ctx actor.Context, m *maintenanceTick) {
	if m.gen != a.gen || a.state != stateLeading {
		return
	}
	now := a.cfg.Now()
	if err := a.plog.EnforceRetention(now); err != nil {
		a.log.Error().Err(err).Msg("retention")
	}
	a.producers.Expire(now.Add(-a.cfg.ProducerExpiration).UnixMilli())
	a.scheduleMaintenance(ctx)
}
