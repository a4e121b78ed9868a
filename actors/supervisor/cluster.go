package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/cluster"
	"github.com/kaas-project/kaas/actors/controller"
	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// ClusterConfig configures the cluster-mode supervisor.
type ClusterConfig struct {
	ClusterID     string
	Self          routing.Broker // ID, Name, Host, Port
	Incarnation   string         // <pod>_<uid>_<nonce>: the Lease identity
	HeartbeatAddr string         // advertised heartbeat address
	Store         *routing.Store
	Opener        storage.Opener
	Partition     partition.Config
	DataDir       string
	Kube          kubernetes.Interface
	Dyn           dynamic.Interface
	Namespace     string
	LeaseName     string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	DeadAfter     time.Duration
	// StrayGrace: the controller removes a partition directory of a topic it
	// does not know once it has been so for this long (0: never).
	StrayGrace time.Duration
	// ConcurrentMoves bounds its controller's planned moves in motion at
	// once (controller.Config.ConcurrentMoves; <= 0: every move at once).
	ConcurrentMoves int
	// HeartbeatInterval is the ping period.
	HeartbeatInterval time.Duration
	Hub               *controller.Hub
	// Fence is this broker's self-fencing clock (shared with its
	// partition actors through Partition.Fence).
	Fence *cluster.Fence
	// DefaultPartitions applies to CreateTopics with -1 and auto-creation.
	DefaultPartitions int32
	Log               zerolog.Logger
}

type (
	assignmentAccepted struct {
		prev, next *assignment.Assignment
		changes    assignment.Changes
	}
	elected struct {
		ctx   context.Context
		epoch int64
		prev  *assignment.Assignment
	}
	deposed           struct{}
	partitionReleased struct {
		tp  routing.TP
		ref actorsys.Ref
	}
	// partitionOpened: a partition actor's first open has finished.
	partitionOpened struct {
		tp  routing.TP
		ref actorsys.Ref
	}
)

type ledPartition struct {
	ref         actorsys.Ref
	revoked     *atomic.Bool // shared with the actor (partition.Config.Revoked)
	topicID     string
	leaderEpoch int32
	releasing   bool
	// opening: taken here, its open not finished yet. The heartbeat says
	// so, and the controller counts the partition as still moving.
	opening bool
	// retake is a Take that arrived while the partition was still closing
	// here: it is applied once the close is done (one open per process).
	retake *assignment.PartitionRef
}

// Cluster is the cluster-mode supervisor actor: it follows assignment.json,
// takes and relinquishes partitions to match it, campaigns for the Lease and
// runs the controller actor while it holds it.
type Cluster struct {
	cfg      ClusterConfig
	follower *assignment.Follower
	cancel   context.CancelFunc
	current  *assignment.Assignment
	parts    map[routing.TP]*ledPartition
	// held is where each partition current holds leaderless was led from
	// (trackHeld), for Metadata.
	held      map[routing.TP]heldLeader
	ctrl      actorsys.Ref
	ctrlEpoch int64
	isLeader  atomic.Bool
	pingState atomic.Pointer[heartbeatpb.Ping]
	// applied is the newest assignment file applied: set
	// once its releases are under way, read by the heartbeat client.
	applied    atomic.Pointer[assignment.Position]
	draining   atomic.Bool
	topicAdmin *cluster.Topics
	kick       chan struct{}
	stopElect  context.CancelFunc
	groups     []string // consumer groups this broker coordinates (GroupsLed)
	spawned    uint64   // partition actors spawned (unique names)
	elector    atomic.Pointer[leaderelection.LeaderElector]
	pingQueued bool // a refreshPing is in the mailbox
	// pingNow: the queued refreshPing also sends the ping at once.
	pingNow bool
}

// leaseFresh reports whether this broker renewed the Lease within the renew
// deadline (client-go's own observation time, monotonic): no other broker
// can have acquired it since. It gates the PONGs of the local hub.
func (s *Cluster) leaseFresh() bool { return s.renewedWithin(s.cfg.RenewDeadline) }

// renewedWithin reports whether this process holds the Lease and renewed it
// less than d ago (client-go's observation time, on the monotonic clock).
func (s *Cluster) renewedWithin(d time.Duration) bool {
	le := s.elector.Load()
	return le != nil && le.IsLeader() && le.Check(d-s.cfg.LeaseDuration) == nil
}

