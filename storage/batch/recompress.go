package batch

import (
	"encoding/binary"
	"fmt"
)

// Recompress returns batch b with its records compressed with codec c
// (CodecNone: stored uncompressed), as a broker does for a topic whose
// compression.type names a codec. Everything else is kept: base offset,
// leader epoch, last offset delta, timestamps, producer id, epoch and base
// sequence, and the attributes other than the codec bits; the length and
// CRC-32C are recomputed. b is returned as is when it already uses c, is a
// control batch (transaction markers are never rewritten) or holds no
// records. b's CRC is checked first so a corrupt batch is refused, not
// given a fresh checksum; its records must pass the walk a produced batch
// gets (ValidateProduce).
func Recompress(b []byte, c int16) ([]byte, error) {
	return RecompressLevel(b, c, DefaultLevel)
}

// RecompressLevel is Recompress at a codec level (CompressLevel).
func RecompressLevel(b []byte, c int16, level int) ([]byte, error) {
	if c < CodecNone || c > CodecZstd {
		return nil, fmt.Errorf("%w: unknown target compression codec %d", ErrInvalid, c)
	}
	h, err := Validate(b)
	if err != nil {
		return nil, err
	}
	if h.Codec() == c || h.IsControl() || h.NumRecords == 0 {
		return b, nil
	}
	recs, err := Payload(b, h)
	if err != nil {
		return nil, err
	}
	if _, err := scanRecords(recs, h.NumRecords, h.FirstTimestamp, false); err != nil {
		return nil, err
	}
	if c != CodecNone {
		z, ok := CompressLevel(c, level, recs)
		if !ok {
			return nil, fmt.Errorf("compress records with codec %d: codec unavailable", c)
		}
		recs = z
	}
	out := make([]byte, HeaderSize, HeaderSize+len(recs))
	copy(out, b[:HeaderSize])
	out = append(out, recs...)
	attrs := uint16(h.Attributes&^AttrCompressionMask | c)
	binary.BigEndian.PutUint16(out[offAttributes:], attrs)
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-LengthPrefix))
	binary.BigEndian.PutUint32(out[offCRC:], Checksum(out))
	return out, nil
}
