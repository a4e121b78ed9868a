package batch

import (
	"encoding/binary"
	"fmt"
)

// Control records (transaction markers). A control batch is transactional
// and has the control attribute; its one record's key is version int16 and
// type int16 (0 abort, 1 commit), its value version int16 and the
// coordinator epoch int32. This file is the one place kaas builds and
// recognises them (the partition actor writes and indexes markers, the log
// cleaner keeps them).

// Control record types.
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

// Marker builds a commit or abort marker batch of producerID/epoch at
// timestamp ts (Unix ms); its base offset and leader epoch are set when it
// is appended, like a produced batch's.
func Marker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, ts int64) []byte {
	typ := ControlAbort
	if commit {
		typ = ControlCommit
	}
	var rec []byte
	rec = append(rec, 0)              // record attributes
	rec = binary.AppendVarint(rec, 0) // timestamp delta
	rec = binary.AppendVarint(rec, 0) // offset delta
	rec = binary.AppendVarint(rec, 4) // key length
	rec = binary.BigEndian.AppendUint16(rec, 0)
	rec = binary.BigEndian.AppendUint16(rec, uint16(typ))
	rec = binary.AppendVarint(rec, 6) // value length
	rec = binary.BigEndian.AppendUint16(rec, 0)
	rec = binary.BigEndian.AppendUint32(rec, uint32(coordinatorEpoch))
	rec = binary.AppendVarint(rec, 0) // headers

	b := make([]byte, HeaderSize, HeaderSize+len(rec)+binary.MaxVarintLen32)
	b = binary.AppendVarint(b, int64(len(rec)))
	b = append(b, rec...)
	binary.BigEndian.PutUint64(b[offBaseOffset:], 0)
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LengthPrefix))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], 0)
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(AttrTransactional|AttrControl))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0)
	binary.BigEndian.PutUint64(b[offFirstTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(producerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offRecordCount:], 1)
	binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
	return b
}

// ControlType returns the control record type of a whole control batch b
// (ControlCommit or ControlAbort; other values are other control records).
// It fails for a batch that is not a control batch or whose first record
// cannot be read.
func ControlType(b []byte) (int16, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return 0, err
	}
	if !h.IsControl() {
		return 0, fmt.Errorf("%w: not a control batch", ErrInvalid)
	}
	if h.Attributes&AttrCompressionMask != 0 || h.NumRecords < 1 || len(b) < h.Size() {
		return 0, fmt.Errorf("%w: unreadable control batch", ErrInvalid)
	}
	r := b[HeaderSize:h.Size()]
	var n int
	next := func() int64 {
		if n < 0 {
			return 0
		}
		v, k := binary.Varint(r)
		if k <= 0 {
			n = -1
			return 0
		}
		r = r[k:]
		return v
	}
	next() // record length
	if n < 0 || len(r) < 1 {
		return 0, fmt.Errorf("%w: truncated control record", ErrCorrupt)
	}
	r = r[1:] // attributes
	next()    // timestamp delta
	next()    // offset delta
	keyLen := next()
	if n < 0 || keyLen < 4 || int64(len(r)) < keyLen {
		return 0, fmt.Errorf("%w: control record key of %d bytes", ErrCorrupt, keyLen)
	}
	return int16(binary.BigEndian.Uint16(r[2:4])), nil
}
