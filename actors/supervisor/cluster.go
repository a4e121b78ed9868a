package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/cluster"
	"github.com/kaas-project/kaas/actors/controller"
	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/topicname"
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
	// HeartbeatDial are extra dial options of the heartbeat client
	// (transport credentials: mTLS between brokers).
	HeartbeatDial []grpc.DialOption
	Hub           *controller.Hub
	// Fence is this broker's self-fencing clock (shared with its
	// partition actors through Partition.Fence).
	Fence *cluster.Fence
	// DefaultPartitions applies to CreateTopics with -1 and auto-creation.
	DefaultPartitions int32
	// TopicDefaults returns the broker defaults of topic configs in force
	// (dynamic broker configs), put under every topic config a partition
	// is given; nil: none.
	TopicDefaults func() map[string]string
	// Cordoned reports whether this broker's log dir is cordoned
	// (cordoned.log.dirs, KIP-1066); every ping carries it to the
	// controller. nil: never.
	Cordoned func() bool
	// CordonedBroker reports the same of the broker with an id, from the
	// dynamic broker configs on the shared volume: a controller this
	// broker starts knows the cordons in force before their brokers ping
	// it. nil: none known.
	CordonedBroker func(id int32) bool
	// Clock runs the supervisor's timers (nil: the wall clock).
	Clock clock.Clock
	// Fatal ends the process: a child it cannot run without keeps dying
	// (GiveUp). nil: the supervisor stops instead.
	Fatal func(reason string)
	Log   zerolog.Logger
}

type (
	assignmentAccepted struct {
		prev, next *assignment.Assignment
		changes    assignment.Changes
	}
	elected struct {
		ctx          context.Context
		epoch        int64
		prev         *assignment.Assignment
		prevReleased bool
	}
	deposed struct{}
	// coreEvent is an event for the core from a callback or timer.
	coreEvent struct{ ev Event }
)

// partActor is a partition actor the shell runs for a core generation.
type partActor struct {
	ref     actorsys.Ref
	tp      routing.TP
	revoked *atomic.Bool // shared with the actor (partition.Config.Revoked)
}

// Cluster is the cluster-mode supervisor actor: it follows assignment.json,
// takes and relinquishes partitions to match it, campaigns for the Lease and
// runs the controller actor while it holds it.
type Cluster struct {
	cfg      ClusterConfig
	core     *Core
	clock    clock.Clock
	follower *assignment.Follower
	cancel   context.CancelFunc
	// refs are the partition actors by core generation, until retired.
	refs map[uint64]partActor
	ctrl actorsys.Ref
	// leaseCtx ends when the Lease the running controller serves is lost.
	leaseCtx  context.Context
	isLeader  atomic.Bool
	pingState atomic.Pointer[heartbeatpb.Ping]
	// applied is the newest assignment file applied: set
	// once its releases are under way, read by the heartbeat client.
	applied    atomic.Pointer[assignment.Position]
	draining   atomic.Bool
	topicAdmin *cluster.Topics
	kick       chan struct{}
	stopElect  context.CancelFunc
	// electDone is closed when the election has stopped and released a
	// Lease this process held.
	electDone  chan struct{}
	elector    atomic.Pointer[leaderelection.LeaderElector]
	pingQueued bool // a refreshPing is in the mailbox
	// pingNow: the queued refreshPing also sends the ping at once.
	pingNow bool
	// failed holds the panics of children not yet Terminated, by actor id.
	failed map[string]any
	// stopping: the supervisor itself stops; its children's deaths are
	// not healed.
	stopping bool
	// ctrlRunning is the core's sequence number of the controller s.ctrl.
	ctrlRunning uint64
	// pushed and traceCtx carry the controller's trace to the partition
	// moves of an apply (tracing on; traceCtx is nil outside one).
	pushed   pushedTraces
	traceCtx context.Context
	// backing dates the exchanges of this broker with its own hub by its
	// Lease renewals (cluster.LeaseBacking).
	backing cluster.LeaseBacking
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

// TxnIDsLed reports the transactional ids this broker's transaction
// coordinator holds; they ride the heartbeat with the groups (same slots,
// same held-slot rules).
type TxnIDsLed struct{ Names []string }

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
		return &Cluster{cfg: cfg, clock: clock.OrReal(cfg.Clock), refs: map[uint64]partActor{}, failed: map[string]any{},
			core:       NewCore(CoreConfig{Self: cfg.Self, ConcurrentMoves: cfg.ConcurrentMoves, RetireAfter: retireAfter, Log: cfg.Log}),
			topicAdmin: &cluster.Topics{Dyn: cfg.Dyn, Namespace: cfg.Namespace},
			kick:       make(chan struct{}, 1)}
	}
}

