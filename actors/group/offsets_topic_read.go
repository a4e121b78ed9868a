package group

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// What a coordinator learns from __consumer_offsets when it starts
// serving a slot. The group store keeps no trace of what was deleted, so a
// tombstone the previous coordinator had not written when the slot moved
// (an offset deleted or expired, a group deleted) would leave its key live
// in the topic for ever. The manager therefore reads the slot's partition
// once, when this broker starts coordinating the slot and the partition is
// open here, and folds it to its live keys (last record of a key wins, a
// tombstone removes it). A group with live keys that the store no longer
// has, and no actor, gets tombstones for them from the manager; every group
// actor of the slot is handed what the topic holds of it, so its first diff
// (offsets_topic.go) writes tombstones for keys the group no longer has and
// skips the values already there. A group actor writes nothing to the
// topic until it has been handed its part. A read that fails, or a
// partition not open here, is tried again at the manager's next view poll.

// topicGroup is what __consumer_offsets holds of one group: its live
// offset records and its GroupMetadata value (nil: no record).
type topicGroup struct {
	offsets map[groupstore.TP]groupstore.Commit
	meta    []byte
}

func (t *topicGroup) empty() bool { return t == nil || len(t.offsets) == 0 && t.meta == nil }

// offsetsKV is one record of __consumer_offsets: its key and value (nil: a
// tombstone).
type offsetsKV struct{ key, value []byte }

// unreadableOffset stands for an offset record whose value does not
// decode: the key is live, and no commit equals it, so the group's diff
// replaces or tombstones it.
const unreadableOffset = math.MinInt64

// offsetsFold folds records of __consumer_offsets, in log order, to the
// live keys of each group: an offset commit (key version 0 or 1) and a
// GroupMetadata record (key version 2), the last record of a key winning
// and a tombstone removing it. Keys of other versions (the records of
// KIP-848, share and streams groups, which kaas does not write) and
// undecodable keys are skipped. It keeps only what it decoded (a
// GroupMetadata value copied), so a read holds the live keys, not the
// partition's records.
type offsetsFold map[string]*topicGroup

func (f offsetsFold) of(group string) *topicGroup {
	g := f[group]
	if g == nil {
		g = &topicGroup{offsets: map[groupstore.TP]groupstore.Commit{}}
		f[group] = g
	}
	return g
}

func (f offsetsFold) add(r offsetsKV) {
	if len(r.key) < 2 {
		return
	}
	switch version := int16(r.key[0])<<8 | int16(r.key[1]); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(r.key) != nil {
			return
		}
		g, tp := f.of(k.Group), groupstore.TP{Topic: k.Topic, Partition: k.Partition}
		if r.value == nil {
			delete(g.offsets, tp)
			return
		}
		var v kmsg.OffsetCommitValue
		if v.ReadFrom(r.value) != nil {
			g.offsets[tp] = groupstore.Commit{Offset: unreadableOffset}
			return
		}
		if v.Version < 3 {
			v.LeaderEpoch = -1 // none before version 3
		}
		g.offsets[tp] = groupstore.Commit{Offset: v.Offset, LeaderEpoch: v.LeaderEpoch, Metadata: v.Metadata, CommitTime: v.CommitTimestamp}
	case 2:
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(r.key) != nil {
			return
		}
		f.of(k.Group).meta = bytes.Clone(r.value)
	}
}

// live returns the groups with live keys.
func (f offsetsFold) live() map[string]*topicGroup {
	for group, g := range f {
		if g.empty() {
			delete(f, group)
		}
	}
	return f
}

// foldOffsetsRecords folds recs (offsetsFold).
func foldOffsetsRecords(recs []offsetsKV) map[string]*topicGroup {
	f := offsetsFold{}
	for _, r := range recs {
		f.add(r)
	}
	return f.live()
}

