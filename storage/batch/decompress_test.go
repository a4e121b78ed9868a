package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/s2"
)

// xerialFrame frames raw snappy blocks of data the way the Java producer
// does, blocks of at most block bytes.
func xerialFrame(data []byte, block int) []byte {
	out := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	for len(data) > 0 {
		n := min(block, len(data))
		enc := s2.EncodeSnappy(nil, data[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(enc)))
		out = append(out, enc...)
		data = data[n:]
	}
	return out
}

func TestDecompressBounded(t *testing.T) {
	data := bytes.Repeat([]byte("kaas records "), 1<<14) // 208 KiB, compresses well
	compressed := func(c int16) []byte {
		z, ok := Compress(c, data)
		if !ok {
			t.Fatalf("codec %d unavailable", c)
		}
		return z
	}
	cases := []struct {
		name  string
		codec int16
		src   []byte
	}{
		{"gzip", CodecGzip, compressed(CodecGzip)},
		{"lz4", CodecLz4, compressed(CodecLz4)},
		{"zstd", CodecZstd, compressed(CodecZstd)},
		{"snappy", CodecSnappy, compressed(CodecSnappy)},
		{"snappy xerial", CodecSnappy, xerialFrame(data, 32<<10)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.src) >= len(data)/4 {
				t.Fatalf("%d compressed bytes: not a compressible input", len(tc.src))
			}
			got, err := decompress(tc.codec, tc.src, len(data))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("at the exact bound: %d bytes, err %v", len(got), err)
			}
			if _, err := decompress(tc.codec, tc.src, len(data)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("one byte under the output: err %v, want ErrTooLarge", err)
			}
		})
	}
}

func TestDecompressRejectsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codec int16
		src   []byte
	}{
		{"gzip garbage", CodecGzip, []byte("not gzip at all")},
		{"lz4 garbage", CodecLz4, []byte("not an lz4 frame")},
		{"zstd garbage", CodecZstd, []byte("not a zstd frame")},
		{"snappy bad block", CodecSnappy, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"xerial truncated length", CodecSnappy, append(xerialFrame([]byte("abc"), 8), 0, 0)},
		{"xerial block past the end", CodecSnappy, append(xerialFrame(nil, 8), 0, 0, 1, 0, 1, 2)},
		{"unknown codec", 7, []byte("x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := decompress(tc.codec, tc.src, MaxDecompressed); err == nil {
				t.Fatalf("decoded %d bytes from malformed input", len(out))
			}
		})
	}
}

// A batch whose records section expands past the bound is refused as
// invalid (INVALID_RECORD on produce), not decoded into memory; within it,
// the same batch decodes.
func TestPayloadRefusesDecompressionBomb(t *testing.T) {
	zeros := make([]byte, 4<<20)
	for _, c := range []int16{CodecGzip, CodecSnappy, CodecLz4, CodecZstd} {
		z, ok := Compress(c, zeros)
		if !ok {
			t.Fatalf("codec %d unavailable", c)
		}
		h := Header{Attributes: c, Length: int32(HeaderSize - LengthPrefix + len(z))}
		b := append(make([]byte, HeaderSize), z...)
		if _, err := payload(b, h, 1<<20); !errors.Is(err, ErrInvalid) || !errors.Is(err, ErrTooLarge) {
			t.Errorf("codec %d: %d compressed bytes expanding to %d over a 1 MiB bound: err %v", c, len(z), len(zeros), err)
		}
		if out, err := Payload(b, h); err != nil || len(out) != len(zeros) {
			t.Errorf("codec %d under MaxDecompressed: %d bytes, err %v", c, len(out), err)
		}
	}
}
