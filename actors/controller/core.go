package controller

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
)

// CoreConfig is what the controller core needs of Config.
type CoreConfig struct {
	Self          string
	SelfHost      string
	SelfPort      int32
	SelfRack      string
	SelfListeners string
	HeartbeatAddr string
	Epoch         int64
	DeadAfter     time.Duration
	// StrayGrace: 0 never scans for stray directories.
	StrayGrace      time.Duration
	ConcurrentMoves int
	// Cordoned names the brokers whose log dir cordoned.log.dirs cordons
	// (KIP-1066) as the dynamic broker configs on the volume said when
	// the controller started: a broker's pings say it from then on, but
	// until its first one the recompute that follows an election already
	// keeps new partitions off it.
	Cordoned map[string]bool
	// PrevReleased: the controller that wrote the inherited file released
	// the Lease (a drain) instead of losing it, so its broker did not
	// fence itself: it gets the same grace as the other brokers (states).
	PrevReleased bool
	// StillLeader is the cheap in-memory Lease check made before deciding
	// to write (nil: always).
	StillLeader func() bool
	Log         zerolog.Logger
}

// writerPhase is the assignment file writer's state.
type writerPhase uint8

const (
	// writerIdle: no write in flight; a recompute may start one.
	writerIdle writerPhase = iota
	// writerWriting: exactly one write (a recompute's or a re-assertion)
	// is in flight until Written. No other write starts, header checks
	// are neither started nor acted on (the file is about to change), and
	// recomputes asked meanwhile are owed (recomputeDirty).
	writerWriting
	// writerRetry: the last write failed before its rename. The next tick
	// recomputes, not at once: an assignment the codec refuses would
	// otherwise be recomputed and refused in a loop.
	writerRetry
)

// volumeState is what is known of prev's durability on the volume.
type volumeState uint8

const (
	// volumeDurable: prev's rename is durable, or its directory fsync is
	// still running.
	volumeDurable volumeState = iota
	// volumeReassert: prev's directory fsync failed, so its rename may not
	// survive a crash. The next tick with the writer idle writes it again
	// (same content and version, which brokers that have it ignore),
	// unless a newer file is written first: its own directory fsync covers
	// this rename too.
	volumeReassert
)

// recomputePhase is what is owed of recomputes.
type recomputePhase uint8

const (
	// recomputeClean: nothing is owed.
	recomputeClean recomputePhase = iota
	// recomputeQueued: a RecomputeNow is in the mailbox; the pings ahead of
	// it are absorbed (cheap) before one recompute sees them all.
	recomputeQueued
	// recomputeDirty: a recompute was asked while a write was in flight;
	// it runs when the write ends. Pings need not queue another one.
	recomputeDirty
)

// headerPhase is the file-header check's state.
type headerPhase uint8

const (
	headerIdle    headerPhase = iota
	headerReading             // one ReadHeader in flight
)

// strayPhase is the stray-directory scanner's state (strays.go).
type strayPhase uint8

const (
	// strayOff: no scans, until the topic watch has reported (only then
	// does the controller know every live topic), or ever when StrayGrace
	// is 0.
	strayOff strayPhase = iota
	// strayIdle: a scan starts at a tick once nextStrayScan has passed and
	// a file of this epoch is written.
	strayIdle
	// strayListing: one ListPartitions in flight.
	strayListing
	// strayRemoving: one RemoveStrays (Lease check, then removals) in
	// flight.
	strayRemoving
)

type brokerRow struct {
	info     balancer.BrokerInfo
	lastPing time.Time
	pinged   bool
	healthy  bool
	draining bool
	// heldLease: the broker wrote the inherited file as controller and has
	// since lost the Lease, not released it (not this controller's own
	// broker).
	heldLease bool
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
	// caughtUp is when a ping last named the newest file written then.
	caughtUp time.Time
}

