package txn

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/txnlog"
)

// Options configure the coordinator.
type Options struct {
	Views *routing.Store
	Store txnlog.Store
	Log   zerolog.Logger
	Clock clock.Clock
	// NewProducerID allocates a producer id.
	NewProducerID func() int64
	// Groups completes or drops a group's transactional offsets (the
	// group coordinator); nil when no group coordinator runs.
	Groups func(m *messages.TxnOffsetsEnd)
	// Remote writes markers to partitions led by other brokers (nil:
	// such markers fail and are retried until the partition is led here).
	Remote func(b routing.Broker, m WriteMarkers, tps []TP, done func(failed []TP, err error))
	// RemoteVerify asks the coordinator broker b to verify a partition of
	// a transaction coordinated there (nil: such verifications answer
	// COORDINATOR_NOT_AVAILABLE).
	RemoteVerify func(b routing.Broker, v messages.VerifyTxn)
	// OnIDsChanged, when set, is told the ids this coordinator holds
	// (loaded or loading) whenever they change: the held-slot rules of
	// the controller wait for them as for a consumer group's.
	OnIDsChanged func(ids []string)
	// TickInterval is how often timeouts are checked and ownership
	// re-read (default 1 s).
	TickInterval time.Duration
	Core         CoreConfig
	// Watch stops the coordinator when this actor (the supervisor) stops.
	Watch *actor.PID
}

// Coordinator is the running transaction coordinator.
type Coordinator struct {
	ref          actorsys.Ref
	clock        clock.Clock
	views        *routing.Store
	remoteVerify func(routing.Broker, messages.VerifyTxn)
	done         chan struct{}
	once         sync.Once
}

// Start spawns the coordinator actor under system.
func Start(system *actorsys.System, name string, opts Options) (*Coordinator, error) {
	opts.Clock = clock.OrReal(opts.Clock)
	if opts.TickInterval <= 0 {
		opts.TickInterval = time.Second
	}
	c := &Coordinator{done: make(chan struct{}), clock: opts.Clock, views: opts.Views, remoteVerify: opts.RemoteVerify}
	ref, err := system.Spawn(name, func() actor.Actor {
		return &manager{opts: &opts, c: c, core: NewCore(opts.Core), loading: map[string][]any{}}
	})
	if err != nil {
		return nil, fmt.Errorf("start transaction coordinator: %w", err)
	}
	c.ref = ref
	if opts.Views != nil {
		// A moved id is let go at once, not at the next tick: the
		// controller holds its slot until this broker stops reporting it.
		opts.Views.OnPublish(func() { ref.Send(&viewChanged{}) })
	}
	return c, nil
}

// Verify answers a partition leader's check of a transactional batch
// (messages.Produce.Verify): in-process when this broker coordinates the
// transactional id, else through RemoteVerify to its coordinator.
func (c *Coordinator) Verify(v messages.VerifyTxn) {
	view := c.views.Load()
	if view == nil {
		v.Reply(kerr.CoordinatorNotAvailable.Code)
		return
	}
	b, ours := view.CoordinatorFor(v.TransactionalID)
	if ours {
		c.ref.Send(&call{id: v.TransactionalID, ev: verifyEvent(v)})
		return
	}
	if c.remoteVerify == nil || b.Port == 0 {
		// No coordinator (its slot is held between brokers): retriable.
		v.Reply(kerr.CoordinatorNotAvailable.Code)
		return
	}
	c.remoteVerify(b, v)
}

// verifyEvent is the core's event for v: a group's marker topic
// (messages.GroupMarkerTopic, from a TxnOffsetCommit v5+) adds the group,
// as AddOffsetsToTxn; a partition is added or verified.
func verifyEvent(v messages.VerifyTxn) any {
	reply := func(r Result) { v.Reply(r.ErrorCode) }
	if group, ok := messages.GroupOfMarkerTopic(v.Topic); ok && v.Add {
		return AddOffsets{ID: v.TransactionalID, ProducerID: v.ProducerID, Epoch: v.Epoch, Group: group, Reply: reply}
	}
	return AddPartitions{ID: v.TransactionalID, ProducerID: v.ProducerID, Epoch: v.Epoch,
		Partitions: []TP{{Topic: v.Topic, Partition: v.Partition}}, VerifyOnly: !v.Add, Reply: reply}
}

