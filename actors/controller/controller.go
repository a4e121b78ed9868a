// Package controller is the controller actor: spawned by a broker's
// supervisor only while that broker holds the kaas-controller Lease. It
// serves the heartbeat stream every broker dials, keeps the alive set,
// recomputes the assignment with the balancer whenever an input changes
// (first win, KafkaTopic change, alive-set change) and writes
// assignment.json, then pushes ASSIGNMENT_CHANGED to every stream.
//
// The decisions are the core's (core.go: Step(event, now) -> effects, no
// I/O); the actor is its shell: it turns messages and ticks into events and
// runs the effects, the file's I/O and the Lease checks on goroutines whose
// results come back as events.
package controller

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
)

// Config configures a controller for one epoch.
type Config struct {
	Self     string // this broker's name
	SelfHost string
	SelfPort int32
	SelfRack string // this broker's broker.rack ("": none)
	// SelfListeners: this broker's listeners besides the primary one
	// (routing.Broker.Listeners).
	SelfListeners string
	HeartbeatAddr string // advertised heartbeat address of this broker
	Epoch         int64
	DataDir       string
	// DeadAfter: a broker silent that long is dead.
	DeadAfter time.Duration
	// Tick is the alive-set check period.
	Tick time.Duration
	// StillLeader reports whether the Lease is still held as far as this
	// process knows (cheap; checked before deciding to write).
	StillLeader func() bool
	// VerifyLease re-reads the Lease from the apiserver right before every
	// write (on the writer goroutine): a controller resumed from a pause
	// (SIGSTOP, GC) that lost the Lease meanwhile never writes. It returns
	// (wrapping) ErrLeaseMovedOn when another holder or epoch has it; other
	// errors are retried.
	VerifyLease func(ctx context.Context) error
	// ErrLeaseMovedOn is the sentinel VerifyLease wraps for a lost Lease.
	ErrLeaseMovedOn error
	// Hub is where pushes go (the heartbeat server's streams).
	Hub *Hub
	Log zerolog.Logger
	// Clock is the time and the tick (clock.Real() when nil; tests inject
	// a clock.Fake).
	Clock clock.Clock
	// StrayGrace: a partition directory whose topic this controller does
	// not know is removed once it has been so for this long (strays.go);
	// 0 never. ListPartitions lists the data directory's partitions and
	// RemovePartition removes one (the broker's storage).
	StrayGrace      time.Duration
	ListPartitions  func() ([]storage.PartitionID, error)
	RemovePartition func(storage.PartitionID) error
	// ConcurrentMoves bounds the planned moves between running brokers in
	// motion at once (LimitMoves); <= 0: no bound, every move starts at
	// once.
	ConcurrentMoves int
	// Cordoned: CoreConfig.Cordoned.
	Cordoned map[string]bool
	// PrevReleased: CoreConfig.PrevReleased.
	PrevReleased bool
	// WriteFile writes an assignment file (assignment.WriteFileStaged when
	// nil; tests slow it down).
	WriteFile func(dataDir string, a *assignment.Assignment, permit <-chan error, visible func()) (assignment.WriteTiming, error)
}

// BrokerPing is a heartbeat received from a broker's stream.
type BrokerPing struct {
	Ping *heartbeatpb.Ping
	At   time.Time
}

// TopicsChanged carries the full desired topic set (from KafkaTopic objects).
type TopicsChanged struct {
	Topics map[string]balancer.TopicSpec
}

// LeaseLost is sent to the controller's parent when a write was refused
// because the Lease moved on: the parent stops the controller.
type LeaseLost struct{ Epoch int64 }

// errLeaseLost marks the permit of a write that VerifyLease refused because
// the Lease moved on.
type errLeaseLost struct{ err error }

func (e errLeaseLost) Error() string { return e.err.Error() }

// leaseCheckTimeout bounds one VerifyLease call.
const leaseCheckTimeout = 5 * time.Second

// Actor is the controller actor: the shell of a Core.
type Actor struct {
	cfg   Config
	core  *Core
	clock clock.Clock
	tick  *ticker
	// traceCtx is the span of the recompute being executed and traceMsg
	// the span of the message being received while tracing is on (nil
	// otherwise): the file write joins the recompute, the push the
	// Written message of the write it announces.
	traceCtx, traceMsg context.Context
}

