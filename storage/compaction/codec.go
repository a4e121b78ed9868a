package compaction

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/storage/batch"
)

// The codecs of Kafka's attribute bits (gzip, snappy, lz4, zstd), as
// franz-go implements them: a compressed batch is decompressed to decide
// its records and, when some go, recompressed with its own codec.
var (
	decompressor = kgo.DefaultDecompressor()

	compressorsMu sync.Mutex
	compressors   = map[int16]kgo.Compressor{}
)

func codecOf(h batch.Header) int16 { return h.Attributes & batch.AttrCompressionMask }

// payload returns the records section of b, decompressed.
func payload(b []byte, h batch.Header) ([]byte, error) {
	p := b[batch.HeaderSize:h.Size()]
	c := codecOf(h)
	if c == 0 {
		return p, nil
	}
	if c > 4 {
		return nil, fmt.Errorf("%w: unknown compression codec %d", batch.ErrCorrupt, c)
	}
	out, err := decompressor.Decompress(p, kgo.CompressionCodecType(c))
	if err != nil {
		return nil, fmt.Errorf("%w: decompress (codec %d): %v", batch.ErrCorrupt, c, err)
	}
	return out, nil
}

// compress compresses records with codec c; ok is false when that codec
// is not available (the batch is then written uncompressed).
func compress(c int16, records []byte) ([]byte, bool) {
	compressorsMu.Lock()
	cp, found := compressors[c]
	if !found {
		var codec kgo.CompressionCodec
		switch c {
		case 1:
			codec = kgo.GzipCompression()
		case 2:
			codec = kgo.SnappyCompression()
		case 3:
			codec = kgo.Lz4Compression()
		case 4:
			codec = kgo.ZstdCompression()
		}
		if c >= 1 && c <= 4 {
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
