package group

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/heal"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/messages"
)

// Coordinator is the running group coordinator: the manager actor plus what
// the rest of the broker reads (the number of groups led, whether it ended).
type Coordinator struct {
	ref  actorsys.Ref
	led  atomic.Int64
	done chan struct{}
	once sync.Once

	// offsets holds each coordinated group's committed offsets as its
	// actor last published them (CommittedOffsets).
	offsets sync.Map

	// shares changes share-partition state for the share-group admin
	// APIs (keys 91, 92); set by SetShareStates before requests are
	// served (nil: they answer UNSUPPORTED_VERSION).
	shares ShareStates

	// creations are the streams groups' internal topics being created,
	// or whose creation failed lately (88_streams_group_heartbeat.go).
	creations topicCreations

	clock clock.Clock
}

// Start spawns the group manager under system. It stops when opts.Watch
// (the supervisor) stops, after relinquishing every group.
func Start(system *actorsys.System, name string, opts Options) (*Coordinator, error) {
	opts.defaults()
	c := &Coordinator{done: make(chan struct{}), clock: opts.Clock, creations: topicCreations{clock: opts.Clock}}
	opts.offsets = &c.offsets
	ref, err := system.Spawn(name, func() actor.Actor {
		return &manager{opts: &opts, c: c, groups: map[string]*entry{}, restarts: heal.NewTracker(heal.Groups), slots: map[int]*slotRead{}}
	})
	if err != nil {
		return nil, err
	}
	c.ref = ref
	return c, nil
}

// Ref is the manager actor (send it messages.GroupCall, GroupList,
// GroupsViewChanged).
func (c *Coordinator) Ref() actorsys.Ref { return c.ref }

// GroupsLed is the number of groups this broker coordinates (groups with
// members or committed offsets).
func (c *Coordinator) GroupsLed() int { return int(c.led.Load()) }

// Done is closed once the manager has stopped.
func (c *Coordinator) Done() <-chan struct{} { return c.done }

// Stop relinquishes every group and stops the manager; it waits up to
// timeout.
func (c *Coordinator) Stop(timeout time.Duration) {
	c.ref.Send(&stopCoordinator{})
	select {
	case <-c.done:
	case <-time.After(timeout):
	}
}

type entry struct {
	pid       *actor.PID
	seq       uint64
	sent      uint64
	summary   Summary
	loaded    bool
	releasing bool
	// handed is what the group's actor was handed of its slot's read of
	// __consumer_offsets (handedAt: it was).
	handed   *topicGroup
	handedAt bool
}

type (
	viewPoll        struct{}
	scanDone        struct{ groups []string }
	listGrace       struct{}
	stopCoordinator struct{}
	stopDeadline    struct{}
)

// manager routes group calls to group actors, spawning them on demand, and
// follows the routing view: groups this broker no longer coordinates are
// relinquished (their actors answer NOT_COORDINATOR from then on, finish
// their writes and close their logs). It polls the view every ViewPoll;
// messages.GroupsViewChanged makes it look at once.
type manager struct {
	opts   *Options
	c      *Coordinator
	groups map[string]*entry
	seq    uint64
	view   *routing.View

	scanning bool
	scanned  bool
	lists    []*messages.GroupList // ListGroups waiting for the first scan
	rescan   bool
	stopping bool
	poll     clock.Timer
	reported []string // last set given to OnGroupsChanged
	restarts *heal.Tracker
	self     *actor.PID
	system   *actor.ActorSystem

	// slots are the reads of the __consumer_offsets partitions of the
	// slots this broker coordinates (offsets_topic_slots.go).
	slots   map[int]*slotRead
	slotGen uint64
}

func coordinates(v *routing.View, group string) bool {
	if v == nil {
		return false
	}
	_, ours := v.CoordinatorFor(group)
	return ours
}

