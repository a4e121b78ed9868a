package group

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// The group's records in __consumer_offsets, as Kafka's coordinator writes
// them: whenever the group's committed offsets change (a commit, a
// transaction's commit marker, an offset deleted or expired, the group
// deleted), the actor writes what changed to the group's partition of
// __consumer_offsets (its slot's, which this broker leads while it
// coordinates the group): an OffsetCommit record (key version 1, value
// version 3) per offset set, a tombstone per offset removed. A classic
// group's GroupMetadata record (group_metadata.go) goes with them, after
// the offsets of the same batch, whenever it changes. It writes one batch
// at a time, an in-process Produce to the local partition actor, and
// retries every second while a write fails or the partition is not open
// here. The group store stays the record of the offsets and the
// membership; the topic is their copy for the tools that read it (Burrow,
// kafka-console-consumer's OffsetsMessageFormatter). A group's actor
// writes nothing until the manager has handed it what the partition holds
// of the group (offsets_topic_read.go): its first diff then takes the
// partition from that to the group's state, so after a move the partition
// holds the group's state even when the previous coordinator's last write
// did not land (tombstones included), and values already there are not
// written again.

// offsetsRecordsRetryAfter is how long a failed write waits.
const offsetsRecordsRetryAfter = time.Second

// offsetsRecordsPerBatch bounds one write (about 100 bytes a record).
const offsetsRecordsPerBatch = 1000

// offsetsRecords is what the actor has written of the group to
// __consumer_offsets and what it still has to.
type offsetsRecords struct {
	// known: the manager has handed the actor what the topic holds of the
	// group; unsure: it could not (the actor restarted), and the actor
	// writes every record it has. heldMeta is the GroupMetadata value
	// handed (nil: none), what the first look starts from.
	known    bool
	unsure   bool
	heldMeta []byte

	written map[groupstore.TP]groupstore.Commit
	// pending are the records to write next, in flight those written now;
	// a nil commit is a tombstone.
	pending  map[groupstore.TP]*groupstore.Commit
	inFlight map[groupstore.TP]*groupstore.Commit
	version  uint64 // the group's offsets version last diffed
	diffed   bool
	retry    clock.Timer

	// The GroupMetadata record: what the topic holds, the record in
	// flight and the one to write next (nil: none).
	metaWritten  metadataHeld
	metaInFlight *metadataRecord
	metaPending  *metadataRecord
	metaAt       metadataAt // the group last diffed
	metaDiffed   bool
}

// metadataAt is what the GroupMetadata record depends on: it is encoded
// again only when this moves.
type metadataAt struct {
	members MembershipVersion
	kind    Kind
	state   State
}

// busy reports whether a write is in flight or about to be sent: a
// deleted group's actor stays until its tombstones are written (or wait
// for a partition not open here).
func (w *offsetsRecords) busy() bool {
	return w.inFlight != nil || w.metaInFlight != nil || (len(w.pending) > 0 || w.metaPending != nil) && w.retry == nil
}

// offsetsRecordsWritten answers the write in flight.
type offsetsRecordsWritten struct{ code int16 }

// offsetsRecordsRetry ends a failed write's wait.
type offsetsRecordsRetry struct{}

// offsetsChanges returns the records that take the topic from what it
// holds (written, then in flight, then pending on top) to the offsets
// committed: a commit per offset new or changed, nil per offset gone.
func offsetsChanges(held []map[groupstore.TP]*groupstore.Commit, written, committed map[groupstore.TP]groupstore.Commit) map[groupstore.TP]*groupstore.Commit {
	current := func(tp groupstore.TP) (groupstore.Commit, bool) {
		for i := len(held) - 1; i >= 0; i-- {
			if c, ok := held[i][tp]; ok {
				if c == nil {
					return groupstore.Commit{}, false
				}
				return *c, true
			}
		}
		c, ok := written[tp]
		return c, ok
	}
	out := map[groupstore.TP]*groupstore.Commit{}
	for tp, c := range committed {
		if was, ok := current(tp); !ok || !sameRecord(was, c) {
			out[tp] = &c
		}
	}
	gone := func(tp groupstore.TP) {
		if _, ok := committed[tp]; ok {
			return
		}
		if _, ok := current(tp); ok {
			out[tp] = nil
		}
	}
	for tp := range written {
		gone(tp)
	}
	for _, h := range held {
		for tp := range h {
			gone(tp)
		}
	}
	return out
}