// refreshPing rebuilds the heartbeat ping (refreshPingSoon).
type refreshPing struct{}

// refreshPingSoon coalesces ping rebuilds (each lists every partition
// held) behind the messages already queued; send: the rebuilt ping goes out
// at once rather than at the next heartbeat.
func (s *Cluster) refreshPingSoon(ctx actor.Context, send bool) {
	s.pingNow = s.pingNow || send
	if s.pingQueued {
		return
	}
	s.pingQueued = true
	ctx.Send(ctx.Self(), &refreshPing{})
}

// retireAfter is how long a released partition actor keeps answering
// NOT_LEADER_OR_FOLLOWER before it stops.
const retireAfter = 5 * time.Second

// GroupsLed reports the consumer groups this broker coordinates (serving or
// closing); they ride every heartbeat so the controller can confirm that a
// group left its old coordinator before naming the next one.
type GroupsLed struct{ Names []string }

// OpenPartitions asks how many partition actors still hold files (leading,
// opening or closing). When none do, the ping is rebuilt and sent at once,
// and reportFrom is the time from which every ping sent reports that: a
// draining broker exits only once the controller has answered one of them,
// or its last releases would wait for dead-after.
type OpenPartitions struct {
	Reply func(n int, reportFrom time.Time)
}

// Drain starts a graceful shutdown (SIGTERM): the draining flag rides the
// next heartbeat (sent at once) so the controller moves everything away,
// and a controller gives up the Lease so another broker can do that.
type Drain struct{}

// NewCluster returns the cluster supervisor's producer.
func NewCluster(cfg ClusterConfig) func() actor.Actor {
	if cfg.DefaultPartitions <= 0 {
		cfg.DefaultPartitions = 1
	}
	return func() actor.Actor {
		return &Cluster{cfg: cfg, parts: map[routing.TP]*ledPartition{}, topicAdmin: &cluster.Topics{Dyn: cfg.Dyn, Namespace: cfg.Namespace},
			kick: make(chan struct{}, 1)}
	}
}

// Receive implements actor.Actor.
func (s *Cluster) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *actor.Stopping:
		if s.cancel != nil {
			s.cancel()
		}
		s.cfg.Hub.SetController(actorsys.Ref{}, 0, nil)
	case *assignmentAccepted:
		s.apply(ctx, m)
	case *elected:
		s.becomeController(ctx, m)
	case *deposed:
		s.stopController()
		s.publish(ctx)
	case *controller.LeaseLost:
		// The controller found, on a fresh read, that the Lease moved on:
		// stop it now rather than wait for client-go to notice.
		if s.ctrl.Valid() && m.Epoch == s.ctrlEpoch {
			s.cfg.Log.Warn().Int64("epoch", m.Epoch).Msg("controller lost the lease; stopping it")
			s.isLeader.Store(false)
			s.stopController()
			s.publish(ctx)
		}
	case *partitionReleased:
		var retake *assignment.PartitionRef
		if lp, ok := s.parts[m.tp]; ok && lp.ref == m.ref {
			retake = lp.retake
			delete(s.parts, m.tp)
		}
		// The idle actor answers NOT_LEADER_OR_FOLLOWER for a while before
		// it stops: connections that routed to it just before the release
		// get a retriable answer rather than a dead letter.
		time.AfterFunc(retireAfter, m.ref.Poison)
		if retake != nil && s.current != nil {
			if t, ok := s.current.Topics[retake.Topic]; ok && t.ID == retake.TopicID && int(retake.Partition) < len(t.Partitions) &&
				t.Partitions[retake.Partition].Leader == s.cfg.Self.ID {
				retake.LeaderEpoch = t.Partitions[retake.Partition].LeaderEpoch
				s.take(ctx, *retake, t.Config)
				s.publish(ctx)
			}
		}
		// Report the release at once: the controller waits for it before
		// giving the partition to its next leader. (One ping for every
		// release already queued: a drain releases hundreds together.)
		s.refreshPingSoon(ctx, true)
	case *partitionOpened:
		if lp, ok := s.parts[m.tp]; ok && lp.ref == m.ref && lp.opening {
			lp.opening = false
			// A controller bounding its moves may wait for opens to finish
			// before it starts more: tell it at once. Every broker of a
			// cluster runs with the same flags; without a bound, nothing
			// waits for this, and it rides the next heartbeat.
			s.refreshPingSoon(ctx, s.cfg.ConcurrentMoves > 0)
		}
	case *refreshPing:
		s.pingQueued = false
		s.updatePing()
		if e := s.cfg.Log.Debug(); e.Enabled() {
			e.Int("listed", len(s.parts)).Bool("send", s.pingNow).Msg("ping rebuilt")
		}
		if s.pingNow {
			s.pingNow = false
			s.kickHeartbeat()
		}
	case *Ping:
		m.Reply()
	case *GroupsLed:
		s.groups = m.Names
		s.updatePing()
		s.kickHeartbeat()
	case *OpenPartitions:
		var from time.Time
		if len(s.parts) == 0 {
			s.updatePing()
			from = time.Now()
			s.kickHeartbeat()
		}
		m.Reply(len(s.parts), from)
	case *Drain:
		if !s.draining.Swap(true) {
			s.cfg.Log.Info().Int("led", len(s.parts)).Bool("controller", s.ctrl.Valid()).Msg("draining")
			s.stopElect()
			s.kickHeartbeat()
		}
	case *messages.CreateTopics:
		s.createTopics(m)
	case *messages.DeleteTopics:
		s.deleteTopics(m)
	case *messages.CreatePartitions:
		s.createPartitions(m)
	case *messages.AlterTopicConfig:
		s.alterConfig(m)
	}
}

