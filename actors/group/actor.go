package group

import (
	"bytes"
	"cmp"
	"errors"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/groupconfig"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// Options configure the group manager and its group actors.
type Options struct {
	Group Config
	Store groupstore.Store
	Views *routing.Store
	Log   zerolog.Logger
	// LoadGrace is how long requests wait for a group's offsets to load
	// before they are answered COORDINATOR_LOAD_IN_PROGRESS (1 s).
	LoadGrace time.Duration
	// CleanupInterval is offsets.retention.check.interval.ms (10 min):
	// how often offsets expire and empty groups without offsets go away.
	CleanupInterval time.Duration
	// ViewPoll is how often the manager checks the routing view for groups
	// it no longer (or newly) coordinates (1 s).
	ViewPoll time.Duration
	// Watch is an actor (the supervisor) whose end stops the coordinator.
	Watch *actor.PID
	// Clock gives the group actors and the manager the time, their timers
	// (session and rebalance deadlines, load grace, cleanup, the view poll)
	// and their tickers; clock.Real when nil.
	Clock clock.Clock
	// OnGroupsChanged, when set, is told the names of every group this
	// broker still holds (serving or closing) whenever that set changes: the
	// controller waits for a group to disappear from it before giving the
	// group to another coordinator. Called from the manager; must not block.
	OnGroupsChanged func(names []string)
	// Fence, when set, makes every group refuse requests with
	// NOT_COORDINATOR while the broker has no recent heartbeat exchange
	// (cluster-mode self-fencing: the group may be moving elsewhere).
	Fence interface{ Fenced() bool }
	// Configs holds the groups' GROUP configs (nil: none), which override
	// Group's session and heartbeat settings per group (configs.go). A
	// group reads them when it loads, when they change on this broker
	// (messages.GroupConfigsChanged) and every ConfigPoll while it has
	// members (a change made through another broker).
	Configs *groupconfig.Store
	// ConfigPoll is how often a group with members reads its configs
	// again (10 s).
	ConfigPoll time.Duration

	// offsets is the coordinator's board of published committed offsets
	// (group id → *publishedOffsets), set by Start.
	offsets *sync.Map
}

func (o *Options) defaults() {
	o.Group.Defaults()
	if o.Store == nil {
		o.Store = groupstore.NewMemory()
	}
	if o.LoadGrace <= 0 {
		o.LoadGrace = time.Second
	}
	if o.CleanupInterval <= 0 {
		o.CleanupInterval = 10 * time.Minute
	}
	if o.ViewPoll <= 0 {
		o.ViewPoll = time.Second
	}
	if o.ConfigPoll <= 0 {
		o.ConfigPoll = 10 * time.Second
	}
	o.Clock = clock.OrReal(o.Clock)
}

// maxQueuedWhileLoading bounds the requests held while a group loads.
const maxQueuedWhileLoading = 1000

type phase uint8

const (
	phaseLoading phase = iota
	phaseReady
	phaseReleasing
)

// messages between a group actor, its goroutines and the manager
type (
	call struct {
		gc *messages.GroupCall
	}
	loaded struct {
		log     groupstore.Log
		st      groupstore.State
		err     error
		configs configsRead
	}
	// readConfigs: read the group's configs again (configs.go).
	readConfigs struct{}
	configTick  struct{}
	configsRead struct {
		set map[string]string
		err error
	}
	loadRetry    struct{}
	graceExpired struct{}
	tick         struct{}
	cleanupTick  struct{}
	written      struct {
		batch      []write
		err        error
		membersErr error          // saving the membership failed
		newLog     groupstore.Log // after a destroy
	}
	relinquish struct{}
	logClosed  struct{}

	groupSummary struct {
		id      string
		seq     uint64
		summary Summary
	}
	groupIdle struct {
		id      string
		seq     uint64
		handled uint64
		// topicKnown: the actor had learned what __consumer_offsets
		// holds of its group (offsets_topic_read.go).
		topicKnown bool
	}
	groupReleased struct {
		id  string
		seq uint64
	}
)

type write struct {
	recs    []groupstore.Record
	destroy bool
	done    func(error)
	// saveMembers saves members as the group's membership (nil removes
	// it), after recs.
	saveMembers bool
	members     []byte
}

// groupActor is one group's actor: it owns the Group, the group's log, and
// the timers; disk work runs on goroutines answered by messages.
type groupActor struct {
	opts *Options
	id   string
	seq  uint64
	log  zerolog.Logger

	self   *actor.PID
	parent *actor.PID
	system *actor.ActorSystem

	g     *Group
	phase phase
	glog  groupstore.Log
	// claim is the assignment file position the log was loaded from, the
	// group store's claim (cluster mode); superseded: a coordinator
	// loaded from a later file has claimed the group, and this one
	// answers NOT_COORDINATOR.
	claim      *assignment.Position
	superseded bool
	queued     []*messages.GroupCall
	graceOver  bool
	handled    uint64
	idleAt     uint64 // handled count at the last idle report
	reported   Summary
	everSent   bool

	writing   bool
	writes    []write
	persisted *groupstore.Meta
	// membersSaved is the membership last saved (or being saved), encoded
	// at the group's membersAt; membersUnsure forces the next save (a
	// save failed).
	membersSaved  []byte
	membersAt     MembershipVersion
	membersUnsure bool
	// txnOffsets are the transactional offset commits waiting for their
	// transaction's end, by producer id (28_txn_offset_commit.go).
	txnOffsets map[int64]*txnPending
	// heldAnswers are this message's answers that wait for its membership
	// save (afterSave): they go out once it is written (releaseHeldAnswers).
	heldAnswers []func()

	timer   clock.Timer
	timerAt time.Time
	cleanup clock.Timer
	grace   clock.Timer
	// configPoll rereads the group's configs while it has members.
	configPoll clock.Timer

	// counted and countedState are where trackState last counted the group.
	counted      bool
	countedState State
	countedGen   int32
	// published is this actor's entry on the offsets board, at
	// publishedVersion of the group's offsets (publishOffsets).
	published        *publishedOffsets
	publishedVersion uint64
	// offsetsRecords is the group's copy in __consumer_offsets
	// (offsets_topic.go).
	offsetsRecords offsetsRecords
}

func newGroupActor(opts *Options, id string, seq uint64) func() actor.Actor {
	return func() actor.Actor {
		return &groupActor{opts: opts, id: id, seq: seq, idleAt: ^uint64(0),
			log: opts.Log.With().Str("group", id).Logger(), g: New(id, opts.Group)}
	}
}

func (a *groupActor) after(d time.Duration, msg any) clock.Timer {
	self, system := a.self, a.system
	return a.opts.Clock.AfterFunc(d, func() { system.Root.Send(self, msg) })
}

// Receive implements actor.Actor.
func (a *groupActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.self, a.parent, a.system = ctx.Self(), ctx.Parent(), ctx.ActorSystem()
		a.load()
		a.grace = a.after(a.opts.LoadGrace, &graceExpired{})
		a.cleanup = a.after(a.opts.CleanupInterval, &cleanupTick{})
		a.configPoll = a.after(a.opts.ConfigPoll, &configTick{})
		return
	case *actor.Restarting:
		// A panic: the next incarnation reloads from the store. Nothing
		// parked may be left unanswered.
		a.stopTimers()
		a.trackState(true)
		a.g.Abandon(kerr.CoordinatorNotAvailable.Code)
		a.flushQueued(kerr.CoordinatorNotAvailable.Code)
		if l := a.glog; l != nil && !a.writing {
			go func() { _ = l.Close() }()
		}
		return
	case *actor.Stopping:
		a.stopTimers()
		a.trackState(true)
		a.g.Abandon(kerr.NotCoordinator.Code)
		for _, q := range a.queued {
			q.Reply(errorReply(a.id, q.Op, kerr.NotCoordinator.Code))
		}
		a.queued = nil
		// Stopped without a release (a Stop, or a panic under the
		// manager's strategy): close the log, as a release would. A write
		// in flight closes it when it returns (onWritten is not run).
		if l := a.glog; l != nil && !a.writing {
			a.glog = nil
			go func() { _ = l.Close() }()
		}
		return
	case *call:
		a.handled++
		a.serveCall(m.gc)
	case *loaded:
		a.onLoaded(m)
	case *loadRetry:
		a.load()
		return
	case *graceExpired:
		if a.phase == phaseLoading {
			a.graceOver = true
			a.flushQueued(kerr.CoordinatorLoadInProgress.Code)
		}
		return
	case *tick:
		a.timerAt = time.Time{}
		a.g.Tick(a.opts.Clock.Now())
	case *cleanupTick:
		a.cleanup = a.after(a.opts.CleanupInterval, &cleanupTick{})
		a.runCleanup()
	case *configTick:
		a.configPoll = a.after(a.opts.ConfigPoll, &configTick{})
		if a.phase == phaseReady && a.g.HasMembers() {
			a.readConfigs()
		}
		return
	case *readConfigs:
		a.readConfigs()
		return
	case *configsRead:
		a.applyConfigs(*m)
	case *written:
		a.onWritten(m)
	case *offsetsRecordsWritten:
		a.onOffsetsRecordsWritten(m)
	case *topicHeld:
		a.onTopicHeld(m)
	case *offsetsRecordsRetry:
		a.offsetsRecords.retry = nil
		a.writeOffsetsRecords()
		return
	case *relinquish:
		a.onRelinquish()
	case *logClosed:
		ctx.Send(a.parent, &groupReleased{id: a.id, seq: a.seq})
		return
	default:
		return
	}
	a.afterMessage()
}