// Receive implements actor.Actor.
func (s *Cluster) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		s.start(ctx)
	case *actor.Terminated:
		s.terminated(ctx, m.Who)
	case *actor.Stopping:
		s.stopping = true
		if s.cancel != nil {
			s.cancel()
		}
		s.cfg.Hub.SetController(actorsys.Ref{}, 0, nil)
	case *assignmentAccepted:
		var span trace.Span
		s.traceCtx, span = startApply(&s.pushed, m.next, s.cfg.Self.ID, len(m.changes.Take)+len(m.changes.Relinquish))
		s.step(ctx, Applied{Prev: m.prev, Next: m.next, Changes: m.changes})
		s.traceCtx = nil
		span.End()
	case *elected:
		s.leaseCtx = m.ctx
		s.step(ctx, Elected{Epoch: m.epoch, Prev: m.prev, PrevReleased: m.prevReleased, Ended: m.ctx.Err() != nil})
	case *deposed:
		s.step(ctx, Deposed{})
	case *controller.LeaseLost:
		s.step(ctx, ControllerLostLease{Epoch: m.Epoch})
	case *coreEvent:
		s.step(ctx, m.ev)
	case *refreshPing:
		s.pingQueued = false
		s.updatePing()
		if e := s.cfg.Log.Debug(); e.Enabled() {
			e.Int("listed", len(s.core.parts)).Bool("send", s.pingNow).Msg("ping rebuilt")
		}
		if s.pingNow {
			s.pingNow = false
			s.kickHeartbeat()
		}
	case *Ping:
		m.Reply()
	case *GroupsLed:
		s.step(ctx, GroupsReported{Names: m.Names})
	case *TxnIDsLed:
		s.step(ctx, TxnIDsReported{Names: m.Names})
	case *OpenPartitions:
		var from time.Time
		if len(s.core.parts) == 0 {
			s.updatePing()
			from = s.clock.Now()
			s.kickHeartbeat()
		}
		m.Reply(len(s.core.parts), from)
	case *Drain:
		if !s.draining.Swap(true) {
			s.cfg.Log.Info().Int("led", len(s.core.parts)).Bool("controller", s.ctrl.Valid()).Msg("draining")
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
	case *messages.SetPins:
		s.setPins(m)
	case *messages.UnregisterBroker:
		s.unregisterBroker(m)
	case *messages.DescribeQuorum:
		s.describeQuorum(m)
	case *messages.BrokerDefaultsChanged:
		s.step(ctx, DefaultsChanged{})
	}
}

// setPins writes a reassignment into the topic's KafkaTopic (spec.pins);
// the controller then moves the partitions two-phase like any planned move.
// It answers once the KafkaTopic is written, as Kafka answers once the
// reassignment is recorded, not when it completes.
func (s *Cluster) setPins(m *messages.SetPins) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		err := s.topicAdmin.SetPins(ctx, m.Topic, m.Pins)
		switch {
		case errors.Is(err, cluster.ErrTopicNotFound):
			m.Reply(messages.TopicResult{Name: m.Topic, ErrorCode: kerr.UnknownTopicOrPartition.Code})
		case err != nil:
			code, msg := adminError(ctx, err)
			m.Reply(messages.TopicResult{Name: m.Topic, ErrorCode: code, ErrorMessage: msg})
		default:
			m.Reply(messages.TopicResult{Name: m.Topic})
		}
	}()
}

// unregisterBroker forwards an UnregisterBroker to the controller over its
// heartbeat address, as a Kafka broker forwards it to the active
// controller, asking again while the controller changes hands.
func (s *Cluster) unregisterBroker(m *messages.UnregisterBroker) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		m.Reply(cluster.Unregister(ctx, s.clock, s.controllerHeartbeat, s.cfg.HeartbeatDial, m.ID))
	}()
}

