package partition

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
)

// Core is the partition's state machine, in the shape of etcd's raft: Step
// takes an event and the time and returns effects; it does no I/O, starts
// no goroutine and reads no clock, so every interleaving of a handoff can be
// replayed in a test (it logs, through CoreConfig.Log). It owns:
//
//   - the lifecycle idle → opening → leading → closing → idle, with a
//     generation bumped on every Take and Relinquish so that the result of
//     a superseded open, sync or close is recognised and ignored;
//   - group commit: which acks=all produces wait for which offset, one Sync
//     in flight at a time, the next one started when it returns short of
//     the log end, its waiters answered when it covers them and failed when
//     it fails, its watchdog fires or the partition is given up;
//   - the high watermark and its watchers, and the storage health.
//
// The shell (Actor) turns messages into events, executes effects and reads
// the log for requests through the accessors.
type Core struct {
	cfg CoreConfig

	phase phase
	gen   uint64 // bumps on every Take/Relinquish; stale results are dropped
	epoch int32
	// take is what the open in flight (or failed) was for; opened is its
	// Opened report, until the first attempt finishes.
	take   *messages.TakeLeadership
	opened func(error)
	// closeOnOpen is a relinquish that arrived while the log was opening.
	closeOnOpen *closeRequest
	pending     []any // requests that arrived while opening

	log       storage.Log
	producers *Producers
	healthy   bool
	// writeFailed: an append failed (a full or failing volume); writes
	// are refused until RetryWrites, then tried again.
	writeFailed bool
	superseded  bool // a newer leader claimed the files (Log.Superseded)
	// durableOnAppend: the log is durable once written (memory); else the
	// high watermark moves only through a Synced, which checked the claim.
	durableOnAppend bool
	hw              int64 // durable high watermark
	// epochStart is the log end this leader opened with. Recovery hides
	// an inherited tail (a killed or released leader's) below the high
	// watermark until this leader's first Sync; until then ListOffsets
	// answers OFFSET_NOT_AVAILABLE (as Kafka's leader does while its high
	// watermark lags its epoch's start offset), not an end offset below
	// records already acknowledged.
	epochStart int64

	syncing   bool
	syncSeq   uint64
	syncStart time.Time
	// lastSyncGen: the generation of the group commit in flight when the
	// partition was relinquished (its waiters are acknowledged by it, not
	// by the close); 0: none.
	lastSyncGen uint64
	waiters     []ackWaiter
	watchers    []messages.WatchHighWatermark

	now time.Time // of the event being stepped
	out []Effect
}

// CoreConfig is what the core needs besides its events.
type CoreConfig struct {
	// SyncTimeout bounds how long acks=all produces wait for one fsync.
	SyncTimeout time.Duration
	// OpenRetryDelay spaces the attempts to open a partition still led.
	OpenRetryDelay time.Duration
	// WriteRetryDelay is how long writes are refused after an append
	// failed, before one is tried again.
	WriteRetryDelay time.Duration
	// MaintenanceInterval is how often retention is enforced.
	MaintenanceInterval time.Duration
	Log                 zerolog.Logger
}

type phase uint8

const (
	phaseIdle    phase = iota // not leading
	phaseOpening              // Take received, log opening
	phaseLeading
	phaseClosing // Relinquish received, log closing
)

