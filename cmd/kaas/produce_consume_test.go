package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceConsumeAcrossPartitions(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.DefaultProduceTopic("orders"), kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 3000
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("v-%d", i)
		want[v] = true
		prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 17)), Value: []byte(v)}, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, addr, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]bool{}
	perPartition := map[int32]int64{}
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v (got %d of %d)", err, len(got), n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if got[string(r.Value)] {
				t.Errorf("duplicate %s", r.Value)
			}
			got[string(r.Value)] = true
			if last, ok := perPartition[r.Partition]; ok && r.Offset != last+1 {
				t.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, last)
			}
			perPartition[r.Partition] = r.Offset
		})
	}
	if len(perPartition) != 6 {
		t.Errorf("records landed in %d partitions, want 6", len(perPartition))
	}
}
