package share

import (
	"context"
	"errors"
	"math/rand/v2"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/storage/sharestate"
)

// The share-group admin changes (AlterShareGroupOffsets, key 91;
// DeleteShareGroupOffsets, key 92) are served by the group coordinator,
// which checks that the group is an empty share group, then asks its
// broker's keeper to replace or remove the share-partitions' state.
//
// With --data-dir the state is the snapshot file on the shared volume,
// written through this keeper's writer (after whatever it queued for the
// share-partition before), followed by a new mark (sharestate.Store.Set).
// The coordinator's broker is not the partition's leader: it writes under
// the share-partition's claim lock, so it never interleaves with the
// leader's saves, without taking the claim, and removes the claim (Alter and
// Delete alike), so the leader that loaded the share-partition writes
// nothing more of the old state (its next save is refused, and it loads the
// share-partition again). A leader's save also carries the mark its state
// was loaded under, and is refused when the mark on the volume differs: a
// save of the old state that reaches the volume after that reload, which
// takes the same claim, writes nothing either. The partition's leader may be
// another broker holding the old state in memory: when a member opens a
// share session there, the leader also compares the mark with the one it
// loaded and, when they differ, drops what it holds and reads the new state.
// Without --data-dir (one broker), the keeper holds the new state until the
// share-partition is next used.

// ErrStateNotWritten is an admin change that did not reach the volume.
var ErrStateNotWritten = errors.New("share-partition state not written")

// adminSet replaces (snap) or removes (snap nil) share-partition states.
type adminSet struct {
	group string
	tps   []routing.TP
	snaps []*sharestate.Snapshot
	// wholeGroup adds every share-partition of the group the keeper
	// holds in memory, removed.
	wholeGroup bool
	reply      func(func() error)
}

// SetStarts sets the start offset of each of group's share-partitions in
// starts: every record from it on is available, with no deliveries.
func (k *Keeper) SetStarts(ctx context.Context, group string, starts map[routing.TP]int64) error {
	m := &adminSet{group: group}
	for tp, start := range starts {
		m.tps = append(m.tps, tp)
		m.snaps = append(m.snaps, &sharestate.Snapshot{Start: start})
	}
	return k.admin(ctx, m)
}

// DeleteStates removes group's share-partition state of each of tps (a
// share-partition used again starts at share.auto.offset.reset).
func (k *Keeper) DeleteStates(ctx context.Context, group string, tps []routing.TP) error {
	m := &adminSet{group: group, tps: tps, snaps: make([]*sharestate.Snapshot, len(tps))}
	return k.admin(ctx, m)
}

// DeleteGroupStates removes all of group's share-partition state, of every
// topic (DeleteGroups of a share group, as Kafka's coordinator deletes a
// share group's state before the group): each snapshot on the volume, and
// whatever this keeper holds of the group in memory.
func (k *Keeper) DeleteGroupStates(ctx context.Context, group string) error {
	m, err := k.groupDeletion(group)
	if err != nil {
		return err
	}
	return k.admin(ctx, m)
}

// groupDeletion is the admin change that removes group's share-partition
// states: those on the volume, listed here (off the keeper's actor), and
// those the keeper holds (wholeGroup).
func (k *Keeper) groupDeletion(group string) (*adminSet, error) {
	m := &adminSet{group: group, wholeGroup: true}
	if k.opts.Store == nil {
		return m, nil
	}
	parts, err := k.opts.Store.Partitions(group)
	if err != nil {
		return nil, errors.Join(ErrStateNotWritten, err)
	}
	for topic, ps := range parts {
		for _, p := range ps {
			m.tps = append(m.tps, routing.TP{Topic: topic, Partition: p})
		}
	}
	m.snaps = make([]*sharestate.Snapshot, len(m.tps))
	return m, nil
}

func (k *Keeper) admin(ctx context.Context, m *adminSet) error {
	ch := make(chan func() error, 1)
	m.reply = func(wait func() error) { ch <- wait }
	k.ref.Send(tracing.Wrap(ctx, m))
	return (<-ch)()
}

