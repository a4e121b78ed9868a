package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressed bounds the records section of one batch once
// decompressed. Kafka streams a compressed batch record by record; the
// broker here holds the section whole (recompression, the key check of
// compacted topics, the log cleaner), so a batch of a few KiB that expands
// to gigabytes would otherwise cost that much memory. 128 MiB is 128 times
// Kafka's default max.message.bytes.
const MaxDecompressed = 128 << 20

// ErrTooLarge means a batch's records decompress to more than the bound.
var ErrTooLarge = errors.New("records decompress to more than the broker's bound")

// xerialMagic starts snappy data framed the way the Java producer frames
// it (xerial snappy-java): the magic, two 4-byte versions, then blocks of
// a big-endian length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// zstdDecoder decodes whole frames; DecodeAll is safe for concurrent use,
// and the max-memory option bounds both a frame's declared size and what
// it actually produces.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(MaxDecompressed))
})

var (
	gzipReaders sync.Pool // *gzip.Reader
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
)

// decompress returns src decoded with codec c, refusing (ErrTooLarge)
// output over limit bytes before it is all allocated.
func decompress(c int16, src []byte, limit int) ([]byte, error) {
	switch c {
	case CodecGzip, CodecLz4:
		r, done, err := decompressing(c, src)
		if err != nil {
			return nil, err
		}
		defer done()
		return readLimited(r, limit)
	case CodecSnappy:
		if len(src) >= xerialHeaderSize && bytes.HasPrefix(src, xerialMagic) {
			return xerialDecode(src[xerialHeaderSize:], limit)
		}
		return snappyBlock(nil, src, limit)
	case CodecZstd:
		d, err := zstdDecoder()
		if err != nil {
			return nil, err
		}
		out, err := d.DecodeAll(src, nil)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > limit {
			return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
		}
		return out, err
	}
	return nil, fmt.Errorf("unknown compression codec %d", c)
}

// readLimited reads r to its end, refusing more than limit bytes.
func readLimited(r io.Reader, limit int) ([]byte, error) {
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
	}
	return out.Bytes(), nil
}

// snappyBlock appends the raw snappy block src to dst, checking the
// length its header declares against what dst may still grow by.
func snappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n > limit-len(dst) {
		return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
	}
	dst = slices.Grow(dst, n)
	if _, err := s2.Decode(dst[len(dst):len(dst)+n], src); err != nil {
		return nil, err
	}
	return dst[:len(dst)+n], nil
}

// xerialDecode decodes the blocks after a xerial header.
func xerialDecode(src []byte, limit int) ([]byte, error) {
	var out []byte
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, errors.New("xerial snappy: truncated block length")
		}
		size := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(size) > uint64(len(src)) {
			return nil, errors.New("xerial snappy: block longer than the data")
		}
		var err error
		if out, err = snappyBlock(out, src[:size], limit); err != nil {
			return nil, err
		}
		src = src[size:]
	}
	return out, nil
}

// Decompress decodes src compressed with codec c (the record batch's codec
// numbers, which KIP-714's telemetry pushes use too), refusing output over
// limit bytes (ErrTooLarge).
func Decompress(c int16, src []byte, limit int) ([]byte, error) { return decompress(c, src, limit) }
