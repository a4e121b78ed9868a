package group

import (
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// The manager's side of the slot reads (offsets_topic_read.go).

// slotRead is the read of one slot's partition of __consumer_offsets by
// this broker, while it coordinates the slot.
type slotRead struct {
	gen     uint64 // tells this read's results from an earlier tenure's
	reading bool
	done    bool
	// held is what the topic holds of the slot's groups that no actor
	// has been handed yet; orphans are those of them to tombstone, in
	// order, the first one's records in flight while writing.
	held    map[string]*topicGroup
	orphans []string
	// idle are the groups whose actor went idle before the read ended:
	// they do not exist, whatever the store lists.
	idle map[string]bool
	// unsure are the groups whose actor stopped without a release after
	// it was handed its part: what it wrote since is not known.
	unsure  map[string]bool
	writing bool
	// taken are the records in flight of the first orphan.
	taken     []groupstore.TP
	takenMeta bool
}

type (
	// slotReadDone is a slot's read: its live keys by group and the
	// groups the store held after it (nil when err).
	slotReadDone struct {
		slot   int
		gen    uint64
		live   map[string]*topicGroup
		stored map[string]bool
		err    error
	}
	// orphanWritten answers the manager's write of an orphan's
	// tombstones.
	orphanWritten struct {
		slot int
		gen  uint64
		code int16
	}
	// topicHeld hands a group actor what __consumer_offsets holds of its
	// group (held nil: nothing). unsure: the manager no longer knows
	// (the actor restarted), and the actor writes every record it has.
	topicHeld struct {
		held   *topicGroup
		unsure bool
	}
)

// slotServed reports whether this broker coordinates slot s in v: in
// local-dev mode every slot; in cluster mode the slots the view names it
// for. A view that names no slots but coordinates by a function of its own
// (tests) serves none.
func slotServed(v *routing.View, s int) bool {
	if v == nil {
		return false
	}
	if v.GroupSlots == nil {
		return v.Coordinator == nil
	}
	return s < len(v.GroupSlots) && v.GroupSlots[s] == v.Self
}

func slotOf(group string) int { return assignment.SlotFor(group, assignment.GroupSlotCount) }

// readSlots follows the slots this broker coordinates: a slot gained
// starts a read of its partition once that is open here, a slot lost
// forgets its read, a failed read or orphan write is tried again. Called
// at every view check (the view poll).
func (m *manager) readSlots(ctx actor.Context) {
	v := m.opts.Views.Load()
	if m.stopping || v == nil {
		return
	}
	for s := range assignment.GroupSlotCount {
		st := m.slots[s]
		if !slotServed(v, s) {
			if st != nil {
				delete(m.slots, s)
			}
			continue
		}
		if st == nil {
			m.slotGen++
			st = &slotRead{gen: m.slotGen}
			m.slots[s] = st
		}
		if st.done {
			m.writeOrphans(s, st)
			continue
		}
		ref, ok := v.Local[routing.TP{Topic: assignment.OffsetsTopic, Partition: int32(s)}]
		if st.reading || !ok {
			continue
		}
		st.reading = true
		self, system, store, gen := ctx.Self(), ctx.ActorSystem(), m.opts.Store, st.gen
		go func() {
			d := &slotReadDone{slot: s, gen: gen}
			fold := offsetsFold{}
			err := readOffsetsPartition(ref, fold.add)
			if err == nil {
				d.live = fold.live()
				// The groups stored now, after the read: a group
				// deleted before it is not among them.
				var groups []string
				if groups, err = store.Groups(); err != nil {
					err = fmt.Errorf("listing stored groups: %w", err)
				} else {
					d.stored = make(map[string]bool, len(groups))
					for _, g := range groups {
						d.stored[g] = true
					}
				}
			}
			d.err = err
			system.Root.Send(self, d)
		}()
	}
}

// onSlotRead hands each group actor of the slot its part of the read, and
// starts the orphans' tombstones.
func (m *manager) onSlotRead(d *slotReadDone) {
	st := m.slots[d.slot]
	if st == nil || st.gen != d.gen || m.stopping {
		return
	}
	st.reading = false
	if d.err != nil {
		ev := m.opts.Log.Warn()
		if errors.Is(d.err, errNotReady) {
			ev = m.opts.Log.Debug()
		}
		ev.Err(d.err).Int("partition", d.slot).Msg("reading __consumer_offsets failed; retrying")
		return
	}
	var actors []string
	for name, e := range m.groups {
		if !e.releasing && slotOf(name) == d.slot {
			actors = append(actors, name)
		}
	}
	hand, orphans, keep := splitSlotRead(d.live, actors, d.stored, st.idle)
	st.idle = nil
	for name, held := range hand {
		m.hand(m.groups[name], held)
	}
	st.done, st.held, st.orphans = true, keep, orphans
	if len(orphans) > 0 {
		m.opts.Log.Info().Int("partition", d.slot).Strs("groups", orphans).Msg("__consumer_offsets holds groups deleted before this coordinator; writing their tombstones")
	}
	m.writeOrphans(d.slot, st)
}

// hand gives e's actor what the topic holds of its group.
func (m *manager) hand(e *entry, held *topicGroup) {
	e.handed, e.handedAt = held, true
	m.system.Root.Send(e.pid, &topicHeld{held: held})
}

// handOnSpawn hands a group actor just spawned its part of its slot's
// read, if the read is done; while the group's tombstones are in flight it
// waits for their outcome (onOrphanWritten).
func (m *manager) handOnSpawn(group string, e *entry) {
	s := slotOf(group)
	st := m.slots[s]
	if st == nil || !st.done {
		return // the read hands it
	}
	if st.writing && len(st.orphans) > 0 && st.orphans[0] == group {
		return
	}
	if st.unsure[group] {
		delete(st.unsure, group)
		e.handedAt = true
		m.system.Root.Send(e.pid, &topicHeld{unsure: true})
		return
	}
	held := st.held[group]
	delete(st.held, group)
	st.orphans = deleteName(st.orphans, group)
	m.hand(e, held)
}

// onGroupGone notes a group actor that stopped without a release or an
// idle report after it was handed its part: the next actor of the group
// is told the manager is unsure of it.
func (m *manager) onGroupGone(group string, e *entry) {
	if st := m.slots[slotOf(group)]; st != nil && st.done && e.handedAt {
		if st.unsure == nil {
			st.unsure = map[string]bool{}
		}
		st.unsure[group] = true
	}
}

// onGroupIdle notes an actor that went idle (its group does not exist)
// without having learned what the topic holds of its group: before the
// slot's read ended, the read makes its keys an orphan's; after, what it
// was handed (the message still in its mailbox) is.
func (m *manager) onGroupIdle(group string, e *entry, known bool) {
	st := m.slots[slotOf(group)]
	if known || st == nil {
		return
	}
	if !st.done {
		if st.idle == nil {
			st.idle = map[string]bool{}
		}
		st.idle[group] = true
		return
	}
	if !e.handedAt || e.handed.empty() {
		return
	}
	st.held[group] = e.handed
	st.orphans = append(deleteName(st.orphans, group), group)
	m.writeOrphans(slotOf(group), st)
}

// onGroupRestarted tells a restarted group actor that its part of the
// topic is unknown (it lost what it knew), once the slot's read is done.
func (m *manager) onGroupRestarted(pid *actor.PID) {
	for name, e := range m.groups {
		if e.pid.Equal(pid) {
			if st := m.slots[slotOf(name)]; st != nil && st.done && !e.releasing {
				e.handedAt = true
				m.system.Root.Send(e.pid, &topicHeld{unsure: true})
			}
			return
		}
	}
}

func deleteName(names []string, name string) []string {
	for i, n := range names {
		if n == name {
			return append(names[:i:i], names[i+1:]...)
		}
	}
	return names
}

// writeOrphans writes the next orphan's tombstones (one batch at a time)
// to the slot's partition, when it is open here.
func (m *manager) writeOrphans(s int, st *slotRead) {
	if st.writing || len(st.orphans) == 0 || m.stopping {
		return
	}
	v := m.opts.Views.Load()
	if v == nil {
		return
	}
	ref, ok := v.Local[routing.TP{Topic: assignment.OffsetsTopic, Partition: int32(s)}]
	if !ok {
		return // the next view poll tries again
	}
	group := st.orphans[0]
	recs, meta := tombstonesOf(st.held[group])
	b, taken, metaTaken := offsetsBatch(group, recs, meta, m.opts.Clock.Now(), offsetsRecordsPerBatch)
	st.writing, st.taken, st.takenMeta = true, st.taken[:0], metaTaken != nil
	for tp := range taken {
		st.taken = append(st.taken, tp)
	}
	self, system, gen := m.self, m.system, st.gen
	ref.Send(&messages.Produce{Batch: b, Acks: -1, Reply: func(res messages.ProduceResult) {
		system.Root.Send(self, &orphanWritten{slot: s, gen: gen, code: res.ErrorCode})
	}})
}

// onOrphanWritten records an orphan write's outcome; a failed one is
// tried again at the next view poll. An actor spawned for the group
// meanwhile is handed what is left.
func (m *manager) onOrphanWritten(w *orphanWritten) {
	st := m.slots[w.slot]
	if st == nil || st.gen != w.gen || !st.writing {
		return
	}
	st.writing = false
	group := st.orphans[0]
	held := st.held[group]
	if w.code != 0 {
		m.opts.Log.Debug().Int16("code", w.code).Str("group", group).Msg("writing a deleted group's tombstones to __consumer_offsets failed; retrying")
	} else {
		for _, k := range st.taken {
			delete(held.offsets, k)
		}
		if st.takenMeta {
			held.meta = nil
		}
		if held.empty() {
			delete(st.held, group)
			st.orphans = st.orphans[1:]
		}
	}
	if e := m.groups[group]; e != nil && !e.releasing && !e.handedAt {
		delete(st.held, group)
		st.orphans = deleteName(st.orphans, group)
		if held.empty() {
			held = nil
		}
		m.hand(e, held)
	}
	if w.code == 0 {
		m.writeOrphans(w.slot, st)
	}
}
