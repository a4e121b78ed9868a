package partition

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// The shell's request handling: the core decides whether a write may go to
// the log and what waits for which commit; these read and write the log.

func (a *Actor) serve(m any) {
	switch m := m.(type) {
	case *messages.Produce:
		a.produceBatch(m, false)
	case *messages.Fetch:
		a.fetch(m)
	case *messages.ListOffsets:
		a.listOffsets(m)
	case *messages.OffsetForLeaderEpoch:
		a.offsetForLeaderEpoch(m)
	case *messages.DeleteRecords:
		a.deleteRecords(m)
	case *messages.WriteTxnMarker:
		a.writeTxnMarker(m)
	}
}

func (a *Actor) fenced() bool  { return a.cfg.Fence != nil && a.cfg.Fence.Fenced() }
func (a *Actor) revoked() bool { return a.cfg.Revoked != nil && a.cfg.Revoked.Load() }

// produceBatch appends m's batch; verified: the transaction coordinator
// confirmed the batch's partition is part of its transaction (verify.go).
func (a *Actor) produceBatch(m *messages.Produce, verified bool) {
	reply := func(code int16, msg string) { refuseProduce(m, code, msg) }
	if code, msg := a.core.Admit(a.fenced(), a.revoked()); code != 0 {
		reply(code, msg)
		return
	}
	b, h, scan, code, msg := validateProduce(m.Batch, a.maxMessage, a.keysRequired)
	if code != 0 {
		reply(code, msg)
		return
	}
	if !a.appendTime {
		before, after := topicconfig.TimestampBounds(a.topicConfig)
		if code, msg := checkTimestamps(scan, before, after, a.cfg.Clock.Now().UnixMilli()); code != 0 {
			reply(code, msg)
			return
		}
	}
	if a.keysRequired {
		if code, msg, keyless := checkKeys(scan.Keyless, fmt.Sprintf("%s-%d", a.id.Topic, a.id.Partition)); code != 0 {
			m.Reply(messages.ProduceResult{ErrorCode: code, ErrorMessage: msg, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1,
				RecordErrors: keyless})
			return
		}
	}
	if !verified && a.queueBehindVerify(m, h) {
		return
	}
	l, prods := a.core.Log(), a.core.Producers()
	check := prods.Check(h)
	if check.ErrorCode != 0 {
		if check.ErrorCode == kerr.OutOfOrderSequenceNumber.Code {
			// A gap in an idempotent producer's sequence means records were lost
			// or reordered on the way here (a client bug or data loss), so it is
			// logged, with the name Kafka's logs give it, which operators and
			// client test suites search broker logs for.
			a.log.Warn().Ctx(a.traced.ctx).Str("exception", "OutOfOrderSequenceException").
				Int64("producer_id", h.ProducerID).Int16("producer_epoch", h.ProducerEpoch).
				Int32("base_sequence", h.BaseSequence).Msg("idempotent batch refused: " + check.Message)
		}
		reply(check.ErrorCode, check.Message)
		return
	}
	res := messages.ProduceResult{LogAppendTime: -1, LogStartOffset: l.StartOffset()}
	if d := check.Duplicate; d != nil {
		res.BaseOffset = d.FirstOffset
		a.step(Produced{AcksAll: m.Acks == -1, End: d.LastOffset + 1, Result: res, Reply: m.Reply})
		return
	}
	if !verified && needsVerify(h, prods, m) {
		a.startVerify(m, h, prods)
		return
	}
	epoch := a.core.LeaderEpoch()
	base := l.NextOffset()
	batch.SetBaseOffset(b, base)
	batch.SetLeaderEpoch(b, epoch)
	if a.appendTime {
		now := a.cfg.Clock.Now().UnixMilli()
		batch.SetLogAppendTime(b, now)
		res.LogAppendTime = now
		h.MaxTimestamp = now
		if ph, err := batch.ParseHeader(b); err == nil {
			h.CRC = ph.CRC // rewritten with the timestamp
		}
	}
	h.BaseOffset, h.LeaderEpoch = base, epoch
	if err := l.Append(b, h); err != nil {
		a.step(AppendFailed{})
		a.log.Error().Ctx(a.traced.ctx).Err(err).Int64("offset", base).Dur("retry_in", writeRetryDelay).Msg("append failed; writes refused until the retry")
		reply(kerr.KafkaStorageError.Code, err.Error())
		return
	}
	prods.Record(h)
	prods.RecordTxn(h)
	a.topic.Produced(len(b), int(h.NumRecords))
	a.appended(m.Acks == -1 && l.Durable() < l.NextOffset())
	res.BaseOffset = base
	a.step(Produced{AcksAll: m.Acks == -1, Appended: true, End: h.NextOffset(), Result: res, Reply: m.Reply,
		LogEnd: l.NextOffset(), Durable: l.Durable()})
}