// Done is closed once the coordinator stopped.
func (c *Coordinator) Done() <-chan struct{} { return c.done }

// call is a request for one transactional id.
type call struct {
	id string
	ev any
}

// describe asks for states (DescribeTransactions, ListTransactions).
type describe struct {
	ids   []string // nil: every id loaded here
	reply func([]txnlog.State)
}

type (
	loadedMsg struct {
		id    string
		st    txnlog.State
		found bool
		err   error
	}
	tickMsg struct{}
	// viewChanged: a new routing view was published.
	viewChanged struct{}
	scanned     struct{ ids []string }
	eventMsg    struct{ ev any }
	stopCoord   struct{}
)

// manager is the thin shell around Core: it loads ids from the store before
// their first request, persists on goroutines, writes markers through the
// partition actors and runs the timeout ticker.
type manager struct {
	opts    *Options
	c       *Coordinator
	core    *Core
	loading map[string][]any // requests waiting for their id's load
	self    *actor.PID
	system  *actor.ActorSystem
	tick    clock.Timer
	// reported: the ids last given to OnIDsChanged.
	reported []string
}

func (m *manager) send(msg any) { m.system.Root.Send(m.self, msg) }

func (m *manager) Receive(ctx actor.Context) {
	m.receive(ctx)
	switch ctx.Message().(type) {
	case *call, *loadedMsg, *scanned, *eventMsg, *tickMsg, *viewChanged:
		m.reportIDs()
	}
}

// reportIDs tells OnIDsChanged the ids held, when they changed.
func (m *manager) reportIDs() {
	if m.opts.OnIDsChanged == nil {
		return
	}
	ids := m.core.Loaded()
	for id := range m.loading {
		if !m.core.Has(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if slices.Equal(ids, m.reported) {
		return
	}
	m.reported = ids
	m.opts.OnIDsChanged(slices.Clone(ids))
}

func (m *manager) receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		m.self, m.system = ctx.Self(), ctx.ActorSystem()
		if m.opts.Watch != nil {
			ctx.Watch(m.opts.Watch)
		}
		m.scan()
		m.armTick()
	case *call:
		if m.core.Has(msg.id) {
			m.step(msg.ev)
			return
		}
		q, loading := m.loading[msg.id]
		m.loading[msg.id] = append(q, msg.ev)
		if !loading {
			m.load(msg.id)
		}
	case *loadedMsg:
		q := m.loading[msg.id]
		delete(m.loading, msg.id)
		if msg.err != nil {
			ev := m.opts.Log.Error()
			if errors.Is(msg.err, txnlog.ErrSuperseded) {
				// This broker follows an older assignment file than the
				// coordinator that claimed the id: retried until it
				// catches up (and lets the id go).
				ev = m.opts.Log.Info()
			}
			ev.Err(msg.err).Str("transactional_id", msg.id).Msg("load transaction state")
			for _, ev := range q {
				answer(ev, Result{ErrorCode: kerr.CoordinatorLoadInProgress.Code, ProducerID: -1, Epoch: -1})
			}
			return
		}
		if !m.ours(msg.id) {
			for _, ev := range q {
				answer(ev, Result{ErrorCode: kerr.NotCoordinator.Code, ProducerID: -1, Epoch: -1})
			}
			return
		}
		m.step(Loaded{State: msg.st, Found: msg.found})
		for _, ev := range q {
			m.step(ev)
		}
	case *scanned:
		for _, id := range msg.ids {
			if !m.core.Has(id) && m.loading[id] == nil && m.ours(id) {
				m.loading[id] = []any{}
				m.load(id)
			}
		}
	case *eventMsg:
		m.step(msg.ev)
	case *tickMsg:
		m.step(Tick{})
		m.unloadMoved()
		m.scan()
		m.armTick()
	case *viewChanged:
		m.unloadMoved()
	case *describe:
		var out []txnlog.State
		ids := msg.ids
		if ids == nil {
			ids = m.core.IDs()
		}
		for _, id := range ids {
			if st, ok := m.core.State(id); ok {
				out = append(out, st)
			}
		}
		msg.reply(out)
	case *actor.Terminated, *stopCoord:
		ctx.Stop(ctx.Self())
	case *actor.Stopping:
		if m.tick != nil {
			m.tick.Stop()
		}
	case *actor.Stopped:
		m.c.once.Do(func() { close(m.c.done) })
	}
}