func (a *groupActor) stopTimers() {
	for _, t := range []clock.Timer{a.timer, a.cleanup, a.grace, a.configPoll, a.offsetsRecords.retry} {
		if t != nil {
			t.Stop()
		}
	}
}

// claimOpener is a store that fences a group's files by a coordinator claim
// (groupstore.File).
type claimOpener interface {
	OpenAt(group string, claim assignment.Position) (groupstore.Log, groupstore.State, error)
}

// openLog opens the group's log, claimed at claim when the store claims.
func openLog(store groupstore.Store, id string, claim *assignment.Position) (groupstore.Log, groupstore.State, error) {
	if co, ok := store.(claimOpener); ok && claim != nil {
		return co.OpenAt(id, *claim)
	}
	return store.Open(id)
}

func (a *groupActor) load() {
	store, id := a.opts.Store, a.id
	self, system := a.self, a.system
	configs := a.opts.Configs
	// Each attempt claims from the file this broker follows now: the one
	// that has it coordinate the group, later than any file from which an
	// earlier coordinator loaded it.
	a.claim = nil
	if v := a.opts.Views.Load(); v != nil {
		a.claim = &assignment.Position{Epoch: v.Epoch, Version: v.Version}
	}
	claim := a.claim
	go func() {
		l, st, err := openLog(store, id, claim)
		m := &loaded{log: l, st: st, err: err}
		if configs != nil {
			m.configs.set, m.configs.err = configs.Load(id)
		}
		system.Root.Send(self, m)
	}()
}