// Core is the controller's state machine in etcd raft's shape: Step takes
// an event and the time and returns effects; it does no I/O.
type Core struct {
	cfg       CoreConfig
	electedAt time.Time
	brokers   map[string]*brokerRow
	topics    map[string]balancer.TopicSpec
	prev      *assignment.Assignment // last written or inherited
	lastState map[string]assignment.BrokerState
	// holding: the last written assignment holds partitions or slots for a
	// release, or has moves in motion; a broker catching up with it may be
	// what they wait for.
	holding bool
	// deferred: moves the last recompute left for later (ConcurrentMoves);
	// an open finishing may make room for them.
	deferred int
	// grantedAt / slotGrantedAt: the file that last gave each partition a
	// leader, each consumer-group slot an owner or a hold (Reports).
	grantedAt     map[TP]Position
	slotGrantedAt map[int]Position
	// hearingSince is when this broker's own pings were heard again after a
	// silence (states).
	hearingSince time.Time

	writer    writerPhase
	volume    volumeState
	recompute recomputePhase
	header    headerPhase
	strays    strayPhase
	// straySince: stray partition directories and when each was first seen.
	straySince    map[storage.PartitionID]time.Time
	nextStrayScan time.Time
	// unregistering: brokers removed by UnregisterBroker whose row a file
	// still has (the balancer must not keep it as dead), with the replies
	// owed once one without it is written.
	unregistering map[string][]func(int16, string)
	// replicas is the StatefulSet's spec.replicas, -1 while unknown.
	replicas int32

	now time.Time
	out []Effect
}

// NewCore returns the core of a controller elected over prev (the file found
// on the volume; nil if none). Step(Start) puts it in force.
func NewCore(cfg CoreConfig, prev *assignment.Assignment) *Core {
	return &Core{cfg: cfg, prev: prev, brokers: map[string]*brokerRow{}, topics: map[string]balancer.TopicSpec{}, replicas: -1}
}

// Step handles ev at now and returns the effects to execute, in order.
func (c *Core) Step(ev Event, now time.Time) []Effect {
	c.out, c.now = nil, now
	switch e := ev.(type) {
	case Start:
		c.start()
	case *BrokerPing:
		changed := c.ping(e)
		if l := c.cfg.Log.Debug(); l.Enabled() {
			l.Str("broker", e.Ping.Name).Int("listed", len(e.Ping.Partitions)).Int64("applied", e.Ping.AssignmentVersion).
				Bool("changed", changed).Dur("queued", now.Sub(e.At)).Msg("ping")
		}
		if changed {
			c.recomputeSoon("broker report changed")
		}
	case RecomputeNow:
		// Stale when a recompute owed after a write absorbed it.
		if c.recompute == recomputeQueued {
			c.recompute = recomputeClean
			c.runRecompute(e.Why)
		}
	case *TopicsChanged:
		c.topics = e.Topics
		if c.strays == strayOff && c.cfg.StrayGrace > 0 {
			c.strays = strayIdle
		}
		c.runRecompute("topics changed")
	case Tick:
		c.tick()
	case HeaderRead:
		c.onHeader(e)
	case DirSyncFailed:
		c.cfg.Log.Error().Err(e.Err).Int64("version", e.Version).Msg("write assignment: the rename may not be durable")
		if c.prev != nil && c.prev.AssignmentVersion == e.Version {
			c.volume = volumeReassert
		}
	case Written:
		c.onWritten(e)
	case PartitionsListed:
		c.onStrayList(e)
	case StraysRemoved:
		c.onStraysRemoved(e)
	case *UnregisterBroker:
		c.unregister(e)
	case *DescribeQuorum:
		c.emit(AnswerQuorum{Reply: e.Reply, Q: c.quorum()})
	case ReplicasChanged:
		c.replicas = -1
		if e.Known {
			c.replicas = e.Replicas
		}
		c.unregisterScaledDown()
	}
	out := c.out
	c.out = nil
	return out
}

func (c *Core) emit(e Effect) { c.out = append(c.out, e) }

