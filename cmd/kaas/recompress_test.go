package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/storage/batch"
)

// TestTopicCompressionType: topics with compression.type gzip (set at
// CreateTopics), lz4 (AlterConfigs) and uncompressed
// (IncrementalAlterConfigs) get uncompressed and zstd batches from
// idempotent franz-go producers. DescribeConfigs reports each codec; a raw
// Fetch shows every stored batch carries the topic's codec with its
// producer id kept; franz-go and kcat read every record back intact, in
// order.
func TestTopicCompressionType(t *testing.T) {
	_, addr, _ := startTestBroker(t, "--data-dir", t.TempDir())
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 60*time.Second)
	topics := map[string]int8{"recompress-gzip": 1, "recompress-lz4": 3, "recompress-plain": 0}
	if r, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{"compression.type": sp("gzip")}, "recompress-gzip"); err != nil || r["recompress-gzip"].Err != nil {
		t.Fatalf("create: %v %+v", err, r)
	}
	if r, err := adm.CreateTopics(ctx, 1, 1, nil, "recompress-lz4", "recompress-plain"); err != nil || r.Error() != nil {
		t.Fatalf("create: %v %v", err, r.Error())
	}
	if r, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "compression.type", Value: sp("lz4")}}, "recompress-lz4"); err != nil || r[0].Err != nil {
		t.Fatalf("AlterConfigs: %v %+v", err, r)
	}
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "compression.type", Value: sp("uncompressed")}}, "recompress-plain"); err != nil || r[0].Err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v %+v", err, r)
	}
	dc, err := adm.DescribeTopicConfigs(ctx, "recompress-gzip", "recompress-lz4", "recompress-plain")
	if err != nil {
		t.Fatal(err)
	}
	names := map[int8]string{0: "uncompressed", 1: "gzip", 3: "lz4"}
	for _, rc := range dc {
		for _, c := range rc.Configs {
			if c.Key == "compression.type" && c.MaybeValue() != names[topics[rc.Name]] {
				t.Fatalf("DescribeConfigs %s: compression.type=%q", rc.Name, c.MaybeValue())
			}
		}
	}

	plain := newClient(t, addr, kgo.ProducerBatchCompression(kgo.NoCompression()))
	zstd := newClient(t, addr, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	const perRound = 50
	for topic, codec := range topics {
		var want []consumed
		for round, cl := range []*kgo.Client{plain, zstd, plain, zstd} {
			var recs []*kgo.Record
			for i := range perRound {
				k, v := fmt.Sprintf("k-%d-%d", round, i), fmt.Sprintf("value %d of round %d, compressible compressible compressible", i, round)
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)})
				want = append(want, consumed{Offset: int64(len(want)), Key: k, Value: v})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("%s: produce round %d: %v", topic, round, err)
			}
		}
		batches := rawBatches(t, addr, topic, 0)
		if len(batches) < 4 {
			t.Fatalf("%s: %d stored batches, want at least 4", topic, len(batches))
		}
		for _, b := range batches {
			if got := b.Attributes & 7; got != int16(codec) {
				t.Fatalf("%s: batch at %d stored with codec %d, want %d", topic, b.FirstOffset, got, codec)
			}
			if b.ProducerID < 0 || b.FirstSequence < 0 {
				t.Fatalf("%s: batch at %d lost its producer id/sequence: %d/%d", topic, b.FirstOffset, b.ProducerID, b.FirstSequence)
			}
		}

		cons := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []consumed
		for len(got) < len(want) {
			fs := cons.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("%s: franz-go fetch: %v", topic, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				got = append(got, consumed{Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)})
			})
		}
		checkReadBack(t, topic+" franz-go", got, want)

		requireTool(t, "kcat")
		checkReadBack(t, topic+" kcat", kcatConsume(t, addr, topic), want)
	}
}

func checkReadBack(t *testing.T, who string, got, want []consumed) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: read %d records, want %d", who, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: record %d is %+v, want %+v", who, i, got[i], want[i])
		}
	}
}

// TestDecompressionBombRefused: a zstd batch of a few KiB whose one record
// decompresses past the broker's 128 MiB bound is refused INVALID_RECORD by
// every topic (every produced batch has its records read): one that
// recompresses, a compacted one and one with compression.type=producer;
// and the broker keeps serving.
func TestDecompressionBombRefused(t *testing.T) {
	_, addr, _ := startTestBroker(t)
	topics := []string{"bomb-lz4", "bomb-compact", "bomb-producer"}
	createTopic(t, addr, topics[0], 1, map[string]*string{"compression.type": sp("lz4")})
	createTopic(t, addr, topics[1], 1, map[string]*string{"cleanup.policy": sp("compact")})
	createTopic(t, addr, topics[2], 1, nil)
	bomb, err := batch.Recompress(batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1,
		Keys: [][]byte{[]byte("k")}, Values: [][]byte{make([]byte, batch.MaxDecompressed+1)}}), batch.CodecZstd)
	if err != nil {
		t.Fatal(err)
	}
	if len(bomb) > 64<<10 {
		t.Fatalf("bomb batch is %d bytes", len(bomb))
	}
	cl := newClient(t, addr, producesByName())
	for _, topic := range topics {
		if r := rawProduce(t, cl, topic, 0, -1, bomb); r.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("%s: produce of a %d-byte batch expanding past the bound: %v, want INVALID_RECORD", topic, len(bomb), kerr.ErrorForCode(r.ErrorCode))
		}
	}
	for _, topic := range topics {
		ok := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Keys: [][]byte{[]byte("k")}, Values: [][]byte{[]byte("v")}})
		if r := rawProduce(t, cl, topic, 0, -1, ok); r.ErrorCode != 0 || r.BaseOffset != 0 {
			t.Fatalf("%s: a good batch after the refused one: %v at %d, want offset 0", topic, kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
		}
	}
}
