package batch

import (
	"encoding/binary"
	"fmt"
)

// MinRecordSize is the fewest bytes a record takes in a batch: its length,
// attributes, timestamp and offset deltas, key and value lengths and header
// count, a byte each.
const MinRecordSize = 7

// RecordsCap is how many records to make room for when decoding a batch
// that claims n records in p: no more than p can hold, so a batch that
// lies about its count costs no more memory than its bytes.
func RecordsCap(n int32, p []byte) int { return max(0, min(int(n), len(p)/MinRecordSize)) }

// RecordTS is one record's absolute offset and timestamp.
type RecordTS struct {
	Offset    int64
	Timestamp int64
}

// RecordTimestamps decodes just enough of a batch's records, decompressed
// first when compressed (as Kafka's broker reads them to answer ListOffsets
// by timestamp), to list their offsets and timestamps. A LogAppendTime
// batch reports its max timestamp for every record.
func RecordTimestamps(b []byte) ([]RecordTS, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	p, err := Payload(b, h)
	if err != nil {
		return nil, err
	}
	out := make([]RecordTS, 0, RecordsCap(h.NumRecords, p))
	for i := int32(0); i < h.NumRecords; i++ {
		length, n := binary.Varint(p)
		if n <= 0 || length < 0 || int64(len(p)-n) < length {
			return nil, fmt.Errorf("%w: record %d length", ErrCorrupt, i)
		}
		rec := p[n : n+int(length)]
		p = p[n+int(length):]
		if len(rec) < 1 {
			return nil, fmt.Errorf("%w: record %d empty", ErrCorrupt, i)
		}
		rec = rec[1:] // attributes
		tsDelta, n := binary.Varint(rec)
		if n <= 0 {
			return nil, fmt.Errorf("%w: record %d timestamp", ErrCorrupt, i)
		}
		offDelta, m := binary.Varint(rec[n:])
		if m <= 0 {
			return nil, fmt.Errorf("%w: record %d offset delta", ErrCorrupt, i)
		}
		ts := h.FirstTimestamp + tsDelta
		if h.Attributes&AttrTimestampType != 0 {
			ts = h.MaxTimestamp
		}
		out = append(out, RecordTS{Offset: h.BaseOffset + offDelta, Timestamp: ts})
	}
	return out, nil
}