func (a *groupActor) onLoaded(m *loaded) {
	if a.phase != phaseLoading {
		// Relinquished while loading: close what was opened, then
		// report the release.
		l, self, system := m.log, a.self, a.system
		go func() {
			if l != nil {
				_ = l.Close()
			}
			system.Root.Send(self, &logClosed{})
		}()
		return
	}
	if m.err != nil {
		a.log.Error().Err(m.err).Msg("loading group offsets failed; retrying")
		a.graceOver = true
		a.flushQueued(kerr.CoordinatorLoadInProgress.Code)
		a.after(time.Second, &loadRetry{})
		return
	}
	a.glog = m.log
	a.persisted = m.st.Meta
	a.g.Load(a.opts.Clock.Now(), m.st)
	a.membersSaved = m.st.Members
	if err := a.g.RestoreMembership(a.opts.Clock.Now(), m.st.Members, viewTopics{a.opts.Views.Load()}); err != nil {
		a.log.Warn().Err(err).Msg("saved membership unreadable; its members rejoin")
		a.membersUnsure = true
	}
	a.restorePending(m.st)
	a.applyConfigs(m.configs)
	a.phase = phaseReady
	if recs := a.stampTopicIDs(); len(recs) > 0 {
		a.enqueue(write{recs: recs})
	}
	if a.grace != nil {
		a.grace.Stop()
	}
	queued := a.queued
	a.queued = nil
	for _, q := range queued {
		a.serveCall(q)
	}
}