func (c *Core) start() {
	c.electedAt = c.now
	// An inherited file may hold moves: brokers catching up with it can
	// confirm them.
	c.holding = c.prev != nil
	c.trackGrants(nil, c.prev)
	var fileEpoch, fileVersion int64 // none inherited: every PONG counts
	if c.prev != nil {
		fileEpoch, fileVersion = c.prev.ControllerEpoch, c.prev.AssignmentVersion
		for _, b := range c.prev.Brokers {
			c.brokers[b.Name] = &brokerRow{info: balancer.BrokerInfo{Name: b.Name, Host: b.Host, Port: b.Port, Rack: b.Rack, Listeners: b.Listeners, State: b.State, Cordoned: c.cfg.Cordoned[b.Name]},
				healthy: b.State == assignment.Alive, draining: b.State == assignment.Draining,
				heldLease: b.Name == c.prev.Controller && b.Name != c.cfg.Self && !c.cfg.PrevReleased}
		}
		for name, t := range c.prev.Topics {
			c.topics[name] = balancer.TopicSpec{ID: t.ID, Partitions: len(t.Partitions), Config: t.Config, Pins: t.Pins}
		}
	}
	c.emit(SetWritten{Epoch: fileEpoch, Version: fileVersion})
	// Its own broker pings it like any other (through the hub); until then
	// what it serves is unknown, which holds pending moves.
	c.brokers[c.cfg.Self] = &brokerRow{info: balancer.BrokerInfo{Name: c.cfg.Self, Host: c.cfg.SelfHost, Port: c.cfg.SelfPort, Rack: c.cfg.SelfRack, Listeners: c.cfg.SelfListeners, Cordoned: c.cfg.Cordoned[c.cfg.Self]}, healthy: true}
}

func (c *Core) tick() {
	c.scanStrays()
	if c.unregisterScaledDown() {
		return
	}
	switch {
	case c.writer == writerRetry:
		c.writer = writerIdle
		c.runRecompute("retry after a failed write")
	case c.volume == volumeReassert && c.writer == writerIdle && c.prev != nil:
		c.volume = volumeDurable
		c.write(c.prev)
	default:
		if states := c.states(); !maps.Equal(states, c.lastState) || c.prev == nil || c.prev.ControllerEpoch != c.cfg.Epoch {
			c.runRecompute("alive set changed")
			return
		}
		if c.deferred > 0 {
			// Room is normally made by a ping that reports an open done;
			// this is the backstop.
			c.runRecompute("deferred moves")
		}
		c.checkFile()
	}
}

// recomputeSoon coalesces recomputes: a drain releases partitions one by
// one and each release rides its own ping, so recomputing per ping would
// keep the controller busy far behind its mailbox. The pings already queued
// are absorbed first (cheap), then one recompute sees them all.
func (c *Core) recomputeSoon(why string) {
	if c.recompute != recomputeClean {
		return // a queued or owed recompute will see this ping
	}
	c.recompute = recomputeQueued
	c.emit(SendRecompute{Why: why})
}

func (c *Core) onWritten(m Written) {
	c.writer = writerIdle
	if m.LeaseLost {
		c.cfg.Log.Error().Err(m.Err).Msg("lease lost; not writing")
		c.answerUnregistered(nil, kerr.NotController.Code, "the controller lost its Lease before writing the assignment")
		c.emit(ReportLeaseLost{})
		return
	}
	if m.Err != nil {
		// Retried at the next tick, not at once (writerRetry).
		c.cfg.Log.Error().Err(m.Err).Msg("write assignment")
		c.writer = writerRetry
	} else {
		c.volume = volumeDurable
		c.trackGrants(c.prev, m.A)
		c.prev = m.A
		c.emit(SetWritten{Epoch: m.A.ControllerEpoch, Version: m.A.AssignmentVersion})
		c.emit(PushChanged{Epoch: m.A.ControllerEpoch, Version: m.A.AssignmentVersion})
		c.answerUnregistered(m.A, 0, "")
	}
	if c.recompute == recomputeDirty {
		c.recompute = recomputeClean
		c.runRecompute("changes during write")
	} else if m.Err == nil && c.holding {
		// Releases reported while this file was being written were not yet
		// waited for (the file before held nothing): a ping that already
		// no longer lists a partition held here has released it.
		c.runRecompute("file holds moves")
	}
}

