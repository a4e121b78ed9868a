package batch

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka's codec numbers (the attribute's low three bits).
const (
	CodecNone   int16 = 0
	CodecGzip   int16 = 1
	CodecSnappy int16 = 2
	CodecLz4    int16 = 3
	CodecZstd   int16 = 4
)

// The compressors of Kafka's attribute bits (gzip, snappy, lz4, zstd), as
// franz-go implements them, by codec and level; decompression, bounded, is
// in decompress.go. Together they are the broker's one home for
// (de)compression: log compaction and topic-level recompression use them.
var (
	compressorsMu sync.Mutex
	compressors   = map[compressorKey]kgo.Compressor{}
)

// Codec is the compression codec of a batch header.
func (h Header) Codec() int16 { return h.Attributes & AttrCompressionMask }

// Payload returns the records section of b (header h), decompressed; a
// section that decompresses to more than MaxDecompressed is ErrInvalid
// (ErrTooLarge).
func Payload(b []byte, h Header) ([]byte, error) {
	return payload(b, h, MaxDecompressed)
}

func payload(b []byte, h Header, limit int) ([]byte, error) {
	if h.Size() > len(b) {
		return nil, fmt.Errorf("%w: batch truncated", ErrCorrupt)
	}
	p := b[HeaderSize:h.Size()]
	c := h.Codec()
	if c == CodecNone {
		return p, nil
	}
	if c > CodecZstd {
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, c)
	}
	out, err := decompress(c, p, limit)
	if errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: decompress (codec %d): %v", ErrCorrupt, c, err)
	}
	return out, nil
}

// DefaultLevel asks for a codec's default level (franz-go's: gzip's
// default, lz4's fastest, zstd's default).
const DefaultLevel = math.MinInt

// Compress compresses a records section with codec c at its default
// level; ok is false when that codec is not available.
func Compress(c int16, records []byte) ([]byte, bool) {
	return CompressLevel(c, DefaultLevel, records)
}

// CompressLevel compresses a records section with codec c at level, a
// Kafka topic's compression.<codec>.level (gzip -1..9, lz4 1..17, zstd
// -131072..22; DefaultLevel for the codec's default); ok is false when
// the codec is not available.
func CompressLevel(c int16, level int, records []byte) ([]byte, bool) {
	key := compressorKey{c, kgoLevel(c, level)}
	compressorsMu.Lock()
	cp, found := compressors[key]
	if !found {
		var codec kgo.CompressionCodec
		switch c {
		case CodecGzip:
			codec = kgo.GzipCompression()
		case CodecSnappy:
			codec = kgo.SnappyCompression()
		case CodecLz4:
			codec = kgo.Lz4Compression()
		case CodecZstd:
			codec = kgo.ZstdCompression()
		}
		if c >= CodecGzip && c <= CodecZstd {
			cp, _ = kgo.DefaultCompressor(codec.WithLevel(key.level))
		}
		compressors[key] = cp
	}
	compressorsMu.Unlock()
	if cp == nil {
		return nil, false
	}
	var buf bytes.Buffer
	out, used := cp.Compress(&buf, records)
	if int16(used) != c {
		return nil, false
	}
	return append([]byte(nil), out...), true
}

// compressorKey is a codec at a franz-go level (0: its default).
type compressorKey struct {
	codec int16
	level int
}

// kgoLevel maps a Kafka compression level to franz-go's for codec c:
// gzip levels are gzip's; Kafka's lz4 levels 1-17 are lz4 HC levels, of
// which the lz4 library franz-go uses has 1-9 (higher ones are its 9);
// zstd levels go through zstd's own level mapping. 0 is the default.
func kgoLevel(c int16, level int) int {
	if level == DefaultLevel {
		return 0
	}
	switch c {
	case CodecGzip:
		if level == -1 {
			return 0
		}
		return level
	case CodecLz4:
		return 1 << (7 + min(max(level, 1), 9))
	case CodecZstd:
		return int(zstd.EncoderLevelFromZstd(level))
	}
	return 0
}
