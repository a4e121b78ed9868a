package supervisor

import (
	"maps"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/heal"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage/assignment"
)

// CoreConfig configures the cluster supervisor's core.
type CoreConfig struct {
	Self routing.Broker
	// ConcurrentMoves > 0: a finished open is reported at once (a
	// controller bounding its moves waits for it).
	ConcurrentMoves int
	// RetireAfter is how long a released partition actor lives on.
	RetireAfter time.Duration
	// PartitionRestarts and ControllerRestarts replace heal.Partitions and
	// heal.Controllers (tests).
	PartitionRestarts, ControllerRestarts *heal.Policy
	Log                                   zerolog.Logger
}

// corePart is one partition actor this broker runs, named by its
// generation (the shell maps generations to actor refs).
type corePart struct {
	gen         uint64
	topicID     string
	leaderEpoch int32
	releasing   bool
	// opening: taken here, its open not finished yet. The heartbeat says
	// so, and the controller counts the partition as still moving.
	opening bool
	// retake is a Take that arrived while the partition was still closing
	// here: it is applied once the close is done (one open per process).
	retake *assignment.PartitionRef
	// down: the actor died; a new incarnation is spawned after the
	// backoff (RespawnDue).
	down bool
}

// Core is the cluster supervisor's state machine: it turns accepted
// assignment files, partition reports and Lease changes into effects
// (spawn, take, relinquish, retire partition actors; start and stop the
// controller; publish the routing view; report through the heartbeat). It
// does no I/O and calls no actor; Cluster is its shell.
type Core struct {
	cfg     CoreConfig
	current *assignment.Assignment
	parts   map[routing.TP]*corePart
	// held is where each partition current holds leaderless was led from
	// (trackHeld), for Metadata.
	held map[routing.TP]heldLeader
	// ctrlSeq names the controller incarnation running (0: none); a
	// broker that wins the Lease back at the same epoch gets a new one.
	ctrlSeq   uint64
	lastCtrl  uint64
	ctrlEpoch int64
	// ctrlPrevReleased is the running controller's StartController.PrevReleased.
	ctrlPrevReleased bool
	groups           []string // consumer groups this broker coordinates (GroupsLed)
	txnIDs           []string // transactional ids this broker coordinates (TxnIDsLed)
	gens             uint64   // partition actors spawned (unique names)
	healTrackers
}

// resendConfigs sends every partition led and not being released its
// topic's config again (UpdateConfig), for the shell to put the new broker
// defaults under; a partition still opening gets it too (its Take is
// already in its mailbox, so the update follows it).
func (c *Core) resendConfigs() []Effect {
	if c.current == nil {
		return nil
	}
	var out []Effect
	for _, tp := range slices.SortedFunc(maps.Keys(c.parts), compareTP) {
		lp := c.parts[tp]
		if lp.releasing || lp.down {
			continue
		}
		out = append(out, UpdateConfig{Gen: lp.gen, Config: configOf(c.current, tp.Topic)})
	}
	return out
}

// NewCore returns an empty core: no assignment, no partitions.
func NewCore(cfg CoreConfig) *Core {
	return &Core{cfg: cfg, parts: map[routing.TP]*corePart{}, healTrackers: newHealTrackers(cfg)}
}

// Event is an input of the supervisor core.
type Event interface{ isEvent() }

// Effect is work the core asks its shell to do, in order.
type Effect interface{ isEffect() }

// Events.
type (
	// Applied: the follower accepted Next (Prev the file before it).
	Applied struct {
		Prev, Next *assignment.Assignment
		Changes    assignment.Changes
	}
	// Opened: the first open of partition actor Gen finished.
	Opened struct {
		TP  routing.TP
		Gen uint64
	}
	// Released: partition actor Gen finished its release.
	Released struct {
		TP  routing.TP
		Gen uint64
	}
	// SpawnFailed: the shell could not spawn partition actor Gen.
	SpawnFailed struct {
		TP  routing.TP
		Gen uint64
	}
	// RetireDue: the retire delay of partition actor Gen has passed.
	RetireDue struct{ Gen uint64 }
	// Elected: this broker won the Lease at Epoch. Ended: the leadership
	// was already lost when the event was handled. Prev is the file on
	// the volume, for the controller to start from; PrevReleased: the
	// controller that wrote it released the Lease (a drain) rather than
	// lost it.
	Elected struct {
		Epoch        int64
		Prev         *assignment.Assignment
		PrevReleased bool
		Ended        bool
	}
	// Deposed: client-go reports the Lease lost.
	Deposed struct{}
	// ControllerLostLease: the controller at Epoch found the Lease moved on.
	ControllerLostLease struct{ Epoch int64 }
	// ControllerFailed: the shell could not spawn controller Seq.
	ControllerFailed struct{ Seq uint64 }
	// GroupsReported: the consumer groups this broker coordinates now.
	GroupsReported struct{ Names []string }
	// TxnIDsReported: the transactional ids this broker coordinates now.
	TxnIDsReported struct{ Names []string }
	// DefaultsChanged: the broker defaults of topic configs changed
	// (dynamic broker configs); the shell puts them under each config.
	DefaultsChanged struct{}
)