// ticker sends Tick every period from a chain of clock timers (so that a
// fake clock's Advance delivers the ticks it passes before it returns). At
// most one Tick waits in the mailbox: a stalled controller does not come
// back to a backlog of ticks, each checking the same moment.
type ticker struct {
	pending atomic.Bool
	mu      sync.Mutex
	timer   clock.Timer
	stopped bool
}

func (t *ticker) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
}

// flushed is closed when handled: every message sent before it has been
// (tests wait on it instead of sleeping).
type flushed chan struct{}

// New returns the controller actor's producer. prev is the assignment found
// on the volume (nil if none).
func New(cfg Config, prev *assignment.Assignment) func() actor.Actor {
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.WriteFile == nil {
		cfg.WriteFile = assignment.WriteFileStaged
	}
	return func() actor.Actor {
		return &Actor{cfg: cfg, clock: cfg.Clock, core: NewCore(coreConfig(cfg), prev)}
	}
}

func coreConfig(cfg Config) CoreConfig {
	grace := cfg.StrayGrace
	if cfg.ListPartitions == nil || cfg.RemovePartition == nil {
		grace = 0
	}
	return CoreConfig{
		Self: cfg.Self, SelfHost: cfg.SelfHost, SelfPort: cfg.SelfPort, SelfRack: cfg.SelfRack, SelfListeners: cfg.SelfListeners, HeartbeatAddr: cfg.HeartbeatAddr, Epoch: cfg.Epoch,
		DeadAfter: cfg.DeadAfter, StrayGrace: grace, ConcurrentMoves: cfg.ConcurrentMoves, Cordoned: cfg.Cordoned, PrevReleased: cfg.PrevReleased, StillLeader: cfg.StillLeader, Log: cfg.Log,
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.startTicker(ctx)
		a.step(ctx, Start{})
		a.cfg.Log.Info().Int64("epoch", a.cfg.Epoch).Msg("controller started")
	case *actor.Stopping:
		if a.tick != nil {
			a.tick.stop()
		}
		a.cfg.Log.Info().Int64("epoch", a.cfg.Epoch).Msg("controller stopped")
	case Tick:
		a.tick.pending.Store(false)
		a.step(ctx, m)
	case Event:
		a.step(ctx, m)
	case flushed:
		close(m)
	}
}

// startTicker sends Tick every cfg.Tick until the actor stops.
func (a *Actor) startTicker(ctx actor.Context) {
	t := &ticker{}
	a.tick = t
	self, system, clk, period := ctx.Self(), ctx.ActorSystem(), a.clock, a.cfg.Tick
	var fire func()
	fire = func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.stopped {
			return
		}
		if t.pending.CompareAndSwap(false, true) {
			system.Root.Send(self, Tick{})
		}
		t.timer = clk.AfterFunc(period, fire)
	}
	t.mu.Lock()
	t.timer = clk.AfterFunc(period, fire)
	t.mu.Unlock()
}

func (a *Actor) step(ctx actor.Context, ev Event) {
	effects := a.core.Step(ev, a.clock.Now())
	if tracing.On() {
		a.traceMsg = tracing.FromActor(ctx)
		tctx, span := a.startRecompute(a.traceMsg, ev, effects)
		a.traceCtx = tctx
		defer func() { span.End(); a.traceCtx, a.traceMsg = nil, nil }()
	}
	for _, e := range effects {
		a.execute(ctx, e)
	}
}

// execute runs one effect; nothing here blocks: file and Lease work runs
// on goroutines that report back to the mailbox.
func (a *Actor) execute(ctx actor.Context, e Effect) {
	switch e := e.(type) {
	case SendRecompute:
		ctx.Send(ctx.Self(), RecomputeNow(e))
	case WriteFile:
		a.write(ctx, e.A)
	case ReadHeader:
		self, system, path := ctx.Self(), ctx.ActorSystem(), assignment.Path(a.cfg.DataDir)
		go func() {
			ep, v, err := assignment.ReadHeader(path)
			system.Root.Send(self, HeaderRead{Epoch: ep, Version: v, Err: err})
		}()
	case ListPartitions:
		self, system, list := ctx.Self(), ctx.ActorSystem(), a.cfg.ListPartitions
		go func() {
			ids, err := list()
			system.Root.Send(self, PartitionsListed{IDs: ids, Err: err})
		}()
	case RemoveStrays:
		a.removeStrays(ctx, e.IDs)
	case SetWritten:
		a.cfg.Hub.SetWritten(e.Epoch, e.Version)
	case PushChanged:
		a.cfg.Hub.Push(&heartbeatpb.Push{Kind: heartbeatpb.Push_ASSIGNMENT_CHANGED, ControllerEpoch: e.Epoch, AssignmentVersion: e.Version,
			Traceparent: pushTraceparent(a.traceMsg, e)})
	case ReportLeaseLost:
		ctx.Send(ctx.Parent(), &LeaseLost{Epoch: a.cfg.Epoch})
	case AnswerUnregister:
		e.Reply(e.Code, e.Msg)
	case AnswerQuorum:
		e.Reply(e.Q)
	}
}

