package batch

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// vi is a zig-zag varint.
func vi(v int64) []byte { return binary.AppendVarint(nil, v) }

// record is a record's fields, each given as encoded, after a length that
// says how many bytes they take.
func record(fields ...[]byte) []byte {
	body := slices.Concat(fields...)
	return append(vi(int64(len(body))), body...)
}

// goodRecord is record i of a batch: timestamp delta tsDelta, key "k",
// value "v", no headers.
func goodRecord(i, tsDelta int64) []byte {
	return record([]byte{0}, vi(tsDelta), vi(i), vi(1), []byte("k"), vi(1), []byte("v"), vi(0))
}

// rawBatch frames records as one batch whose header counts them, first
// timestamp firstTS, compressed with codec c, CRC set.
func rawBatch(t *testing.T, c int16, firstTS int64, records ...[]byte) []byte {
	t.Helper()
	recs := slices.Concat(records...)
	if c != CodecNone {
		z, ok := Compress(c, recs)
		if !ok {
			t.Fatalf("codec %d unavailable", c)
		}
		recs = z
	}
	n := int32(len(records))
	return Frame(kmsg.RecordBatch{Attributes: c, PartitionLeaderEpoch: -1, LastOffsetDelta: n - 1,
		FirstTimestamp: firstTS, MaxTimestamp: firstTS, ProducerID: -1, FirstSequence: -1, NumRecords: n, Records: recs})
}

// TestValidateProduceReadsEveryRecord: a record whose structure is bad is
// refused (INVALID_RECORD), compressed or not, as Kafka's validation reads
// every record of a produced batch; what Kafka reads as valid passes.
func TestValidateProduceReadsEveryRecord(t *testing.T) {
	attrs, ts, key, value := []byte{0}, vi(0), slices.Concat(vi(1), []byte("k")), slices.Concat(vi(1), []byte("v"))
	cases := []struct {
		name   string
		second []byte // record 1 (record 0 is good)
		want   string // in the error; "" = valid
	}{
		{"good", goodRecord(1, 1), ""},
		{"null key, value and header value", record(attrs, ts, vi(1), vi(-1), vi(-1), vi(1), vi(1), []byte("h"), vi(-1)), ""},
		{"any negative length is null", record(attrs, ts, vi(1), vi(-7), vi(-2), vi(0)), ""},
		{"headers", record(attrs, ts, vi(1), key, value, vi(2), vi(1), []byte("a"), vi(2), []byte("xy"), vi(0), vi(0)), ""},
		{"empty", record(), "bad length"},
		{"length past the batch", append(vi(40), goodRecord(1, 1)[1:]...), "bad length"},
		{"offset delta out of order", record(attrs, ts, vi(0), key, value, vi(0)), "offset delta 0"},
		{"offset delta past the count", record(attrs, ts, vi(2), key, value, vi(0)), "offset delta 2"},
		{"key past the record", record(attrs, ts, vi(1), vi(9), []byte("k"), vi(0)), "bad key"},
		{"value past the record", record(attrs, ts, vi(1), key, vi(9), []byte("v"), vi(0)), "bad value"},
		{"negative header count", record(attrs, ts, vi(1), key, value, vi(-1)), "header count"},
		{"header count past the record", record(attrs, ts, vi(1), key, value, vi(5), vi(0), vi(0)), "header count"},
		{"null header key", record(attrs, ts, vi(1), key, value, vi(1), vi(-1), vi(0)), "header key"},
		{"header value past the record", record(attrs, ts, vi(1), key, value, vi(1), vi(0), vi(3), []byte("x")), "header value"},
		{"fields short of the length", record(attrs, ts, vi(1), key, value, vi(0), []byte{0}), "fill"},
		{"no header count", record(attrs, ts, vi(1), key, value), "header count"},
		{"unterminated varint", record(attrs, []byte{0x80, 0x80}), "timestamp delta"},
		{"only attributes", record(attrs), "timestamp delta"},
	}
	for c := CodecNone; c <= CodecZstd; c++ {
		for _, tc := range cases {
			b := rawBatch(t, c, 1000, goodRecord(0, 0), tc.second)
			_, _, err := ValidateProduce(b, false)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("codec %d, %s: %v", c, tc.name, err)
			case tc.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("codec %d, %s: %v, want ErrInvalid %q", c, tc.name, err, tc.want)
			}
			if tc.want != "" && c != CodecNone {
				// A topic's compression.type refuses it too.
				if _, err := Recompress(b, CodecNone); !errors.Is(err, ErrInvalid) {
					t.Errorf("codec %d, %s: recompressed: %v", c, tc.name, err)
				}
			}
		}
		trailing := rawBatch(t, c, 1000, goodRecord(0, 0), goodRecord(1, 0), []byte{0})
		binary.BigEndian.PutUint32(trailing[offRecordCount:], 2)
		binary.BigEndian.PutUint32(trailing[offLastOffsetDelta:], 1)
		binary.BigEndian.PutUint32(trailing[offCRC:], Checksum(trailing))
		if _, _, err := ValidateProduce(trailing, false); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "after the last") {
			t.Errorf("codec %d: a byte after the records: %v", c, err)
		}
	}
}