func (Applied) isEvent()             {}
func (DefaultsChanged) isEvent()     {}
func (Opened) isEvent()              {}
func (Released) isEvent()            {}
func (SpawnFailed) isEvent()         {}
func (RetireDue) isEvent()           {}
func (Elected) isEvent()             {}
func (Deposed) isEvent()             {}
func (ControllerLostLease) isEvent() {}
func (ControllerFailed) isEvent()    {}
func (GroupsReported) isEvent()      {}
func (TxnIDsReported) isEvent()      {}

// Effects.
type (
	// Spawn starts partition actor Gen and tells it to lead Ref (Take);
	// its first open reports Opened.
	Spawn struct {
		Gen    uint64
		Ref    assignment.PartitionRef
		Config map[string]string
	}
	// Take tells the running partition actor Gen its new leader epoch.
	Take struct {
		Gen    uint64
		Ref    assignment.PartitionRef
		Config map[string]string
	}
	// Relinquish revokes partition actor Gen (writes stop at once), then
	// asks it to release (Delete: the topic incarnation is gone); the
	// finished release reports Released.
	Relinquish struct {
		TP     routing.TP
		Gen    uint64
		Delete bool
	}
	// UpdateConfig sends a kept partition its topic's new config.
	UpdateConfig struct {
		Gen    uint64
		Config map[string]string
	}
	// After delivers Event back to the core once D has passed.
	After struct {
		D     time.Duration
		Event Event
	}
	// Poison stops the released partition actor Gen.
	Poison struct{ Gen uint64 }
	// SetApplied records the newest file applied, for the heartbeat.
	SetApplied struct{ Position assignment.Position }
	// Publish publishes the routing view of the core's state.
	Publish struct{}
	// RefreshPing rebuilds the ping behind the messages queued; Send: it
	// goes out at once.
	RefreshPing struct{ Send bool }
	// UpdatePing rebuilds the ping now.
	UpdatePing struct{}
	// Kick sends a ping now.
	Kick struct{}
	// StartController spawns controller incarnation Seq at Epoch.
	StartController struct {
		Epoch        int64
		Seq          uint64
		Prev         *assignment.Assignment
		PrevReleased bool // as in Elected
	}
	// StopController stops the running controller.
	StopController struct{}
	// ClearLeader: this broker no longer counts itself the Lease holder.
	ClearLeader struct{}
)

func (Spawn) isEffect()           {}
func (Take) isEffect()            {}
func (Relinquish) isEffect()      {}
func (UpdateConfig) isEffect()    {}
func (After) isEffect()           {}
func (Poison) isEffect()          {}
func (SetApplied) isEffect()      {}
func (Publish) isEffect()         {}
func (RefreshPing) isEffect()     {}
func (UpdatePing) isEffect()      {}
func (Kick) isEffect()            {}
func (StartController) isEffect() {}
func (StopController) isEffect()  {}
func (ClearLeader) isEffect()     {}