func (a *groupActor) flushQueued(code int16) {
	for _, q := range a.queued {
		q.Reply(errorReply(a.id, q.Op, code))
	}
	a.queued = nil
}

func (a *groupActor) serveCall(gc *messages.GroupCall) {
	switch a.phase {
	case phaseLoading:
		if a.graceOver || len(a.queued) >= maxQueuedWhileLoading {
			gc.Reply(errorReply(a.id, gc.Op, kerr.CoordinatorLoadInProgress.Code))
			return
		}
		a.queued = append(a.queued, gc)
		return
	case phaseReleasing:
		gc.Reply(errorReply(a.id, gc.Op, kerr.NotCoordinator.Code))
		return
	}
	if a.superseded {
		gc.Reply(errorReply(a.id, gc.Op, kerr.NotCoordinator.Code))
		return
	}
	if a.opts.Fence != nil && a.opts.Fence.Fenced() {
		gc.Reply(errorReply(a.id, gc.Op, kerr.NotCoordinator.Code))
		return
	}
	now := a.opts.Clock.Now()
	topics := viewTopics{a.opts.Views.Load()}
	client := Client{ID: gc.ClientID, Host: gc.ClientHost, Principal: gc.Principal}
	reply := func(r kmsg.Response) { gc.Reply(r) }
	switch op := gc.Op.(type) {
	case *kmsg.JoinGroupRequest:
		a.g.JoinGroup(now, client, op, topics, a.afterSave(reply))
	case *kmsg.SyncGroupRequest:
		a.g.SyncGroup(now, op, a.afterSave(reply))
	case *kmsg.HeartbeatRequest:
		gc.Reply(a.g.Heartbeat(now, op))
	case *kmsg.LeaveGroupRequest:
		gc.Reply(a.g.LeaveGroup(now, op))
	case *kmsg.ConsumerGroupHeartbeatRequest:
		gc.Reply(a.g.ConsumerHeartbeat(now, client, op, topics))
	case *kmsg.ShareGroupHeartbeatRequest:
		gc.Reply(a.g.ShareHeartbeat(now, client, op, topics))
	case *kmsg.StreamsGroupHeartbeatRequest:
		gc.Reply(a.g.StreamsHeartbeat(now, client, op, topics))
	case *kmsg.OffsetCommitRequest:
		pc := a.g.OffsetCommit(now, op, topics)
		if len(pc.Records) == 0 {
			gc.Reply(pc.Response)
			return
		}
		a.ensureMeta()
		a.enqueue(write{recs: pc.Records, done: func(err error) {
			if err != nil {
				a.log.Error().Err(err).Msg("persisting offset commit failed")
				a.g.Fail(pc, kerr.CoordinatorNotAvailable.Code)
			} else {
				a.g.Apply(pc)
			}
			gc.Reply(pc.Response)
		}})
	case *kmsg.TxnOffsetCommitRequest:
		a.txnOffsetCommit(gc, op, a.g.TxnOffsetCommit(now, asOffsetCommit(op), topics))
	case *messages.TxnOffsetsEnd:
		a.txnOffsetsEnd(gc, op)
	case *kmsg.OffsetDeleteRequest:
		resp, recs := a.g.OffsetDelete(now, op, topics)
		if len(recs) == 0 {
			gc.Reply(resp)
			return
		}
		a.enqueue(write{recs: recs, done: func(err error) {
			if err != nil {
				a.log.Error().Err(err).Msg("persisting offset delete failed")
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
				resp.Topics = nil
			} else {
				a.g.ApplyDelete(recs)
			}
			gc.Reply(resp)
		}})
	case *messages.GroupFetchOffsets:
		r := a.g.FetchOffsets(now, op, topics)
		r.Group = a.id
		gc.Reply(r)
	case *messages.GroupDescribe:
		gc.Reply(a.g.DescribeGroup(now, op.Version))
	case *messages.GroupDescribeConsumer:
		gc.Reply(a.g.DescribeConsumerGroup(now, topics))
	case *messages.GroupDescribeShare:
		gc.Reply(a.g.DescribeShareGroup(now, topics))
	case *messages.GroupDescribeStreams:
		gc.Reply(a.g.DescribeStreamsGroup(now, topics))
	case *messages.GroupShareAdmin:
		gc.Reply(a.g.ShareAdmin(now, op.Create))
	case *messages.GroupDelete:
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group = a.id
		if r.ErrorCode = a.g.Delete(now); r.ErrorCode != 0 {
			gc.Reply(r)
			return
		}
		a.enqueue(write{destroy: true, done: func(err error) {
			if err != nil {
				a.log.Error().Err(err).Msg("deleting group state failed")
			}
			a.g.Deleted()
			a.persisted = nil
			gc.Reply(r)
		}})
	default:
		gc.Reply(errorReply(a.id, gc.Op, kerr.InvalidRequest.Code))
	}
}

