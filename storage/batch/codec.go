package batch

import (
	"bytes"
	"fmt"
	"sync"

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

// The codecs of Kafka's attribute bits (gzip, snappy, lz4, zstd), as
// franz-go implements them. They are the broker's one home for
// (de)compression: log compaction and topic-level recompression use them.
var (
	decompressor = kgo.DefaultDecompressor()

	compressorsMu sync.Mutex
	compressors   = map[int16]kgo.Compressor{}
)

// Codec is the compression codec of a batch header.
func (h Header) Codec() int16 { return h.Attributes & AttrCompressionMask }

// Payload returns the records section of b (header h), decompressed.
func Payload(b []byte, h Header) ([]byte, error) {
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
	out, err := decompressor.Decompress(p, kgo.CompressionCodecType(c))
	if err != nil {
		return nil, fmt.Errorf("%w: decompress (codec %d): %v", ErrCorrupt, c, err)
	}
	return out, nil
}

// Compress compresses a records section with codec c; ok is false when
// that codec is not available.
func Compress(c int16, records []byte) ([]byte, bool) {
	compressorsMu.Lock()
	cp, found := compressors[c]
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
			cp, _ = kgo.DefaultCompressor(codec)
		}
		compressors[c] = cp
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