// ping records a heartbeat; it reports whether the assignment may change
// because of it: a release another broker waits for, a broker catching up
// with a file that holds moves, or a drain, health, cordon or rack change.
func (c *Core) ping(m *BrokerPing) bool {
	p := m.Ping
	row, ok := c.brokers[p.Name]
	if !ok {
		row = &brokerRow{}
		c.brokers[p.Name] = row
		if replies, ok := c.unregistering[p.Name]; ok {
			// Back before its row was gone: registered anew.
			delete(c.unregistering, p.Name)
			for _, r := range replies {
				c.emit(AnswerUnregister{Reply: r, Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf("broker %s heartbeated again: it is registered", p.Name)})
			}
		}
	}
	// A drain starts (or health flips) now, not at the next tick: a
	// draining broker's partitions start moving within one file write. A
	// rack or listeners a restarted broker reports differently reach clients
	// as soon.
	flipped := row.pinged && (row.healthy != p.Healthy || row.draining != p.Draining || row.info.Cordoned != p.Cordoned ||
		row.info.Rack != p.KafkaRack || row.info.Listeners != p.KafkaListeners)
	row.info.Name, row.info.Host, row.info.Port, row.info.Rack = p.Name, p.KafkaHost, p.KafkaPort, p.KafkaRack
	row.info.Listeners = p.KafkaListeners
	if p.Name == c.cfg.Self && (!row.pinged || m.At.Sub(row.lastPing) > c.cfg.DeadAfter/2) {
		c.hearingSince = m.At // heard again after a silence (or for the first time)
	}
	row.lastPing, row.pinged = m.At, true
	row.healthy, row.draining, row.info.Cordoned = p.Healthy, p.Draining, p.Cordoned
	applied := Position{Epoch: p.ControllerEpoch, Version: p.AssignmentVersion}
	caughtUp := applied != row.applied
	row.applied = applied
	if c.prev == nil || applied.AtLeast(assignment.PositionOf(c.prev)) {
		row.caughtUp = m.At
	}
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
	released := flipped || (caughtUp && c.holding)
	if c.deferred > 0 {
		for tp := range row.opening {
			if !opening[tp] {
				released = true // room for a deferred move
				break
			}
		}
	}
	row.opening = opening
	for tp := range row.listed {
		if !listed[tp] && c.waiting(tp) {
			released = true
		}
	}
	row.listed = listed
	if !slices.Equal(row.groups, p.Groups) {
		row.groups = p.Groups
		if c.prev != nil && len(c.prev.ConsumerGroups.Held) > 0 {
			released = true
		}
	}
	return released
}

// placedTopics is topics without one named assignment.OffsetsTopic (a
// KafkaTopic applied with kubectl): the group-coordinator slots place that
// name's partitions, so the file never lists such a topic and no broker
// opens it (its KafkaTopic and files stay as they are).
func placedTopics(topics map[string]balancer.TopicSpec) map[string]balancer.TopicSpec {
	if _, ok := topics[assignment.OffsetsTopic]; !ok {
		return topics
	}
	out := maps.Clone(topics)
	delete(out, assignment.OffsetsTopic)
	return out
}

// waiting reports whether tp is held leaderless in the last assignment: a
// partition held mid-move, or a held slot's partition of
// __consumer_offsets.
func (c *Core) waiting(tp TP) bool {
	if c.prev == nil {
		return false
	}
	if tp.Topic == assignment.OffsetsTopic {
		return slices.Contains(c.prev.ConsumerGroups.Held, int(tp.Partition))
	}
	t, ok := c.prev.Topics[tp.Topic]
	return ok && int(tp.Partition) < len(t.Partitions) && t.Partitions[tp.Partition].Leader == assignment.NoLeader
}