func (a *groupActor) runCleanup() {
	if a.phase != phaseReady || a.g.State() == Dead {
		return
	}
	recs := a.g.DropDeletedTopics(viewTopics{a.opts.Views.Load()})
	if n := len(recs); n > 0 {
		a.log.Info().Int("offsets", n).Msg("removed committed offsets of deleted topics")
	}
	recs = append(recs, a.stampTopicIDs()...)
	expired := a.g.Expire(a.opts.Clock.Now())
	if n := len(expired); n > 0 {
		a.log.Info().Int("offsets", n).Msg("expired committed offsets")
	}
	recs = append(recs, expired...)
	if a.g.Idle() {
		if a.g.Exists() || len(recs) > 0 || a.persisted != nil {
			// Nothing left to keep: remove the group's stored state.
			a.enqueue(write{destroy: true, done: func(err error) {
				if err != nil {
					a.log.Error().Err(err).Msg("removing empty group's state failed")
				}
				a.persisted = nil
				a.g.Forget()
			}})
		}
		return
	}
	if len(recs) > 0 {
		a.enqueue(write{recs: recs})
	}
}

// stampTopicIDs stamps the commits an older kaas stored without a topic id
// (Group.StampTopicIDs), on load and at each cleanup: the sooner they carry
// one, the smaller the window in which a re-created topic goes unseen.
func (a *groupActor) stampTopicIDs() []groupstore.Record {
	recs := a.g.StampTopicIDs(viewTopics{a.opts.Views.Load()})
	if n := len(recs); n > 0 {
		a.log.Info().Int("offsets", n).Msg("stamped committed offsets stored without a topic id")
	}
	return recs
}

// ensureMeta persists the group metadata the retention rules need, for a
// group that has offsets (a group without offsets leaves no files).
func (a *groupActor) ensureMeta() {
	if a.phase == phaseLoading || !a.g.HasOffsets() || a.g.State() == Dead {
		return
	}
	m := a.g.Meta()
	if a.persisted != nil && *a.persisted == m {
		return
	}
	a.persisted = &m
	a.enqueue(write{recs: []groupstore.Record{{Meta: &m}}})
}

// ensureMembership saves the group's membership when it changed
// (membership.go), on the write queue. Only a successful SyncGroup answer,
// and a classic member's JoinGroup to a consumer group, wait for it
// (afterSave); any other membership lost with a crash only makes its
// members rejoin.
func (a *groupActor) ensureMembership() {
	v := a.g.MembershipVersion()
	if v == a.membersAt && !a.membersUnsure {
		return // most messages (commits, fetches, heartbeats) leave it as it was
	}
	a.membersAt = v
	b, save := a.g.MembershipToSave()
	if !save || (!a.membersUnsure && bytes.Equal(b, a.membersSaved)) {
		return
	}
	a.membersSaved, a.membersUnsure = b, false
	a.enqueue(write{saveMembers: true, members: b})
}

func (a *groupActor) enqueue(w write) {
	a.writes = append(a.writes, w)
	a.kick()
}