// Step applies one event and returns the effects, to run in order.
func (c *Core) Step(ev Event, now time.Time) []Effect {
	switch e := ev.(type) {
	case Applied:
		return c.apply(e)
	case Opened:
		if lp, ok := c.parts[e.TP]; ok && lp.gen == e.Gen && lp.opening && !lp.down {
			lp.opening = false
			// A controller bounding its moves may wait for opens to finish
			// before it starts more: tell it at once. Every broker of a
			// cluster runs with the same flags; without a bound, nothing
			// waits for this, and it rides the next heartbeat.
			return []Effect{RefreshPing{Send: c.cfg.ConcurrentMoves > 0}}
		}
	case Released:
		return c.released(e)
	case DefaultsChanged:
		return c.resendConfigs()
	case SpawnFailed:
		if lp, ok := c.parts[e.TP]; ok && lp.gen == e.Gen {
			delete(c.parts, e.TP)
		}
	case RetireDue:
		return []Effect{Poison{Gen: e.Gen}}
	case Elected:
		out := c.stopController()
		if e.Ended {
			return out // deposed before this event was handled
		}
		c.lastCtrl++
		c.ctrlSeq, c.ctrlEpoch, c.ctrlPrevReleased = c.lastCtrl, e.Epoch, e.PrevReleased
		return append(out, StartController{Epoch: e.Epoch, Seq: c.ctrlSeq, Prev: e.Prev, PrevReleased: e.PrevReleased}, Publish{})
	case ControllerFailed:
		if c.ctrlSeq == e.Seq {
			c.ctrlSeq = 0
		}
	case Deposed:
		return append(c.stopController(), Publish{})
	case ControllerLostLease:
		// The controller found, on a fresh read, that the Lease moved on:
		// stop it now rather than wait for client-go to notice.
		if c.ctrlSeq != 0 && e.Epoch == c.ctrlEpoch {
			c.cfg.Log.Warn().Int64("epoch", e.Epoch).Msg("controller lost the lease; stopping it")
			return append([]Effect{ClearLeader{}}, append(c.stopController(), Publish{})...)
		}
	case GroupsReported:
		c.groups = e.Names
		return []Effect{UpdatePing{}, Kick{}}
	case TxnIDsReported:
		c.txnIDs = e.Names
		return []Effect{UpdatePing{}, Kick{}}
	default:
		return c.stepHeal(ev, now)
	}
	return nil
}

func (c *Core) stopController() []Effect {
	if c.ctrlSeq == 0 {
		return nil
	}
	c.ctrlSeq = 0
	return []Effect{StopController{}}
}

// Controller reports whether a controller runs here.
func (c *Core) Controller() bool { return c.ctrlSeq != 0 }

// apply makes this broker serve exactly what the accepted assignment says.
func (c *Core) apply(e Applied) []Effect {
	if c.current != nil && e.Next != nil && assignment.PositionOf(e.Next).Less(assignment.PositionOf(c.current)) {
		// The follower rejects stale files; a late one must not undo a
		// newer file's moves either.
		return nil
	}
	var out []Effect
	c.current = e.Next
	c.held = trackHeld(e.Prev, e.Next, c.held)
	for _, r := range e.Changes.Relinquish {
		tp := routing.TP{Topic: r.Topic, Partition: r.Partition}
		lp, ok := c.parts[tp]
		if !ok || lp.releasing {
			continue
		}
		if lp.down {
			// Dead, its log closed: released already.
			delete(c.parts, tp)
			out = append(out, RefreshPing{Send: true})
			continue
		}
		lp.releasing = true
		nt, still := e.Next.Topics[r.Topic]
		// A slot's partition of __consumer_offsets moves with the slot and
		// is never deleted.
		gone := r.Topic != assignment.OffsetsTopic && (!still || nt.ID != r.TopicID)
		out = append(out, Relinquish{TP: tp, Gen: lp.gen, Delete: gone})
	}
	for _, t := range append(e.Changes.Take, e.Changes.EpochChanged...) {
		tp := routing.TP{Topic: t.Topic, Partition: t.Partition}
		cfg := configOf(e.Next, t.Topic)
		lp, ok := c.parts[tp]
		switch {
		case ok && lp.down && lp.topicID == t.TopicID:
			lp.leaderEpoch = t.LeaderEpoch // the respawn takes the file's epoch
		case ok && !lp.releasing && lp.topicID == t.TopicID:
			lp.leaderEpoch = t.LeaderEpoch
			out = append(out, Take{Gen: lp.gen, Ref: t, Config: cfg})
		case ok && lp.releasing:
			r := t
			lp.retake = &r
		default:
			out = append(out, c.take(t, cfg))
		}
	}
	// Config changes of partitions kept.
	if e.Prev != nil {
		for _, tp := range slices.SortedFunc(maps.Keys(c.parts), compareTP) {
			lp := c.parts[tp]
			if tp.Topic == assignment.OffsetsTopic {
				continue // its config is the internal topic's
			}
			ot, nt := e.Prev.Topics[tp.Topic], e.Next.Topics[tp.Topic]
			if !lp.releasing && !maps.Equal(ot.Config, nt.Config) {
				out = append(out, UpdateConfig{Gen: lp.gen, Config: nt.Config})
			}
		}
	}
	// Only now, with every partition it gave away revoked above, may an
	// exchange that names this file lift the fence.
	out = append(out, SetApplied{Position: assignment.PositionOf(e.Next)})
	c.cfg.Log.Info().Int64("epoch", e.Next.ControllerEpoch).Int64("version", e.Next.AssignmentVersion).
		Int("take", len(e.Changes.Take)).Int("relinquish", len(e.Changes.Relinquish)).Int("led", c.ledCount()).Msg("assignment applied")
	// Report at once that this file is applied: the controller confirms
	// releases only from brokers that have applied the file holding them.
	return append(out, Publish{}, Kick{})
}