// states derives every registered broker's state now. The controller is
// always alive (never an empty assignment). Right after election, brokers
// that were alive in the inherited assignment stay presumed alive until
// DeadAfter passes without a ping, so a new controller does not move
// partitions away from brokers that simply have not dialed it yet; those
// that were draining stay draining (still serving what they have not
// released: what they lead moves two-phase, not as a failover). The
// broker that wrote the inherited file as controller gets no such grace: it
// lost the Lease, so it has not renewed it for a lease duration, and its
// broker fenced itself before that (--fence-after); until it pings, it is
// dead, and its partitions move at the first write instead of DeadAfter
// later. One that released the Lease (a drain: PrevReleased) was serving
// when it did, and is presumed alive like the others: it goes on draining,
// its partitions moving two-phase.
//
// Silence is only evidence while pings are being received at all: a
// controller starved of CPU (or its hub stalled) hears nobody, its own
// broker included, and must not take that for every other broker dying.
// Until its own broker's pings arrive again (within DeadAfter/2), and for
// DeadAfter/2 after they do (the others' pings, delayed by the same stall,
// arrive in any order), a broker that was alive stays alive: a failover
// waits, nothing else does.
func (c *Core) states() map[string]assignment.BrokerState {
	now := c.now
	out := make(map[string]assignment.BrokerState, len(c.brokers))
	hearing := true
	if self, ok := c.brokers[c.cfg.Self]; ok && self.pinged &&
		(now.Sub(self.lastPing) > c.cfg.DeadAfter/2 || now.Sub(c.hearingSince) < c.cfg.DeadAfter/2) {
		// Not hearing its own broker, or hearing it again only since
		// moments ago: the other brokers' pings, queued behind the same
		// stall, may not have been read yet.
		hearing = false
	}
	for name, row := range c.brokers {
		switch {
		case name == c.cfg.Self:
			out[name] = assignment.Alive
		case !row.pinged:
			switch {
			case row.heldLease || now.Sub(c.electedAt) >= c.cfg.DeadAfter:
				out[name] = assignment.Dead
			case row.draining:
				out[name] = assignment.Draining
			case row.healthy:
				out[name] = assignment.Alive
			default:
				out[name] = assignment.Dead
			}
		case now.Sub(row.lastPing) > c.cfg.DeadAfter && (hearing || c.lastState[name] == assignment.Dead):
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

// runRecompute computes the next assignment and writes it if it changed,
// or owes the recompute to the end of the write in flight.
func (c *Core) runRecompute(why string) {
	if c.writer == writerWriting {
		c.recompute = recomputeDirty
		return
	}
	states := c.states()
	in := balancer.Input{
		Previous:            c.prev,
		Controller:          c.cfg.Self,
		ControllerEpoch:     c.cfg.Epoch,
		ControllerHeartbeat: c.cfg.HeartbeatAddr,
		Topics:              placedTopics(c.topics),
		Unregistered:        slices.Sorted(maps.Keys(c.unregistering)),
	}
	names := make([]string, 0, len(c.brokers))
	for n := range c.brokers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		info := c.brokers[n].info
		info.State = states[n]
		in.Brokers = append(in.Brokers, info)
	}
	next, moves, err := balancer.Compute(in)
	if err != nil {
		c.cfg.Log.Error().Err(err).Msg("balancer input rejected")
		return
	}
	for name, st := range states {
		if old, ok := c.lastState[name]; !ok || old != st {
			row := c.brokers[name]
			ev := c.cfg.Log.Info().Str("broker", name).Str("from", string(old)).Str("to", string(st)).Bool("pinged", row.pinged)
			if row.pinged {
				ev = ev.Dur("since_last_ping", c.now.Sub(row.lastPing))
			}
			ev.Msg("broker state changed")
		}
	}
	c.lastState = states
	// A broker's report confirms a release only once it has applied the
	// file that last granted the partition: one that is behind may be about
	// to take it, from that file, without listing it yet.
	reports := Reports{Applied: map[string]Position{}, GrantedAt: c.grantedAt, SlotGrantedAt: c.slotGrantedAt}
	listed := make(map[string]map[TP]bool, len(c.brokers))
	opening := make(map[string]map[TP]bool, len(c.brokers))
	groups := make(map[string][]string, len(c.brokers))
	for name, row := range c.brokers {
		if row.pinged {
			listed[name] = row.listed
			opening[name] = row.opening
			groups[name] = row.groups
			reports.Applied[name] = row.applied
		}
	}
	deferred, moving := LimitMoves(c.prev, next, states, opening, reports, c.cfg.ConcurrentMoves)
	c.deferred = deferred
	held := HoldUnreleased(c.prev, next, states, listed, reports)
	heldSlots := HoldSlots(c.prev, next, states, groups, listed, reports)
	assignment.SetSlotEpochs(c.prev, next)
	if c.prev != nil && (next.AssignmentVersion == c.prev.AssignmentVersion || assignment.SameContent(c.prev, next)) {
		return
	}
	c.holding = held > 0 || heldSlots > 0 || moving > 0
	if c.cfg.StillLeader != nil && !c.cfg.StillLeader() {
		c.cfg.Log.Warn().Msg("lease no longer held; not writing the assignment")
		return
	}
	var applied []string
	for _, n := range names {
		if row := c.brokers[n]; row.pinged {
			applied = append(applied, fmt.Sprintf("%s@%d.%d/%d", n, row.applied.Epoch, row.applied.Version, len(row.listed)))
		}
	}
	c.cfg.Log.Info().Str("why", why).Int64("version", next.AssignmentVersion).Strs("reports", applied).
		Int("moves", len(moves)).Int("held", held).Int("held_slots", heldSlots).Int("moving", moving).Int("deferred", deferred).
		Int("topics", len(next.Topics)).Msg("writing assignment")
	c.write(next)
}

// unregister removes a dead broker's row: the next file leaves it out, and
// its consumer-group slot with it (every group may change coordinator, so
// that file holds every slot until each running broker has applied it:
// HoldSlots). A broker that is alive or draining is refused: its row is how
// its partitions and groups are taken from it two-phase.
func (c *Core) unregister(m *UnregisterBroker) {
	answer := func(code int16, msg string) { c.emit(AnswerUnregister{Reply: m.Reply, Code: code, Msg: msg}) }
	name := ""
	for n := range c.brokers {
		if id, err := balancer.BrokerID(n); err == nil && id == m.ID {
			name = n
		}
	}
	if name == "" {
		answer(kerr.BrokerIDNotRegistered.Code, fmt.Sprintf("broker %d is not registered", m.ID))
		return
	}
	if st := c.states()[name]; st != assignment.Dead {
		answer(kerr.InvalidRequest.Code, fmt.Sprintf("broker %d (%s) is %s: only a dead broker can be unregistered (stop it first)", m.ID, name, st))
		return
	}
	c.cfg.Log.Info().Str("broker", name).Int32("id", m.ID).Msg("unregistering broker")
	c.remove(name, m.Reply)
	c.runRecompute("broker unregistered")
	if c.writer != writerWriting {
		// Nothing to write: no file has its row.
		c.answerUnregistered(c.prev, 0, "")
	}
}

// quorum describes the registered brokers' progress through the
// assignment files, as Kafka's DescribeQuorum does a metadata log's
// replicas: a file's version is its offset, the controller the one voter.
func (c *Core) quorum() *heartbeatpb.DescribeQuorumResponse {
	q := &heartbeatpb.DescribeQuorumResponse{ControllerEpoch: c.cfg.Epoch}
	if c.prev != nil {
		q.AssignmentVersion = c.prev.AssignmentVersion
	}
	q.ControllerId, _ = balancer.BrokerID(c.cfg.Self)
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return -1
		}
		return t.UnixMilli()
	}
	for _, name := range slices.Sorted(maps.Keys(c.brokers)) {
		row := c.brokers[name]
		id, err := balancer.BrokerID(name)
		if err != nil {
			continue
		}
		m := &heartbeatpb.QuorumMember{BrokerId: id, Name: name, KafkaHost: row.info.Host, KafkaPort: row.info.Port, AppliedVersion: -1, LastPingMs: -1, CaughtUpMs: -1}
		switch {
		case name == c.cfg.Self:
			m.AppliedVersion, m.LastPingMs, m.CaughtUpMs = q.AssignmentVersion, c.now.UnixMilli(), c.now.UnixMilli()
		case row.pinged:
			m.AppliedVersion, m.LastPingMs, m.CaughtUpMs = row.applied.Version, ms(row.lastPing), ms(row.caughtUp)
		}
		q.Members = append(q.Members, m)
	}
	return q
}

