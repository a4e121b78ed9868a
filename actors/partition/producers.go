package partition

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/twmb/franz-go/pkg/kerr"
)

// producerBatches is how many recent batches per producer are remembered for
// de-duplication: Kafka's max.in.flight.requests.per.connection bound for
// idempotent producers.
const producerBatches = 5

// BatchMeta is what de-duplication remembers of one appended batch.
type BatchMeta struct {
	FirstSeq    int32 `json:"first_seq"`
	LastSeq     int32 `json:"last_seq"`
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
	Timestamp   int64 `json:"ts"`
}

// ProducerEntry is one idempotent producer's state on one partition.
type ProducerEntry struct {
	ID      int64       `json:"id"`
	Epoch   int16       `json:"epoch"`
	Batches []BatchMeta `json:"batches"` // oldest first, at most producerBatches
	// FencedAt is when a transaction marker last set Epoch (Unix ms):
	// the entry is kept until then plus the expiration, like a batch.
	FencedAt int64 `json:"fenced_at,omitempty"`
}

func (e *ProducerEntry) lastSeq() int32 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// Producers is the idempotent-producer table of one partition. It is rebuilt
// from the log on recovery (batch headers carry everything it needs), so it
// is never trusted over the log.
type Producers struct {
	m map[int64]*ProducerEntry
	// last is the last batch recorded (any producer, or none): a snapshot
	// names it so that a snapshot outliving the log tail it describes is
	// recognised (see LastBatch). By value: Record runs for every
	// appended batch.
	last    LastBatch
	hasLast bool

	// Transactions (txns.go).
	ongoing map[int64]int64
	aborted []AbortedTxn
	marks   map[int64]uint64
	// unstable holds the transactions whose marker is appended but not yet
	// below the high watermark (first offset -> marker offset); not saved:
	// a reopened log's high watermark covers its markers.
	unstable map[int64]int64
}

// LastBatch identifies the batch that ends where a snapshot begins. A
// leader hands a partition over without syncing its tail (the next
// leader's first Sync does): a crash before that Sync can lose the tail
// and keep the snapshot written beside it, and once the log grows past the
// snapshot's offset again, other batches sit where the snapshot's were.
type LastBatch struct {
	Base int64  `json:"base"`
	Next int64  `json:"next"`
	CRC  uint32 `json:"crc"`
}

// Matches reports whether h is the batch b names.
func (b LastBatch) Matches(h batch.Header) bool {
	return h.BaseOffset == b.Base && h.NextOffset() == b.Next && h.CRC == b.CRC
}

// NewProducers returns an empty table.
func NewProducers() *Producers { return &Producers{m: map[int64]*ProducerEntry{}} }

