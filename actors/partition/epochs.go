package partition

import (
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

// EndOffsetForEpoch answers OffsetForLeaderEpoch from the leader-epoch cache,
// with Kafka's LeaderEpochFileCache.endOffsetFor semantics: the requested
// epoch's end is the start offset of the first higher epoch, the current
// epoch ends at the log end, and the epoch returned is the largest one not
// above the requested one.
func EndOffsetForEpoch(epochs []storage.EpochEntry, current int32, logEnd int64, requested int32) (int32, int64) {
	if requested < 0 {
		return -1, -1
	}
	if requested == current || (len(epochs) > 0 && requested == epochs[len(epochs)-1].Epoch) {
		return requested, logEnd
	}
	floor := int32(-1)
	for _, e := range epochs {
		if e.Epoch > requested {
			if floor < 0 {
				return requested, e.StartOffset
			}
			return floor, e.StartOffset
		}
		floor = e.Epoch
	}
	return -1, -1
}

// epochAt is the leader epoch under which offset was written.
func epochAt(epochs []storage.EpochEntry, offset int64, current int32) int32 {
	epoch := int32(-1)
	for _, e := range epochs {
		if e.StartOffset > offset {
			break
		}
		epoch = e.Epoch
	}
	if epoch < 0 {
		return current
	}
	return epoch
}

// recordAtOrAfter resolves a timestamp search inside a batch whose max
// timestamp is >= ts: the first record at or after from stamped ts or
// later, as Kafka's searchForTimestamp finds it (a compressed batch is
// decompressed). found is false when the batch holds none (its later
// records stamped earlier, the match below from): the search goes on with
// the next batch, as Kafka's does. A batch whose records cannot be read
// answers its first offset from from and its max timestamp.
func recordAtOrAfter(b []byte, ts, from int64) (offset, timestamp int64, found bool) {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return -1, -1, true
	}
	recs, err := batch.RecordTimestamps(b)
	if err != nil {
		return max(h.BaseOffset, from), h.MaxTimestamp, true
	}
	for _, r := range recs {
		if r.Timestamp >= ts && r.Offset >= from {
			return r.Offset, r.Timestamp, true
		}
	}
	return -1, -1, false
}

// offsetOfTimestamp finds the offset of the record carrying exactly ts
// (ListOffsets max-timestamp), decompressing a compressed batch; the
// batch's base offset if none does.
func offsetOfTimestamp(b []byte, ts int64, _ bool) int64 {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return -1
	}
	if h.Attributes&batch.AttrTimestampType != 0 {
		return h.LastOffset()
	}
	if recs, err := batch.RecordTimestamps(b); err == nil {
		for _, r := range recs {
			if r.Timestamp == ts {
				return r.Offset
			}
		}
	}
	return h.BaseOffset
}