// remove takes name out of the registered set; reply (nil: none) is
// answered once a file without its row is written.
func (c *Core) remove(name string, reply func(int16, string)) {
	delete(c.brokers, name)
	if c.unregistering == nil {
		c.unregistering = map[string][]func(int16, string){}
	}
	replies := c.unregistering[name]
	if reply != nil {
		replies = append(replies, reply)
	}
	c.unregistering[name] = replies
}

// unregisterScaledDown unregisters the dead brokers a StatefulSet
// scale-down removed (ordinal at or above its replicas), as an operator
// would with UnregisterBroker, and reports whether it recomputed. A broker
// still draining stays until it is dead; one scaled up again later
// registers anew.
func (c *Core) unregisterScaledDown() bool {
	if c.replicas < 0 {
		return false
	}
	states := c.states()
	var gone []string
	for name := range c.brokers {
		if id, err := balancer.BrokerID(name); err == nil && id >= c.replicas && name != c.cfg.Self && states[name] == assignment.Dead {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return false
	}
	slices.Sort(gone)
	for _, name := range gone {
		c.cfg.Log.Info().Str("broker", name).Int32("replicas", c.replicas).Msg("unregistering a broker the StatefulSet no longer has")
		c.remove(name, nil)
	}
	c.runRecompute("scaled-down brokers unregistered")
	return true
}

// answerUnregistered answers the unregistrations a (the file written; nil
// for none) has no row for with code, and forgets them.
func (c *Core) answerUnregistered(a *assignment.Assignment, code int16, msg string) {
	for name, replies := range c.unregistering {
		if a != nil {
			if _, ok := a.BrokerByName(name); ok {
				continue
			}
		}
		delete(c.unregistering, name)
		for _, r := range replies {
			c.emit(AnswerUnregister{Reply: r, Code: code, Msg: msg})
		}
	}
}

func (c *Core) write(next *assignment.Assignment) {
	c.writer = writerWriting
	c.emit(WriteFile{A: next})
}

// checkFile asks for the file's epoch-prefixed header; onHeader re-asserts
// this controller's assignment if the file is from a lower epoch or an
// older version (a deposed controller's late write, or damage).
func (c *Core) checkFile() {
	if c.writer == writerWriting || c.header == headerReading || c.prev == nil || c.prev.ControllerEpoch != c.cfg.Epoch {
		return
	}
	c.header = headerReading
	c.emit(ReadHeader{})
}

func (c *Core) onHeader(h HeaderRead) {
	c.header = headerIdle
	if c.writer == writerWriting || c.prev == nil {
		return
	}
	if h.Err == nil && (Position{Epoch: h.Epoch, Version: h.Version}).AtLeast(Position{Epoch: c.cfg.Epoch, Version: c.prev.AssignmentVersion}) {
		return
	}
	c.cfg.Log.Warn().Err(h.Err).Int64("file_epoch", h.Epoch).Int64("file_version", h.Version).Int64("version", c.prev.AssignmentVersion).
		Msg("assignment file is not ours; re-asserting it")
	c.write(c.prev)
}

// trackGrants records, for every partition and slot of the written file f,
// the last file that gave it a leader or an owner (prev is the file before;
// nil for an inherited file, whose grants all count from f itself).
func (c *Core) trackGrants(prev, f *assignment.Assignment) {
	if f == nil {
		return
	}
	at := assignment.PositionOf(f)
	if c.grantedAt == nil || prev == nil {
		c.grantedAt, c.slotGrantedAt = map[TP]Position{}, map[int]Position{}
	}
	for topic, t := range f.Topics {
		before := partitionsBefore(prev, topic, t.ID)
		for i, p := range t.Partitions {
			tp := TP{Topic: topic, Partition: int32(i)}
			_, known := c.grantedAt[tp]
			granted := p.Leader != assignment.NoLeader && (i >= len(before) || before[i].Leader != p.Leader)
			if !known || granted {
				c.grantedAt[tp] = at
			}
		}
	}
	owners, held := assignment.SlotOwners(f), f.ConsumerGroups.Held
	var prevOwners []string
	var prevHeld []int
	// A changed slot count (HoldSlots holds every slot): releases wait for
	// reports from this file on.
	reset := prev != nil && len(prev.ConsumerGroups.Slots) != len(f.ConsumerGroups.Slots)
	if prev != nil && !reset {
		prevOwners, prevHeld = assignment.SlotOwners(prev), prev.ConsumerGroups.Held
	}
	for i, o := range owners {
		// A slot's position moves with its owner and with its hold: a
		// release waits for every broker to have applied the file that
		// held it, so the old owner refuses the slot's new groups by then.
		_, known := c.slotGrantedAt[i]
		isHeld := slices.Contains(held, i)
		changed := prevOwners == nil || prevOwners[i] != o || isHeld != slices.Contains(prevHeld, i)
		if reset || !known || changed {
			c.slotGrantedAt[i] = at
		}
	}
}