// States lists the producers the table remembers, by producer id
// (DescribeProducers).
func (p *Producers) States() []messages.ProducerState {
	out := make([]messages.ProducerState, 0, len(p.m))
	for _, e := range p.m {
		st := messages.ProducerState{ProducerID: e.ID, ProducerEpoch: e.Epoch, LastSequence: -1, LastTimestamp: -1, TxnStartOffset: p.TxnFirstOffset(e.ID)}
		if n := len(e.Batches); n > 0 {
			st.LastSequence, st.LastTimestamp = e.Batches[n-1].LastSeq, e.Batches[n-1].Timestamp
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// Entries lists the producers the table remembers, by producer id, as
// copies (kaas dump-log prints a snapshot's).
func (p *Producers) Entries() []ProducerEntry {
	out := make([]ProducerEntry, 0, len(p.m))
	for _, e := range p.m {
		c := *e
		c.Batches = append([]BatchMeta(nil), e.Batches...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// TxnFirstOffset is the first offset of producer id's open transaction on
// this partition, or -1 when it has none.
func (p *Producers) TxnFirstOffset(id int64) int64 {
	if first, open := p.ongoing[id]; open {
		return first
	}
	return -1
}

// CheckResult is the verdict on a produced batch.
type CheckResult struct {
	// Duplicate is set when the batch is a retry of one already appended;
	// the producer gets the original offsets back, as from Kafka.
	Duplicate *BatchMeta
	ErrorCode int16
	Message   string
}

// nextSeq is Kafka's sequence successor (sequences wrap at MaxInt32 to 0).
func nextSeq(s int32) int32 {
	if s == 1<<31-1 {
		return 0
	}
	return s + 1
}

// Check applies Kafka's idempotence rules to a batch before it is appended.
func (p *Producers) Check(h batch.Header) CheckResult {
	if !h.HasProducer() {
		return CheckResult{}
	}
	e, ok := p.m[h.ProducerID]
	if !ok {
		// No state (new producer, or its records were removed by retention or
		// DeleteRecords): Kafka accepts any sequence.
		return CheckResult{}
	}
	switch {
	case h.ProducerEpoch < e.Epoch:
		return CheckResult{ErrorCode: kerr.InvalidProducerEpoch.Code,
			Message: fmt.Sprintf("producer %d epoch %d is older than the current %d", h.ProducerID, h.ProducerEpoch, e.Epoch)}
	case h.ProducerEpoch > e.Epoch:
		if h.BaseSequence != 0 {
			return CheckResult{ErrorCode: kerr.OutOfOrderSequenceNumber.Code,
				Message: fmt.Sprintf("producer %d new epoch %d must start at sequence 0, got %d", h.ProducerID, h.ProducerEpoch, h.BaseSequence)}
		}
		return CheckResult{}
	}
	for i := range e.Batches {
		b := e.Batches[i]
		if b.FirstSeq == h.BaseSequence && b.LastSeq == h.LastSequence() {
			return CheckResult{Duplicate: &b}
		}
	}
	last := e.lastSeq()
	if last < 0 || h.BaseSequence == nextSeq(last) {
		return CheckResult{}
	}
	if len(e.Batches) > 0 && h.BaseSequence >= 0 && h.BaseSequence < e.Batches[0].FirstSeq && last >= e.Batches[0].FirstSeq {
		// Older than anything remembered: already written long ago.
		return CheckResult{ErrorCode: kerr.DuplicateSequenceNumber.Code,
			Message: fmt.Sprintf("producer %d sequence %d was already written", h.ProducerID, h.BaseSequence)}
	}
	return CheckResult{ErrorCode: kerr.OutOfOrderSequenceNumber.Code,
		Message: fmt.Sprintf("producer %d expected sequence %d, got %d", h.ProducerID, nextSeq(last), h.BaseSequence)}
}

// Record remembers an appended batch (h carries its final offsets).
func (p *Producers) Record(h batch.Header) {
	p.last, p.hasLast = LastBatch{Base: h.BaseOffset, Next: h.NextOffset(), CRC: h.CRC}, true
	if !h.HasProducer() {
		return
	}
	if h.IsControl() {
		// A marker carries no sequence; its epoch fences (RecordMarker).
		p.fence(h.ProducerID, h.ProducerEpoch, h.MaxTimestamp)
		return
	}
	e, ok := p.m[h.ProducerID]
	if !ok || h.ProducerEpoch != e.Epoch {
		if ok && h.ProducerEpoch < e.Epoch {
			return
		}
		e = &ProducerEntry{ID: h.ProducerID, Epoch: h.ProducerEpoch}
		p.m[h.ProducerID] = e
	}
	e.Batches = append(e.Batches, BatchMeta{
		FirstSeq: h.BaseSequence, LastSeq: h.LastSequence(),
		FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), Timestamp: h.MaxTimestamp,
	})
	if len(e.Batches) > producerBatches {
		e.Batches = append(e.Batches[:0], e.Batches[len(e.Batches)-producerBatches:]...)
	}
}

// Expire forgets producers whose last batch is older than cutoff (Kafka's
// producer.id.expiration.ms).
func (p *Producers) Expire(cutoffMs int64) {
	for id, e := range p.m {
		if p.InTxn(id) {
			continue
		}
		last := e.FencedAt
		if n := len(e.Batches); n > 0 && e.Batches[n-1].Timestamp > last {
			last = e.Batches[n-1].Timestamp
		}
		if last < cutoffMs {
			delete(p.m, id)
		}
	}
}

// Len is the number of producers tracked.
func (p *Producers) Len() int { return len(p.m) }

type producerSnapshot struct {
	// Offset is the log end offset the snapshot covers (exclusive).
	Offset int64 `json:"offset"`
	// End is the batch ending at Offset, when the table recorded it
	// (absent in snapshots of older brokers: not checked).
	End       *LastBatch       `json:"end,omitempty"`
	Producers []*ProducerEntry `json:"producers"`
	// Ongoing and Aborted are the transaction state (txns.go).
	Ongoing map[int64]int64 `json:"ongoing_txns,omitempty"`
	Aborted []AbortedTxn    `json:"aborted_txns,omitempty"`
}

// Snapshot encodes the table as of log end offset off.
func (p *Producers) Snapshot(off int64) ([]byte, error) {
	s := producerSnapshot{Offset: off, Ongoing: p.ongoing, Aborted: p.aborted}
	if end, ok := p.endsAt(off); ok {
		s.End = &end
	}
	for _, e := range p.m {
		s.Producers = append(s.Producers, e)
	}
	sort.Slice(s.Producers, func(i, j int) bool { return s.Producers[i].ID < s.Producers[j].ID })
	return json.Marshal(s)
}

// LoadSnapshot restores a table and returns the offset it covers.
func LoadSnapshot(b []byte) (*Producers, int64, error) {
	var s producerSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, 0, fmt.Errorf("decode producer snapshot: %w", err)
	}
	p := NewProducers()
	for _, e := range s.Producers {
		p.m[e.ID] = e
	}
	if s.End != nil {
		p.last, p.hasLast = *s.End, true
	}
	p.ongoing, p.aborted = s.Ongoing, s.Aborted
	return p, s.Offset, nil
}

// endsAt is the batch the table says ends at off; ok is false when it
// recorded none there (a snapshot of an older broker: not checked).
func (p *Producers) endsAt(off int64) (LastBatch, bool) {
	return p.last, p.hasLast && p.last.Next == off
}