// describeQuorum asks the controller for its view of the brokers'
// progress through the assignment files.
func (s *Cluster) describeQuorum(m *messages.DescribeQuorum) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		resp, code, msg := cluster.DescribeQuorum(ctx, s.clock, s.controllerHeartbeat, s.cfg.HeartbeatDial)
		if code != 0 {
			m.Reply(messages.Quorum{}, code, msg)
			return
		}
		q := messages.Quorum{ControllerID: resp.ControllerId, Epoch: resp.ControllerEpoch, Version: resp.AssignmentVersion}
		for _, b := range resp.Members {
			q.Members = append(q.Members, messages.QuorumMember{ID: b.BrokerId, Host: b.KafkaHost, Port: b.KafkaPort,
				Applied: b.AppliedVersion, LastPing: b.LastPingMs, CaughtUp: b.CaughtUpMs})
		}
		m.Reply(q, 0, "")
	}()
}

// controllerHeartbeat is the controller's heartbeat address as the newest
// assignment names it ("" before the first).
func (s *Cluster) controllerHeartbeat() string {
	if a := s.follower.Current(); a != nil {
		return a.ControllerHeartbeat
	}
	return ""
}

// step feeds one event to the core and executes its effects in order.
func (s *Cluster) step(ctx actor.Context, ev Event) {
	self, system := ctx.Self(), ctx.ActorSystem()
	send := func(ev Event) { system.Root.Send(self, &coreEvent{ev: ev}) }
	for _, e := range s.core.Step(ev, s.clock.Now()) {
		switch e := e.(type) {
		case Spawn:
			s.spawnPartition(ctx, e, send)
		case Take:
			s.refs[e.Gen].ref.Send(tracing.Wrap(s.traceCtx, &messages.TakeLeadership{TopicID: e.Ref.TopicID, LeaderEpoch: e.Ref.LeaderEpoch, Config: withDefaults(s.cfg.TopicDefaults, e.Config)}))
		case Relinquish:
			pa := s.refs[e.Gen]
			if pa.revoked != nil {
				pa.revoked.Store(true)
			}
			tp, gen := e.TP, e.Gen
			pa.ref.Send(tracing.Wrap(s.traceCtx, &messages.RelinquishLeadership{Delete: e.Delete, Done: func(error) { send(Released{TP: tp, Gen: gen}) }}))
		case UpdateConfig:
			s.refs[e.Gen].ref.Send(&messages.UpdateConfig{Config: withDefaults(s.cfg.TopicDefaults, e.Config)})
		case After:
			s.clock.AfterFunc(e.D, func() { send(e.Event) })
		case Poison:
			if pa, ok := s.refs[e.Gen]; ok {
				delete(s.refs, e.Gen)
				pa.ref.Poison()
			}
		case SetApplied:
			applied := e.Position
			s.applied.Store(&applied)
		case Publish:
			s.publish()
		case RefreshPing:
			s.refreshPingSoon(ctx, e.Send)
		case UpdatePing:
			s.updatePing()
		case Kick:
			s.kickHeartbeat()
		case StartController:
			s.startController(ctx, e)
		case StopController:
			s.cfg.Hub.SetController(actorsys.Ref{}, 0, nil)
			s.ctrl.Stop()
			s.ctrl = actorsys.Ref{}
		case ClearLeader:
			s.isLeader.Store(false)
		default:
			s.execHeal(e, send)
		}
	}
}