func (s *Cluster) start(ctx actor.Context) {
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	self, system := ctx.Self(), ctx.ActorSystem()
	send := func(msg any) { system.Root.Send(self, msg) }
	log := s.cfg.Log
	s.follower = assignment.NewFollower(assignment.FollowerConfig{
		Path:     assignment.Path(s.cfg.DataDir),
		Self:     s.cfg.Self.ID,
		SelfName: s.cfg.Self.Name,
		Logger:   log.With().Str("component", "follower").Logger(),
		OnChange: func(prev, next *assignment.Assignment, d assignment.Changes) {
			send(&assignmentAccepted{prev: prev, next: next, changes: d})
		},
	})
	go s.follower.Run(runCtx)
	go cluster.WatchLeaseEpoch(runCtx, s.cfg.Kube, s.cfg.Namespace, s.cfg.LeaseName, s.cfg.RetryPeriod,
		func(e int64) { s.follower.SetMinEpoch(e) }, log)
	electCtx, stopElect := context.WithCancel(runCtx)
	s.stopElect = stopElect
	go func() {
		err := cluster.RunElection(electCtx, cluster.ElectionConfig{
			Client: s.cfg.Kube, Namespace: s.cfg.Namespace, LeaseName: s.cfg.LeaseName, Identity: s.cfg.Incarnation,
			LeaseDuration: s.cfg.LeaseDuration, RenewDeadline: s.cfg.RenewDeadline, RetryPeriod: s.cfg.RetryPeriod,
			OnElected: func(lctx context.Context, epoch int64) {
				s.isLeader.Store(true)
				s.follower.SetMinEpoch(epoch)
				prev, err := assignment.ReadFile(assignment.Path(s.cfg.DataDir))
				if err != nil {
					log.Warn().Err(err).Msg("no usable assignment on the volume; starting from scratch")
					prev = nil
				}
				send(&elected{ctx: lctx, epoch: epoch, prev: prev})
			},
			OnDeposed: func() {
				s.isLeader.Store(false)
				send(&deposed{})
			},
			OnElector: func(le *leaderelection.LeaderElector) { s.elector.Store(le) },
			Log:       log.With().Str("component", "election").Logger(),
		})
		if err != nil {
			log.Error().Err(err).Msg("election stopped")
		}
	}()
	s.updatePing()
	go cluster.RunHeartbeats(runCtx, cluster.HeartbeatConfig{
		Target: func() string {
			if a := s.follower.Current(); a != nil {
				return a.ControllerHeartbeat
			}
			if s.isLeader.Load() {
				return s.cfg.HeartbeatAddr
			}
			return ""
		},
		Ping: func() *heartbeatpb.Ping {
			p := *s.pingState.Load()
			p.Draining = s.draining.Load()
			return &p
		},
		Interval:   s.cfg.HeartbeatInterval,
		Kick:       s.kick,
		OnExchange: s.cfg.Fence.Exchanged,
		Applied:    s.appliedFile,
		OnPush: func(p *heartbeatpb.Push) {
			if p.Kind == heartbeatpb.Push_ASSIGNMENT_CHANGED {
				s.follower.Nudge()
			}
		},
		Log: log.With().Str("component", "heartbeat").Logger(),
	})
	s.publish(ctx)
}