// unloadMoved unloads the ids this broker no longer coordinates (one with
// a transition in flight stays until a later tick or view finds it idle).
func (m *manager) unloadMoved() {
	for _, id := range m.core.Loaded() {
		if !m.ours(id) {
			m.step(Unload{ID: id, Done: func(bool) {}})
		}
	}
}

// ours reports whether this broker coordinates id.
func (m *manager) ours(id string) bool {
	v := m.opts.Views.Load()
	if v == nil {
		return false
	}
	_, ours := v.CoordinatorFor(id)
	return ours
}

func (m *manager) armTick() {
	m.tick = m.opts.Clock.AfterFunc(m.opts.TickInterval, func() { m.send(&tickMsg{}) })
}

// scan lists the stored ids, so that the transactions of ids this broker
// took over resume (markers of a prepared one, the timeout of an ongoing
// one) without waiting for their producer.
func (m *manager) scan() {
	store, log := m.opts.Store, m.opts.Log
	go func() {
		ids, err := store.IDs()
		if err != nil {
			log.Error().Err(err).Msg("list transaction logs")
			return
		}
		m.send(&scanned{ids: ids})
	}()
}

// claimLoader is a store that fences an id's log by a coordinator claim
// (txnlog.File in cluster mode).
type claimLoader interface {
	LoadAt(id string, at assignment.Position) (txnlog.State, bool, error)
}

func (m *manager) load(id string) {
	store := m.opts.Store
	// Each load claims from the file this broker follows now: the one
	// that makes it the id's coordinator.
	var at *assignment.Position
	if v := m.opts.Views.Load(); v != nil {
		at = &assignment.Position{Epoch: v.Epoch, Version: v.Version}
	}
	go func() {
		var (
			st    txnlog.State
			found bool
			err   error
		)
		if cl, ok := store.(claimLoader); ok && at != nil {
			st, found, err = cl.LoadAt(id, *at)
		} else {
			st, found, err = store.Load(id)
		}
		if !found {
			st = txnlog.State{ID: id}
		}
		m.send(&loadedMsg{id: id, st: st, found: found, err: err})
	}()
}

func (m *manager) step(ev any) {
	for _, e := range m.core.Step(ev, m.opts.Clock.Now()) {
		m.exec(e)
	}
}

func (m *manager) exec(e any) {
	switch e := e.(type) {
	case Reply:
		e.To(e.Result)
	case Report:
		e.Done(e.Unloaded)
	case Persist:
		store, log := m.opts.Store, m.opts.Log
		go func() {
			err := store.Save(e.State)
			switch {
			case errors.Is(err, txnlog.ErrSuperseded):
				// A coordinator loaded from a later assignment file
				// holds the id: this one's state is stale. The core
				// forgets it; a reload is refused while this broker
				// follows an older file than the claim's.
				log.Warn().Err(err).Str("transactional_id", e.State.ID).Msg("another coordinator claimed the transactional id; giving it up")
			case err != nil:
				// The client is answered COORDINATOR_NOT_AVAILABLE and
				// retries; this says why (a full volume, say).
				log.Error().Err(err).Str("transactional_id", e.State.ID).Msg("persisting transaction state failed")
			}
			m.send(&eventMsg{ev: Persisted{ID: e.State.ID, Seq: e.Seq, Err: err}})
		}()
	case After:
		m.opts.Clock.AfterFunc(e.D, func() { m.send(&eventMsg{ev: e.Event}) })
	case WriteMarkers:
		m.writeMarkers(e)
	case Remove:
		store, log := m.opts.Store, m.opts.Log
		go func() {
			err := store.Remove(e.ID)
			if err != nil {
				log.Error().Err(err).Str("transactional_id", e.ID).Msg("remove expired transactional id")
			} else {
				log.Info().Str("transactional_id", e.ID).Msg("transactional id expired")
			}
			m.send(&eventMsg{ev: Removed{ID: e.ID, Seq: e.Seq, Err: err}})
		}()
	}
}

