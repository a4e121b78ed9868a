// Package controller is the controller actor: spawned by a broker's
// supervisor only while that broker holds the kaas-controller Lease. It
// serves the heartbeat stream every broker dials, keeps the alive set,
// recomputes the assignment with the balancer whenever an input changes
// (first win, KafkaTopic change, alive-set change) and writes
// assignment.json, then pushes ASSIGNMENT_CHANGED to every stream.
package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
)

// Config configures a controller for one epoch.
type Config struct {
	Self          string // this broker's name
	SelfHost      string
	SelfPort      int32
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
	// Now is the monotonic clock (tests inject one).
	Now func() time.Time
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

type tick struct{}

// recomputeNow runs one recompute for every ping queued before it.
type recomputeNow struct{ why string }

// LeaseLost is sent to the controller's parent when a write was refused
// because the Lease moved on: the parent stops the controller.
type LeaseLost struct{ Epoch int64 }

// errLeaseLost marks a write refused by VerifyLease.
type errLeaseLost struct{ err error }

func (e errLeaseLost) Error() string { return e.err.Error() }

type written struct {
	a   *assignment.Assignment
	err error
}

type brokerRow struct {
	info     balancer.BrokerInfo
	lastPing time.Time
	pinged   bool
	healthy  bool
	draining bool
	// listed is what the broker's latest ping says it serves (opening,
	// leading or still closing): the release confirmation of two-phase moves.
	listed map[TP]bool
	// opening is what of that it is still opening (nil: nothing).
	opening map[TP]bool
	// groups are the consumer groups it reports holding.
	groups []string
	// applied is the assignment file the broker had applied when it sent
	// its latest ping: what it lists is only current from that file on.
	applied Position
}

// Actor is the controller actor.
type Actor struct {
	cfg       Config
	electedAt time.Time
	brokers   map[string]*brokerRow
	topics    map[string]balancer.TopicSpec
	haveTopic bool
	prev      *assignment.Assignment // last written or inherited
	writing   bool
	// retryWrite: the last write failed; the next tick recomputes.
	retryWrite bool
	checking   bool // a header read is in flight
	dirty      bool
	stopTick   context.CancelFunc
	lastState  map[string]assignment.BrokerState
	// holding: the last written assignment holds partitions or slots for a
	// release, or has moves in motion; a broker catching up with it may be
	// what they wait for.
	holding bool
	// deferred: moves the last recompute left for later (ConcurrentMoves);
	// an open finishing may make room for them.
	deferred int
	// grantedAt / slotGrantedAt: the file that last gave each partition a
	// leader, each consumer-group slot an owner (Reports).
	grantedAt     map[TP]Position
	slotGrantedAt map[int]Position
	// recomputeQueued: a recomputeNow is in the mailbox.
	recomputeQueued bool
	// hearingSince is when this broker's own pings were heard again after a
	// silence (states).
	hearingSince time.Time
	// straySince: stray partition directories and when each was first seen;
	// strayBusy: a listing or removal is in flight (strays.go).
	straySince    map[storage.PartitionID]time.Time
	strayBusy     bool
	nextStrayScan time.Time
	// reassert: the last file's directory fsync failed; write it again.
	reassert bool
}

// recomputeSoon coalesces recomputes: a drain releases partitions one by
// one and each release rides its own ping, so recomputing per ping would
// keep the controller busy far behind its mailbox. The pings already queued
// are absorbed first (cheap), then one recompute sees them all.
func (a *Actor) recomputeSoon(ctx actor.Context, why string) {
	if a.recomputeQueued {
		return
	}
	a.recomputeQueued = true
	ctx.Send(ctx.Self(), &recomputeNow{why: why})
}

// New returns the controller actor's producer. prev is the assignment found
// on the volume (nil if none).
func New(cfg Config, prev *assignment.Assignment) func() actor.Actor {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.WriteFile == nil {
		cfg.WriteFile = assignment.WriteFileStaged
	}
	return func() actor.Actor {
		return &Actor{cfg: cfg, prev: prev, brokers: map[string]*brokerRow{}, topics: map[string]balancer.TopicSpec{}}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.electedAt = a.cfg.Now()
		// An inherited file may hold moves: brokers catching up with it can
		// confirm them.
		a.holding = a.prev != nil
		a.trackGrants(nil, a.prev)
		var fileEpoch, fileVersion int64 // none inherited: every PONG counts
		if a.prev != nil {
			fileEpoch, fileVersion = a.prev.ControllerEpoch, a.prev.AssignmentVersion
		}
		a.cfg.Hub.SetWritten(fileEpoch, fileVersion)
		if a.prev != nil {
			for _, b := range a.prev.Brokers {
				a.brokers[b.Name] = &brokerRow{info: balancer.BrokerInfo{Name: b.Name, Host: b.Host, Port: b.Port, State: b.State},
					healthy: b.State == assignment.Alive}
			}
			for name, t := range a.prev.Topics {
				a.topics[name] = balancer.TopicSpec{ID: t.ID, Partitions: len(t.Partitions), Config: t.Config}
			}
		}
		// Its own broker pings it like any other (through the hub); until
		// then what it serves is unknown, which holds pending moves.
		a.brokers[a.cfg.Self] = &brokerRow{info: balancer.BrokerInfo{Name: a.cfg.Self, Host: a.cfg.SelfHost, Port: a.cfg.SelfPort}, healthy: true}
		tctx, cancel := context.WithCancel(context.Background())
		a.stopTick = cancel
		self, system, period := ctx.Self(), ctx.ActorSystem(), a.cfg.Tick
		go func() {
			t := time.NewTicker(period)
			defer t.Stop()
			for {
				select {
				case <-tctx.Done():
					return
				case <-t.C:
					system.Root.Send(self, &tick{})
				}
			}
		}()
		a.cfg.Log.Info().Int64("epoch", a.cfg.Epoch).Msg("controller started")
	case *actor.Stopping:
		if a.stopTick != nil {
			a.stopTick()
		}
		a.cfg.Log.Info().Int64("epoch", a.cfg.Epoch).Msg("controller stopped")
	case *BrokerPing:
		changed := a.ping(m)
		if e := a.cfg.Log.Debug(); e.Enabled() {
			e.Str("broker", m.Ping.Name).Int("listed", len(m.Ping.Partitions)).Int64("applied", m.Ping.AssignmentVersion).
				Bool("changed", changed).Dur("queued", time.Since(m.At)).Msg("ping")
		}
		if changed {
			a.recomputeSoon(ctx, "broker report changed")
		}
	case *recomputeNow:
		a.recomputeQueued = false
		a.recompute(ctx, m.why)
	case *TopicsChanged:
		a.topics, a.haveTopic = m.Topics, true
		a.recompute(ctx, "topics changed")
	case *strayList:
		a.onStrayList(ctx, m)
	case *straysRemoved:
		a.onStraysRemoved(m)
	case *tick:
		a.scanStrays(ctx)
		if a.retryWrite {
			a.retryWrite = false
			a.recompute(ctx, "retry after a failed write")
		} else if a.reassert && !a.writing && a.prev != nil {
			a.reassert = false
			a.write(ctx, a.prev)
		} else if states := a.states(); !maps.Equal(states, a.lastState) || a.prev == nil || a.prev.ControllerEpoch != a.cfg.Epoch {
			a.recompute(ctx, "alive set changed")
		} else {
			if a.deferred > 0 {
				// Room is normally made by a ping that reports an open
				// done; this is the backstop.
				a.recompute(ctx, "deferred moves")
			}
			a.checkFile(ctx)
		}
	case *fileHeader:
		a.onHeader(ctx, m)
	case *dirSyncFailed:
		// Written again at the next tick (the same content and version,
		// which brokers that have it ignore), unless a newer file is
		// written first: its own directory fsync covers this rename too.
		a.cfg.Log.Error().Err(m.err).Int64("version", m.version).Msg("write assignment: the rename may not be durable")
		if a.prev != nil && a.prev.AssignmentVersion == m.version {
			a.reassert = true
		}
	case *written:
		a.writing = false
		if lost, ok := m.err.(errLeaseLost); ok {
			a.cfg.Log.Error().Err(lost.err).Msg("lease lost; not writing")
			ctx.Send(ctx.Parent(), &LeaseLost{Epoch: a.cfg.Epoch})
			return
		}
		if m.err != nil {
			// Retried at the next tick, not at once: an assignment the
			// codec refuses would otherwise be recomputed and refused in a
			// loop.
			a.cfg.Log.Error().Err(m.err).Msg("write assignment")
			a.retryWrite = true
		} else {
			a.reassert = false
			a.trackGrants(a.prev, m.a)
			a.prev = m.a
			a.cfg.Hub.SetWritten(m.a.ControllerEpoch, m.a.AssignmentVersion)
			a.cfg.Hub.Push(&heartbeatpb.Push{Kind: heartbeatpb.Push_ASSIGNMENT_CHANGED, ControllerEpoch: m.a.ControllerEpoch, AssignmentVersion: m.a.AssignmentVersion})
		}
		if a.dirty {
			a.dirty = false
			a.recompute(ctx, "changes during write")
		} else if m.err == nil && a.holding {
			// Releases reported while this file was being written were
			// not yet waited for (the file before held nothing): a ping
			// that already no longer lists a partition held here has
			// released it.
			a.recompute(ctx, "file holds moves")
		}
	}
}

// ping records a heartbeat; it reports whether the assignment may change
// because of it: a release another broker waits for, a broker catching up
// with a file that holds moves, or a drain or health change.
func (a *Actor) ping(m *BrokerPing) bool {
	p := m.Ping
	row, ok := a.brokers[p.Name]
	if !ok {
		row = &brokerRow{}
		a.brokers[p.Name] = row
	}
	row.info.Name, row.info.Host, row.info.Port = p.Name, p.KafkaHost, p.KafkaPort
	// A drain starts (or health flips) now, not at the next tick: a
	// draining broker's partitions start moving within one file write.
	flipped := row.pinged && (row.healthy != p.Healthy || row.draining != p.Draining)
	if p.Name == a.cfg.Self && (!row.pinged || m.At.Sub(row.lastPing) > a.cfg.DeadAfter/2) {
		a.hearingSince = m.At // heard again after a silence (or for the first time)
	}
	row.lastPing, row.pinged = m.At, true
	row.healthy, row.draining = p.Healthy, p.Draining
	applied := Position{Epoch: p.ControllerEpoch, Version: p.AssignmentVersion}
	caughtUp := applied != row.applied
	row.applied = applied
	listed := make(map[TP]bool, len(p.Partitions))
	var opening map[TP]bool
	for _, lp := range p.Partitions {
		tp := TP{Topic: lp.Topic, Partition: lp.Partition}
		listed[tp] = true
		if lp.Opening {
			if opening == nil {
				opening = map[TP]bool{}
			}
			opening[tp] = true
		}
	}
	released := flipped || (caughtUp && a.holding)
	if a.deferred > 0 {
		for tp := range row.opening {
			if !opening[tp] {
				released = true // room for a deferred move
				break
			}
		}
	}
	row.opening = opening
	for tp := range row.listed {
		if !listed[tp] && a.waiting(tp) {
			released = true
		}
	}
	row.listed = listed
	if !slices.Equal(row.groups, p.Groups) {
		row.groups = p.Groups
		if a.prev != nil && len(a.prev.ConsumerGroups.Held) > 0 {
			released = true
		}
	}
	return released
}

// waiting reports whether tp is held leaderless in the last assignment.
func (a *Actor) waiting(tp TP) bool {
	if a.prev == nil {
		return false
	}
	t, ok := a.prev.Topics[tp.Topic]
	return ok && int(tp.Partition) < len(t.Partitions) && t.Partitions[tp.Partition].Leader == assignment.NoLeader
}

// states derives every registered broker's state now. The controller is
// always alive (never an empty assignment). Right after election, brokers
// that were alive in the inherited assignment stay presumed alive until
// DeadAfter passes without a ping, so a new controller does not move
// partitions away from brokers that simply have not dialed it yet.
//
// Silence is only evidence while pings are being received at all: a
// controller starved of CPU (or its hub stalled) hears nobody, its own
// broker included, and must not take that for every other broker dying.
// Until its own broker's pings arrive again (within DeadAfter/2), and for
// DeadAfter/2 after they do (the others' pings, delayed by the same stall,
// arrive in any order), a broker that was alive stays alive: a failover
// waits, nothing else does.
func (a *Actor) states() map[string]assignment.BrokerState {
	now := a.cfg.Now()
	out := make(map[string]assignment.BrokerState, len(a.brokers))
	hearing := true
	if self, ok := a.brokers[a.cfg.Self]; ok && self.pinged &&
		(now.Sub(self.lastPing) > a.cfg.DeadAfter/2 || now.Sub(a.hearingSince) < a.cfg.DeadAfter/2) {
		// Not hearing its own broker, or hearing it again only since
		// moments ago: the other brokers' pings, queued behind the same
		// stall, may not have been read yet.
		hearing = false
	}
	for name, row := range a.brokers {
		switch {
		case name == a.cfg.Self:
			out[name] = assignment.Alive
		case !row.pinged:
			if row.healthy && now.Sub(a.electedAt) < a.cfg.DeadAfter {
				out[name] = assignment.Alive
			} else {
				out[name] = assignment.Dead
			}
		case now.Sub(row.lastPing) > a.cfg.DeadAfter && (hearing || a.lastState[name] == assignment.Dead):
			out[name] = assignment.Dead
		case row.draining:
			out[name] = assignment.Draining
		case row.healthy:
			out[name] = assignment.Alive
		default:
			out[name] = assignment.Dead
		}
	}
	return out
}

func (a *Actor) recompute(ctx actor.Context, why string) {
	if a.writing {
		a.dirty = true
		return
	}
	states := a.states()
	in := balancer.Input{
		Previous:            a.prev,
		Controller:          a.cfg.Self,
		ControllerEpoch:     a.cfg.Epoch,
		ControllerHeartbeat: a.cfg.HeartbeatAddr,
		Topics:              a.topics,
	}
	names := make([]string, 0, len(a.brokers))
	for n := range a.brokers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		info := a.brokers[n].info
		info.State = states[n]
		in.Brokers = append(in.Brokers, info)
	}
	next, moves, err := balancer.Compute(in)
	if err != nil {
		a.cfg.Log.Error().Err(err).Msg("balancer input rejected")
		return
	}
	now := a.cfg.Now()
	for name, st := range states {
		if old, ok := a.lastState[name]; !ok || old != st {
			row := a.brokers[name]
			ev := a.cfg.Log.Info().Str("broker", name).Str("from", string(old)).Str("to", string(st)).Bool("pinged", row.pinged)
			if row.pinged {
				ev = ev.Dur("since_last_ping", now.Sub(row.lastPing))
			}
			ev.Msg("broker state changed")
		}
	}
	a.lastState = states
	// A broker's report confirms a release only once it has applied the
	// file that last granted the partition: one that is behind may be about
	// to take it, from that file, without listing it yet.
	reports := Reports{Applied: map[string]Position{}, GrantedAt: a.grantedAt, SlotGrantedAt: a.slotGrantedAt}
	listed := make(map[string]map[TP]bool, len(a.brokers))
	opening := make(map[string]map[TP]bool, len(a.brokers))
	groups := make(map[string][]string, len(a.brokers))
	for name, row := range a.brokers {
		if row.pinged {
			listed[name] = row.listed
			opening[name] = row.opening
			groups[name] = row.groups
			reports.Applied[name] = row.applied
		}
	}
	deferred, moving := LimitMoves(a.prev, next, states, opening, reports, a.cfg.ConcurrentMoves)
	a.deferred = deferred
	held := HoldUnreleased(a.prev, next, states, listed, reports)
	heldSlots := HoldSlots(a.prev, next, states, groups, reports)
	if a.prev != nil && (next.AssignmentVersion == a.prev.AssignmentVersion || assignment.SameContent(a.prev, next)) {
		return
	}
	a.holding = held > 0 || heldSlots > 0 || moving > 0
	if a.cfg.StillLeader != nil && !a.cfg.StillLeader() {
		a.cfg.Log.Warn().Msg("lease no longer held; not writing the assignment")
		return
	}
	var applied []string
	for _, n := range names {
		if row := a.brokers[n]; row.pinged {
			applied = append(applied, fmt.Sprintf("%s@%d.%d/%d", n, row.applied.Epoch, row.applied.Version, len(row.listed)))
		}
	}
	a.cfg.Log.Info().Str("why", why).Int64("version", next.AssignmentVersion).Strs("reports", applied).
		Int("moves", len(moves)).Int("held", held).Int("held_slots", heldSlots).Int("moving", moving).Int("deferred", deferred).
		Int("topics", len(next.Topics)).Msg("writing assignment")
	a.write(ctx, next)
}

