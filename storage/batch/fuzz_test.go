package batch

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"
)

// FuzzClientBatch feeds what a producer may send through everything the
// broker does with a produced batch: splitting, validation, the record
// timestamps (message.timestamp checks), the control type, and the
// recompression to a topic's codec. The input's length field, magic and
// CRC are set right, so that the fuzzer explores what follows the CRC
// check. Nothing may panic, the walk of compressed records (through a small
// window) must agree with the walk of records in memory, a batch the
// validation accepts must decode
// with franz-go's decoders into what the validation found, and a
// recompressed batch must be valid and hold the same records.
func FuzzClientBatch(f *testing.F) {
	plain := Build(Spec{ProducerID: 7, ProducerEpoch: 1, BaseSequence: 3, Timestamp: 1_700_000_000_000,
		Keys: [][]byte{[]byte("k1"), nil}, Values: [][]byte{[]byte("hello"), bytes.Repeat([]byte("x"), 300)}})
	f.Add(plain, uint8(0))
	for c := CodecGzip; c <= CodecZstd; c++ {
		if z, err := Recompress(plain, c); err == nil {
			f.Add(z, uint8(0))
			f.Add(plain, uint8(c))
		}
	}
	f.Add(Marker(7, 1, true, 0, 1_700_000_000_000), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, target uint8) {
		if len(b) >= HeaderSize {
			binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LengthPrefix))
			b[offMagic] = 2
			binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
		}
		batches, _, _ := Split(b)
		for _, x := range batches {
			_, _ = ParseHeader(x)
		}
		// The walk of compressed records, through a small window, agrees
		// with the walk of records in memory.
		if h, err := ParseHeader(b); err == nil && h.Size() == len(b) && h.NumRecords >= 0 {
			if d := agree(b[HeaderSize:], h.NumRecords, h.FirstTimestamp, 16); d != "" {
				t.Fatal(d)
			}
		}
		h, scan, err := ValidateProduce(b, true)
		if err != nil {
			return
		}
		// What the broker accepts, a client can read: franz-go's decoders
		// find the records the header counts, their offsets in order,
		// their keys where the walk found them and the timestamps it found.
		recs := decodeRecords(t, b)
		if len(recs) != int(h.NumRecords) {
			t.Fatalf("%d records decoded, %d counted", len(recs), h.NumRecords)
		}
		var keyless []int32
		minTS, maxTS := int64(math.MaxInt64), int64(-1)
		for i, r := range recs {
			if r.OffsetDelta != int32(i) {
				t.Fatalf("record %d: offset delta %d", i, r.OffsetDelta)
			}
			if r.Key == nil {
				keyless = append(keyless, int32(i))
			}
			ts := h.FirstTimestamp + r.TimestampDelta64
			maxTS = max(maxTS, ts)
			if ts != -1 {
				minTS = min(minTS, ts)
			}
		}
		if !slices.Equal(keyless, scan.Keyless) || minTS != scan.MinTimestamp || maxTS != scan.MaxTimestamp {
			t.Fatalf("scan %+v; decoded: keyless %v, timestamps %d..%d", scan, keyless, minTS, maxTS)
		}
		_, _ = RecordTimestamps(b)
		_, _ = ControlType(b)
		out, err := Recompress(b, int16(target%5))
		if err != nil || h.Codec() == int16(target%5) {
			// The same codec: the batch is kept as produced.
			return
		}
		h2, err := Validate(out)
		if err != nil {
			t.Fatalf("recompressed batch invalid: %v", err)
		}
		if h2.NumRecords != h.NumRecords || h2.LastOffsetDelta != h.LastOffsetDelta || h2.BaseSequence != h.BaseSequence {
			t.Fatalf("recompressed header %+v, from %+v", h2, h)
		}
		before, err := Payload(b, h)
		if err != nil {
			t.Fatalf("the recompressed batch's source records: %v", err)
		}
		after, err := Payload(out, h2)
		if err != nil || !bytes.Equal(before, after) {
			t.Fatalf("records changed by the recompression (%v)", err)
		}
	})
}