// writeMarkers sends each partition's marker to its leader (the partition
// actor here, or Remote) and each group's outcome to the group coordinator,
// and reports MarkersWritten once all answered.
func (m *manager) writeMarkers(w WriteMarkers) {
	v := m.opts.Views.Load()
	var (
		mu     sync.Mutex
		failed []string
		wg     sync.WaitGroup
	)
	fail := func(what string) {
		mu.Lock()
		failed = append(failed, what)
		mu.Unlock()
	}
	remote := map[int32][]TP{}
	for _, tp := range w.Partitions {
		ref, ok := v.Local[routing.TP{Topic: tp.Topic, Partition: tp.Partition}]
		if !ok {
			leader := int32(-1)
			if t, ok := v.Topics[tp.Topic]; ok && int(tp.Partition) < len(t.Partitions) {
				leader = t.Partitions[tp.Partition].Leader
			}
			if _, known := v.Topics[tp.Topic]; !known {
				continue // deleted: nothing left to mark
			}
			if leader < 0 || m.opts.Remote == nil {
				fail(fmt.Sprintf("%s-%d", tp.Topic, tp.Partition))
				continue
			}
			remote[leader] = append(remote[leader], tp)
			continue
		}
		wg.Add(1)
		tp := tp
		ref.Send(&messages.WriteTxnMarker{ProducerID: w.ProducerID, ProducerEpoch: w.Epoch, Commit: w.Commit, Bumped: w.Bumped,
			Reply: func(code int16) {
				if code != 0 {
					fail(fmt.Sprintf("%s-%d: %v", tp.Topic, tp.Partition, kerr.ErrorForCode(code)))
				}
				wg.Done()
			}})
	}
	for leader, tps := range remote {
		b, ok := v.Broker(leader)
		if !ok {
			for _, tp := range tps {
				fail(fmt.Sprintf("%s-%d: leader %d unknown", tp.Topic, tp.Partition, leader))
			}
			continue
		}
		wg.Add(1)
		m.opts.Remote(b, w, tps, func(bad []TP, err error) {
			for _, tp := range bad {
				fail(fmt.Sprintf("%s-%d: %v", tp.Topic, tp.Partition, err))
			}
			wg.Done()
		})
	}
	for _, g := range w.Groups {
		if m.opts.Groups == nil {
			continue
		}
		wg.Add(1)
		g := g
		m.opts.Groups(&messages.TxnOffsetsEnd{Group: g, ProducerID: w.ProducerID, ProducerEpoch: w.Epoch, Commit: w.Commit, Bumped: w.Bumped,
			Reply: func(code int16) {
				if code != 0 {
					fail(fmt.Sprintf("group %s: %v", g, kerr.ErrorForCode(code)))
				}
				wg.Done()
			}})
	}
	log := m.opts.Log
	go func() {
		wg.Wait()
		var err error
		if len(failed) > 0 {
			err = fmt.Errorf("markers not written: %v", failed)
			log.Debug().Err(err).Str("transactional_id", w.ID).Msg("retrying transaction markers")
		}
		m.send(&eventMsg{ev: MarkersWritten{ID: w.ID, Seq: w.Seq, Err: err}})
	}()
}

// answer replies to a queued request event with r.
func answer(ev any, r Result) {
	switch e := ev.(type) {
	case InitProducerID:
		e.Reply(r)
	case AddPartitions:
		e.Reply(r)
	case AddOffsets:
		e.Reply(r)
	case EndTxn:
		e.Reply(r)
	}
}
