package conn

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/batch"
)

// TestRecompressProduced: a topic's compression.type rewrites the produced
// batch; producer, unknown topics and multi-batch records pass through for
// the partition actor; an undecodable batch gets CORRUPT_MESSAGE.
func TestRecompressProduced(t *testing.T) {
	plain := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("a"), []byte("b")}})
	gzipTopic := &routing.Topic{Name: "g", Config: map[string]string{"compression.type": "gzip"}}
	producerTopic := &routing.Topic{Name: "p", Config: map[string]string{}}

	out, code, _ := recompressProduced(gzipTopic, plain)
	if h, _, err := batch.ValidateProduce(out, false); code != 0 || err != nil || h.Codec() != batch.CodecGzip {
		t.Fatalf("gzip topic: code %d err %v codec %d", code, err, h.Codec())
	}
	for name, c := range map[string]struct {
		topic   *routing.Topic
		records []byte
	}{
		"producer":     {producerTopic, plain},
		"unknown":      {nil, plain},
		"two batches":  {gzipTopic, append(append([]byte(nil), plain...), plain...)},
		"partial tail": {gzipTopic, plain[:len(plain)-1]},
	} {
		if out, code, _ := recompressProduced(c.topic, c.records); code != 0 || !bytes.Equal(out, c.records) {
			t.Fatalf("%s: code %d, records changed %v", name, code, !bytes.Equal(out, c.records))
		}
	}
	bad := append([]byte(nil), plain...)
	bad[len(bad)-1] ^= 1 // CRC no longer matches
	if _, code, msg := recompressProduced(gzipTopic, bad); code != kerr.CorruptMessage.Code || msg == "" {
		t.Fatalf("corrupt batch: code %d msg %q", code, msg)
	}
}

// TestRecompressProducedLevel: a topic's compression.zstd.level is the
// level its batches are recompressed at.
func TestRecompressProducedLevel(t *testing.T) {
	var vals [][]byte
	for i := range 300 {
		vals = append(vals, bytes.Repeat([]byte{byte('a' + i%7), byte(i), 'x', 'y'}, 40))
	}
	plain := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Values: vals})
	size := func(level string) int {
		cfg := map[string]string{"compression.type": "zstd"}
		if level != "" {
			cfg["compression.zstd.level"] = level
		}
		out, code, msg := recompressProduced(&routing.Topic{Name: "z", Config: cfg}, plain)
		if h, _, err := batch.ValidateProduce(out, false); code != 0 || err != nil || h.Codec() != batch.CodecZstd {
			t.Fatalf("level %q: code %d %s, err %v", level, code, msg, err)
		}
		return len(out)
	}
	if low, high := size("1"), size("19"); high >= low {
		t.Fatalf("zstd level 1: %d bytes, level 19: %d bytes; want level 19 smaller", low, high)
	}
	size("")
}
