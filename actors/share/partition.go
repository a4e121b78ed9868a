// Package share holds KIP-932 share groups ("queues for Kafka"): the pure
// share-partition state machine (Partition), share-group membership and
// assignment (Members), and the actor that keeps this broker's
// share-partitions (Keeper).
//
// Everything here takes the current time as an argument; the actors feed it
// the injectable clock.
package share

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config holds the share-group settings (Kafka's names in comments).
type Config struct {
	// LockDuration is share.record.lock.duration.ms (30 s): how long an
	// acquired record stays with its consumer before it is available again.
	LockDuration time.Duration
	// DeliveryLimit is group.share.delivery.count.limit (5): a record
	// delivered this many times is archived instead of made available again.
	DeliveryLimit int16
	// ResetLatest is share.auto.offset.reset=latest (the default): a new
	// share-partition starts at the high watermark; false starts at the
	// log start (earliest).
	ResetLatest bool
	// MaxInFlight is group.share.partition.max.record.locks (2000): the
	// most records between the start and the end offset of a
	// share-partition; nothing past it is acquired until the start moves.
	MaxInFlight int64
	// ReadCommitted is share.isolation.level=read_committed: records are
	// read up to the last stable offset, and those of aborted
	// transactions are archived without being delivered.
	ReadCommitted bool
	// DeadLetterTopic is errors.deadletterqueue.topic.name (KIP-1191, ""
	// for none): a record rejected by its consumer or released at the
	// delivery limit is written there before it is archived.
	DeadLetterTopic string
	// RenewDisabled is share.renew.acknowledge.enable=false: a RENEW
	// acknowledgement (KIP-1222) is refused with INVALID_RECORD_STATE.
	RenewDisabled bool
	// CopyRecord is errors.deadletterqueue.copy.record.enable: a
	// dead-letter record carries the key and value of the record it stands
	// for (otherwise only the headers that say where it came from).
	CopyRecord bool
}

// Defaults fills zero fields with Kafka's defaults.
func (c *Config) Defaults() {
	if c.LockDuration <= 0 {
		c.LockDuration = 30 * time.Second
	}
	if c.DeliveryLimit <= 0 {
		c.DeliveryLimit = 5
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 2000
	}
}

// State is a record's state in a share-partition.
type State uint8

const (
	Available State = iota
	Acquired
	Acknowledged
	Archived
	// Archiving records wait for their write to the group's dead-letter
	// topic (KIP-1191) and are archived once it is done or has failed;
	// until then they hold the start.
	Archiving
)

func (s State) String() string {
	return [...]string{"available", "acquired", "acknowledged", "archived", "archiving"}[s]
}

// AckType is a ShareAcknowledge acknowledgement type (KIP-932, KIP-1222).
type AckType int8

const (
	AckGap     AckType = 0 // an offset with no record (compacted, control batch)
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4 // KIP-1222: extend the acquisition lock
)

// Range is an inclusive offset range acquired with one delivery count.
type Range struct {
	First, Last   int64
	DeliveryCount int16
}

type record struct {
	state    State
	owner    string
	deadline time.Time
	count    int16
	// rejected: an Archiving record its consumer rejected (else it
	// reached the delivery limit); sent: its dead-letter write is under way.
	rejected, sent bool
}

// DeadLetter is a run of Archiving records of one delivery count and one
// cause, to be written to the group's dead-letter topic.
type DeadLetter struct {
	First, Last   int64
	DeliveryCount int16
	// Rejected: the consumer rejected them; otherwise they reached the
	// delivery count limit.
	Rejected bool
}

// Partition is one share-partition: the records of one topic partition as
// one share group sees them. Offsets below Start are done (acknowledged or
// archived); offsets from End on were never acquired; between them each
// record has its state. Not safe for concurrent use: its actor owns it.
type Partition struct {
	cfg         Config
	initialized bool
	start       int64
	recs        []record // recs[i] is offset start+i; End is start+len(recs)
	// due: some Archiving record's dead-letter write has not started.
	due bool
}

// NewPartition returns an uninitialized share-partition.
func NewPartition(cfg Config) *Partition {
	cfg.Defaults()
	return &Partition{cfg: cfg}
}

// Initialized reports whether the start offset is set.
func (p *Partition) Initialized() bool { return p.initialized }

// SetConfig replaces the share-partition's settings (a group's configs,
// read when the share-partition is first used here).
func (p *Partition) SetConfig(cfg Config) {
	cfg.Defaults()
	p.cfg = cfg
}

// ReadCommitted reports whether the share-partition delivers only what
// committed transactions and non-transactional producers wrote.
func (p *Partition) ReadCommitted() bool { return p.cfg.ReadCommitted }

// LockDuration is how long this share-partition's acquisitions last.
func (p *Partition) LockDuration() time.Duration { return p.cfg.LockDuration }

// Initialize sets the start offset from the log's bounds as
// share.auto.offset.reset says; it does nothing once initialized.
func (p *Partition) Initialize(logStart, highWatermark int64) {
	if p.initialized {
		return
	}
	p.initialized = true
	p.start = logStart
	if p.cfg.ResetLatest {
		p.start = highWatermark
	}
}

// Restore sets the state as it was persisted: start and the states of the
// records from start on (acquired records come back available, since their
// consumer's lock does not survive a move). Archiving records come back
// to be written to the dead-letter topic again; their cause is not
// persisted, so one at the delivery limit counts as having reached it and
// any other as rejected, as Kafka infers it.
func (p *Partition) Restore(start int64, states []State, counts []int16) {
	p.initialized = true
	p.start = start
	p.recs = make([]record, len(states))
	for i, s := range states {
		if s == Acquired {
			s = Available
		}
		p.recs[i] = record{state: s, count: counts[i]}
		if s == Archiving {
			p.recs[i].rejected = counts[i] < p.cfg.DeliveryLimit
			p.due = true
		}
	}
	p.advance()
}

// Start is the share-partition start offset (SPSO).
func (p *Partition) Start() int64 { return p.start }

// End is the share-partition end offset (SPEO): the first offset never
// acquired.
func (p *Partition) End() int64 { return p.start + int64(len(p.recs)) }

// At returns the state and delivery count of offset o.
func (p *Partition) At(o int64) (State, int16) {
	switch {
	case o < p.start:
		return Acknowledged, 0
	case o >= p.End():
		return Available, 0
	}
	r := p.recs[o-p.start]
	return r.state, r.count
}

// Expire makes records whose lock ran out available again, or archives
// them once they reached the delivery limit.
func (p *Partition) Expire(now time.Time) {
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && !now.Before(r.deadline) {
			p.release(r)
		}
	}
	p.advance()
}