func (p phase) String() string {
	switch p {
	case phaseIdle:
		return "idle"
	case phaseOpening:
		return "opening"
	case phaseLeading:
		return "leading"
	case phaseClosing:
		return "closing"
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// maxPendingWhileOpening bounds the requests queued while the log opens.
const maxPendingWhileOpening = 10000

type ackWaiter struct {
	end   int64 // offset after the batch: acked when hw >= end
	res   messages.ProduceResult
	reply func(messages.ProduceResult)
}

// closeRequest is a relinquish waiting for (or running) its close.
type closeRequest struct {
	openGen     uint64 // the open it waits for (closeOnOpen only)
	del, fenced bool
	done        func(error)
}

// errSuperseded: a Sync completed, but a newer leader had claimed the
// partition's files.
var errSuperseded = errors.New("superseded by a newer leader")

// NewCore returns an idle core.
func NewCore(cfg CoreConfig) *Core { return &Core{cfg: cfg} }

// Step applies ev at now and returns the effects to execute, in order.
func (c *Core) Step(ev Event, now time.Time) []Effect {
	c.out, c.now = nil, now
	switch e := ev.(type) {
	case Take:
		c.takeLeadership(e.Msg)
	case Relinquish:
		c.relinquish(e)
	case Opened:
		c.onOpened(e)
	case RetryOpen:
		if e.Gen == c.gen && c.phase == phaseIdle && c.take != nil {
			c.takeLeadership(c.take)
			c.opened = nil // reported after the first attempt
		}
	case Synced:
		c.onSynced(e)
	case WatchdogFired:
		c.onWatchdog(e)
	case Closed:
		c.onClosed(e)
	case MaintenanceTick:
		if e.Gen == c.gen && c.phase == phaseLeading {
			c.emit(Maintain{})
			c.emit(After{D: c.cfg.MaintenanceInterval, Event: MaintenanceTick{Gen: c.gen}})
		}
	case Request:
		if c.phase == phaseOpening && len(c.pending) < maxPendingWhileOpening {
			c.pending = append(c.pending, e.Msg)
			break
		}
		c.request(e.Msg)
	case Produced:
		c.onProduced(e)
	case AppendFailed:
		c.appendFailed()
	case RetryWrites:
		if e.Gen == c.gen && c.writeFailed {
			c.writeFailed = false
			c.cfg.Log.Info().Msg("trying writes again after a failed append")
		}
	case Stop:
		c.stop()
	}
	out := c.out
	c.out = nil
	return out
}

func (c *Core) emit(e Effect) { c.out = append(c.out, e) }

// Accessors for the shell's request handling.

// Leading reports whether the log is open and this broker leads.
func (c *Core) Leading() bool { return c.phase == phaseLeading }

// LeaderEpoch is the epoch this broker leads (or last led) at.
func (c *Core) LeaderEpoch() int32 { return c.epoch }

// HighWatermark is the durable high watermark.
func (c *Core) HighWatermark() int64 { return c.hw }

// LastStable is the last stable offset: the high watermark, or the first
// offset of the oldest transaction open on the partition, or whose marker
// is not yet durable, if lower. A transaction whose first records
// retention or DeleteRecords removed counts from the log start offset, as
// Kafka's first unstable offset does: a read_committed client told of an
// offset below the log start would be refused at it.
func (c *Core) LastStable() int64 {
	if c.producers == nil {
		return c.hw
	}
	lso := c.producers.LastStable(c.hw)
	if c.log != nil && lso < c.hw {
		lso = min(max(lso, c.log.StartOffset()), c.hw)
	}
	return lso
}

// watchMark is the offset a watcher waits to pass: the last stable offset
// for read_committed fetches, else the high watermark.
func (c *Core) watchMark(w *messages.WatchHighWatermark) int64 {
	if w.Committed {
		return c.LastStable()
	}
	return c.hw
}

// EpochStart is the log end this leader opened with.
func (c *Core) EpochStart() int64 { return c.epochStart }

// Log is the open log (nil unless leading or closing).
func (c *Core) Log() storage.Log { return c.log }

// Producers is the idempotent-producer table of the open log.
func (c *Core) Producers() *Producers { return c.producers }

// StorageHealthy reports whether the log takes writes, as far as storage
// goes (true when not leading): false after a failed append until the
// retry, and after a failed or hung fsync.
func (c *Core) StorageHealthy() bool {
	return c.phase != phaseLeading || c.healthy && !c.writeFailed
}

// Admit decides whether a write may go to the log now: the error code and
// message to refuse it with, or 0. fenced and revoked are the broker's
// self-fence and the supervisor's revocation, read by the shell.
func (c *Core) Admit(fenced, revoked bool) (int16, string) {
	switch {
	case c.phase != phaseLeading:
		return kerr.NotLeaderForPartition.Code, ""
	case !c.healthy:
		return kerr.KafkaStorageError.Code, "partition storage is unhealthy"
	case c.writeFailed:
		return kerr.KafkaStorageError.Code, "an append to the partition's log failed; writes are tried again shortly"
	case fenced:
		// No heartbeat exchange within fence_after: the controller may be
		// about to give this partition away. Refuse rather than risk two
		// writers; the client refreshes metadata and retries.
		return kerr.NotLeaderForPartition.Code, "broker fenced: no recent heartbeat exchange with the controller"
	case revoked || c.superseded:
		return kerr.NotLeaderForPartition.Code, "partition moving away from this broker"
	}
	return 0, ""
}

// --- lifecycle ---------------------------------------------------------------

func (c *Core) takeLeadership(m *messages.TakeLeadership) {
	switch c.phase {
	case phaseLeading, phaseOpening:
		if m.LeaderEpoch > c.epoch {
			c.epoch = m.LeaderEpoch
			c.take = m
			if c.phase == phaseLeading {
				c.emit(AssignEpoch{Epoch: m.LeaderEpoch})
			}
		}
		c.emit(ApplyConfig{Config: m.Config})
		return
	case phaseClosing:
		// The close finishes first; the supervisor re-sends Take after Done.
		c.cfg.Log.Warn().Msg("take while closing ignored")
		return
	}
	c.gen++
	c.phase = phaseOpening
	c.take = m
	c.opened = m.Opened
	c.epoch = m.LeaderEpoch
	c.emit(ApplyConfig{Config: m.Config})
	c.emit(Open{Gen: c.gen, Take: m})
}

func (c *Core) onOpened(e Opened) {
	if e.Gen == c.gen || (c.closeOnOpen != nil && e.Gen == c.closeOnOpen.openGen) {
		if report := c.opened; report != nil {
			c.opened = nil
			c.emit(Report{To: report, Err: e.Err})
		}
	}
	if req := c.closeOnOpen; req != nil && e.Gen == req.openGen {
		// Relinquished while opening: close what the open produced, then
		// report the release.
		c.closeOnOpen = nil
		if e.Err != nil {
			c.phase = phaseIdle
			if req.del {
				c.emit(Remove{Done: req.done})
				return
			}
			c.emit(Report{To: req.done})
			return
		}
		c.startClose(e.Log, e.Producers, *req)
		return
	}
	if e.Gen != c.gen {
		if e.Log != nil {
			c.emit(Discard{Log: e.Log})
		}
		return
	}
	pending := c.pending
	c.pending = nil
	if e.Err != nil {
		c.cfg.Log.Error().Err(e.Err).Dur("retry_in", c.cfg.OpenRetryDelay).Msg("partition open failed")
		c.phase = phaseIdle
		c.healthy = false
		for _, p := range pending {
			c.request(p)
		}
		// Still the leader in the file: try again (a transient storage
		// error, or a newer file on its way that moves the partition).
		c.emit(After{D: c.cfg.OpenRetryDelay, Event: RetryOpen{Gen: c.gen}})
		return
	}
	c.phase = phaseLeading
	c.healthy, c.writeFailed = true, false
	c.log = e.Log
	if c.epoch > e.Epoch {
		// A newer epoch arrived while the log was opening.
		c.emit(AssignEpoch{Epoch: c.epoch})
	}
	c.producers = e.Producers
	c.durableOnAppend = e.DurableOnAppend
	c.hw = e.Durable
	c.epochStart = e.LogEnd
	c.emit(After{D: c.cfg.MaintenanceInterval, Event: MaintenanceTick{Gen: c.gen}})
	if e.LogEnd > c.hw {
		// A tail the previous leader released unsynced: its producers'
		// retries are answered as duplicates once this Sync covers it.
		c.startSync()
	}
	for _, p := range pending {
		c.request(p)
	}
}

func (c *Core) relinquish(e Relinquish) {
	done := e.Done
	if done == nil {
		done = func(error) {}
	}
	if c.phase == phaseIdle {
		// A failed open's retry must not lead it again after the release.
		c.gen++
		c.take = nil
	}
	if c.phase == phaseIdle || c.phase == phaseClosing {
		if e.Delete && c.phase == phaseIdle {
			c.emit(Remove{Done: done})
			return
		}
		c.emit(Report{To: done})
		return
	}
	openGen := c.gen
	c.gen++
	prev := c.phase
	c.phase = phaseClosing
	// Requests queued during an open that will not finish are refused.
	pending := c.pending
	c.pending = nil
	for _, p := range pending {
		c.request(p)
	}
	c.notifyWatchers(true)
	// Release makes nothing more durable: the group commit in flight (if
	// any) acknowledges what it covers, and every other waiter is answered
	// at once, not after the close, so their producers retry at the next
	// leader while this broker is still closing.
	c.lastSyncGen = 0
	if prev == phaseLeading && c.syncing {
		c.lastSyncGen = openGen
	} else {
		c.failWaiters()
	}
	// A fenced broker may already have lost the partition to another: it
	// closes its files without writing anything more beside the log.
	req := closeRequest{del: e.Delete, fenced: e.Fenced, done: done}
	if prev == phaseOpening {
		c.emit(AbortOpen{})
		// The open may still be recovering the log and stamping the new
		// epoch on it: the release is only done once that log is closed
		// again (onOpened hands it over), or the files would have two
		// writers, this broker's late open and the next leader's.
		req.openGen = openGen
		c.closeOnOpen = &req
		return
	}
	c.startClose(c.log, c.producers, req)
}

func (c *Core) startClose(l storage.Log, prods *Producers, req closeRequest) {
	c.emit(Close{Gen: c.gen, Log: l, Producers: prods, Epoch: c.epoch, HW: c.hw, Del: req.del, Fenced: req.fenced, Done: req.done})
}

func (c *Core) onClosed(e Closed) {
	if e.Err == nil {
		c.advanceHW(e.UpTo)
	} else {
		c.cfg.Log.Error().Err(e.Err).Msg("partition close")
	}
	c.lastSyncGen = 0
	c.failWaiters()
	// A Sync still in flight on the closed log answers a generation that
	// is gone: a later Take must be able to start its own.
	c.syncing = false
	c.log = nil
	c.producers = nil
	if e.Gen == c.gen {
		c.phase = phaseIdle
	}
	c.cfg.Log.Debug().Dur("took", e.Took).Msg("partition closed")
	c.emit(Report{To: e.Done, Err: e.Err})
}

func (c *Core) stop() {
	c.gen++
	if len(c.pending) > 0 {
		c.emit(Abandon{Msgs: c.pending})
		c.pending = nil
	}
	c.emit(DisarmWatchdog{})
	c.notifyWatchers(true)
	if c.log != nil {
		c.emit(CloseNow{Log: c.log})
		c.log = nil
	}
	c.failWaiters()
}

// --- requests ----------------------------------------------------------------

func (c *Core) request(m any) {
	w, ok := m.(*messages.WatchHighWatermark)
	if !ok {
		c.emit(Serve{Msg: m})
		return
	}
	if c.phase != phaseLeading || c.watchMark(w) > w.Offset {
		c.emit(Notify{Watch: *w})
		return
	}
	c.dropAbandoned()
	c.watchers = append(c.watchers, *w)
}

// dropAbandoned forgets the watchers whose fetches were answered.
func (c *Core) dropAbandoned() {
	n := 0
	for _, w := range c.watchers {
		if w.Abandoned != nil && w.Abandoned() {
			continue
		}
		c.watchers[n] = w
		n++
	}
	clear(c.watchers[n:])
	c.watchers = c.watchers[:n]
}

// --- group commit ------------------------------------------------------------

// onProduced answers acks=0/1 at once and queues acks=all until the batch is
// durable; an append advances the high watermark, at once for a log durable
// as soon as written (memory), else through one group-commit Sync.
func (c *Core) onProduced(e Produced) {
	if !e.AcksAll || c.hw >= e.End {
		c.emit(Reply{To: e.Reply, Result: e.Result})
	} else {
		c.waiters = append(c.waiters, ackWaiter{end: e.End, res: e.Result, reply: e.Reply})
	}
	if !e.Appended {
		return
	}
	if e.Marker {
		// A marker moves the last stable offset without the high
		// watermark when it closes the oldest open transaction.
		c.notifyWatchers(false)
	}
	// A disk log's Durable moves inside a Sync, before that Sync reads the
	// claim: acknowledging up to it here, ahead of the Synced, could
	// acknowledge batches a newer leader's recovery never read.
	if c.durableOnAppend && e.Durable > c.hw {
		c.advanceHW(e.Durable)
	}
	if e.LogEnd > c.hw {
		c.startSync()
	}
}

func (c *Core) startSync() {
	if c.syncing {
		return
	}
	c.syncing = true
	c.syncSeq++
	c.syncStart = c.now
	c.emit(Sync{Gen: c.gen, Seq: c.syncSeq, Epoch: c.epoch, Log: c.log})
	// The watchdog is disarmed when the commit returns: a timer left to
	// fire for every commit would wake the actor thousands of times a
	// second per broker under load, for nothing.
	c.emit(ArmWatchdog{After: c.cfg.SyncTimeout, Gen: c.gen, Seq: c.syncSeq})
}

func (c *Core) onSynced(e Synced) {
	// Only the latest commit's answer disarms the watchdog: after a close
	// and a retake, the closed log's commit may still answer while the
	// new one is in flight.
	if e.Seq == c.syncSeq {
		c.emit(DisarmWatchdog{})
	}
	if c.phase == phaseClosing && c.lastSyncGen != 0 && e.Gen == c.lastSyncGen {
		// The last group commit of a relinquished partition.
		c.lastSyncGen = 0
		c.syncing = false
		if e.Err == nil {
			c.advanceHW(e.UpTo)
		}
		c.failWaiters()
		return
	}
	if e.Gen != c.gen {
		return
	}
	c.syncing = false
	if errors.Is(e.Err, errSuperseded) {
		// A newer leader claimed the files while this broker still wrote
		// (it stalled past dead-after): what this Sync covered may not be
		// in that leader's log, so nothing is acknowledged, and nothing
		// more is written here.
		c.superseded = true
		c.cfg.Log.Warn().Int32("leader_epoch", c.epoch).Int("waiters", len(c.waiters)).
			Msg("a newer leader claimed the partition; not acknowledging")
		c.answerWaiters(messages.ProduceResult{ErrorCode: kerr.NotLeaderForPartition.Code, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
		return
	}
	if e.Err != nil {
		c.healthy = false
		c.cfg.Log.Error().Err(e.Err).Msg("fsync failed; partition marked unhealthy")
		c.answerWaiters(messages.ProduceResult{ErrorCode: kerr.KafkaStorageError.Code, ErrorMessage: e.Err.Error(), BaseOffset: -1})
		if c.phase == phaseLeading {
			c.emit(StopSelf{Reason: "fsync failed"})
		}
		return
	}
	if !c.healthy && c.phase == phaseLeading {
		c.cfg.Log.Info().Msg("fsync recovered; partition healthy again")
		c.healthy = true
	}
	c.advanceHW(e.UpTo)
	if c.phase == phaseLeading && e.LogEnd > c.hw {
		c.startSync()
	}
}

// appendFailed refuses writes for WriteRetryDelay after an append failed:
// the log refused the batch and kept nothing of it (a full volume, an I/O
// error), and may take the next one once space is freed or the device
// recovers. Producers get KAFKA_STORAGE_ERROR meanwhile and retry, in
// order (an idempotent producer's batches in flight behind the failed one
// are refused too, not taken out of sequence).
func (c *Core) appendFailed() {
	if c.writeFailed || c.phase != phaseLeading {
		return
	}
	c.writeFailed = true
	c.emit(After{D: c.cfg.WriteRetryDelay, Event: RetryWrites{Gen: c.gen}})
}

// onWatchdog fails acks=all waiters of a hung fsync with a retriable error
// so producers retry (their idempotent retries are de-duplicated) instead
// of hanging, and marks the partition unhealthy until the fsync returns.
func (c *Core) onWatchdog(e WatchdogFired) {
	if e.Gen != c.gen || !c.syncing || e.Seq != c.syncSeq {
		return
	}
	c.healthy = false
	c.cfg.Log.Error().Dur("timeout", c.cfg.SyncTimeout).Dur("waited", c.now.Sub(c.syncStart)).Int("waiters", len(c.waiters)).
		Msg("fsync hung; failing acks=all waiters")
	c.answerWaiters(messages.ProduceResult{ErrorCode: kerr.RequestTimedOut.Code, ErrorMessage: "fsync did not complete in time", BaseOffset: -1})
}

// failWaiters answers every acks=all waiter NOT_LEADER_OR_FOLLOWER: this
// broker will not make their batches durable (the next leader's first Sync
// does, and the producers' retries are answered as duplicates there).
func (c *Core) failWaiters() {
	c.answerWaiters(messages.ProduceResult{ErrorCode: kerr.NotLeaderForPartition.Code})
}

func (c *Core) answerWaiters(r messages.ProduceResult) {
	for _, w := range c.waiters {
		c.emit(Reply{To: w.reply, Result: r})
	}
	c.waiters = nil
}

func (c *Core) advanceHW(upTo int64) {
	if upTo <= c.hw {
		return
	}
	c.hw = upTo
	if c.producers != nil {
		c.producers.Durable(upTo)
	}
	n := 0
	for _, w := range c.waiters {
		if w.end <= c.hw {
			c.emit(Reply{To: w.reply, Result: w.res})
			continue
		}
		c.waiters[n] = w
		n++
	}
	clear(c.waiters[n:])
	c.waiters = c.waiters[:n]
	c.notifyWatchers(false)
}

func (c *Core) notifyWatchers(all bool) {
	n := 0
	for _, w := range c.watchers {
		if all || c.watchMark(&w) > w.Offset {
			c.emit(Notify{Watch: w})
			continue
		}
		c.watchers[n] = w
		n++
	}
	clear(c.watchers[n:])
	c.watchers = c.watchers[:n]
}