// write writes next on a goroutine, after re-verifying the Lease.
func (a *Actor) write(ctx actor.Context, next *assignment.Assignment) {
	self, system, dir, verify, writeFile := ctx.Self(), ctx.ActorSystem(), a.cfg.DataDir, a.cfg.VerifyLease, a.cfg.WriteFile
	log, clk, movedOn := a.cfg.Log, a.clock, a.cfg.ErrLeaseMovedOn
	wctx, span := startWrite(a.traceCtx, next)
	go func() {
		defer span.End()
		start := clk.Now()
		var permit chan error
		var verified time.Duration
		if verify != nil {
			// The Lease check runs beside the temporary file's write and
			// fsync; the rename waits for it.
			permit = make(chan error, 1)
			go func() {
				vctx, cancel := context.WithTimeout(context.Background(), leaseCheckTimeout)
				defer cancel()
				err := verify(vctx)
				verified = clk.Since(start)
				if err != nil && movedOn != nil && errors.Is(err, movedOn) {
					err = errLeaseLost{err}
				}
				permit <- err
			}()
		}
		// Written once the rename is done: every broker sees the file from
		// then on, and the next write may start while the directory's
		// fsync makes this rename durable (under a busy journal that
		// fsync can take longer than the rest of the write, and every
		// move needs two files).
		visible := false
		tm, err := writeFile(dir, next, permit, func() {
			visible = true
			system.Root.Send(self, tracing.Wrap(wctx, Written{A: next}))
		})
		if err == nil {
			metrics.AssignmentWritten(clk.Since(start).Seconds())
			log.Info().Ctx(wctx).Int64("version", next.AssignmentVersion).Dur("took", clk.Since(start)).Dur("visible_after", tm.Visible).
				Dur("create", tm.Create).Dur("tmp_fsync", tm.TmpSync).Dur("permit_wait", tm.Permit).Dur("rename", tm.Rename).
				Dur("dir_fsync", tm.DirSync).Dur("lease_check", verified).Msg("assignment written")
			return
		}
		if visible {
			system.Root.Send(self, DirSyncFailed{Version: next.AssignmentVersion, Err: err})
			return
		}
		tracing.Fail(span, err)
		if lost, ok := err.(errLeaseLost); ok {
			system.Root.Send(self, Written{A: next, Err: lost.err, LeaseLost: true})
			return
		}
		system.Root.Send(self, Written{A: next, Err: err})
	}()
}

// removeStrays confirms the Lease, then removes ids' directories, on a
// goroutine.
func (a *Actor) removeStrays(ctx actor.Context, ids []storage.PartitionID) {
	self, system, verify, remove, log := ctx.Self(), ctx.ActorSystem(), a.cfg.VerifyLease, a.cfg.RemovePartition, a.cfg.Log
	go func() {
		if verify != nil {
			vctx, cancel := context.WithTimeout(context.Background(), leaseCheckTimeout)
			err := verify(vctx)
			cancel()
			if err != nil {
				system.Root.Send(self, StraysRemoved{Err: err})
				return
			}
		}
		var done []storage.PartitionID
		for _, id := range ids {
			if err := remove(id); err != nil {
				log.Warn().Err(err).Str("topic", id.Topic).Int32("partition", id.Partition).Str("topic_id", id.TopicID).
					Msg("remove the directory of a deleted topic's partition")
				continue
			}
			log.Warn().Str("topic", id.Topic).Int32("partition", id.Partition).Str("topic_id", id.TopicID).
				Msg("removed the directory of a deleted topic's partition that no broker had removed")
			done = append(done, id)
		}
		system.Root.Send(self, StraysRemoved{IDs: done})
	}()
}