// validateProduce checks a produce's records: one whole, valid,
// non-transactional batch within maxMessage bytes, every record of it read
// (batch.ValidateProduce; keyless lists the records without a key); else
// the error code and message to answer. A CreateTime batch whose header
// states another max timestamp than its records' gets theirs, as Kafka
// sets it (the CRC recomputed).
func validateProduce(records []byte, maxMessage int, keyless bool) ([]byte, batch.Header, batch.Scan, int16, string) {
	var none batch.Scan
	if len(records) > maxMessage {
		return nil, batch.Header{}, none, kerr.MessageTooLarge.Code, fmt.Sprintf("batch of %d bytes exceeds max.message.bytes %d", len(records), maxMessage)
	}
	if h, err := batch.ParseHeader(records); err != nil || h.Size() != len(records) {
		// Not exactly one batch (the common case needs no Split and its
		// allocation): tell a torn batch from several.
		batches, rest, err := batch.Split(records)
		if err != nil || len(rest) > 0 || len(batches) == 0 {
			return nil, batch.Header{}, none, kerr.CorruptMessage.Code, "records are not a whole number of record batches"
		}
		if len(batches) != 1 {
			return nil, batch.Header{}, none, kerr.InvalidRecord.Code, "produce requests v3+ must carry exactly one record batch per partition"
		}
	}
	b := records[:len(records):len(records)]
	h, scan, err := batch.ValidateProduce(b, keyless)
	switch {
	case errors.Is(err, batch.ErrUnsupportedMagic):
		return nil, h, none, kerr.UnsupportedForMessageFormat.Code, err.Error()
	case errors.Is(err, batch.ErrCorrupt):
		return nil, h, none, kerr.CorruptMessage.Code, err.Error()
	case err != nil:
		return nil, h, none, kerr.InvalidRecord.Code, err.Error()
	}
	if h.IsTransactional() && !h.HasProducer() {
		return nil, h, none, kerr.InvalidRecord.Code, "a transactional batch must carry a producer id"
	}
	if h.Attributes&batch.AttrTimestampType == 0 && h.MaxTimestamp != scan.MaxTimestamp {
		h = batch.SetMaxTimestamp(b, scan.MaxTimestamp)
	}
	return b, h, scan, 0, ""
}

// checkTimestamps applies message.timestamp.before.max.ms and
// message.timestamp.after.max.ms (topicconfig.MaxTimestampBound = no bound) to
// the records of a CreateTime batch at broker time now, answering
// INVALID_TIMESTAMP when one is out of range, as Kafka checks each record. A
// missing timestamp (-1) is not checked, as in Kafka.
func checkTimestamps(s batch.Scan, before, after, now int64) (int16, string) {
	// The comparisons are written so that no bound overflows.
	if before < topicconfig.MaxTimestampBound && s.MinTimestamp < now-before {
		return kerr.InvalidTimestamp.Code, fmt.Sprintf("timestamp %d is more than message.timestamp.before.max.ms %d before the broker's time %d", s.MinTimestamp, before, now)
	}
	if after < topicconfig.MaxTimestampBound && s.MaxTimestamp > now && s.MaxTimestamp-now > after {
		return kerr.InvalidTimestamp.Code, fmt.Sprintf("timestamp %d is more than message.timestamp.after.max.ms %d after the broker's time %d", s.MaxTimestamp, after, now)
	}
	return 0, ""
}

// checkEpoch applies KIP-320's current-leader-epoch check.
func checkEpoch(current, leader int32) int16 {
	switch {
	case current < 0 || current == leader:
		return 0
	case current < leader:
		return kerr.FencedLeaderEpoch.Code
	default:
		return kerr.UnknownLeaderEpoch.Code
	}
}

// offLoop runs storage reads inline for an in-memory log and on a goroutine
// for a disk log, so the mailbox never waits on disk.
func (a *Actor) offLoop(fn func()) {
	if a.persisted {
		go fn()
		return
	}
	fn()
}