// sameRecord reports whether a and b write the same OffsetCommitValue:
// the expiry and topic id the store keeps are not in it.
func sameRecord(a, b groupstore.Commit) bool {
	return a.Offset == b.Offset && a.LeaderEpoch == b.LeaderEpoch && a.Metadata == b.Metadata && a.CommitTime == b.CommitTime
}

// offsetsBatch encodes group's records: each key's OffsetCommitKey
// (version 1), its OffsetCommitValue (version 3) or a null value for a
// tombstone, in topic and partition order, at most max of them, then meta
// (when set) as the GroupMetadata record, once every offset record fits:
// as Kafka orders a deletion, the offsets before the group. It returns the
// batch and the records it holds.
func offsetsBatch(group string, recs map[groupstore.TP]*groupstore.Commit, meta *metadataRecord, now time.Time, max int) ([]byte, map[groupstore.TP]*groupstore.Commit, *metadataRecord) {
	tps := slices.SortedFunc(maps.Keys(recs), func(a, b groupstore.TP) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	if len(tps) > max {
		tps = tps[:max]
	}
	spec := batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: now.UnixMilli(), SameTimestamp: true}
	taken := make(map[groupstore.TP]*groupstore.Commit, len(tps))
	for _, tp := range tps {
		k := kmsg.NewOffsetCommitKey()
		k.Version, k.Group, k.Topic, k.Partition = 1, group, tp.Topic, tp.Partition
		var value []byte
		if c := recs[tp]; c != nil {
			v := kmsg.NewOffsetCommitValue()
			v.Version, v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = 3, c.Offset, c.LeaderEpoch, c.Metadata, c.CommitTime
			value = v.AppendTo(nil)
		}
		spec.Keys = append(spec.Keys, k.AppendTo(nil))
		spec.Values = append(spec.Values, value)
		taken[tp] = recs[tp]
	}
	if meta != nil && len(tps) < len(recs) {
		meta = nil // it follows the offsets still left
	}
	if meta != nil {
		spec.Keys = append(spec.Keys, groupMetadataKey(group))
		spec.Values = append(spec.Values, meta.value)
	}
	return batch.Build(spec), taken, meta
}

// syncOffsetsRecords queues what changed in the committed offsets since
// the last look, and writes when no write is in flight.
func (a *groupActor) syncOffsetsRecords() {
	w := &a.offsetsRecords
	if !w.known {
		return // diffed once the topic's content is handed
	}
	if !w.diffed || w.version != a.g.OffsetsVersion() {
		w.diffed, w.version = true, a.g.OffsetsVersion()
		changes := offsetsChanges([]map[groupstore.TP]*groupstore.Commit{w.inFlight, w.pending}, w.written, a.g.offsets)
		if len(changes) > 0 && w.pending == nil {
			w.pending = map[groupstore.TP]*groupstore.Commit{}
		}
		maps.Copy(w.pending, changes)
	}
	a.syncGroupMetadata()
	a.writeOffsetsRecords()
}