func (m *manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		m.self, m.system = ctx.Self(), ctx.ActorSystem()
		if m.opts.Watch != nil {
			ctx.Watch(m.opts.Watch)
		}
		m.view = m.opts.Views.Load()
		m.scan(ctx)
		m.readSlots(ctx)
		m.armPoll(ctx)
	case *messages.GroupCall:
		m.route(ctx, msg)
	case *messages.GroupList:
		m.list(ctx, msg)
	case *messages.GroupsViewChanged:
		m.checkView(ctx)
	case *messages.GroupConfigsChanged:
		if e := m.groups[msg.Group]; e != nil && !e.releasing {
			ctx.Send(e.pid, &readConfigs{})
		}
	case *viewPoll:
		m.checkView(ctx)
		m.armPoll(ctx)
	case *scanDone:
		m.onScan(ctx, msg)
	case *slotReadDone:
		m.onSlotRead(msg)
	case *orphanWritten:
		m.onOrphanWritten(msg)
	case *listGrace:
		for _, l := range m.lists {
			l.Reply(nil, kerr.CoordinatorLoadInProgress.Code)
		}
		m.lists = nil
	case *groupSummary:
		if e := m.groups[msg.id]; e != nil && e.seq == msg.seq {
			e.summary, e.loaded = msg.summary, true
			m.count()
		}
		m.answerLists(ctx)
	case *groupIdle:
		if e := m.groups[msg.id]; e != nil && e.seq == msg.seq && e.sent == msg.handled && !e.releasing {
			m.onGroupIdle(msg.id, e, msg.topicKnown)
			delete(m.groups, msg.id)
			ctx.Stop(e.pid)
			m.count()
		}
		m.answerLists(ctx)
	case *groupReleased:
		if e := m.groups[msg.id]; e != nil && e.seq == msg.seq {
			delete(m.groups, msg.id)
			ctx.Stop(e.pid)
			m.count()
		}
		m.answerLists(ctx)
		m.maybeStop(ctx)
	case *actor.Terminated:
		if m.opts.Watch != nil && msg.Who.Equal(m.opts.Watch) {
			m.beginStop(ctx)
			return
		}
		m.groupStopped(ctx, msg.Who)
	case *restartGroup:
		if sup, ok := ctx.(actor.Supervisor); ok {
			sup.RestartChildren(msg.pid)
			m.onGroupRestarted(msg.pid)
		}
	case *stopCoordinator:
		m.beginStop(ctx)
	case *stopDeadline:
		ctx.Stop(ctx.Self())
	case *actor.Stopping:
		if m.poll != nil {
			m.poll.Stop()
		}
	case *actor.Stopped:
		m.c.led.Store(0)
		m.c.once.Do(func() { close(m.c.done) })
	}
}

func (m *manager) armPoll(ctx actor.Context) {
	self, system := ctx.Self(), ctx.ActorSystem()
	m.poll = m.opts.Clock.AfterFunc(m.opts.ViewPoll, func() { system.Root.Send(self, &viewPoll{}) })
}

func (m *manager) count() {
	n := 0
	for _, e := range m.groups {
		if e.summary.Exists && !e.releasing {
			n++
		}
	}
	m.c.led.Store(int64(n))
	if m.opts.OnGroupsChanged != nil {
		names := make([]string, 0, len(m.groups))
		for name := range m.groups {
			names = append(names, name)
		}
		sort.Strings(names)
		if !slices.Equal(names, m.reported) {
			m.reported = names
			m.opts.OnGroupsChanged(names)
		}
	}
}

func (m *manager) route(ctx actor.Context, gc *messages.GroupCall) {
	v := m.opts.Views.Load()
	if m.stopping {
		gc.Reply(errorReply(gc.Group, gc.Op, kerr.CoordinatorNotAvailable.Code))
		return
	}
	if !coordinates(v, gc.Group) {
		gc.Reply(errorReply(gc.Group, gc.Op, kerr.NotCoordinator.Code))
		return
	}
	e := m.groups[gc.Group]
	if e != nil && e.releasing {
		// Lost and regained before the old actor let go.
		gc.Reply(errorReply(gc.Group, gc.Op, kerr.CoordinatorLoadInProgress.Code))
		return
	}
	if e == nil {
		var ok bool
		if e, ok = m.spawn(ctx, gc.Group); !ok {
			gc.Reply(errorReply(gc.Group, gc.Op, kerr.CoordinatorNotAvailable.Code))
			return
		}
	}
	e.sent++
	ctx.Send(e.pid, &call{gc: gc})
}

