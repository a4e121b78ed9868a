package partition

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/batch"
)

// The partition's transaction state, kept in the producer table (it is
// rebuilt from the same log scan and saved in the same snapshot): the
// transactions open on this partition (producer id → offset of its first
// batch), which bound the last stable offset, and the aborted-transaction
// index read_committed fetches return.

// AbortedTxn is one aborted transaction on this partition: its producer, its
// first offset and the offset of its abort marker.
type AbortedTxn struct {
	ProducerID  int64 `json:"pid"`
	FirstOffset int64 `json:"first"`
	LastOffset  int64 `json:"last"`
	// EmptiedMs is when a compaction pass removed the last of its records
	// (Unix ms; 0: records may be left). From then on no fetch is told of
	// it, and its marker may go delete.retention.ms later (IndexedAborts).
	EmptiedMs int64 `json:"emptied_ms,omitempty"`
}

// RecordTxn notes a transactional data batch appended at h's offsets.
func (p *Producers) RecordTxn(h batch.Header) {
	if !h.IsTransactional() || h.IsControl() {
		return
	}
	if p.ongoing == nil {
		p.ongoing = map[int64]int64{}
	}
	if _, open := p.ongoing[h.ProducerID]; !open {
		p.ongoing[h.ProducerID] = h.BaseOffset
	}
}

// RecordMarker notes a commit or abort marker appended at h's offset: the
// producer's transaction on this partition is over, an aborted one goes to
// the index, and the marker's epoch fences older epochs of the producer.
func (p *Producers) RecordMarker(h batch.Header, commit bool, nowMs int64) {
	p.fence(h.ProducerID, h.ProducerEpoch, nowMs)
	first, open := p.ongoing[h.ProducerID]
	if !open {
		return
	}
	delete(p.ongoing, h.ProducerID)
	if p.unstable == nil {
		p.unstable = map[int64]int64{}
	}
	p.unstable[first] = h.BaseOffset
	if !commit {
		p.aborted = append(p.aborted, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset})
	}
}

// Marks counts the markers of producer id this table saw, written or not
// (fence); not saved: a transaction verification compares two counts of
// one table.
func (p *Producers) Marks(id int64) uint64 { return p.marks[id] }

// InTxn reports whether producer id has a transaction open on this
// partition.
func (p *Producers) InTxn(id int64) bool {
	_, open := p.ongoing[id]
	return open
}

// MarkerRefused answers a transaction marker of producer id at epoch
// (messages.MarkerFenced): INVALID_PRODUCER_EPOCH, or zero when the
// marker may be written.
func (p *Producers) MarkerRefused(id int64, epoch int16, bumped bool) int16 {
	if e, ok := p.m[id]; ok && messages.MarkerFenced(epoch, e.Epoch, bumped, p.InTxn(id)) {
		return kerr.InvalidProducerEpoch.Code
	}
	return 0
}

// LastStable is the last stable offset given the high watermark hw: the
// first offset of the oldest transaction open or whose marker is not yet
// below hw, or hw. As Kafka's (ProducerStateManager's unreplicatedTxns), a
// transaction is stable once its marker is durable: a read_committed fetch
// never gets an aborted transaction's records without the abort marker
// that ends them, nor a committed one's before its commit is durable.
func (p *Producers) LastStable(hw int64) int64 {
	lso := hw
	for _, first := range p.ongoing {
		lso = min(lso, first)
	}
	for first, marker := range p.unstable {
		if marker >= hw {
			lso = min(lso, first)
		}
	}
	return lso
}

// Durable notes that the high watermark reached hw: the transactions whose
// marker is below it are stable from now on.
func (p *Producers) Durable(hw int64) {
	for first, marker := range p.unstable {
		if marker < hw {
			delete(p.unstable, first)
		}
	}
}

// Aborted lists the aborted transactions a read_committed fetch of
// [from, to) must be told about: those that end at or after from and start
// before to and still have records, by first offset.
func (p *Producers) Aborted(from, to int64) []AbortedTxn {
	var out []AbortedTxn
	for _, a := range p.aborted {
		if a.LastOffset >= from && a.FirstOffset < to && a.EmptiedMs == 0 {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FirstOffset < out[j].FirstOffset })
	return out
}

// TrimTxns forgets the aborted transactions wholly below the log start
// offset (retention, DeleteRecords): no fetch can reach them.
func (p *Producers) TrimTxns(start int64) {
	p.aborted = slices.DeleteFunc(p.aborted, func(a AbortedTxn) bool { return a.LastOffset < start })
}

// IndexedAborts is the abort markers (offsets) a compaction pass at nowMs
// must keep, given delete.retention.ms retentionMs: those of the aborted
// transactions that a fetch may still be told of (records left), or was
// told of less than retentionMs ago. A read_committed client told of one
// skips its producer's records until it reads the marker, so the marker
// outlives the last answer naming the transaction by retentionMs, the grace
// Kafka gives a reader to reach a marker it must see.
func (p *Producers) IndexedAborts(nowMs, retentionMs int64) map[int64]bool {
	out := map[int64]bool{}
	for _, a := range p.aborted {
		if a.EmptiedMs == 0 || nowMs-a.EmptiedMs < retentionMs {
			out[a.LastOffset] = true
		}
	}
	return out
}

// AbortsCompacted records a compaction pass swapped in at nowMs: emptied
// are the abort markers whose transactions have no record left, removed
// the markers the pass removed (their transactions leave the index).
func (p *Producers) AbortsCompacted(emptied, removed []int64, nowMs int64) {
	if len(emptied)+len(removed) == 0 {
		return
	}
	gone := make(map[int64]bool, len(removed))
	for _, off := range removed {
		gone[off] = true
	}
	empty := make(map[int64]bool, len(emptied))
	for _, off := range emptied {
		empty[off] = true
	}
	for i, a := range p.aborted {
		if empty[a.LastOffset] && a.EmptiedMs == 0 {
			p.aborted[i].EmptiedMs = nowMs
		}
	}
	p.aborted = slices.DeleteFunc(p.aborted, func(a AbortedTxn) bool { return gone[a.LastOffset] })
}

// DropAborts forgets the aborted transactions whose markers are gone from
// the log (present reports whether a marker is): a compaction pass removed
// them after a snapshot that still names them was written. A fetch told of
// such a transaction would have its client skip the producer's later
// transactions, waiting for a marker that never comes.
func (p *Producers) DropAborts(present func(AbortedTxn) (bool, error)) error {
	var err error
	p.aborted = slices.DeleteFunc(p.aborted, func(a AbortedTxn) bool {
		if err != nil {
			return false
		}
		var ok bool
		ok, err = present(a)
		return err == nil && !ok
	})
	return err
}

// fence raises producer id's epoch to epoch (a marker's, every marker
// passes here, counted in marks): batches of
// older epochs are refused from then on, and the next epoch starts its
// sequences afresh.
func (p *Producers) fence(id int64, epoch int16, nowMs int64) {
	if p.marks == nil {
		p.marks = map[int64]uint64{}
	}
	p.marks[id]++
	e, ok := p.m[id]
	if !ok {
		p.m[id] = &ProducerEntry{ID: id, Epoch: epoch, FencedAt: nowMs}
		return
	}
	if epoch > e.Epoch {
		e.Epoch, e.Batches = epoch, nil
	}
	if nowMs > e.FencedAt {
		e.FencedAt = nowMs
	}
}