// adminSet drops the in-memory share-partitions and queues their new
// state; the reply waits for the writes.
func (k *keeper) adminSet(m *adminSet) func() error {
	var written []<-chan error
	var v *routing.View
	if k.opts.Views != nil {
		v = k.opts.Views.Load()
	}
	if m.wholeGroup {
		k.addHeld(m)
	}
	for i, tp := range m.tps {
		key := pkey{m.group, tp}
		k.forget(key)
		if snap := m.snaps[i]; snap != nil && v != nil {
			// The state set is the topic's now.
			if t, ok := v.Topics[tp.Topic]; ok {
				snap.TopicID = t.ID
			}
		}
		if k.writer != nil {
			written = append(written, k.writer.putAdmin(key, m.snaps[i], rand.Uint64()|1))
			continue
		}
		if m.snaps[i] == nil {
			delete(k.memStored, key)
		} else {
			k.memStored[key] = *m.snaps[i]
		}
	}
	return func() error {
		var errs []error
		for _, ch := range written {
			if err := <-ch; err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return errors.Join(append([]error{ErrStateNotWritten}, errs...)...)
		}
		return nil
	}
}

// addHeld adds to m, removed, the share-partitions of m.group this keeper
// holds in memory that m does not name.
func (k *keeper) addHeld(m *adminSet) {
	named := map[routing.TP]bool{}
	for _, tp := range m.tps {
		named[tp] = true
	}
	add := func(key pkey) {
		if key.group == m.group && !named[key.tp] {
			named[key.tp] = true
			m.tps = append(m.tps, key.tp)
			m.snaps = append(m.snaps, nil)
		}
	}
	for key := range k.parts {
		add(key)
	}
	for key := range k.memStored {
		add(key)
	}
}

// recheck asks the keeper to drop the share-partitions whose admin mark on
// the volume is not the one it loaded (an admin changed their state
// since); it replies with those dropped.
type recheck struct {
	group string
	marks map[routing.TP]uint64
	reply func(map[routing.TP]bool)
}

func (k *keeper) recheck(m *recheck) map[routing.TP]bool {
	dropped := map[routing.TP]bool{}
	for tp, mark := range m.marks {
		key := pkey{m.group, tp}
		if p, ok := k.parts[key]; ok && p.Initialized() && k.marks[key] != mark {
			id := k.ids[key]
			k.forget(key)
			k.partition(m.group, tp, id)
			dropped[tp] = true
		}
	}
	return dropped
}

// recheckMarks reads the admin marks of the initialized share-partitions a
// new share session reads (here, in the request's handler) and has the
// keeper drop those an admin changed; their reads restart from the
// volume (Offset -1).
func (k *Keeper) recheckMarks(ctx context.Context, group string, parts []PartResult) {
	if k.opts.Store == nil {
		return
	}
	marks := map[routing.TP]uint64{}
	for _, p := range parts {
		if !p.Read || p.Offset < 0 {
			continue
		}
		mark, err := k.opts.Store.LoadMark(group, p.Topic, p.Partition)
		if err != nil {
			k.opts.Log.Error().Err(err).Str("group", group).Str("topic", p.Topic).Int32("partition", p.Partition).Msg("share-partition mark unreadable")
			continue
		}
		marks[tpOf(p)] = mark
	}
	if len(marks) == 0 {
		return
	}
	ch := make(chan map[routing.TP]bool, 1)
	k.ref.Send(tracing.Wrap(ctx, &recheck{group: group, marks: marks, reply: func(d map[routing.TP]bool) { ch <- d }}))
	dropped := <-ch
	for i := range parts {
		if dropped[tpOf(parts[i])] {
			parts[i].Offset = -1
		}
	}
}

// HasState reports whether group has share-partition state (on the
// volume; without a store, in this keeper) of the topics v has: a snapshot
// left from a deleted topic, or from an earlier topic of the same name,
// does not count.
func (k *Keeper) HasState(ctx context.Context, v *routing.View, group string) bool {
	if k.opts.Store != nil {
		starts, _ := k.storedStarts(v, group)
		return len(starts) > 0
	}
	ch := make(chan map[routing.TP]progress, 1)
	k.ref.Send(tracing.Wrap(ctx, &starts{group: group, reply: func(x map[routing.TP]progress) { ch <- x }}))
	return len(<-ch) > 0
}