// NextDeadline is the earliest lock expiry, or zero without acquired records.
func (p *Partition) NextDeadline() time.Time {
	var next time.Time
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && (next.IsZero() || r.deadline.Before(next)) {
			next = r.deadline
		}
	}
	return next
}

// FetchOffset is where a read for acquisition starts: the first available
// record below End, else End. ok is false when the in-flight window is full
// and nothing below End is available.
func (p *Partition) FetchOffset(now time.Time) (offset int64, ok bool) {
	p.Expire(now)
	for i := range p.recs {
		if p.recs[i].state == Available {
			return p.start + int64(i), true
		}
	}
	return p.End(), int64(len(p.recs)) < p.cfg.MaxInFlight
}

// Acquire acquires for member the available offsets of [first, last] (the
// offsets of the batches a read returned), at most maxRecords of them (0:
// no limit), and returns them as ranges of equal delivery count.
func (p *Partition) Acquire(now time.Time, member string, first, last int64, maxRecords int) []Range {
	p.Expire(now)
	first = max(first, p.start)
	var out []Range
	n := 0
	for o := first; o <= last; o++ {
		if maxRecords > 0 && n >= maxRecords {
			break
		}
		i := o - p.start
		if i >= int64(len(p.recs)) {
			if i >= p.cfg.MaxInFlight {
				break
			}
			for int64(len(p.recs)) <= i {
				p.recs = append(p.recs, record{})
			}
		}
		r := &p.recs[i]
		if r.state != Available {
			continue
		}
		r.state, r.owner, r.deadline = Acquired, member, now.Add(p.cfg.LockDuration)
		r.count++
		n++
		if k := len(out) - 1; k >= 0 && out[k].Last == o-1 && out[k].DeliveryCount == r.count {
			out[k].Last = o
		} else {
			out = append(out, Range{First: o, Last: o, DeliveryCount: r.count})
		}
	}
	return out
}

// Archive archives the available offsets of [first, last] without
// delivering them (the records of an aborted transaction, under
// read_committed), within the in-flight window as Acquire is.
func (p *Partition) Archive(first, last int64) {
	first = max(first, p.start)
	for o := first; o <= last; o++ {
		i := o - p.start
		if i >= p.cfg.MaxInFlight {
			break
		}
		for int64(len(p.recs)) <= i {
			p.recs = append(p.recs, record{})
		}
		if r := &p.recs[i]; r.state == Available {
			*r = record{state: Archived, count: r.count}
		}
	}
	p.advance()
}

// Acknowledge applies member's acknowledgement of [first, last]: one type
// for the whole range, or one per offset. Every offset must be acquired by
// member (INVALID_RECORD_STATE otherwise, and nothing changes); the range
// must be well formed (INVALID_REQUEST).
func (p *Partition) Acknowledge(now time.Time, member string, first, last int64, types []AckType) int16 {
	if last < first || len(types) == 0 || (len(types) != 1 && int64(len(types)) != last-first+1) {
		return kerr.InvalidRequest.Code
	}
	for _, t := range types {
		if t < AckGap || t > AckRenew {
			return kerr.InvalidRequest.Code
		}
		if t == AckRenew && p.cfg.RenewDisabled {
			return kerr.InvalidRecordState.Code
		}
	}
	p.Expire(now)
	if first < p.start || last >= p.End() {
		return kerr.InvalidRecordState.Code
	}
	for o := first; o <= last; o++ {
		r := p.recs[o-p.start]
		if r.state != Acquired || r.owner != member {
			return kerr.InvalidRecordState.Code
		}
	}
	for o := first; o <= last; o++ {
		t := types[0]
		if len(types) > 1 {
			t = types[o-first]
		}
		r := &p.recs[o-p.start]
		switch t {
		case AckAccept:
			*r = record{state: Acknowledged, count: r.count}
		case AckGap:
			*r = record{state: Archived, count: r.count}
		case AckReject:
			p.giveUp(r, true)
		case AckRelease:
			p.release(r)
		case AckRenew:
			r.deadline = now.Add(p.cfg.LockDuration)
		}
	}
	p.advance()
	return 0
}