// syncGroupMetadata queues the group's GroupMetadata record when it
// changed since the last look. The first look starts from the record the
// topic holds, or, unsure of it, presumes one an earlier coordinator may
// have written.
func (a *groupActor) syncGroupMetadata() {
	w := &a.offsetsRecords
	at := metadataAt{members: a.g.MembershipVersion(), kind: a.g.Kind(), state: a.g.State()}
	if w.metaDiffed && w.metaAt == at {
		return
	}
	if !w.metaDiffed {
		w.metaWritten = metadataHeld{value: w.heldMeta}
		if w.unsure {
			w.metaWritten = metadataHeld{unknown: a.g.metadataMayBeHeld()}
		}
	}
	w.metaDiffed, w.metaAt = true, at
	want, s := a.g.GroupMetadata()
	var value []byte
	if want == metadataWrite {
		value = groupMetadataValue(s)
	}
	if c := metadataChange([]*metadataRecord{w.metaInFlight, w.metaPending}, w.metaWritten, want, value); c != nil {
		w.metaPending = c
	}
}

// writeOffsetsRecords sends the pending records to the group's partition
// of __consumer_offsets, when it is open here and nothing is in flight.
func (a *groupActor) writeOffsetsRecords() {
	w := &a.offsetsRecords
	if a.phase != phaseReady || w.inFlight != nil || w.metaInFlight != nil || w.retry != nil || len(w.pending) == 0 && w.metaPending == nil {
		return // a group being released writes nothing more: its next coordinator writes it all
	}
	v := a.opts.Views.Load()
	if v == nil {
		return
	}
	ref, ok := v.Local[routing.TP{Topic: assignment.OffsetsTopic, Partition: int32(assignment.SlotFor(a.id, assignment.GroupSlotCount))}]
	if !ok {
		w.retry = a.after(offsetsRecordsRetryAfter, &offsetsRecordsRetry{})
		return
	}
	b, taken, meta := offsetsBatch(a.id, w.pending, w.metaPending, a.opts.Clock.Now(), offsetsRecordsPerBatch)
	for tp := range taken {
		delete(w.pending, tp)
	}
	w.inFlight = taken
	if meta != nil {
		w.metaInFlight, w.metaPending = meta, nil
	}
	self, system := a.self, a.system
	ref.Send(&messages.Produce{Batch: b, Acks: -1, Reply: func(res messages.ProduceResult) {
		system.Root.Send(self, &offsetsRecordsWritten{code: res.ErrorCode})
	}})
}

// onTopicHeld learns what the topic holds of the group (the first hand-over
// only: a later one is of a manager that lost track of it).
func (a *groupActor) onTopicHeld(m *topicHeld) {
	w := &a.offsetsRecords
	if w.known {
		return
	}
	w.known, w.unsure = true, m.unsure
	if m.held != nil {
		w.written = maps.Clone(m.held.offsets)
		w.heldMeta = m.held.meta
	}
}

// onOffsetsRecordsWritten records a write's outcome: written, or put back
// under what was queued since and tried again after a while.
func (a *groupActor) onOffsetsRecordsWritten(m *offsetsRecordsWritten) {
	w := &a.offsetsRecords
	sent, meta := w.inFlight, w.metaInFlight
	w.inFlight, w.metaInFlight = nil, nil
	if m.code != 0 {
		a.log.Debug().Int16("code", m.code).Int("records", len(sent)).Bool("group_metadata", meta != nil).Msg("writing to __consumer_offsets failed; retrying")
		if w.pending == nil {
			w.pending = map[groupstore.TP]*groupstore.Commit{}
		}
		for tp, c := range sent {
			if _, newer := w.pending[tp]; !newer {
				w.pending[tp] = c
			}
		}
		if w.metaPending == nil {
			w.metaPending = meta
		}
		w.retry = a.after(offsetsRecordsRetryAfter, &offsetsRecordsRetry{})
		return
	}
	if meta != nil {
		w.metaWritten = metadataHeld{value: meta.value}
	}
	if w.written == nil {
		w.written = map[groupstore.TP]groupstore.Commit{}
	}
	for tp, c := range sent {
		if c == nil {
			delete(w.written, tp)
		} else {
			w.written[tp] = *c
		}
	}
	a.writeOffsetsRecords()
}
