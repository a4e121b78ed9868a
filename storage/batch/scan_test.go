package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
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

// streamed walks p as walkStream does a compressed batch's records, through
// a window of w bytes.
func streamed(p []byte, n int32, firstTS int64, w int) (Scan, error) {
	c := cursor{buf: make([]byte, 0, w), src: bytes.NewReader(p)}
	s, err := walkStream(&c, n, firstTS, true)
	if c.err != nil {
		return Scan{}, c.err
	}
	return s, err
}

// agree reports how walkStream, through a window of w bytes, and
// scanRecords differ on the records section p ("" when they agree): on
// whether p is valid, the kind of error, and what they find. (Their
// messages may name different fields of a record longer than the window.)
func agree(p []byte, n int32, firstTS int64, w int) string {
	want, wantErr := scanRecords(p, n, firstTS, true)
	got, err := streamed(p, n, firstTS, w)
	switch {
	case (err == nil) != (wantErr == nil):
		return fmt.Sprintf("window %d: stream %v, in memory %v", w, err, wantErr)
	case err == nil && (got.MinTimestamp != want.MinTimestamp || got.MaxTimestamp != want.MaxTimestamp || !slices.Equal(got.Keyless, want.Keyless)):
		return fmt.Sprintf("window %d: stream %+v, in memory %+v", w, got, want)
	case err != nil && errors.Is(err, ErrInvalid) != errors.Is(wantErr, ErrInvalid):
		return fmt.Sprintf("window %d: stream %q, in memory %q", w, err, wantErr)
	}
	return ""
}

// TestWalkStreamAgrees: the walk of compressed records, through windows
// from a few bytes (every record, key and value crossing its edge) to one
// that holds them all, accepts and refuses what the walk of records held
// in memory does, and finds the same: over random record sections, valid
// and damaged (a byte changed, cut short, one byte more, a count off by one).
func TestWalkStreamAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	field := func() []byte {
		if r.IntN(5) == 0 {
			return nil
		}
		return bytes.Repeat([]byte{byte(r.IntN(256))}, r.IntN(300))
	}
	for round := range 3000 {
		n := 1 + r.IntN(6)
		var recs [][]byte
		for i := range n {
			nh := r.IntN(3)
			key, value := field(), field()
			kl, vl := int64(len(key)), int64(len(value))
			if key == nil {
				kl = -1
			}
			if value == nil {
				vl = -1
			}
			body := slices.Concat([]byte{0}, vi(int64(r.IntN(2000)-1000)), vi(int64(i)), vi(kl), key, vi(vl), value, vi(int64(nh)))
			for h := range nh {
				body = slices.Concat(body, vi(int64(h)), bytes.Repeat([]byte("h"), h), vi(-1))
			}
			recs = append(recs, append(vi(int64(len(body))), body...))
		}
		p, count := slices.Concat(recs...), int32(n)
		switch r.IntN(5) {
		case 1:
			p[r.IntN(len(p))] = byte(r.IntN(256))
		case 2:
			p = p[:r.IntN(len(p))]
		case 3:
			p = append(p, byte(r.IntN(256)))
		case 4:
			count += int32(r.IntN(3)) - 1
		}
		for _, w := range []int{16, 61, 256, 1 << 16} {
			if d := agree(p, count, 1000, w); d != "" {
				t.Fatalf("round %d, %d records: %s", round, count, d)
			}
		}
	}
}

// withRecords frames records (a records section, uncompressed) as a batch
// of n records whose payload is payload, under codec c.
func withRecords(t *testing.T, c int16, payload []byte, n int32) []byte {
	t.Helper()
	return Frame(kmsg.RecordBatch{Attributes: c, PartitionLeaderEpoch: -1, LastOffsetDelta: n - 1,
		FirstTimestamp: 1000, MaxTimestamp: 1000, ProducerID: -1, FirstSequence: -1, NumRecords: n, Records: payload})
}

// TestValidateProduceStreamsCompressedRecords: a compressed batch of a few
// KiB whose one record decompresses to 32 MiB is walked through a window:
// validating it allocates a small fraction of what it expands to, in every
// codec that can be read in pieces (xerial-framed snappy included), and a
// xerial block cut short is refused as undecodable.
func TestValidateProduceStreamsCompressedRecords(t *testing.T) {
	value := make([]byte, 32<<20)
	body := slices.Concat([]byte{0}, vi(0), vi(0), vi(1), []byte("k"), vi(int64(len(value))), value, vi(0))
	recs := append(vi(int64(len(body))), body...)
	payloads := map[string][]byte{"xerial snappy": xerialFrame(recs, 32<<10)}
	for _, c := range []int16{CodecGzip, CodecLz4, CodecZstd} {
		z, ok := Compress(c, recs)
		if !ok {
			t.Fatalf("codec %d unavailable", c)
		}
		payloads[codecNames[c]] = z
	}
	codecs := map[string]int16{"gzip": CodecGzip, "lz4": CodecLz4, "zstd": CodecZstd, "xerial snappy": CodecSnappy}
	// No collection between the warm-up and the measure: one would empty
	// the codecs' pools, and the measure would count their buffers made
	// again (lz4's two 4 MiB blocks), not the validation.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// The least of a few measures: under the race detector sync.Pool
	// drops a quarter of what is put back, so one validation may make the
	// codec's buffers again; a whole decompression would exceed the bound
	// in every measure.
	for name, payload := range payloads {
		b := withRecords(t, codecs[name], payload, 1)
		if _, _, err := ValidateProduce(b, true); err != nil { // the codec's pooled decoder, as a broker holds it
			t.Fatalf("%s: %v", name, err)
		}
		least := uint64(math.MaxUint64)
		for range 5 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, s, err := ValidateProduce(b, true)
			runtime.ReadMemStats(&after)
			if err != nil || s.MaxTimestamp != 1000 || len(s.Keyless) != 0 {
				t.Fatalf("%s: %+v %v", name, s, err)
			}
			least = min(least, after.TotalAlloc-before.TotalAlloc)
		}
		// A quarter of what the record expands to: a whole decompression
		// does not fit under it.
		if least > uint64(len(recs))/4 {
			t.Errorf("%s: validating a %d-byte batch of %d bytes of records allocated %d bytes", name, len(b), len(recs), least)
		}
	}
	cut := payloads["xerial snappy"]
	if _, _, err := ValidateProduce(withRecords(t, CodecSnappy, cut[:len(cut)-3], 1), false); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a xerial block cut short: %v, want ErrCorrupt", err)
	}
}