// ReleaseMember makes every record member holds available again (a member
// that left, or closed its share session).
func (p *Partition) ReleaseMember(member string) bool {
	any := false
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.owner == member {
			p.release(r)
			any = true
		}
	}
	p.advance()
	return any
}

// Truncate moves the start to logStart when the log's start passed it
// (retention, DeleteRecords): those records can no longer be delivered.
func (p *Partition) Truncate(logStart int64) {
	if !p.initialized || logStart <= p.start {
		return
	}
	drop := min(logStart-p.start, int64(len(p.recs)))
	p.recs = p.recs[drop:]
	p.start = logStart
	p.advance()
}

// Snapshot returns the state to persist: start and each record's state and
// delivery count from start to End.
func (p *Partition) Snapshot() (start int64, states []State, counts []int16) {
	states = make([]State, len(p.recs))
	counts = make([]int16, len(p.recs))
	for i, r := range p.recs {
		states[i], counts[i] = r.state, r.count
	}
	return p.start, states, counts
}

// release makes an acquired record available, or gives up on it at the
// delivery limit.
func (p *Partition) release(r *record) {
	if r.count >= p.cfg.DeliveryLimit {
		p.giveUp(r, false)
		return
	}
	*r = record{state: Available, count: r.count}
}

// giveUp ends a record's deliveries: archived, or Archiving until its
// dead-letter write when the group has a dead-letter topic.
func (p *Partition) giveUp(r *record, rejected bool) {
	if p.cfg.DeadLetterTopic == "" {
		*r = record{state: Archived, count: r.count}
		return
	}
	*r = record{state: Archiving, count: r.count, rejected: rejected}
	p.due = true
}

// DeadLettersDue reports whether DeadLetters has runs to hand out (a lock
// that ran out at the delivery limit makes one without any other change).
func (p *Partition) DeadLettersDue() bool { return p.due }

// DeadLetters returns the Archiving records whose dead-letter write has
// not started, as runs of one delivery count and cause, and marks them
// started: the caller writes each run and then calls DeadLettered.
func (p *Partition) DeadLetters() []DeadLetter {
	p.due = false
	var out []DeadLetter
	for i := range p.recs {
		r := &p.recs[i]
		if r.state != Archiving || r.sent {
			continue
		}
		r.sent = true
		o := p.start + int64(i)
		if k := len(out) - 1; k >= 0 && out[k].Last == o-1 && out[k].DeliveryCount == r.count && out[k].Rejected == r.rejected {
			out[k].Last = o
			continue
		}
		out = append(out, DeadLetter{First: o, Last: o, DeliveryCount: r.count, Rejected: r.rejected})
	}
	return out
}

// DeadLettered archives the Archiving records of [first, last]: their
// dead-letter write is done, or failed (a record that cannot be written
// there must not hold the start for ever). It reports whether any changed.
func (p *Partition) DeadLettered(first, last int64) bool {
	changed := false
	for o := max(first, p.start); o <= last && o < p.End(); o++ {
		if r := &p.recs[o-p.start]; r.state == Archiving {
			*r = record{state: Archived, count: r.count}
			changed = true
		}
	}
	p.advance()
	return changed
}

// done reports whether a record's deliveries are over: acknowledged,
// archived, or archiving (it is never delivered again).
func done(s State) bool { return s == Acknowledged || s == Archived || s == Archiving }

// DeliveryComplete is how many records from the start on are done
// (acknowledged, archived or archiving): Kafka's deliveryCompleteCount
// (KIP-1226).
func (p *Partition) DeliveryComplete() int64 {
	var n int64
	for _, r := range p.recs {
		if done(r.state) {
			n++
		}
	}
	return n
}

// DeliveryComplete is Partition.DeliveryComplete of saved states.
func DeliveryComplete(states []uint8) int64 {
	var n int64
	for _, st := range states {
		if done(State(st)) {
			n++
		}
	}
	return n
}

// Lag is a share-partition's lag (KIP-1226): the records from its start
// offset to the partition's end offset that are not done yet.
func Lag(end, start, complete int64) int64 {
	return max(end-start-complete, 0)
}

// advance moves the start past records that are done.
func (p *Partition) advance() {
	i := 0
	for i < len(p.recs) && (p.recs[i].state == Acknowledged || p.recs[i].state == Archived) {
		i++
	}
	if i > 0 {
		p.recs = p.recs[i:]
		p.start += int64(i)
	}
}