func TestValidateProduceRefusesAnUndecodablePayload(t *testing.T) {
	for c := CodecGzip; c <= CodecZstd; c++ {
		b := rawBatch(t, c, 1000, goodRecord(0, 0))
		b = append(b[:HeaderSize], []byte("not compressed data at all")...)
		binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LengthPrefix))
		binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
		if _, _, err := ValidateProduce(b, false); !errors.Is(err, ErrCorrupt) {
			t.Errorf("codec %d: %v, want ErrCorrupt", c, err)
		}
	}
}

// TestValidateProduceFindsTheRecordsTimestamps: the lowest and highest
// record timestamps, wherever they are in the batch; records without one
// (-1) are not the lowest.
func TestValidateProduceFindsTheRecordsTimestamps(t *testing.T) {
	for c := CodecNone; c <= CodecZstd; c++ {
		b := rawBatch(t, c, 1000, goodRecord(0, 5), goodRecord(1, -3), goodRecord(2, 10), goodRecord(3, 0))
		_, s, err := ValidateProduce(b, false)
		if err != nil || s.MinTimestamp != 997 || s.MaxTimestamp != 1010 {
			t.Errorf("codec %d: min %d max %d (%v), want 997 1010", c, s.MinTimestamp, s.MaxTimestamp, err)
		}
		b = rawBatch(t, c, -1, goodRecord(0, 0), goodRecord(1, 0))
		if _, s, err = ValidateProduce(b, false); err != nil || s.MinTimestamp != math.MaxInt64 || s.MaxTimestamp != -1 {
			t.Errorf("codec %d, no timestamps: min %d max %d (%v)", c, s.MinTimestamp, s.MaxTimestamp, err)
		}
	}
}

func TestValidateProduceListsKeylessRecords(t *testing.T) {
	keyless := func(i int64) []byte { return record([]byte{0}, vi(0), vi(i), vi(-1), vi(1), []byte("v"), vi(0)) }
	for c := CodecNone; c <= CodecZstd; c++ {
		b := rawBatch(t, c, 1000, goodRecord(0, 0), keyless(1), goodRecord(2, 0), keyless(3))
		if _, s, err := ValidateProduce(b, true); err != nil || !slices.Equal(s.Keyless, []int32{1, 3}) {
			t.Errorf("codec %d: keyless %v (%v), want [1 3]", c, s.Keyless, err)
		}
		if _, s, err := ValidateProduce(b, false); err != nil || s.Keyless != nil {
			t.Errorf("codec %d, not asked: keyless %v (%v)", c, s.Keyless, err)
		}
	}
}
