// Package batch validates and edits Kafka record batches (magic v2) in place.
//
// The broker's hot path decodes no record into objects: it checks the batch
// header and CRC-32C, walks every record's fields in place (as they decompress,
// through a small window, when the batch is compressed: ValidateProduce), rewrites
// the base offset and partition leader epoch (both outside the CRC), and
// appends the client's bytes verbatim, unless the topic's compression.type
// asks for another codec (Recompress). Everything here is a plain function
// over a byte slice.
package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Byte offsets of the v2 record batch header fields.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// HeaderSize is the size of the fixed v2 batch header.
	HeaderSize = 61
	// LengthPrefix is the number of bytes before the length field's coverage
	// starts (base offset + length).
	LengthPrefix = 12
)

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // 1 = LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sentinel errors; callers map them to Kafka error codes.
var (
	// ErrCorrupt means the bytes are not a well-formed batch (framing or CRC):
	// Kafka's CORRUPT_MESSAGE.
	ErrCorrupt = errors.New("corrupt record batch")
	// ErrInvalid means a well-formed batch that the broker refuses:
	// Kafka's INVALID_RECORD.
	ErrInvalid = errors.New("invalid record batch")
	// ErrUnsupportedMagic means a message format older than v2.
	ErrUnsupportedMagic = errors.New("unsupported record batch magic")
)

// Header is the decoded fixed header of one batch.
type Header struct {
	BaseOffset      int64
	Length          int32 // bytes after the length field
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	FirstTimestamp  int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	NumRecords      int32
}

// Size is the batch's total size on the wire.
func (h Header) Size() int { return int(h.Length) + LengthPrefix }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// LastSequence is the sequence number of the batch's last record (wrapping at
// MaxInt32 as Kafka does).
func (h Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	return int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) % (1 << 31))
}

// IsTransactional reports the transactional attribute.
func (h Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// IsControl reports the control attribute.
func (h Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// HasProducer reports whether the batch carries an idempotent producer id.
func (h Header) HasProducer() bool { return h.ProducerID >= 0 }

// ParseHeader decodes the header at the start of b without checking the CRC.
// b must hold at least HeaderSize bytes.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes is shorter than the %d-byte header", ErrCorrupt, len(b), HeaderSize)
	}
	h := Header{
		BaseOffset:      int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:          int32(binary.BigEndian.Uint32(b[offLength:])),
		LeaderEpoch:     int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:  int64(binary.BigEndian.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:      int32(binary.BigEndian.Uint32(b[offRecordCount:])),
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, h.Magic)
	}
	if h.Length < HeaderSize-LengthPrefix {
		return h, fmt.Errorf("%w: batch length %d is shorter than the header", ErrCorrupt, h.Length)
	}
	return h, nil
}

// Checksum computes the CRC-32C that a batch's CRC field must hold.
func Checksum(b []byte) uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// Validate checks one complete batch (exactly len(b) bytes): framing, magic,
// CRC-32C and the header's internal consistency. It is what recovery and the
// produce path both trust.
func Validate(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		return h, fmt.Errorf("%w: batch length field says %d bytes, have %d", ErrCorrupt, h.Size(), len(b))
	}
	if got := Checksum(b); got != h.CRC {
		return h, fmt.Errorf("%w: crc32c mismatch (header %08x, computed %08x)", ErrCorrupt, h.CRC, got)
	}
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 {
		return h, fmt.Errorf("%w: negative lastOffsetDelta %d or record count %d", ErrCorrupt, h.LastOffsetDelta, h.NumRecords)
	}
	return h, nil
}

// ValidateProduce checks a batch a client produced: Validate plus the rules
// Kafka applies to produced batches (records present, count consistent with
// the offset delta, no control batches), then a walk over every record
// (as they decompress when the batch is compressed) that checks each
// record's structure and finds the records' timestamps and, with keyless,
// the records without a key (Scan).
func ValidateProduce(b []byte, keyless bool) (Header, Scan, error) {
	h, err := Validate(b)
	if err != nil {
		return h, Scan{}, err
	}
	if h.NumRecords == 0 {
		return h, Scan{}, fmt.Errorf("%w: batch has no records", ErrInvalid)
	}
	// A producer's records have the offset deltas 0..n-1, as Kafka checks
	// when it decodes them.
	if h.NumRecords != h.LastOffsetDelta+1 {
		return h, Scan{}, fmt.Errorf("%w: record count %d does not match lastOffsetDelta %d", ErrInvalid, h.NumRecords, h.LastOffsetDelta)
	}
	if h.Codec() > CodecZstd {
		return h, Scan{}, fmt.Errorf("%w: unknown compression codec %d", ErrInvalid, h.Codec())
	}
	if h.IsControl() {
		return h, Scan{}, fmt.Errorf("%w: clients may not produce control batches", ErrInvalid)
	}
	if h.Codec() != CodecNone && int64(h.NumRecords)*MinRecordSize > MaxDecompressed {
		// Refused before decompressing: more records than MaxDecompressed
		// bytes can hold.
		return h, Scan{}, fmt.Errorf("%w: %d records cannot fit in the %d bytes a batch may decompress to", ErrInvalid, h.NumRecords, MaxDecompressed)
	}
	s, err := scanPayload(b, h, keyless)
	return h, s, err
}

// Split walks a byte slice of concatenated batches and returns each complete
// batch. A trailing partial batch (allowed in fetch responses) is returned as
// rest. It validates framing only, not CRCs.
func Split(b []byte) (batches [][]byte, rest []byte, err error) {
	for len(b) > 0 {
		if len(b) < LengthPrefix {
			return batches, b, nil
		}
		n := int(int32(binary.BigEndian.Uint32(b[offLength:]))) + LengthPrefix
		if n < HeaderSize {
			return batches, b, fmt.Errorf("%w: batch length %d", ErrCorrupt, n-LengthPrefix)
		}
		if n > len(b) {
			return batches, b, nil
		}
		batches = append(batches, b[:n:n])
		b = b[n:]
	}
	return batches, nil, nil
}

// SetBaseOffset rewrites the base offset in place (not covered by the CRC).
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off)) }

// SetLeaderEpoch rewrites the partition leader epoch in place (not covered by the CRC).
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime marks the batch as LogAppendTime with the given max
// timestamp and recomputes the CRC, as a broker does for topics configured
// with message.timestamp.type=LogAppendTime.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | AttrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
}

// SetMaxTimestamp rewrites a CreateTime batch's max timestamp and
// recomputes the CRC, returning the new header, as Kafka's broker sets a
// produced batch's max timestamp to its records' highest.
func SetMaxTimestamp(b []byte, ts int64) Header {
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
	h, _ := ParseHeader(b)
	return h
}