func (m *manager) spawn(ctx actor.Context, group string) (*entry, bool) {
	m.seq++
	props := actorsys.Props(newGroupActor(m.opts, group, m.seq), tracing.PropsOptions("group")...)
	pid, err := ctx.SpawnNamed(props, "group-"+strconv.FormatUint(m.seq, 10))
	if err != nil {
		m.opts.Log.Error().Err(err).Str("group", group).Msg("spawn group actor")
		return nil, false
	}
	e := &entry{pid: pid, seq: m.seq}
	m.groups[group] = e
	m.handOnSpawn(group, e)
	return e, true
}

// loaded reports whether every stored group is known and loaded.
func (m *manager) loaded() bool {
	if !m.scanned {
		return false
	}
	for _, e := range m.groups {
		if !e.loaded && !e.releasing {
			return false
		}
	}
	return true
}

// answerLists answers waiting ListGroups once everything has loaded.
func (m *manager) answerLists(ctx actor.Context) {
	if len(m.lists) == 0 || !m.loaded() {
		return
	}
	lists := m.lists
	m.lists = nil
	for _, l := range lists {
		m.list(ctx, l)
	}
}

func (m *manager) list(ctx actor.Context, l *messages.GroupList) {
	if !m.loaded() {
		// Until the stored groups are known and loaded, wait (up to
		// LoadGrace, then COORDINATOR_LOAD_IN_PROGRESS).
		if len(m.lists) == 0 {
			self, system := ctx.Self(), ctx.ActorSystem()
			m.opts.Clock.AfterFunc(m.opts.LoadGrace, func() { system.Root.Send(self, &listGrace{}) })
		}
		m.lists = append(m.lists, l)
		return
	}
	match := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	rows := []messages.GroupRow{}
	for _, name := range sortedKeys(m.groups) {
		e := m.groups[name]
		s := e.summary
		if e.releasing || !s.Exists {
			continue
		}
		row := messages.GroupRow{Group: name, ProtocolType: s.ProtocolType, State: s.State.String(), Type: s.Kind.String()}
		if row.Type == "" {
			row.Type = KindClassic.String()
		}
		if match(l.States, row.State) && match(l.Types, row.Type) {
			rows = append(rows, row)
		}
	}
	l.Reply(rows, 0)
}

// scan lists the stored groups (on a goroutine) so the groups with offsets
// this broker coordinates get actors: ListGroups shows them, their offsets
// expire.
func (m *manager) scan(ctx actor.Context) {
	if m.scanning {
		m.rescan = true
		return
	}
	m.scanning = true
	self, system, store, log := ctx.Self(), ctx.ActorSystem(), m.opts.Store, m.opts.Log
	go func() {
		groups, err := store.Groups()
		if err != nil {
			log.Error().Err(err).Msg("listing stored consumer groups failed")
		}
		system.Root.Send(self, &scanDone{groups: groups})
	}()
}

func (m *manager) onScan(ctx actor.Context, s *scanDone) {
	m.scanning, m.scanned = false, true
	v := m.opts.Views.Load()
	if !m.stopping {
		for _, g := range s.groups {
			if m.groups[g] == nil && coordinates(v, g) {
				m.spawn(ctx, g)
			}
		}
	}
	if m.rescan {
		m.rescan = false
		m.scan(ctx)
	}
	m.answerLists(ctx)
}

func (m *manager) checkView(ctx actor.Context) {
	m.readSlots(ctx)
	v := m.opts.Views.Load()
	if v == m.view || m.stopping {
		return
	}
	m.view = v
	for name, e := range m.groups {
		if !e.releasing && !coordinates(v, name) {
			e.releasing = true
			ctx.Send(e.pid, &relinquish{})
		}
	}
	m.count()
	if v != nil && v.Coordinator != nil {
		m.scan(ctx) // groups this broker may have gained
	}
}

func (m *manager) beginStop(ctx actor.Context) {
	if m.stopping {
		return
	}
	m.stopping = true
	for _, e := range m.groups {
		if !e.releasing {
			e.releasing = true
			ctx.Send(e.pid, &relinquish{})
		}
	}
	m.count()
	self, system := ctx.Self(), ctx.ActorSystem()
	m.opts.Clock.AfterFunc(10*time.Second, func() { system.Root.Send(self, &stopDeadline{}) })
	m.maybeStop(ctx)
}

func (m *manager) maybeStop(ctx actor.Context) {
	if m.stopping && len(m.groups) == 0 {
		ctx.Stop(ctx.Self())
	}
}
