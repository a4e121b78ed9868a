package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawFetch sends one Fetch of topic over TCP (at the newest version both
// sides speak, so the topic goes by name and id): offsets maps the
// partitions the request names to their fetch offsets.
func rawFetch(t *testing.T, ctx context.Context, br *kgo.Broker, topic string, topicID [16]byte, id, epoch int32, offsets map[int32]int64) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 200, 1, 1<<20
	req.SessionID, req.SessionEpoch = id, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		for p := int32(0); p < 16; p++ {
			if off, ok := offsets[p]; ok {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// withRecords lists the partitions a Fetch answer carries and, for each,
// whether it holds records.
func withRecords(resp *kmsg.FetchResponse) map[int32]bool {
	got := map[int32]bool{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			got[rp.Partition] = len(rp.RecordBatches) > 0
		}
	}
	return got
}

// TestFetchSessionsOverTCP drives a fetch session by hand against a
// broker: the full fetch at epoch 0 opens it and answers every partition;
// an incremental fetch that only moves the positions answers none; after a
// produce to one partition, the next answers that partition alone, with
// its record; a fetch at epoch -1 closes the session, after which it is
// not found.
func TestFetchSessionsOverTCP(t *testing.T) {
	_, addr := testBroker(t)
	ctx := ctxT(t, 30*time.Second)
	const topic = "sessions-raw"
	if _, err := newAdmin(t, addr).CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(p int32) {
		if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(fmt.Sprint("v", p))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for p := int32(0); p < 4; p++ {
		produce(p)
	}
	cl := newClient(t, addr)
	raw, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		t.Fatal(err)
	}
	meta := raw.(*kmsg.MetadataResponse)
	br := cl.Broker(int(meta.Brokers[0].NodeID))
	var topicID [16]byte
	for _, mt := range meta.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			topicID = mt.TopicID
		}
	}

	resp := rawFetch(t, ctx, br, topic, topicID, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0})
	id := resp.SessionID
	if got := withRecords(resp); id == 0 || len(got) != 4 || !got[0] || !got[3] {
		t.Fatalf("full fetch: session %d, partitions %v; want a session and all four with records", id, got)
	}
	resp = rawFetch(t, ctx, br, topic, topicID, id, 1, map[int32]int64{0: 1, 1: 1, 2: 1, 3: 1})
	if got := withRecords(resp); resp.ErrorCode != 0 || resp.SessionID != id || len(got) != 0 {
		t.Fatalf("caught-up incremental fetch: code %d, session %d, partitions %v; want none", resp.ErrorCode, resp.SessionID, got)
	}
	produce(2)
	resp = rawFetch(t, ctx, br, topic, topicID, id, 2, nil)
	if got := withRecords(resp); len(got) != 1 || !got[2] {
		t.Fatalf("after a produce to partition 2: partitions %v; want 2 alone, with its record", got)
	}
	if rp := resp.Topics[0].Partitions[0]; rp.HighWatermark != 2 {
		t.Fatalf("partition 2: high watermark %d, want 2", rp.HighWatermark)
	}
	if resp = rawFetch(t, ctx, br, topic, topicID, id, 3, nil); resp.ErrorCode != 0 {
		t.Fatalf("epoch 3: code %d", resp.ErrorCode)
	}
	resp = rawFetch(t, ctx, br, topic, topicID, id, -1, map[int32]int64{0: 1})
	if resp.ErrorCode != 0 || resp.SessionID != 0 || len(withRecords(resp)) != 1 {
		t.Fatalf("closing full fetch: code %d, session %d, partitions %v", resp.ErrorCode, resp.SessionID, withRecords(resp))
	}
	if resp = rawFetch(t, ctx, br, topic, topicID, id, 4, nil); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: code %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode)
	}
}

// TestFranzGoConsumesInAFetchSession: franz-go's consumer (which opens
// fetch sessions unless told not to) reads every record of 64 partitions,
// exactly once and in order per partition, while records keep arriving in
// waves to a few partitions at a time, and the broker holds its session.
func TestFranzGoConsumesInAFetchSession(t *testing.T) {
	b, addr := testBroker(t)
	ctx := ctxT(t, 60*time.Second)
	const topic, partitions, waves = "sessions-franz", 64, 20
	if _, err := newAdmin(t, addr).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cons := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	next := map[int32]int64{}
	got, want := 0, 0
	for w := 0; w < waves; w++ {
		// Each wave writes to three partitions, so most of the session's
		// partitions have nothing new in most fetches.
		for i := 0; i < 3; i++ {
			p := int32((w*7 + i*13) % partitions)
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(fmt.Sprint(w))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			want++
		}
		for got < want {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("wave %d: %v (got %d of %d)", w, err, got, want)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset != next[r.Partition] {
					t.Errorf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition] = r.Offset + 1
				got++
			})
		}
	}
	if got != want {
		t.Fatalf("consumed %d records, produced %d", got, want)
	}
	if sessions, held, _ := b.srv.FetchSessionStats(); sessions < 1 || held < partitions {
		t.Fatalf("broker holds %d fetch sessions of %d partitions; want the consumer's session of %d", sessions, held, partitions)
	}
}