// write writes next on a goroutine, after re-verifying the Lease.
func (a *Actor) write(ctx actor.Context, next *assignment.Assignment) {
	a.writing = true
	self, system, dir, verify, writeFile := ctx.Self(), ctx.ActorSystem(), a.cfg.DataDir, a.cfg.VerifyLease, a.cfg.WriteFile
	log := a.cfg.Log
	go func() {
		start := time.Now()
		var permit chan error
		var verified time.Duration
		if verify != nil {
			// The Lease check runs beside the temporary file's write and
			// fsync; the rename waits for it.
			permit = make(chan error, 1)
			go func() {
				vctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				err := verify(vctx)
				verified = time.Since(start)
				if err != nil && a.cfg.ErrLeaseMovedOn != nil && errors.Is(err, a.cfg.ErrLeaseMovedOn) {
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
			system.Root.Send(self, &written{a: next})
		})
		if err == nil {
			log.Info().Int64("version", next.AssignmentVersion).Dur("took", time.Since(start)).Dur("visible_after", tm.Visible).
				Dur("create", tm.Create).Dur("tmp_fsync", tm.TmpSync).Dur("permit_wait", tm.Permit).Dur("rename", tm.Rename).
				Dur("dir_fsync", tm.DirSync).Dur("lease_check", verified).Msg("assignment written")
			return
		}
		if visible {
			system.Root.Send(self, &dirSyncFailed{version: next.AssignmentVersion, err: err})
			return
		}
		system.Root.Send(self, &written{a: next, err: err})
	}()
}

// dirSyncFailed: a file was renamed into place (and acted on) but its
// directory's fsync failed, so the rename may not survive a crash.
type dirSyncFailed struct {
	version int64
	err     error
}

// fileHeader is the epoch and version found on the volume by checkFile.
type fileHeader struct {
	epoch, version int64
	err            error
}

// checkFile reads the file's epoch-prefixed header on a goroutine (the
// volume may be slow: never in Receive); onHeader re-asserts this
// controller's assignment if the file is from a lower epoch or an older
// version (a deposed controller's late write, or damage).
func (a *Actor) checkFile(ctx actor.Context) {
	if a.writing || a.checking || a.prev == nil || a.prev.ControllerEpoch != a.cfg.Epoch {
		return
	}
	a.checking = true
	self, system, path := ctx.Self(), ctx.ActorSystem(), assignment.Path(a.cfg.DataDir)
	go func() {
		e, v, err := assignment.ReadHeader(path)
		system.Root.Send(self, &fileHeader{epoch: e, version: v, err: err})
	}()
}

func (a *Actor) onHeader(ctx actor.Context, h *fileHeader) {
	a.checking = false
	if a.writing || a.prev == nil {
		return
	}
	if h.err == nil && (Position{Epoch: h.epoch, Version: h.version}).AtLeast(Position{Epoch: a.cfg.Epoch, Version: a.prev.AssignmentVersion}) {
		return
	}
	a.cfg.Log.Warn().Err(h.err).Int64("file_epoch", h.epoch).Int64("file_version", h.version).Int64("version", a.prev.AssignmentVersion).
		Msg("assignment file is not ours; re-asserting it")
	a.write(ctx, a.prev)
}

// trackGrants records, for every partition and slot of the written file f,
// the last file that gave it a leader or an owner (prev is the file before;
// nil for an inherited file, whose grants all count from f itself).
func (a *Actor) trackGrants(prev, f *assignment.Assignment) {
	if f == nil {
		return
	}
	at := assignment.PositionOf(f)
	if a.grantedAt == nil || prev == nil {
		a.grantedAt, a.slotGrantedAt = map[TP]Position{}, map[int]Position{}
	}
	for topic, t := range f.Topics {
		before := partitionsBefore(prev, topic, t.ID)
		for i, p := range t.Partitions {
			tp := TP{Topic: topic, Partition: int32(i)}
			_, known := a.grantedAt[tp]
			granted := p.Leader != assignment.NoLeader && (i >= len(before) || before[i].Leader != p.Leader)
			if !known || granted {
				a.grantedAt[tp] = at
			}
		}
	}
	owners, held := assignment.SlotOwners(f), f.ConsumerGroups.Held
	var prevOwners []string
	var prevHeld []int
	if prev != nil && len(prev.ConsumerGroups.Slots) == len(f.ConsumerGroups.Slots) {
		prevOwners, prevHeld = assignment.SlotOwners(prev), prev.ConsumerGroups.Held
	}
	for i, o := range owners {
		_, known := a.slotGrantedAt[i]
		isHeld := slices.Contains(held, i)
		if !known || (!isHeld && (prevOwners == nil || prevOwners[i] != o || slices.Contains(prevHeld, i))) {
			a.slotGrantedAt[i] = at
		}
	}
}
