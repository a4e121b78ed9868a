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
// given a fresh checksum; the records section must frame exactly
// NumRecords records.
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
	if err := checkFraming(recs, h.NumRecords); err != nil {
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

// checkFraming checks that a records section holds exactly n
// length-prefixed records and nothing after them.
func checkFraming(p []byte, n int32) error {
	pos := 0
	for i := int32(0); i < n; i++ {
		// Record lengths below 64 and 8192 take one and two bytes: those
		// are read without the general varint loop (every produced batch
		// passes here).
		length := -1
		switch {
		case pos < len(p) && p[pos] < 0x80:
			u := int(p[pos])
			length, pos = u>>1^-(u&1), pos+1
		case pos+1 < len(p) && p[pos+1] < 0x80:
			u := int(p[pos]&0x7f) | int(p[pos+1])<<7
			length, pos = u>>1^-(u&1), pos+2
		case pos < len(p):
			v, k := binary.Varint(p[pos:])
			if k > 0 && v <= int64(len(p)) {
				length, pos = int(v), pos+k
			}
		}
		if length < 1 || length > len(p)-pos {
			return fmt.Errorf("%w: record %d of %d: bad length", ErrCorrupt, i, n)
		}
		pos += length
	}
	if pos != len(p) {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, len(p)-pos, n)
	}
	return nil
}