// spawnPartition starts a partition actor and tells it to lead.
func (s *Cluster) spawnPartition(ctx actor.Context, e Spawn, send func(Event)) {
	t := e.Ref
	tp := routing.TP{Topic: t.Topic, Partition: t.Partition}
	pid := storage.PartitionID{Topic: t.Topic, TopicID: t.TopicID, Partition: t.Partition}
	name := fmt.Sprintf("partition/%s/%s/%d/%d/%d", t.Topic, t.TopicID, t.Partition, t.LeaderEpoch, e.Gen)
	pcfg := s.cfg.Partition
	pcfg.Revoked = &atomic.Bool{}
	ref, err := actorsys.SpawnChildOn(ctx, name, partition.New(pid, pcfg), actorsys.PartitionPool())
	if err != nil {
		s.cfg.Log.Error().Err(err).Str("topic", t.Topic).Int32("partition", t.Partition).Msg("spawn partition actor")
		s.core.Step(SpawnFailed{TP: tp, Gen: e.Gen}, s.clock.Now())
		return
	}
	s.refs[e.Gen] = partActor{ref: ref, tp: tp, revoked: pcfg.Revoked}
	gen := e.Gen
	ref.Send(tracing.Wrap(s.traceCtx, &messages.TakeLeadership{TopicID: t.TopicID, LeaderEpoch: t.LeaderEpoch, Config: withDefaults(s.cfg.TopicDefaults, e.Config), Opened: func(error) {
		send(Opened{TP: tp, Gen: gen})
	}}))
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
	electDone := make(chan struct{})
	s.electDone = electDone
	go func() {
		defer close(electDone)
		err := cluster.RunElection(electCtx, cluster.ElectionConfig{
			Client: s.cfg.Kube, Namespace: s.cfg.Namespace, LeaseName: s.cfg.LeaseName, Identity: s.cfg.Incarnation,
			LeaseDuration: s.cfg.LeaseDuration, RenewDeadline: s.cfg.RenewDeadline, RetryPeriod: s.cfg.RetryPeriod,
			OnElected: func(lctx context.Context, el cluster.Election) {
				s.isLeader.Store(true)
				s.follower.SetMinEpoch(el.Epoch)
				prev, err := assignment.ReadFile(assignment.Path(s.cfg.DataDir))
				if err != nil {
					log.Warn().Err(err).Msg("no usable assignment on the volume; starting from scratch")
					prev = nil
				}
				if prev != nil && prev.ControllerEpoch > el.Epoch {
					// Only a Lease made again (a namespace restored from
					// a backup) is behind the volume: every broker that
					// read the file ignores this controller's.
					log.Error().Int64("epoch", el.Epoch).Int64("file_epoch", prev.ControllerEpoch).
						Msg("assignment.json on the volume is from a later controller epoch than the Lease's: brokers ignore this controller's files until the Lease's leaseTransitions is above it (kaas restore sets it)")
				}
				released := prev != nil && el.Released && el.ReleasedAt == prev.ControllerEpoch
				send(&elected{ctx: lctx, epoch: el.Epoch, prev: prev, prevReleased: released})
			},
			OnDeposed: func() {
				s.isLeader.Store(false)
				send(&deposed{})
			},
			OnElector: func(le *leaderelection.LeaderElector) { s.elector.Store(le) },
			OnRenewed: s.backing.Renewed,
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
			if s.cfg.Cordoned != nil {
				p.Cordoned = s.cfg.Cordoned()
			}
			return &p
		},
		Interval: s.cfg.HeartbeatInterval,
		Dial:     s.cfg.HeartbeatDial,
		Kick:     s.kick,
		OnExchange: func(sentAt time.Time, pong *heartbeatpb.Push) {
			if at, ok := s.backing.Date(sentAt, pong.ControllerEpoch); ok {
				s.cfg.Fence.Exchanged(at)
			}
		},
		Applied: s.appliedFile,
		OnPush: func(p *heartbeatpb.Push) {
			if p.Kind == heartbeatpb.Push_ASSIGNMENT_CHANGED {
				s.pushed.note(p)
				s.follower.Nudge()
			}
		},
		Log: log.With().Str("component", "heartbeat").Logger(),
	})
	s.publish()
}

// cordonedBrokers names the brokers of prev, and this one, that the
// dynamic broker configs cordon now.
func (s *Cluster) cordonedBrokers(prev *assignment.Assignment) map[string]bool {
	out := map[string]bool{}
	if s.cfg.Cordoned != nil && s.cfg.Cordoned() {
		out[s.cfg.Self.Name] = true
	}
	if s.cfg.CordonedBroker == nil || prev == nil {
		return out
	}
	for _, b := range prev.Brokers {
		if s.cfg.CordonedBroker(b.ID) {
			out[b.Name] = true
		}
	}
	return out
}

