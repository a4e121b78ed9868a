package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var codecNames = map[int16]string{CodecNone: "none", CodecGzip: "gzip", CodecSnappy: "snappy", CodecLz4: "lz4", CodecZstd: "zstd"}

// txnBatch is an uncompressed transactional, idempotent LogAppendTime batch
// with a leader epoch and base offset set, so every header field that
// recompression must keep differs from its default.
func txnBatch(t testing.TB, n int) []byte {
	t.Helper()
	s := Spec{BaseOffset: 40, ProducerID: 9001, ProducerEpoch: 3, BaseSequence: 17, Timestamp: 1_700_000_000_000}
	for i := range n {
		s.Keys = append(s.Keys, []byte(fmt.Sprintf("key-%d", i)))
		s.Values = append(s.Values, bytes.Repeat([]byte(fmt.Sprintf("value-%d ", i)), 8))
	}
	b := Build(s)
	SetLeaderEpoch(b, 12)
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | AttrTransactional
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	SetLogAppendTime(b, 1_700_000_000_500) // also recomputes the CRC
	return b
}

// decodeRecords reads b's records with franz-go's own batch and record
// decoders and decompressor, independently of this package.
func decodeRecords(t testing.TB, b []byte) []kmsg.Record {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg batch: %v", err)
	}
	raw := rb.Records
	if c := rb.Attributes & 7; c != 0 {
		var err error
		if raw, err = kgo.DefaultDecompressor().Decompress(raw, kgo.CompressionCodecType(c)); err != nil {
			t.Fatalf("decompress codec %d: %v", c, err)
		}
	}
	var out []kmsg.Record
	for len(raw) > 0 {
		length, n := binary.Varint(raw)
		if n <= 0 || int(length) > len(raw)-n {
			t.Fatalf("record framing")
		}
		var r kmsg.Record
		if err := r.ReadFrom(raw[:n+int(length)]); err != nil {
			t.Fatalf("record: %v", err)
		}
		out = append(out, r)
		raw = raw[n+int(length):]
	}
	return out
}

// TestRecompressEveryCodecPair: a batch of each codec rewritten to each
// codec keeps its records and every header field but the codec bits,
// length and CRC, and validates as a produced batch.
func TestRecompressEveryCodecPair(t *testing.T) {
	plain := txnBatch(t, 20)
	want := decodeRecords(t, plain)
	ph, _ := Validate(plain)
	for from := CodecNone; from <= CodecZstd; from++ {
		src, err := Recompress(plain, from)
		if err != nil {
			t.Fatalf("make %s source: %v", codecNames[from], err)
		}
		for to := CodecNone; to <= CodecZstd; to++ {
			t.Run(codecNames[from]+"->"+codecNames[to], func(t *testing.T) {
				out, err := Recompress(src, to)
				if err != nil {
					t.Fatal(err)
				}
				h, _, err := ValidateProduce(out, false)
				if err != nil {
					t.Fatalf("rewritten batch: %v", err)
				}
				if h.Codec() != to {
					t.Fatalf("codec %d, want %d", h.Codec(), to)
				}
				if from == to && !bytes.Equal(out, src) {
					t.Fatalf("same codec: batch changed")
				}
				// Every header field but the codec bits, length and CRC.
				keep := func(h Header) Header {
					h.Attributes &^= AttrCompressionMask
					h.Length, h.CRC = 0, 0
					return h
				}
				if keep(h) != keep(ph) {
					t.Fatalf("header %+v, want %+v", keep(h), keep(ph))
				}
				if !h.IsTransactional() || h.Attributes&AttrTimestampType == 0 {
					t.Fatalf("attributes %#x lost transactional or LogAppendTime", h.Attributes)
				}
				got := decodeRecords(t, out)
				if len(got) != len(want) {
					t.Fatalf("%d records, want %d", len(got), len(want))
				}
				for i := range want {
					g, w := got[i], want[i]
					if !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) || g.OffsetDelta != w.OffsetDelta || g.TimestampDelta64 != w.TimestampDelta64 {
						t.Fatalf("record %d: %+v, want %+v", i, g, w)
					}
				}
			})
		}
	}
}

// TestRecompressLeavesControlBatches: a transaction marker is never
// rewritten, whatever the topic's codec.
func TestRecompressLeavesControlBatches(t *testing.T) {
	m := Marker(5, 1, true, 2, 1000)
	for c := CodecNone; c <= CodecZstd; c++ {
		out, err := Recompress(m, c)
		if err != nil || !bytes.Equal(out, m) {
			t.Fatalf("codec %d: marker changed (%v)", c, err)
		}
	}
}

