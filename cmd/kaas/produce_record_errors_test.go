package main

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kaas-project/kaas/storage/batch"
)

// TestProduceKeylessRecordErrors: a batch with records without a key sent
// to a compacted topic is refused with INVALID_RECORD and, from Produce v8,
// record_errors naming each keyless record by its index in the batch, as
// Kafka's LogValidator answers. librdkafka (its test 0011) fails only those
// records with INVALID_RECORD and the others with
// _INVALID_DIFFERENT_RECORD, so without the indexes it blames every record.
func TestProduceKeylessRecordErrors(t *testing.T) {
	_, addr, _ := startTestBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 30*time.Second)
	const topic = "compacted-keyless"
	if r, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{"cleanup.policy": sp("compact")}, topic); err != nil || r[topic].Err != nil {
		t.Fatalf("create: %v %v", err, r[topic].Err)
	}
	// The client sends the highest version it may: cap it at the one tested
	// (v12 at most, the last that names topics).
	produce := func(version int16, keys [][]byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		vs := kversion.Tip()
		vs.SetMaxKeyVersion(kmsg.Produce.Int16(), version)
		cl := newClient(t, addr, kgo.MaxVersions(vs))
		values := make([][]byte, len(keys))
		for i := range values {
			values[i] = []byte{byte('a' + i)}
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = version, -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch.Build(batch.Spec{ProducerID: -1, Timestamp: time.Now().UnixMilli(), Values: values, Keys: keys})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("produce v%d: %v", version, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("produce v%d: malformed response %+v", version, resp)
		}
		if resp.Version != version {
			t.Fatalf("sent Produce v%d, want v%d", resp.Version, version)
		}
		return resp.Topics[0].Partitions[0]
	}
	keys := [][]byte{[]byte("k0"), nil, []byte("k2"), nil, nil, []byte("k5")}
	for _, v := range []int16{8, 9, 12} {
		p := produce(v, keys)
		if p.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("v%d: error code %d, want INVALID_RECORD", v, p.ErrorCode)
		}
		var idx []int32
		for _, e := range p.ErrorRecords {
			if e.ErrorMessage == nil || *e.ErrorMessage == "" {
				t.Errorf("v%d: record error %d without a message", v, e.RelativeOffset)
			}
			idx = append(idx, e.RelativeOffset)
		}
		if want := []int32{1, 3, 4}; !slices.Equal(idx, want) {
			t.Fatalf("v%d: record errors at %v, want %v", v, idx, want)
		}
	}
	// Before v8 the response has no record errors: the code alone.
	if p := produce(7, keys); p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("v7: error code %d, want INVALID_RECORD", p.ErrorCode)
	}
	// Nothing of the refused batches was appended; a keyed batch is.
	if p := produce(9, [][]byte{[]byte("x"), []byte("y")}); p.ErrorCode != 0 || p.BaseOffset != 0 || len(p.ErrorRecords) != 0 {
		t.Fatalf("keyed batch: %+v", p)
	}
}
