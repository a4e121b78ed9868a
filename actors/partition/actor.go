// Package partition is the partition actor: it owns one partition's log while
// this broker leads it, and serves Produce, Fetch, ListOffsets,
// OffsetForLeaderEpoch and DeleteRecords for it.
//
// The decisions are the Core's (core.go): the leadership lifecycle, group
// commit, the high watermark and the fsync watchdog, stepped with events and
// answering with effects. The actor (this file) is its shell: it turns
// messages into events and executes the effects. Slow storage work (opening
// and recovering the log, fsync, reads of a disk log, closing) runs on
// goroutines that answer with messages, so Receive never blocks on disk.
package partition

import (
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
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
	// ProducerExpiration is Kafka's producer.id.expiration.ms, read at each
	// maintenance (a dynamic broker config; nil: Kafka's one day).
	ProducerExpiration func() time.Duration
	// Clock is the time for timestamps (LogAppendTime, retention) and
	// timers (watchdog, open retry, maintenance); clock.Real when nil.
	Clock clock.Clock
	// Fence, when set, refuses writes while the broker has not completed a
	// heartbeat exchange recently (cluster mode self-fencing).
	Fence interface{ Fenced() bool }
	// Revoked, when set, is raised by the supervisor the moment it applies
	// an assignment that takes the partition away, before the broker's
	// next heartbeat can report that file (and lift a fence): requests
	// still queued ahead of the Relinquish are refused, never appended.
	Revoked *atomic.Bool
	// RunHandoff runs an open or a close (actorsys.HandoffPool when nil).
	RunHandoff func(func())
	// Cleaner is the log cleaner of compacted topics (compaction.go).
	Cleaner CleanerConfig
}

func (c *Config) defaults() {
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = 15 * time.Second
	}
	if c.MaintenanceInterval <= 0 {
		c.MaintenanceInterval = 30 * time.Second
	}
	if c.ProducerExpiration == nil {
		c.ProducerExpiration = func() time.Duration { return DefaultProducerExpiration }
	}
	c.Clock = clock.OrReal(c.Clock)
	c.Cleaner.defaults()
	if c.RunHandoff == nil {
		c.RunHandoff = actorsys.HandoffPool().Schedule
	}
}

// DefaultProducerExpiration is Kafka's producer.id.expiration.ms default.
const DefaultProducerExpiration = 24 * time.Hour

// openRetryDelay spaces the attempts to open a partition this broker leads;
// writeRetryDelay those to append after an append failed.
const openRetryDelay, writeRetryDelay = time.Second, time.Second

// Actor is the partition actor.
type Actor struct {
	id   storage.PartitionID
	cfg  Config
	log  zerolog.Logger
	core *Core

	self   *actor.PID
	system *actor.ActorSystem

	topicConfig map[string]string
	maxMessage  int
	appendTime  bool
	persisted   bool         // a disk log: reads run off the actor goroutine
	openAbort   *atomic.Bool // tells the open in flight it was relinquished
	// watchdog is the timer of the group commit in flight.
	watchdog clock.Timer
	// topic is this partition's pre-resolved metric series.
	topic *metrics.Topic
	// counted is the phase whose gauge counts this partition;
	// unhealthyCounted: the unhealthy gauge counts it.
	counted          phase
	unhealthyCounted bool
	// cleaning: a compaction pass is running; cleanerArmed: a cleaner
	// check is scheduled (compaction.go).
	cleaning, cleanerArmed bool
	// keysRequired: the topic is compacted, so every record needs a key.
	keysRequired bool
	traced       traced
	// verifying: each producer's transactional batch waiting for the
	// transaction coordinator (verify.go).
	verifying map[int64]*verification
	verifySeq uint64
	// snapshot is the producer table taken at a maintenance tick, as of
	// log offset snapshotAt, waiting for the log to be durable that far;
	// snapshotted is the offset of the last one written (storage.go).
	snapshot                []byte
	snapshotAt, snapshotted int64
}