func (s *Cluster) startController(ctx actor.Context, e StartController) {
	lctx := s.leaseCtx
	// A broker that lost the Lease and won it back keeps its epoch (client-go
	// counts a transition only when the holder changes), while the old
	// controller may still be stopping: a fresh name each time.
	ccfg := controller.Config{
		Self: s.cfg.Self.Name, SelfHost: s.cfg.Self.Host, SelfPort: s.cfg.Self.Port, SelfRack: rackOf(s.cfg.Self), SelfListeners: s.cfg.Self.Listeners, HeartbeatAddr: s.cfg.HeartbeatAddr,
		Epoch: e.Epoch, DataDir: s.cfg.DataDir, DeadAfter: s.cfg.DeadAfter, Hub: s.cfg.Hub, Tick: s.cfg.HeartbeatInterval,
		ConcurrentMoves: s.cfg.ConcurrentMoves,
		Cordoned:        s.cordonedBrokers(e.Prev),
		PrevReleased:    e.PrevReleased,
		StillLeader:     func() bool { return s.isLeader.Load() && lctx.Err() == nil },
		ErrLeaseMovedOn: cluster.ErrNotHolder,
		VerifyLease: func(ctx context.Context) error {
			if lctx.Err() != nil {
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
			return cluster.VerifyHolder(ctx, s.cfg.Kube, s.cfg.Namespace, s.cfg.LeaseName, s.cfg.Incarnation, e.Epoch)
		},
		Log: s.cfg.Log.With().Str("actor", "controller").Int64("epoch", e.Epoch).Logger(),
	}
	if lister, ok := s.cfg.Partition.Opener.(interface {
		Partitions() ([]storage.PartitionID, error)
	}); ok && s.cfg.StrayGrace > 0 {
		ccfg.StrayGrace, ccfg.ListPartitions, ccfg.RemovePartition = s.cfg.StrayGrace, lister.Partitions, s.cfg.Partition.Opener.Remove
	}
	ref, err := actorsys.SpawnChildPrefix(ctx, fmt.Sprintf("controller-%d-", e.Epoch), controller.New(ccfg, e.Prev))
	if err != nil {
		s.cfg.Log.Error().Err(err).Msg("spawn controller")
		s.core.Step(ControllerFailed{Seq: e.Seq}, s.clock.Now())
		return
	}
	s.ctrl, s.ctrlRunning = ref, e.Seq
	s.backing.Leading(e.Epoch)
	s.cfg.Hub.SetController(ref, e.Epoch, s.leaseFresh)
	go cluster.WatchTopics(lctx, s.cfg.Dyn, s.cfg.Namespace, func(ts map[string]balancer.TopicSpec) {
		ref.Send(&controller.TopicsChanged{Topics: ts})
	}, s.cfg.Log.With().Str("component", "topic-watch").Logger())
	if sts := cluster.StatefulSetOf(s.cfg.Self.Name); sts != "" && s.cfg.Kube != nil {
		go cluster.WatchReplicas(lctx, s.cfg.Kube, s.clock, s.cfg.Namespace, sts, replicasPeriod, func(n int32, known bool) {
			ref.Send(controller.ReplicasChanged{Replicas: n, Known: known})
		}, s.cfg.Log.With().Str("component", "replicas-watch").Logger())
	}
}

// replicasPeriod is how often the controller reads its StatefulSet's
// replicas (a scale-down's brokers are unregistered once dead).
const replicasPeriod = 5 * time.Second

// publish publishes the routing view of the core's state.
func (s *Cluster) publish() {
	s.cfg.Store.Publish(s.core.View(s.cfg.ClusterID, func(gen uint64) (actorsys.Ref, bool) {
		pa, ok := s.refs[gen]
		return pa.ref, ok
	}))
	s.updatePing()
}

func (s *Cluster) updatePing() {
	s.pingState.Store(s.core.Ping(&heartbeatpb.Ping{
		BrokerId: s.cfg.Self.ID, Name: s.cfg.Self.Name, Incarnation: s.cfg.Incarnation,
		KafkaHost: s.cfg.Self.Host, KafkaPort: s.cfg.Self.Port, KafkaRack: rackOf(s.cfg.Self), KafkaListeners: s.cfg.Self.Listeners, HeartbeatAddr: s.cfg.HeartbeatAddr, Healthy: true,
	}))
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
// It returns the last view it saw (nil if none yet), and false when the
// admin timeout passed first.
func (s *Cluster) waitForTopics(ok func(v *routing.View) bool) (*routing.View, bool) {
	deadline := time.Now().Add(adminTimeout)
	var v *routing.View
	for time.Now().Before(deadline) {
		if v = s.cfg.Store.Load(); v != nil && ok(v) {
			return v, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return v, false
}

// adminError is the Kafka error for a failed KafkaTopic write:
// REQUEST_TIMED_OUT when the admin timeout ran out (the apiserver was slow,
// or client-go's rate limiter would have waited past it; the write may
// still have happened, as with Kafka's own timed-out creations), else
// UNKNOWN_SERVER_ERROR. The rate limiter's refusal wraps no context error,
// hence the message check.
func adminError(ctx context.Context, err error) (int16, string) {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "would exceed context deadline") {
		return kerr.RequestTimedOut.Code, fmt.Sprintf("the Kubernetes API did not answer within %s: %v", adminTimeout, err)
	}
	return kerr.UnknownServerError.Code, err.Error()
}

// waitForChanges waits until the view shows each named topic's change
// (done), and marks the results of those it does not show within the
// admin timeout REQUEST_TIMED_OUT, as Kafka answers a creation or deletion
// its controller did not finish within the request's timeout.
func (s *Cluster) waitForChanges(results []messages.TopicResult, names []string, done func(v *routing.View, name string) bool) {
	allDone := func(v *routing.View) bool {
		for _, n := range names {
			if !done(v, n) {
				return false
			}
		}
		return true
	}
	v, ok := s.waitForTopics(allDone)
	if ok {
		return
	}
	late := map[string]bool{}
	for _, n := range names {
		late[n] = v == nil || !done(v, n)
	}
	for i := range results {
		if r := &results[i]; r.ErrorCode == 0 && late[r.Name] {
			r.ErrorCode, r.ErrorMessage = kerr.RequestTimedOut.Code, notInAssignment
		}
	}
}

// notInAssignment is the message of a change written to its KafkaTopic
// that the assignment did not show within the admin timeout.
var notInAssignment = fmt.Sprintf("written to its KafkaTopic, but not in the controller's assignment within %s", adminTimeout)

func (s *Cluster) createTopics(m *messages.CreateTopics) {
	specs := append([]messages.TopicSpec(nil), m.Topics...)
	existing := s.cfg.Store.Load()
	defaults := s.cfg.DefaultPartitions
	go func() {
		results := make([]messages.TopicResult, len(specs))
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		var created []string
		var names []string
		if existing != nil {
			names = slices.Collect(maps.Keys(existing.Topics))
		}
		known := knownNames(names)
		for i, spec := range specs {
			r := &results[i]
			r.Name = spec.Name
			if code, msg := validateSpec(spec, existing, known); code != 0 {
				r.ErrorCode, r.ErrorMessage = code, msg
				continue
			}
			known = append(known, spec.Name)
			n := spec.Partitions
			var pins map[int32]int32
			if spec.ManualAssignment {
				n, pins = int32(len(spec.Assignment)), messages.FirstReplicas(0, spec.Assignment)
			} else if n == -1 {
				n = defaults
			}
			if !admit(m.Quota, n, r) {
				continue
			}
			r.Partitions, r.Config = n, spec.Config
			if m.ValidateOnly {
				continue
			}
			uid, err := s.topicAdmin.Create(ctx, spec.Name, n, spec.Config, pins)
			switch {
			case errors.Is(err, cluster.ErrTopicExists):
				r.ErrorCode = kerr.TopicAlreadyExists.Code
			case err != nil:
				r.ErrorCode, r.ErrorMessage = adminError(ctx, err)
			default:
				if id, perr := ParseUUID(uid); perr == nil {
					r.ID = id
				}
				created = append(created, spec.Name)
			}
		}
		s.waitForChanges(results, created, func(v *routing.View, name string) bool {
			_, ok := v.Topics[name]
			return ok
		})
		m.Reply(results)
	}()
}

func validateSpec(spec messages.TopicSpec, v *routing.View, known []string) (int16, string) {
	exists := false
	if v != nil {
		_, exists = v.Topics[spec.Name]
	}
	return topicError(topicRequest{Create: &spec, Exists: exists, Collides: topicname.Collision(spec.Name, known),
		Registered: registeredIn(v)}, balancer.MaxPartitionsPerTopic)
}

// registeredIn reports whether a broker id is registered in v (dead rows
// included, as the assignment keeps them).
func registeredIn(v *routing.View) func(int32) bool {
	return func(id int32) bool {
		if v == nil {
			return false
		}
		_, ok := v.Broker(id)
		return ok
	}
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
			// A topic the view does not know is left to the delete to
			// answer; Kafka counts no mutation for it.
			if t, ok := v.Topics[r.Name]; ok && !admit(m.Quota, int32(len(t.Partitions)), r) {
				continue
			}
			err := s.topicAdmin.Delete(ctx, r.Name)
			switch {
			case errors.Is(err, cluster.ErrTopicNotFound):
				r.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case err != nil:
				r.ErrorCode, r.ErrorMessage = adminError(ctx, err)
			default:
				if t, ok := v.Topics[r.Name]; ok {
					r.ID = t.ID
				}
				deleted = append(deleted, r.Name)
			}
		}
		s.waitForChanges(results, deleted, func(v *routing.View, name string) bool {
			_, ok := v.Topics[name]
			return !ok
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
			r.ErrorCode, r.ErrorMessage = topicError(topicRequest{Grow: &pc, Exists: ok, Current: current, Registered: registeredIn(v)}, balancer.MaxPartitionsPerTopic)
			switch {
			case r.ErrorCode != 0:
			case !admit(m.Quota, pc.Count-current, r):
			case m.ValidateOnly:
			default:
				if pc.ManualAssignment {
					// Pins first: the new partitions are placed by them
					// as soon as the controller sees the new count.
					if err := s.topicAdmin.SetPins(ctx, pc.Topic, messages.FirstReplicas(current, pc.Assignment)); err != nil {
						r.ErrorCode, r.ErrorMessage = adminError(ctx, err)
						continue
					}
				}
				if err := s.topicAdmin.Patch(ctx, pc.Topic, pc.Count, nil, false); err != nil {
					r.ErrorCode, r.ErrorMessage = adminError(ctx, err)
					continue
				}
				grown[pc.Topic] = pc.Count
			}
		}
		s.waitForChanges(results, slices.Collect(maps.Keys(grown)), func(v *routing.View, name string) bool {
			t, ok := v.Topics[name]
			return ok && int32(len(t.Partitions)) >= grown[name]
		})
		m.Reply(results)
	}()
}

func (s *Cluster) alterConfig(m *messages.AlterTopicConfig) {
	// The KafkaTopic patch below answers an unknown topic.
	if code, msg := topicError(topicRequest{Alter: m.Config, Exists: true}, balancer.MaxPartitionsPerTopic); code != 0 {
		m.Reply(messages.TopicResult{Name: m.Topic, ErrorCode: code, ErrorMessage: msg})
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
			code, msg := adminError(ctx, err)
			m.Reply(messages.TopicResult{Name: m.Topic, ErrorCode: code, ErrorMessage: msg})
			return
		}
		if _, ok := s.waitForTopics(func(v *routing.View) bool {
			t, ok := v.Topics[m.Topic]
			return ok && maps.Equal(t.Config, m.Config)
		}); !ok {
			m.Reply(messages.TopicResult{Name: m.Topic, ErrorCode: kerr.RequestTimedOut.Code, ErrorMessage: notInAssignment})
			return
		}
		m.Reply(messages.TopicResult{Name: m.Topic})
	}()
}

// rackOf is b's broker.rack as the heartbeat and the assignment file carry
// it ("": none).
func rackOf(b routing.Broker) string {
	if b.Rack == nil {
		return ""
	}
	return *b.Rack
}