func (a *Actor) fetch(m *messages.Fetch) {
	if !a.core.Leading() {
		m.Reply(messages.FetchResult{ErrorCode: kerr.NotLeaderForPartition.Code, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1})
		return
	}
	l, hw, epoch := a.core.Log(), a.core.HighWatermark(), a.core.LeaderEpoch()
	lso := a.core.LastStable()
	res := messages.FetchResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: l.StartOffset(), LeaderEpoch: epoch}
	limit := hw
	if m.IsolationLevel == 1 {
		// read_committed: nothing at or past the last stable offset,
		// and the aborted transactions the client must skip.
		limit = lso
		for _, t := range a.core.Producers().Aborted(m.Offset, lso) {
			res.Aborted = append(res.Aborted, messages.AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset})
		}
	}
	if code := checkEpoch(m.CurrentLeaderEpoch, epoch); code != 0 {
		res.ErrorCode = code
		m.Reply(res)
		return
	}
	if m.LastFetchedEpoch >= 0 {
		e, end := EndOffsetForEpoch(l.Epochs(), epoch, l.NextOffset(), m.LastFetchedEpoch)
		if e != m.LastFetchedEpoch || end < m.Offset {
			res.Diverging, res.DivergingEpoch, res.DivergingEndOffset = true, e, end
			m.Reply(res)
			return
		}
	}
	if m.Offset < res.LogStartOffset || m.Offset > l.NextOffset() {
		res.ErrorCode = kerr.OffsetOutOfRange.Code
		m.Reply(res)
		return
	}
	if m.Offset >= limit {
		res.Records = storage.BytesRecords(nil)
		m.Reply(res)
		return
	}
	a.offLoop(func() {
		recs, err := l.Read(m.Offset, int(m.MaxBytes), limit)
		switch {
		case errors.Is(err, storage.ErrOffsetOutOfRange):
			res.ErrorCode = kerr.OffsetOutOfRange.Code
		case errors.Is(err, storage.ErrClosed):
			res.ErrorCode = kerr.NotLeaderForPartition.Code
		case err != nil:
			a.log.Error().Err(err).Int64("offset", m.Offset).Msg("read failed")
			res.ErrorCode = kerr.KafkaStorageError.Code
		default:
			res.Records = recs
		}
		m.Reply(res)
	})
}

func (a *Actor) listOffsets(m *messages.ListOffsets) {
	leader := a.core.LeaderEpoch()
	res := messages.ListOffsetsResult{Timestamp: -1, Offset: -1, LeaderEpoch: leader}
	if !a.core.Leading() {
		res.ErrorCode = kerr.NotLeaderForPartition.Code
		m.Reply(res)
		return
	}
	if code := checkEpoch(m.CurrentLeaderEpoch, leader); code != 0 {
		res.ErrorCode = code
		m.Reply(res)
		return
	}
	l, hw := a.core.Log(), a.core.HighWatermark()
	if hw < a.core.EpochStart() {
		res.ErrorCode = kerr.OffsetNotAvailable.Code
		m.Reply(res)
		return
	}
	// Offsets a lookup may answer are below the high watermark, or below
	// the last stable offset for read_committed (Kafka's
	// lastFetchableOffset): a record found at or past it is no answer.
	fetchable := hw
	if m.IsolationLevel == 1 {
		fetchable = a.core.LastStable()
	}
	epochs := l.Epochs()
	switch m.Timestamp {
	case -1: // latest
		res.Offset = fetchable
		m.Reply(res)
		return
	case -2, -4: // earliest, earliest-local
		res.Offset = l.StartOffset()
		res.LeaderEpoch = epochAt(epochs, res.Offset, leader)
		m.Reply(res)
		return
	case -5, -6: // latest tiered, earliest pending upload: nothing is tiered
		res.LeaderEpoch = -1
		m.Reply(res)
		return
	}
	a.offLoop(func() {
		if m.Timestamp == -3 { // max timestamp (KIP-734)
			ts, off, err := l.MaxTimestamp(hw)
			if err != nil {
				res.ErrorCode = kerr.KafkaStorageError.Code
			} else if off >= 0 {
				b, _, _ := l.FindTimestamp(ts, 0, hw)
				if o := offsetOfTimestamp(b, ts, true); o < fetchable {
					res.Timestamp, res.Offset = ts, o
					res.LeaderEpoch = epochAt(epochs, res.Offset, leader)
				}
			}
			m.Reply(res)
			return
		}
		if m.Timestamp < 0 {
			res.ErrorCode = kerr.InvalidRequest.Code
			m.Reply(res)
			return
		}
		// Only the batch holding the log start can hold no match, so this
		// looks at two batches at most; from grows every round.
		for from := l.StartOffset(); ; {
			b, ok, err := l.FindTimestamp(m.Timestamp, from, hw)
			if err != nil {
				res.ErrorCode = kerr.KafkaStorageError.Code
				break
			}
			if !ok {
				break
			}
			o, ts, found := recordAtOrAfter(b, m.Timestamp, from)
			if !found {
				h, _ := batch.ParseHeader(b)
				from = h.NextOffset()
				continue
			}
			if o < fetchable {
				res.Offset, res.Timestamp = o, ts
				res.LeaderEpoch = epochAt(epochs, res.Offset, leader)
			}
			break
		}
		m.Reply(res)
	})
}