func (s *Cluster) becomeController(ctx actor.Context, m *elected) {
	s.stopController()
	if m.ctx.Err() != nil {
		return // deposed before this message was handled
	}
	// A broker that lost the Lease and won it back keeps its epoch (client-go
	// counts a transition only when the holder changes), while the old
	// controller may still be stopping: a fresh name each time.
	ccfg := controller.Config{
		Self: s.cfg.Self.Name, SelfHost: s.cfg.Self.Host, SelfPort: s.cfg.Self.Port, HeartbeatAddr: s.cfg.HeartbeatAddr,
		Epoch: m.epoch, DataDir: s.cfg.DataDir, DeadAfter: s.cfg.DeadAfter, Hub: s.cfg.Hub, Tick: s.cfg.HeartbeatInterval,
		ConcurrentMoves: s.cfg.ConcurrentMoves,
		StillLeader:     func() bool { return s.isLeader.Load() && m.ctx.Err() == nil },
		ErrLeaseMovedOn: cluster.ErrNotHolder,
		VerifyLease: func(ctx context.Context) error {
			if m.ctx.Err() != nil {
				return errors.New("leadership ended")
			}
			// This process's own renewal of the Lease (an apiserver write
			// that only the holder can make) within renew-deadline minus
			// retry-period is as good a check as a read: no other broker
			// can have acquired it since. Otherwise (a resumed pause, a
			// slow apiserver) read it.
			if s.renewedWithin(s.cfg.RenewDeadline - s.cfg.RetryPeriod) {
				return nil
			}
			return cluster.VerifyHolder(ctx, s.cfg.Kube, s.cfg.Namespace, s.cfg.LeaseName, s.cfg.Incarnation, m.epoch)
		},
		Log: s.cfg.Log.With().Str("actor", "controller").Int64("epoch", m.epoch).Logger(),
	}
	if lister, ok := s.cfg.Partition.Opener.(interface {
		Partitions() ([]storage.PartitionID, error)
	}); ok && s.cfg.StrayGrace > 0 {
		ccfg.StrayGrace, ccfg.ListPartitions, ccfg.RemovePartition = s.cfg.StrayGrace, lister.Partitions, s.cfg.Partition.Opener.Remove
	}
	ref, err := actorsys.SpawnChildPrefix(ctx, fmt.Sprintf("controller-%d-", m.epoch), controller.New(ccfg, m.prev))
	if err != nil {
		s.cfg.Log.Error().Err(err).Msg("spawn controller")
		return
	}
	s.ctrl, s.ctrlEpoch = ref, m.epoch
	s.cfg.Hub.SetController(ref, m.epoch, s.leaseFresh)
	s.publish(ctx)
	go cluster.WatchTopics(m.ctx, s.cfg.Dyn, s.cfg.Namespace, func(ts map[string]balancer.TopicSpec) {
		ref.Send(&controller.TopicsChanged{Topics: ts})
	}, s.cfg.Log.With().Str("component", "topic-watch").Logger())
}

func (s *Cluster) stopController() {
	if !s.ctrl.Valid() {
		return
	}
	s.cfg.Hub.SetController(actorsys.Ref{}, 0, nil)
	s.ctrl.Stop()
	s.ctrl = actorsys.Ref{}
}