// take registers a new partition actor (opening) and asks for its spawn.
func (c *Core) take(t assignment.PartitionRef, cfg map[string]string) Effect {
	c.gens++ // a retired actor of the same partition and epoch may still run
	c.parts[routing.TP{Topic: t.Topic, Partition: t.Partition}] = &corePart{gen: c.gens, topicID: t.TopicID, leaderEpoch: t.LeaderEpoch, opening: true}
	return Spawn{Gen: c.gens, Ref: t, Config: cfg}
}

func (c *Core) released(e Released) []Effect {
	var retake *assignment.PartitionRef
	if lp, ok := c.parts[e.TP]; ok && lp.gen == e.Gen {
		retake = lp.retake
		delete(c.parts, e.TP)
	}
	// The idle actor answers NOT_LEADER_OR_FOLLOWER for a while before
	// it stops: connections that routed to it just before the release
	// get a retriable answer rather than a dead letter.
	out := []Effect{After{D: c.cfg.RetireAfter, Event: RetireDue{Gen: e.Gen}}}
	if retake != nil && c.current != nil {
		if ref, ok := c.leads(e.TP); ok && ref.TopicID == retake.TopicID {
			out = append(out, c.take(ref, configOf(c.current, ref.Topic)), Publish{})
		}
	}
	// Report the release at once: the controller waits for it before
	// giving the partition to its next leader. (One ping for every
	// release already queued: a drain releases hundreds together.)
	return append(out, RefreshPing{Send: true})
}

func (c *Core) ledCount() int {
	n := 0
	for _, lp := range c.parts {
		if !lp.releasing {
			n++
		}
	}
	return n
}

func compareTP(a, b routing.TP) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition - b.Partition)
}

// View is the routing view of the core's state: the assignment in force
// (held partitions with the leader they move from) and the partition
// actors this broker runs, ref naming each generation's actor.
func (c *Core) View(clusterID string, ref func(gen uint64) (actorsys.Ref, bool)) *routing.View {
	a := c.current
	v := &routing.View{
		ClusterID: clusterID,
		Self:      c.cfg.Self.ID,
		Role:      "broker",
		Topics:    map[string]*routing.Topic{},
		TopicIDs:  map[[16]byte]*routing.Topic{},
		Local:     map[routing.TP]actorsys.Ref{},
	}
	if c.Controller() {
		v.Role = "controller"
	}
	if a == nil {
		self := c.cfg.Self
		self.Alive = true
		v.Brokers = []routing.Broker{self}
		v.ControllerID = -1
		v.Coordinator = func(string) (routing.Broker, bool) { return routing.Broker{}, false }
		v.GroupSlots = []int32{}
	} else {
		v.Epoch, v.Version = a.ControllerEpoch, a.AssignmentVersion
		v.ControllerID = -1
		if b, ok := a.BrokerByName(a.Controller); ok {
			v.ControllerID = b.ID
		}
		for _, b := range a.Brokers {
			rb := brokerOf(b)
			rb.Alive, rb.Fenced = b.State != assignment.Dead, b.State != assignment.Alive
			v.Brokers = append(v.Brokers, rb)
		}
		for name, t := range a.Topics {
			id, err := ParseUUID(t.ID)
			if err != nil {
				id = uuidFromString(t.ID)
			}
			rt := &routing.Topic{Name: name, ID: id, Config: t.Config, Partitions: make([]routing.Partition, len(t.Partitions))}
			if len(t.Pins) > 0 {
				rt.Pins = make(map[int32]int32, len(t.Pins))
				for _, pin := range t.Pins {
					rt.Pins[pin.Partition] = pin.Broker
				}
			}
			for i, p := range t.Partitions {
				rt.Partitions[i] = routing.Partition{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch}
				if p.Leader != assignment.NoLeader {
					continue // the common case: no lookup for it on every publish
				}
				if h, ok := c.held[routing.TP{Topic: name, Partition: int32(i)}]; ok && h.topicID == t.ID {
					rt.Partitions[i].HeldFrom = &routing.Partition{Leader: h.leader, LeaderEpoch: h.epoch}
				}
			}
			v.Topics[name] = rt
			v.TopicIDs[id] = rt
		}
		selfID := c.cfg.Self.ID
		current, next := assignment.Coordinators(a)
		v.Coordinator = func(group string) (routing.Broker, bool) {
			b, ok := current(group)
			if !ok {
				return routing.Broker{}, false
			}
			rb := brokerOf(b)
			rb.Alive = true
			return rb, b.ID == selfID
		}
		v.NextCoordinator = func(group string) (routing.Broker, bool) {
			b, ok := next(group)
			if !ok {
				return routing.Broker{}, false
			}
			rb := brokerOf(b)
			rb.Alive = true
			return rb, b.ID == selfID
		}
		v.GroupSlots = assignment.SlotLeaders(a)
		v.GroupSlotEpochs = a.ConsumerGroups.Epochs
	}
	sortBrokers(v.Brokers)
	for tp, lp := range c.parts {
		if r, ok := ref(lp.gen); ok && !lp.releasing {
			v.Local[tp] = r
		}
	}
	return v
}