// New returns a producer for the partition actor of id.
func New(id storage.PartitionID, cfg Config) func() actor.Actor {
	cfg.defaults()
	return func() actor.Actor {
		log := cfg.Log.With().Str("topic", id.Topic).Int32("partition", id.Partition).Logger()
		return &Actor{
			id:    id,
			cfg:   cfg,
			log:   log,
			topic: metrics.ForTopic(id.Topic),
			core: NewCore(CoreConfig{SyncTimeout: cfg.SyncTimeout, OpenRetryDelay: openRetryDelay, WriteRetryDelay: writeRetryDelay,
				MaintenanceInterval: cfg.MaintenanceInterval, Log: log}),
		}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	if a.self == nil {
		a.self, a.system = ctx.Self(), ctx.ActorSystem()
	}
	if tracing.On() {
		a.received(tracing.FromActor(ctx))
	}
	switch m := ctx.Message().(type) {
	case *actor.Stopping:
		a.dropVerifications()
		a.step(Stop{})
		a.countPhase(phaseIdle) // a stopped actor leads nothing
		a.countUnhealthy(false)
	case *actor.Restarting:
		// Restarted in place by a parent's strategy: the next instance
		// starts idle, so nothing may stay open behind it.
		a.dropVerifications()
		a.step(Stop{})
		a.countPhase(phaseIdle) // the next incarnation counts itself
		a.countUnhealthy(false)
	case *messages.TakeLeadership:
		a.step(Take{Msg: m})
	case *messages.RelinquishLeadership:
		if a.keysRequired {
			metrics.CleanerForget(a.id.Topic, a.id.Partition)
		}
		a.step(Relinquish{Delete: m.Delete, Fenced: a.fenced(), Done: m.Done})
	case *messages.UpdateConfig:
		a.applyConfig(m.Config)
		if l := a.core.Log(); l != nil {
			l.SetConfig(topicconfig.LogConfig(m.Config))
		}
	case Synced:
		if l := a.core.Log(); l != nil {
			m.LogEnd = l.NextOffset()
		}
		a.step(m)
		a.writeDueSnapshot()
	case Opened, Closed, WatchdogFired, RetryOpen, RetryWrites, MaintenanceTick:
		a.step(m.(Event))
	case *messages.PartitionStatus:
		r := messages.PartitionStatusResult{Leading: a.core.Leading(), LeaderEpoch: a.core.LeaderEpoch(), HighWatermark: a.core.HighWatermark()}
		if l := a.core.Log(); l != nil {
			r.LogStartOffset, r.LogEndOffset = l.StartOffset(), l.NextOffset()
			if m.MeasureSize && r.Leading {
				r.Size = l.Size()
			}
		}
		m.Reply(r)
	case *messages.DescribeProducers:
		r := messages.DescribeProducersResult{ErrorCode: kerr.NotLeaderForPartition.Code}
		if p := a.core.Producers(); p != nil && a.core.Leading() {
			r = messages.DescribeProducersResult{Producers: p.States()}
		}
		m.Reply(r)
	case verified:
		a.onVerified(m)
	case cleanerTick:
		a.onCleanerTick()
	case compacted:
		a.onCompacted(m)
	case *messages.Produce, *messages.Fetch, *messages.ListOffsets, *messages.OffsetForLeaderEpoch,
		*messages.DeleteRecords, *messages.WatchHighWatermark, *messages.WriteTxnMarker:
		a.queue(m)
		a.step(Request{Msg: m})
	}
}

func (a *Actor) applyConfig(cfg map[string]string) {
	a.topicConfig = cfg
	a.maxMessage = topicconfig.MaxMessageBytes(cfg)
	a.appendTime = topicconfig.LogAppendTime(cfg)
	a.keysRequired = topicconfig.Compacted(cfg)
	a.armCleaner()
}

// sender delivers events to this actor from goroutines and timers.
func (a *Actor) sender() func(Event) {
	self, system := a.self, a.system
	return func(ev Event) { system.Root.Send(self, ev) }
}

// phaseGauges are the partitions gauges by core phase (idle is not counted).
var phaseGauges = [...]prometheus.Gauge{
	phaseOpening: metrics.PartitionPhase(phaseOpening.String()),
	phaseLeading: metrics.PartitionPhase(phaseLeading.String()),
	phaseClosing: metrics.PartitionPhase(phaseClosing.String()),
}

// countPhase moves this partition to p's gauge.
func (a *Actor) countPhase(p phase) {
	if p == a.counted {
		return
	}
	if g := phaseGauges[a.counted]; g != nil {
		g.Dec()
	}
	if g := phaseGauges[p]; g != nil {
		g.Inc()
	}
	a.counted = p
}

// countUnhealthy moves this partition in or out of the unhealthy gauge.
func (a *Actor) countUnhealthy(unhealthy bool) {
	if unhealthy == a.unhealthyCounted {
		return
	}
	if unhealthy {
		metrics.PartitionsUnhealthy().Inc()
	} else {
		metrics.PartitionsUnhealthy().Dec()
	}
	a.unhealthyCounted = unhealthy
}

// step runs an event through the core and executes its effects in order.
func (a *Actor) step(ev Event) {
	effects := a.core.Step(ev, a.cfg.Clock.Now())
	a.countPhase(a.core.phase)
	a.countUnhealthy(!a.core.StorageHealthy())
	if _, ok := ev.(Synced); ok {
		// The produces a group commit releases are the replies it answers.
		released := 0
		for _, e := range effects {
			if _, ok := e.(Reply); ok {
				released++
			}
		}
		metrics.GroupCommitReleased(released)
	}
	for _, e := range effects {
		a.exec(e)
	}
}

func (a *Actor) exec(e Effect) {
	switch e := e.(type) {
	case Reply:
		e.To(e.Result)
	case Sync:
		send, clk, span := a.sender(), a.cfg.Clock, a.startGroupCommit()
		go func() {
			start := clk.Now()
			ev := syncLog(e)
			metrics.GroupCommitDuration(clk.Since(start).Seconds())
			tracing.Fail(span, ev.Err)
			span.End()
			send(ev)
		}()
	case ArmWatchdog:
		send := a.sender()
		a.watchdog = a.cfg.Clock.AfterFunc(e.After, func() {
			watchdogsFired.Add(1)
			send(WatchdogFired{Gen: e.Gen, Seq: e.Seq})
		})
	case DisarmWatchdog:
		if a.watchdog != nil {
			a.watchdog.Stop()
			a.watchdog = nil
		}
	case Serve:
		a.serving(e.Msg)
		a.serve(e.Msg)
	case Notify:
		e.Watch.Notify()
	case Report:
		e.To(e.Err)
	case ApplyConfig:
		a.applyConfig(e.Config)
	case Open:
		a.id.TopicID = e.Take.TopicID
		a.persisted = a.cfg.Opener.Persistent()
		a.snapshot, a.snapshotted = nil, -1
		abort := &atomic.Bool{}
		a.openAbort = abort
		id, cfg, log, send, span := a.id, &a.cfg, a.log, a.sender(), a.startSpan("partition open")
		a.cfg.RunHandoff(func() {
			opened := openLog(id, cfg, log, e, abort)
			tracing.Fail(span, opened.Err)
			span.End()
			send(opened)
		})
	case AbortOpen:
		a.openAbort.Store(true)
	case Close:
		a.snapshot = nil // the close writes its own, on another goroutine
		id, cfg, send, span := a.id, &a.cfg, a.sender(), a.startSpan("partition close")
		a.cfg.RunHandoff(func() {
			closed := closeLog(id, cfg, e)
			tracing.Fail(span, closed.Err)
			span.End()
			send(closed)
		})
	case Discard:
		_ = e.Log.Close()
	case CloseNow:
		a.snapshot = nil
		// Stopped without a release (system shutdown): close quickly.
		_, _ = e.Log.Sync()
		_ = e.Log.Close()
	case Remove:
		e.Done(a.cfg.Opener.Remove(a.id))
	case AssignEpoch:
		l := a.core.Log()
		if err := l.AssignEpoch(e.Epoch, l.NextOffset()); err != nil {
			a.log.Error().Err(err).Int32("leader_epoch", e.Epoch).Msg("assign leader epoch")
		}
	case After:
		send := a.sender()
		a.cfg.Clock.AfterFunc(e.D, func() { send(e.Event) })
	case Abandon:
		a.forget(e.Msgs)
		abandon(e.Msgs)
	case StopSelf:
		// The supervisor spawns the next incarnation (its Terminated).
		a.log.Error().Str("reason", e.Reason).Msg("stopping the partition actor so that its log is reopened and recovered")
		a.system.Root.Stop(a.self)
	case Maintain:
		now := a.cfg.Clock.Now()
		if err := a.core.Log().EnforceRetention(now); err != nil {
			a.log.Error().Err(err).Msg("retention")
		}
		prods := a.core.Producers()
		prods.Expire(now.Add(-a.cfg.ProducerExpiration()).UnixMilli())
		prods.TrimTxns(a.core.Log().StartOffset())
		a.takeProducerSnapshot()
		a.armCleaner()
	}
}

// watchdogsFired counts group-commit watchdogs that went off (tests).
var watchdogsFired atomic.Int64

// Undelivered closes the log of an open that finished after its actor
// stopped (a panic or a Stop while it opened): nothing else would, and the
// storage layer refuses to open a log twice, so the next incarnation could
// not take the partition (actorsys.Undeliverable).
func (o Opened) Undelivered() {
	if o.Log != nil {
		_ = o.Log.Close()
	}
}