// apply makes this broker serve exactly what the accepted assignment says.
func (s *Cluster) apply(ctx actor.Context, m *assignmentAccepted) {
	s.current = m.next
	s.held = trackHeld(m.prev, m.next, s.held)
	for _, r := range m.changes.Relinquish {
		tp := routing.TP{Topic: r.Topic, Partition: r.Partition}
		lp, ok := s.parts[tp]
		if !ok || lp.releasing {
			continue
		}
		lp.releasing = true
		lp.revoked.Store(true)
		nt, still := m.next.Topics[r.Topic]
		del := !still || nt.ID != r.TopicID
		ref, self, system := lp.ref, ctx.Self(), ctx.ActorSystem()
		ref.Send(&messages.RelinquishLeadership{Delete: del, Done: func(error) {
			system.Root.Send(self, &partitionReleased{tp: tp, ref: ref})
		}})
	}
	for _, t := range append(m.changes.Take, m.changes.EpochChanged...) {
		tp := routing.TP{Topic: t.Topic, Partition: t.Partition}
		cfg := m.next.Topics[t.Topic].Config
		lp, ok := s.parts[tp]
		switch {
		case ok && !lp.releasing && lp.topicID == t.TopicID:
			lp.leaderEpoch = t.LeaderEpoch
			lp.ref.Send(&messages.TakeLeadership{TopicID: t.TopicID, LeaderEpoch: t.LeaderEpoch, Config: cfg})
		case ok && lp.releasing:
			r := t
			lp.retake = &r
		default:
			s.take(ctx, t, cfg)
		}
	}
	// Config changes of partitions kept.
	if m.prev != nil {
		for tp, lp := range s.parts {
			ot, nt := m.prev.Topics[tp.Topic], m.next.Topics[tp.Topic]
			if !lp.releasing && !maps.Equal(ot.Config, nt.Config) {
				lp.ref.Send(&messages.UpdateConfig{Config: nt.Config})
			}
		}
	}
	// Only now, with every partition it gave away revoked above, may an
	// exchange that names this file lift the fence.
	applied := assignment.PositionOf(m.next)
	s.applied.Store(&applied)
	s.cfg.Log.Info().Int64("epoch", m.next.ControllerEpoch).Int64("version", m.next.AssignmentVersion).
		Int("take", len(m.changes.Take)).Int("relinquish", len(m.changes.Relinquish)).Int("led", s.ledCount()).Msg("assignment applied")
	s.publish(ctx)
	// Report at once that this file is applied: the controller confirms
	// releases only from brokers that have applied the file holding them.
	s.kickHeartbeat()
}