// Ping fills p with what the heartbeat reports of the core's state: the
// file applied, the groups coordinated and every partition with an actor.
func (c *Core) Ping(p *heartbeatpb.Ping) *heartbeatpb.Ping {
	if c.current != nil {
		p.ControllerEpoch, p.AssignmentVersion = c.current.ControllerEpoch, c.current.AssignmentVersion
	}
	// Transactional ids are placed on the group-coordinator slots too:
	// the controller holds a slot while a broker other than its next
	// owner reports any name of it, group or transactional id.
	p.Groups = c.groups
	if len(c.txnIDs) > 0 {
		p.Groups = append(slices.Clone(c.groups), c.txnIDs...)
	}
	// Every partition with an actor counts, including ones still closing:
	// only a finished close is a release.
	for tp, lp := range c.parts {
		p.Partitions = append(p.Partitions, &heartbeatpb.PartitionLed{Topic: tp.Topic, Partition: tp.Partition, LeaderEpoch: lp.leaderEpoch, Opening: lp.opening})
	}
	return p
}

// leads returns the partition tp as the current file has this broker lead
// it (its topic's id, its leader epoch): a user topic's partition, or a
// slot's partition of __consumer_offsets (assignment.SlotLeaders).
func (c *Core) leads(tp routing.TP) (assignment.PartitionRef, bool) {
	a := c.current
	if a == nil {
		return assignment.PartitionRef{}, false
	}
	p := int(tp.Partition)
	if tp.Topic == assignment.OffsetsTopic {
		leaders := assignment.SlotLeaders(a)
		if len(a.ConsumerGroups.Epochs) != len(leaders) || p < 0 || p >= len(leaders) || leaders[p] != c.cfg.Self.ID {
			return assignment.PartitionRef{}, false
		}
		return assignment.PartitionRef{Topic: tp.Topic, TopicID: assignment.OffsetsTopicID, Partition: tp.Partition, LeaderEpoch: a.ConsumerGroups.Epochs[p]}, true
	}
	t, ok := a.Topics[tp.Topic]
	if !ok || p < 0 || p >= len(t.Partitions) || t.Partitions[p].Leader != c.cfg.Self.ID {
		return assignment.PartitionRef{}, false
	}
	return assignment.PartitionRef{Topic: tp.Topic, TopicID: t.ID, Partition: tp.Partition, LeaderEpoch: t.Partitions[p].LeaderEpoch}, true
}

// configOf is topic's config in a: the internal topic's own
// (routing.InternalTopics) for __consumer_offsets.
func configOf(a *assignment.Assignment, topic string) map[string]string {
	if it, ok := routing.LookupInternal(topic); ok {
		return it.Config
	}
	if a == nil {
		return nil
	}
	return a.Topics[topic].Config
}

// brokerOf is an assignment file's broker row as the view holds it.
func brokerOf(b assignment.Broker) routing.Broker {
	rb := routing.Broker{ID: b.ID, Name: b.Name, Host: b.Host, Port: b.Port, Listeners: b.Listeners}
	if b.Rack != "" {
		rack := b.Rack
		rb.Rack = &rack
	}
	return rb
}