// kick starts the next write: every queued append in one batch (one fsync
// acknowledges them all), or one destroy.
func (a *groupActor) kick() {
	if a.writing || len(a.writes) == 0 || a.glog == nil {
		return
	}
	n := 1
	if !a.writes[0].destroy {
		for n < len(a.writes) && !a.writes[n].destroy {
			n++
		}
	}
	batch := a.writes[:n:n]
	a.writes = a.writes[n:]
	a.writing = true
	l, store, id, claim := a.glog, a.opts.Store, a.id, a.claim
	self, system := a.self, a.system
	go func() {
		w := &written{batch: batch}
		if batch[0].destroy {
			w.err = l.Destroy()
			nl, _, err := openLog(store, id, claim)
			if err == nil {
				w.newLog = nl
			} else if w.err == nil {
				w.err = err
			}
		} else {
			var recs []groupstore.Record
			var members *write
			for i, b := range batch {
				recs = append(recs, b.recs...)
				if b.saveMembers {
					members = &batch[i]
				}
			}
			if members != nil {
				w.membersErr = l.SaveMembers(members.members)
			}
			if w.err = l.Append(recs); w.err != nil {
				// Start afresh from what is durable (a torn tail is
				// cut off on open); the records of this batch are
				// answered as failed.
				_ = l.Close()
				if nl, _, err := openLog(store, id, claim); err == nil {
					w.newLog = nl
				}
			}
		}
		system.Root.Send(self, w)
	}()
}

func (a *groupActor) onWritten(m *written) {
	a.writing = false
	if m.newLog != nil {
		a.glog = m.newLog
	}
	superseded := errors.Is(m.err, groupstore.ErrSuperseded) || errors.Is(m.membersErr, groupstore.ErrSuperseded)
	for _, w := range m.batch {
		if w.done != nil {
			w.done(m.err)
		} else if m.err != nil {
			a.log.Error().Err(m.err).Msg("persisting group state failed")
		}
	}
	if m.err != nil {
		a.persisted = nil // write the metadata again with the next commit
	}
	if m.membersErr != nil {
		a.log.Error().Err(m.membersErr).Msg("saving group membership failed")
		a.membersUnsure = true
	}
	if len(m.batch) > 0 && m.batch[0].destroy {
		a.membersSaved = nil
	}
	if superseded && !a.superseded {
		a.supersede(cmp.Or(m.err, m.membersErr))
		return
	}
	a.kick()
}

// supersede gives the group up: another coordinator claimed its files (this
// one stalled past dead-after), or wrote them since this one loaded them
// empty. Nothing queued is written; the log is closed and the manager told,
// as after a release, so the next call loads the group again: that fails
// while this broker's view is older than the claim (until the manager
// relinquishes the group), and otherwise reads what the other one wrote.
func (a *groupActor) supersede(err error) {
	a.superseded = true
	a.log.Warn().Err(err).Msg("another coordinator claimed the group's files; giving it up")
	writes := a.writes
	a.writes = nil
	for _, w := range writes {
		if w.done != nil {
			w.done(err)
		}
	}
	a.g.Abandon(kerr.NotCoordinator.Code)
	a.flushQueued(kerr.NotCoordinator.Code)
	l, self, system := a.glog, a.self, a.system
	a.glog = nil
	go func() {
		if l != nil {
			_ = l.Close()
		}
		system.Root.Send(self, &logClosed{})
	}()
}

func (a *groupActor) onRelinquish() {
	if a.phase == phaseReleasing {
		return
	}
	a.phase = phaseReleasing
	if a.grace != nil {
		a.grace.Stop()
	}
	a.g.Abandon(kerr.NotCoordinator.Code)
	a.flushQueued(kerr.NotCoordinator.Code)
	// A load still running is closed when it arrives (onLoaded).
}

// afterSave holds a successful SyncGroup answer until the membership of
// its generation is saved, as Kafka answers SyncGroup once the group's
// metadata is written: a coordinator that takes the group over after a
// crash knows every generation a member was told of. A classic member's
// successful JoinGroup to a consumer group is held the same way, as
// Kafka's coordinator answers it once the member's records are written;
// a classic group's JoinGroup is not (Kafka writes its metadata at the
// SyncGroup). An error answer goes at once.
func (a *groupActor) afterSave(reply Reply) Reply {
	return func(r kmsg.Response) {
		hold := false
		switch x := r.(type) {
		case *kmsg.SyncGroupResponse:
			hold = x.ErrorCode == 0
		case *kmsg.JoinGroupResponse:
			hold = x.ErrorCode == 0 && a.g.Kind() == KindConsumer
		}
		if hold {
			a.heldAnswers = append(a.heldAnswers, func() { reply(r) })
			return
		}
		reply(r)
	}
}