func (a *Actor) offsetForLeaderEpoch(m *messages.OffsetForLeaderEpoch) {
	res := messages.OffsetForLeaderEpochResult{LeaderEpoch: -1, EndOffset: -1}
	if !a.core.Leading() {
		res.ErrorCode = kerr.NotLeaderForPartition.Code
		m.Reply(res)
		return
	}
	leader := a.core.LeaderEpoch()
	if code := checkEpoch(m.CurrentLeaderEpoch, leader); code != 0 {
		res.ErrorCode = code
		m.Reply(res)
		return
	}
	l := a.core.Log()
	res.LeaderEpoch, res.EndOffset = EndOffsetForEpoch(l.Epochs(), leader, l.NextOffset(), m.LeaderEpoch)
	m.Reply(res)
}

func (a *Actor) deleteRecords(m *messages.DeleteRecords) {
	if !a.core.Leading() || a.fenced() || a.revoked() {
		m.Reply(messages.DeleteRecordsResult{ErrorCode: kerr.NotLeaderForPartition.Code, LowWatermark: -1})
		return
	}
	l, hw := a.core.Log(), a.core.HighWatermark()
	off := m.Offset
	if off == -1 {
		off = hw
	}
	if off < 0 || off > hw {
		m.Reply(messages.DeleteRecordsResult{ErrorCode: kerr.OffsetOutOfRange.Code, LowWatermark: l.StartOffset()})
		return
	}
	if err := l.SetStartOffset(off); err != nil {
		a.log.Error().Err(err).Int64("offset", off).Msg("delete records")
		m.Reply(messages.DeleteRecordsResult{ErrorCode: kerr.KafkaStorageError.Code, LowWatermark: l.StartOffset()})
		return
	}
	a.core.Producers().TrimTxns(l.StartOffset())
	m.Reply(messages.DeleteRecordsResult{LowWatermark: l.StartOffset()})
}

// writeTxnMarker appends a transaction's commit or abort marker and answers
// once it is durable (through group commit, like an acks=all produce). A
// producer with no transaction open here gets no marker, but its epoch is
// fenced all the same, so that a zombie's late batch is refused.
func (a *Actor) writeTxnMarker(m *messages.WriteTxnMarker) {
	if code, _ := a.core.Admit(a.fenced(), a.revoked()); code != 0 {
		m.Reply(code)
		return
	}
	l, prods := a.core.Log(), a.core.Producers()
	now := a.cfg.Clock.Now().UnixMilli()
	if code := prods.MarkerRefused(m.ProducerID, m.ProducerEpoch, m.Bumped); code != 0 {
		m.Reply(code)
		return
	}
	if !prods.InTxn(m.ProducerID) {
		prods.fence(m.ProducerID, m.ProducerEpoch, now)
		m.Reply(0)
		return
	}
	b := batch.Marker(m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch, now)
	h, err := batch.ParseHeader(b)
	if err != nil {
		m.Reply(kerr.UnknownServerError.Code)
		return
	}
	epoch := a.core.LeaderEpoch()
	base := l.NextOffset()
	batch.SetBaseOffset(b, base)
	batch.SetLeaderEpoch(b, epoch)
	h.BaseOffset, h.LeaderEpoch = base, epoch
	if err := l.Append(b, h); err != nil {
		a.step(AppendFailed{})
		a.log.Error().Err(err).Int64("offset", base).Dur("retry_in", writeRetryDelay).Msg("marker append failed; writes refused until the retry")
		m.Reply(kerr.KafkaStorageError.Code)
		return
	}
	prods.Record(h)
	prods.RecordMarker(h, m.Commit, now)
	a.step(Produced{AcksAll: true, Appended: true, Marker: true, End: h.NextOffset(),
		Result: messages.ProduceResult{BaseOffset: base}, Reply: func(r messages.ProduceResult) { m.Reply(r.ErrorCode) },
		LogEnd: l.NextOffset(), Durable: l.Durable()})
}