// TestRecompressRefusesBadInput: a bad batch is refused with the error the
// produce path maps to Kafka's code for it (ErrCorrupt: CORRUPT_MESSAGE for
// a bad CRC or payload, ErrInvalid: INVALID_RECORD for bad records), never
// given a fresh CRC.
func TestRecompressRefusesBadInput(t *testing.T) {
	plain := txnBatch(t, 3)
	gz, err := Recompress(plain, CodecGzip)
	if err != nil {
		t.Fatal(err)
	}
	// withCRC applies mut and recomputes the CRC, so only the content is bad.
	withCRC := func(b []byte, mut func([]byte) []byte) []byte {
		b = mut(append([]byte(nil), b...))
		binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LengthPrefix))
		binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
		return b
	}
	cases := []struct {
		name string
		b    []byte
		to   int16
		want error
	}{
		{"crc flipped", func() []byte { b := append([]byte(nil), plain...); b[len(b)-1] ^= 1; return b }(), CodecZstd, ErrCorrupt},
		{"garbage gzip payload", withCRC(gz, func(b []byte) []byte { return append(b[:HeaderSize], []byte("not gzip at all")...) }), CodecNone, ErrCorrupt},
		{"record count above records", withCRC(plain, func(b []byte) []byte { b[offRecordCount+3] = 4; return b }), CodecLz4, ErrInvalid},
		{"trailing bytes", withCRC(plain, func(b []byte) []byte { return append(b, 1, 2, 3) }), CodecSnappy, ErrInvalid},
		{"unknown source codec", withCRC(plain, func(b []byte) []byte { b[offAttributes+1] |= 5; return b }), CodecNone, ErrCorrupt},
		{"unknown target codec", plain, 6, ErrInvalid},
	}
	for _, c := range cases {
		if _, err := Recompress(c.b, c.to); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// BenchmarkProduceCheck compares what the produce path spends per batch
// of 100 records of ~100 bytes, in each codec: the header and CRC check
// alone (crc/, the baseline), the validation every produce gets (validate/:
// the CRC, then every record read, decompressed first), and recompression
// into a topic's codec (topics with compression.type set). Throughput is
// per byte of uncompressed records.
// Run: go test -run '^$' -bench ProduceCheck -benchmem ./storage/batch
func BenchmarkProduceCheck(b *testing.B) {
	plain := txnBatch(b, 100)
	zstd, err := Recompress(plain, CodecZstd)
	if err != nil {
		b.Fatal(err)
	}
	for c := CodecNone; c <= CodecZstd; c++ {
		src, err := Recompress(plain, c)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("crc/"+codecNames[c], func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				if _, err := Validate(src); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("validate/"+codecNames[c], func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				if _, _, err := ValidateProduce(src, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	pairs := []struct {
		name string
		src  []byte
		to   int16
	}{
		{"none->gzip", plain, CodecGzip},
		{"none->lz4", plain, CodecLz4},
		{"none->zstd", plain, CodecZstd},
		{"zstd->lz4", zstd, CodecLz4},
		{"zstd->none", zstd, CodecNone},
	}
	for _, p := range pairs {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				if _, err := Recompress(p.src, p.to); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRecompressLevel: a topic's compression level reaches the codec (a
// higher level compresses compressible records smaller than the lowest)
// and the result decodes with franz-go's decoders; an unset level is the
// codec's default.
func TestRecompressLevel(t *testing.T) {
	plain := txnBatch(t, 400)
	for _, tc := range []struct {
		codec     int16
		low, high int
	}{
		{CodecGzip, 1, 9},
		{CodecLz4, 1, 9},
		{CodecZstd, 1, 19},
	} {
		t.Run(codecNames[tc.codec], func(t *testing.T) {
			low, err := RecompressLevel(plain, tc.codec, tc.low)
			if err != nil {
				t.Fatal(err)
			}
			high, err := RecompressLevel(plain, tc.codec, tc.high)
			if err != nil {
				t.Fatal(err)
			}
			if len(high) >= len(low) {
				t.Fatalf("level %d: %d bytes, level %d: %d bytes; want the higher level smaller", tc.low, len(low), tc.high, len(high))
			}
			def, err := RecompressLevel(plain, tc.codec, DefaultLevel)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range [][]byte{low, high, def} {
				if got := decodeRecords(t, b); len(got) != 400 {
					t.Fatalf("decoded %d records, want 400", len(got))
				}
			}
		})
	}
}