// releaseHeldAnswers releases the held answers once every write queued
// so far, this message's membership save included, is done (writes run in
// order). A failed save is logged (onWritten) and the answers go anyway:
// the group is in its new generation, and a lost save only makes its
// members rejoin after a move.
func (a *groupActor) releaseHeldAnswers() {
	if len(a.heldAnswers) == 0 {
		return
	}
	held := a.heldAnswers
	a.heldAnswers = nil
	release := func(error) {
		for _, r := range held {
			r()
		}
	}
	if a.glog == nil || a.phase != phaseReady {
		release(nil)
		return
	}
	a.enqueue(write{done: release})
}

func (a *groupActor) afterMessage() {
	now := a.opts.Clock.Now()
	defer a.trackState(false)
	defer a.releaseHeldAnswers()
	if a.phase == phaseReleasing {
		if !a.writing && len(a.writes) == 0 && a.glog != nil {
			l := a.glog
			a.glog = nil
			self, system := a.self, a.system
			go func() {
				_ = l.Close()
				system.Root.Send(self, &logClosed{})
			}()
		}
		return
	}
	if a.phase != phaseReady {
		return
	}
	a.g.Tick(now)
	a.ensureMeta()
	a.ensureMembership()
	a.syncOffsetsRecords()
	a.rearm(now)
	if s := a.g.Summary(); s != a.reported || !a.everSent {
		a.reported, a.everSent = s, true
		a.system.Root.Send(a.parent, &groupSummary{id: a.id, seq: a.seq, summary: s})
	}
	if !a.g.Exists() && a.g.Idle() && !a.writing && len(a.writes) == 0 && !a.offsetsRecords.busy() && a.idleAt != a.handled {
		a.idleAt = a.handled
		a.system.Root.Send(a.parent, &groupIdle{id: a.id, seq: a.seq, handled: a.handled, topicKnown: a.offsetsRecords.known})
	}
}

// rearm points the one timer at the group's next deadline.
func (a *groupActor) rearm(now time.Time) {
	next := a.g.NextDeadline()
	if next.IsZero() {
		if a.timer != nil {
			a.timer.Stop()
			a.timer, a.timerAt = nil, time.Time{}
		}
		return
	}
	if a.timer != nil && a.timerAt.Equal(next) {
		return
	}
	if a.timer != nil {
		a.timer.Stop()
	}
	a.timerAt = next
	a.timer = a.after(max(next.Sub(now), 0), &tick{})
}

// viewTopics serves Topics from the routing view: every topic a client
// sees, internal ones included, as Kafka's coordinator resolves subscribed
// names and KIP-848 regexes against its whole topic image.
type viewTopics struct{ v *routing.View }

func info(t *routing.Topic) TopicInfo {
	return TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))}
}

func (t viewTopics) ByName(name string) (TopicInfo, bool) {
	if t.v == nil {
		return TopicInfo{}, false
	}
	x, ok := t.v.AnyTopic(name)
	if !ok {
		return TopicInfo{}, false
	}
	return info(x), true
}

func (t viewTopics) ByID(id [16]byte) (TopicInfo, bool) {
	if t.v == nil {
		return TopicInfo{}, false
	}
	x, ok := t.v.AnyTopicByID(id)
	if !ok {
		return TopicInfo{}, false
	}
	return info(x), true
}

// Complete: a topic missing from the view was deleted.
func (t viewTopics) Complete() bool { return t.v.KnowsTopics() }

func (t viewTopics) Names() []string {
	if t.v == nil {
		return nil
	}
	return t.v.AllTopicNames()
}

// Undelivered answers a call whose group actor had already stopped (moved
// away between routing and delivery): the client looks the coordinator up
// again (actorsys.Undeliverable).
func (c *call) Undelivered() {
	c.gc.Reply(errorReply(c.gc.Group, c.gc.Op, kerr.NotCoordinator.Code))
}
