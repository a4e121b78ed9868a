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
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
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
	// groups are the consumer groups it reports holding.
	groups []string
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
	checking  bool // a header read is in flight
	dirty     bool
	stopTick  context.CancelFunc
	lastState map[string]assignment.BrokerState
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
	return func() actor.Actor {
		return &Actor{cfg: cfg, prev: prev, brokers: map[string]*brokerRow{}, topics: map[string]balancer.TopicSpec{}}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.electedAt = a.cfg.Now()
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
		if a.ping(m) {
			a.recompute(ctx, "partitions released")
		}
	case *TopicsChanged:
		a.topics, a.haveTopic = m.Topics, true
		a.recompute(ctx, "topics changed")
	case *tick:
		if states := a.states(); !maps.Equal(states, a.lastState) || a.prev == nil || a.prev.ControllerEpoch != a.cfg.Epoch {
			a.recompute(ctx, "alive set changed")
		} else {
			a.checkFile(ctx)
		}
	case *fileHeader:
		a.onHeader(ctx, m)
	case *written:
		a.writing = false
		if lost, ok := m.err.(errLeaseLost); ok {
			a.cfg.Log.Error().Err(lost.err).Msg("lease lost; not writing")
			ctx.Send(ctx.Parent(), &LeaseLost{Epoch: a.cfg.Epoch})
			return
		}
		if m.err != nil {
			a.cfg.Log.Error().Err(m.err).Msg("write assignment")
			a.dirty = true
		} else {
			a.prev = m.a
			a.cfg.Hub.Push(&heartbeatpb.Push{Kind: heartbeatpb.Push_ASSIGNMENT_CHANGED, ControllerEpoch: m.a.ControllerEpoch, AssignmentVersion: m.a.AssignmentVersion})
		}
		if a.dirty {
			a.dirty = false
			a.recompute(ctx, "changes during write")
		}
	}
}

// ping records a heartbeat; it reports whether the broker released a
// partition another broker is waiting for.
func (a *Actor) ping(m *BrokerPing) bool {
	p := m.Ping
	row, ok := a.brokers[p.Name]
	if !ok {
		row = &brokerRow{}
		a.brokers[p.Name] = row
	}
	row.info.Name, row.info.Host, row.info.Port = p.Name, p.KafkaHost, p.KafkaPort
	row.lastPing, row.pinged = m.At, true
	row.healthy, row.draining = p.Healthy, p.Draining
	listed := make(map[TP]bool, len(p.Partitions))
	for _, lp := range p.Partitions {
		listed[TP{Topic: lp.Topic, Partition: lp.Partition}] = true
	}
	released := false
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
func (a *Actor) states() map[string]assignment.BrokerState {
	now := a.cfg.Now()
	out := make(map[string]assignment.BrokerState, len(a.brokers))
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
		case now.Sub(row.lastPing) > a.cfg.DeadAfter:
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
	a.lastState = states
	listed := make(map[string]map[TP]bool, len(a.brokers))
	for name, row := range a.brokers {
		if row.pinged {
			listed[name] = row.listed
		}
	}
	held := HoldUnreleased(a.prev, next, states, listed)
	groups := make(map[string][]string, len(a.brokers))
	for name, row := range a.brokers {
		if row.pinged {
			groups[name] = row.groups
		}
	}
	heldSlots := HoldSlots(a.prev, next, states, groups)
	if a.prev != nil && (next.AssignmentVersion == a.prev.AssignmentVersion || assignment.SameContent(a.prev, next)) {
		return
	}
	if a.cfg.StillLeader != nil && !a.cfg.StillLeader() {
		a.cfg.Log.Warn().Msg("lease no longer held; not writing the assignment")
		return
	}
	a.cfg.Log.Info().Str("why", why).Int64("version", next.AssignmentVersion).
		Int("moves", len(moves)).Int("held", held).Int("held_slots", heldSlots).Int("topics", len(next.Topics)).Msg("writing assignment")
	a.write(ctx, next)
}

// write writes next on a goroutine, after re-verifying the Lease.
func (a *Actor) write(ctx actor.Context, next *assignment.Assignment) {
	a.writing = true
	self, system, dir, verify := ctx.Self(), ctx.ActorSystem(), a.cfg.DataDir, a.cfg.VerifyLease
	go func() {
		var err error
		if verify != nil {
			vctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if verr := verify(vctx); verr != nil {
				err = verr
				if a.cfg.ErrLeaseMovedOn != nil && errors.Is(verr, a.cfg.ErrLeaseMovedOn) {
					err = errLeaseLost{verr}
				}
			}
			cancel()
		}
		if err == nil {
			err = assignment.WriteFile(dir, next)
		}
		system.Root.Send(self, &written{a: next, err: err})
	}()
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
	if h.err == nil && (h.epoch > a.cfg.Epoch || (h.epoch == a.cfg.Epoch && h.version >= a.prev.AssignmentVersion)) {
		return
	}
	a.cfg.Log.Warn().Err(h.err).Int64("file_epoch", h.epoch).Int64("file_version", h.version).Int64("version", a.prev.AssignmentVersion).
		Msg("assignment file is not ours; re-asserting it")
	a.write(ctx, a.prev)
}