// take spawns a partition actor and tells it to lead.
func (s *Cluster) take(ctx actor.Context, t assignment.PartitionRef, cfg map[string]string) {
	tp := routing.TP{Topic: t.Topic, Partition: t.Partition}
	pid := storage.PartitionID{Topic: t.Topic, TopicID: t.TopicID, Partition: t.Partition}
	s.spawned++ // a retired actor of the same partition and epoch may still run
	name := fmt.Sprintf("partition/%s/%s/%d/%d/%d", t.Topic, t.TopicID, t.Partition, t.LeaderEpoch, s.spawned)
	pcfg := s.cfg.Partition
	pcfg.Revoked = &atomic.Bool{}
	ref, err := actorsys.SpawnChildOn(ctx, name, partition.New(pid, pcfg), actorsys.PartitionPool())
	if err != nil {
		s.cfg.Log.Error().Err(err).Str("topic", t.Topic).Int32("partition", t.Partition).Msg("spawn partition actor")
		return
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	ref.Send(&messages.TakeLeadership{TopicID: t.TopicID, LeaderEpoch: t.LeaderEpoch, Config: cfg, Opened: func(error) {
		system.Root.Send(self, &partitionOpened{tp: tp, ref: ref})
	}})
	s.parts[tp] = &ledPartition{ref: ref, revoked: pcfg.Revoked, topicID: t.TopicID, leaderEpoch: t.LeaderEpoch, opening: true}
}

func (s *Cluster) ledCount() int {
	n := 0
	for _, lp := range s.parts {
		if !lp.releasing {
			n++
		}
	}
	return n
}

// publish builds the routing view from the assignment in force and the
// partition actors this broker runs.
func (s *Cluster) publish(ctx actor.Context) {
	a := s.current
	v := &routing.View{
		ClusterID: s.cfg.ClusterID,
		Self:      s.cfg.Self.ID,
		Role:      "broker",
		Topics:    map[string]*routing.Topic{},
		TopicIDs:  map[[16]byte]*routing.Topic{},
		Local:     map[routing.TP]actorsys.Ref{},
	}
	if s.ctrl.Valid() {
		v.Role = "controller"
	}
	if a == nil {
		self := s.cfg.Self
		self.Alive = true
		v.Brokers = []routing.Broker{self}
		v.ControllerID = -1
		v.Coordinator = func(string) (routing.Broker, bool) { return routing.Broker{}, false }
	} else {
		v.Epoch, v.Version = a.ControllerEpoch, a.AssignmentVersion
		v.ControllerID = -1
		if c, ok := a.BrokerByName(a.Controller); ok {
			v.ControllerID = c.ID
		}
		for _, b := range a.Brokers {
			v.Brokers = append(v.Brokers, routing.Broker{ID: b.ID, Name: b.Name, Host: b.Host, Port: b.Port,
				Alive: b.State != assignment.Dead, Fenced: b.State != assignment.Alive})
		}
		for name, t := range a.Topics {
			id, err := ParseUUID(t.ID)
			if err != nil {
				id = uuidFromString(t.ID)
			}
			rt := &routing.Topic{Name: name, ID: id, Config: t.Config, Partitions: make([]routing.Partition, len(t.Partitions))}
			for i, p := range t.Partitions {
				rt.Partitions[i] = routing.Partition{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch}
				if p.Leader != assignment.NoLeader {
					continue // the common case: no lookup for it on every publish
				}
				if h, ok := s.held[routing.TP{Topic: name, Partition: int32(i)}]; ok && h.topicID == t.ID {
					rt.Partitions[i].HeldFrom = &routing.Partition{Leader: h.leader, LeaderEpoch: h.epoch}
				}
			}
			v.Topics[name] = rt
			v.TopicIDs[id] = rt
		}
		selfID := s.cfg.Self.ID
		v.Coordinator = func(group string) (routing.Broker, bool) {
			b, ok := assignment.CoordinatorFor(group, a)
			if !ok {
				return routing.Broker{}, false
			}
			return routing.Broker{ID: b.ID, Name: b.Name, Host: b.Host, Port: b.Port, Alive: true}, b.ID == selfID
		}
	}
	sortBrokers(v.Brokers)
	for tp, lp := range s.parts {
		if !lp.releasing {
			v.Local[tp] = lp.ref
		}
	}
	s.cfg.Store.Publish(v)
	s.updatePing()
}

func (s *Cluster) updatePing() {
	p := &heartbeatpb.Ping{
		BrokerId: s.cfg.Self.ID, Name: s.cfg.Self.Name, Incarnation: s.cfg.Incarnation,
		KafkaHost: s.cfg.Self.Host, KafkaPort: s.cfg.Self.Port, HeartbeatAddr: s.cfg.HeartbeatAddr, Healthy: true,
	}
	if s.current != nil {
		p.ControllerEpoch, p.AssignmentVersion = s.current.ControllerEpoch, s.current.AssignmentVersion
	}
	p.Groups = s.groups
	// Every partition with an actor counts, including ones still closing:
	// only a finished close is a release.
	for tp, lp := range s.parts {
		p.Partitions = append(p.Partitions, &heartbeatpb.PartitionLed{Topic: tp.Topic, Partition: tp.Partition, LeaderEpoch: lp.leaderEpoch, Opening: lp.opening})
	}
	s.pingState.Store(p)
}

// appliedFile returns the newest assignment file applied (zero: none).
func (s *Cluster) appliedFile() assignment.Position {
	if p := s.applied.Load(); p != nil {
		return *p
	}
	return assignment.Position{}
}

// kickHeartbeat asks the heartbeat client to send a ping now.
func (s *Cluster) kickHeartbeat() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// --- topic administration through KafkaTopic objects ---------------------

const adminTimeout = 15 * time.Second

// waitForTopics waits until the published view satisfies ok (the controller
// has put the change into assignment.json and this broker accepted it), so a
// client that creates a topic can produce to it right away.
func (s *Cluster) waitForTopics(ok func(v *routing.View) bool) {
	deadline := time.Now().Add(adminTimeout)
	for time.Now().Before(deadline) {
		if v := s.cfg.Store.Load(); v != nil && ok(v) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Cluster) createTopics(m *messages.CreateTopics) {
	specs := append([]messages.TopicSpec(nil), m.Topics...)
	existing := s.cfg.Store.Load()
	defaults := s.cfg.DefaultPartitions
	go func() {
		results := make([]messages.TopicResult, len(specs))
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		var created []string
		for i, spec := range specs {
			r := &results[i]
			r.Name = spec.Name
			if code, msg := validateSpec(spec, existing); code != 0 {
				r.ErrorCode, r.ErrorMessage = code, msg
				continue
			}
			n := spec.Partitions
			if n == -1 {
				n = defaults
			}
			r.Partitions, r.Config = n, spec.Config
			if m.ValidateOnly {
				continue
			}
			uid, err := s.topicAdmin.Create(ctx, spec.Name, n, spec.Config)
			switch {
			case errors.Is(err, cluster.ErrTopicExists):
				r.ErrorCode = kerr.TopicAlreadyExists.Code
			case err != nil:
				r.ErrorCode, r.ErrorMessage = kerr.UnknownServerError.Code, err.Error()
			default:
				if id, perr := ParseUUID(uid); perr == nil {
					r.ID = id
				}
				created = append(created, spec.Name)
			}
		}
		s.waitForTopics(func(v *routing.View) bool {
			for _, n := range created {
				if _, ok := v.Topics[n]; !ok {
					return false
				}
			}
			return true
		})
		m.Reply(results)
	}()
}

func validateSpec(spec messages.TopicSpec, v *routing.View) (int16, string) {
	exists := false
	if v != nil {
		_, exists = v.Topics[spec.Name]
	}
	return specError(spec, exists, balancer.MaxPartitionsPerTopic)
}

func (s *Cluster) deleteTopics(m *messages.DeleteTopics) {
	v := s.cfg.Store.Load()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		n := max(len(m.Names), len(m.IDs))
		results := make([]messages.TopicResult, n)
		var deleted []string
		for i := 0; i < n; i++ {
			r := &results[i]
			if i < len(m.Names) {
				r.Name = m.Names[i]
			}
			if i < len(m.IDs) && m.IDs[i] != ([16]byte{}) {
				r.ID = m.IDs[i]
				t, ok := v.TopicIDs[r.ID]
				if !ok {
					r.ErrorCode = kerr.UnknownTopicID.Code
					continue
				}
				r.Name = t.Name
			}
			err := s.topicAdmin.Delete(ctx, r.Name)
			switch {
			case errors.Is(err, cluster.ErrTopicNotFound):
				r.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case err != nil:
				r.ErrorCode, r.ErrorMessage = kerr.UnknownServerError.Code, err.Error()
			default:
				if t, ok := v.Topics[r.Name]; ok {
					r.ID = t.ID
				}
				deleted = append(deleted, r.Name)
			}
		}
		s.waitForTopics(func(v *routing.View) bool {
			for _, n := range deleted {
				if _, ok := v.Topics[n]; ok {
					return false
				}
			}
			return true
		})
		m.Reply(results)
	}()
}

func (s *Cluster) createPartitions(m *messages.CreatePartitions) {
	v := s.cfg.Store.Load()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		results := make([]messages.TopicResult, len(m.Topics))
		grown := map[string]int32{}
		for i, pc := range m.Topics {
			r := &results[i]
			r.Name = pc.Topic
			t, ok := v.Topics[pc.Topic]
			current := int32(0)
			if ok {
				current = int32(len(t.Partitions))
			}
			r.ErrorCode, r.ErrorMessage = growError(pc, ok, current, balancer.MaxPartitionsPerTopic)
			switch {
			case r.ErrorCode != 0:
			case m.ValidateOnly:
			default:
				if err := s.topicAdmin.Patch(ctx, pc.Topic, pc.Count, nil, false); err != nil {
					r.ErrorCode, r.ErrorMessage = kerr.UnknownServerError.Code, err.Error()
					continue
				}
				grown[pc.Topic] = pc.Count
			}
		}
		s.waitForTopics(func(v *routing.View) bool {
			for n, c := range grown {
				if t, ok := v.Topics[n]; !ok || int32(len(t.Partitions)) < c {
					return false
				}
			}
			return true
		})
		m.Reply(results)
	}()
}

func (s *Cluster) alterConfig(m *messages.AlterTopicConfig) {
	if err := topicconfig.Validate(m.Config); err != nil {
		m.Reply(messages.TopicResult{Name: m.Topic, ErrorCode: kerr.InvalidConfig.Code, ErrorMessage: err.Error()})
		return
	}
	if m.ValidateOnly {
		m.Reply(messages.TopicResult{Name: m.Topic})
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		err := s.topicAdmin.Patch(ctx, m.Topic, 0, m.Config, true)
		switch {
		case errors.Is(err, cluster.ErrTopicNotFound):
			m.Reply(messages.TopicResult{Name: m.Topic, ErrorCode: kerr.UnknownTopicOrPartition.Code})
			return
		case err != nil:
			m.Reply(messages.TopicResult{Name: m.Topic, ErrorCode: kerr.UnknownServerError.Code, ErrorMessage: err.Error()})
			return
		}
		s.waitForTopics(func(v *routing.View) bool {
			t, ok := v.Topics[m.Topic]
			return ok && maps.Equal(t.Config, m.Config)
		})
		m.Reply(messages.TopicResult{Name: m.Topic})
	}()
}