// splitSlotRead sorts the groups of a slot's read: those with an actor
// are handed what the topic holds of them (nothing, for an actor's group
// the topic does not hold); those without one that the store no longer
// has, or whose actor went idle (the group does not exist) before the read
// ended, are orphans, whose keys the manager tombstones (sorted by name);
// the rest (stored, not loaded yet) are kept for the actor a later scan or
// request spawns.
func splitSlotRead(live map[string]*topicGroup, actors []string, stored, idle map[string]bool) (hand map[string]*topicGroup, orphans []string, keep map[string]*topicGroup) {
	hand, keep = map[string]*topicGroup{}, map[string]*topicGroup{}
	for _, a := range actors {
		hand[a] = live[a]
	}
	for group, g := range live {
		switch {
		case slices.Contains(actors, group):
		case stored[group] && !idle[group]:
			keep[group] = g
		default:
			keep[group] = g
			orphans = append(orphans, group)
		}
	}
	slices.Sort(orphans)
	return hand, orphans, keep
}

// tombstonesOf returns the records that remove every key of g: a
// tombstone per offset, and one for its GroupMetadata record (nil when it
// has none).
func tombstonesOf(g *topicGroup) (map[groupstore.TP]*groupstore.Commit, *metadataRecord) {
	recs := make(map[groupstore.TP]*groupstore.Commit, len(g.offsets))
	for tp := range g.offsets {
		recs[tp] = nil
	}
	var meta *metadataRecord
	if g.meta != nil {
		meta = &metadataRecord{}
	}
	return recs, meta
}

// errNotReady: the partition is not open here, or its leader has not yet
// made the log it inherited durable (its high watermark is below the
// start of its epoch): the read is tried again later.
var errNotReady = errors.New("partition not ready")

// offsetsReadBytes bounds one fetch of a slot's read.
const offsetsReadBytes = 1 << 20

// readOffsetsPartition reads a partition of __consumer_offsets through its
// partition actor, from its start to its high watermark, and gives each
// record to each, in log order (the key and value are valid only during
// the call). It blocks: it runs on a goroutine of its own. The high
// watermark is taken once the leader answers ListOffsets, which it does
// only once everything the previous leader wrote is durable here.
func readOffsetsPartition(ref actorsys.Ref, each func(offsetsKV)) error {
	lo := make(chan messages.ListOffsetsResult, 1)
	ref.Send(&messages.ListOffsets{Timestamp: -1, CurrentLeaderEpoch: -1, Reply: func(r messages.ListOffsetsResult) { lo <- r }})
	end := <-lo
	switch end.ErrorCode {
	case 0:
	case kerr.NotLeaderForPartition.Code, kerr.OffsetNotAvailable.Code, kerr.LeaderNotAvailable.Code:
		return errNotReady
	default:
		return fmt.Errorf("end offset: %w", kerr.ErrorForCode(end.ErrorCode))
	}
	fetched := make(chan messages.FetchResult, 1)
	for off := int64(0); off < end.Offset; {
		ref.Send(&messages.Fetch{Offset: off, MaxBytes: offsetsReadBytes, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1,
			Reply: func(r messages.FetchResult) { fetched <- r }})
		res := <-fetched
		var b []byte
		if res.Records != nil {
			var err error
			b, err = res.Records.AppendTo(nil)
			_ = res.Records.Close()
			if err != nil {
				return fmt.Errorf("read at %d: %w", off, err)
			}
		}
		switch {
		case res.ErrorCode == kerr.OffsetOutOfRange.Code && res.LogStartOffset > off:
			off = res.LogStartOffset // the start was removed (DeleteRecords)
			continue
		case res.ErrorCode == kerr.NotLeaderForPartition.Code:
			return errNotReady
		case res.ErrorCode != 0:
			return fmt.Errorf("fetch at %d: %w", off, kerr.ErrorForCode(res.ErrorCode))
		}
		batches, _, err := batch.Split(b)
		if err != nil {
			return fmt.Errorf("fetch at %d: %w", off, err)
		}
		next := off
		for _, x := range batches {
			h, err := batch.ParseHeader(x)
			if err != nil {
				return fmt.Errorf("batch at %d: %w", next, err)
			}
			if !h.IsControl() && h.NextOffset() > off {
				recs, err := compaction.Records(x, h)
				if err != nil {
					return fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
				}
				for _, r := range recs {
					if r.Offset >= off && !r.NullKey {
						each(offsetsKV{key: r.Key, value: r.Value})
					}
				}
			}
			next = max(next, h.NextOffset())
		}
		if next == off {
			return fmt.Errorf("fetch at %d (end %d): no records", off, end.Offset)
		}
		off = next
	}
	return nil
}
