package main

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestExternalKafkajsBesideKIP848: a kafkajs consumer (the classic group
// protocol, eager) joins a group a franz-go KIP-848 consumer runs, reads its
// share while a producer writes, commits and leaves; the KIP-848 consumer
// takes its partitions back. Every record is processed once, by one of
// them, and the committed offsets end at the log end.
func TestExternalKafkajsBesideKIP848(t *testing.T) {
	dir := kafkajsDir(t)
	_, addr := testBroker(t)
	const topic, group = "kjs-mixed", "kaas-mixed-kjs-mixed"
	ctx := ctxT(t, 90*time.Second)
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// Uncompressed: kafkajs reads gzip only without a codec plugin.
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var mu sync.Mutex
	next := 0
	produce := func(n int) error {
		mu.Lock()
		defer mu.Unlock()
		var recs []*kgo.Record
		for range n {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(next % 13)), Value: []byte(fmt.Sprintf("v-%05d", next))})
			next++
		}
		return prod.ProduceSync(ctx, recs...).FirstErr()
	}
	produced := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return int64(next)
	}
	led := newLedger()
	atLeast := func(n int64) {
		waitFor(t, ctx, fmt.Sprintf("%d records processed", n), func() bool { return led.count.Load() >= n })
	}
	lister := newClient(t, addr)
	typeIs := func(want string) {
		waitFor(t, ctx, group+" listed as a "+want+" group", func() bool { return groupType(ctx, lister, group) == want })
	}

	if err := produce(100); err != nil {
		t.Fatal(err)
	}
	m := startMember(t, ctx, "kip848", led, append(groupClientOpts(addr, topic, group),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())))
	atLeast(100)
	typeIs("consumer")

	// The producer writes on while kafkajs joins, reads at least 50
	// records and leaves.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if err := produce(20); err != nil {
					t.Errorf("produce: %v", err)
					return
				}
			}
		}
	}()
	res := runNode(t, dir, 60*time.Second, "mixed-group.js", addr, topic, "50")
	close(stop)
	<-stopped
	var out struct {
		Consumed []consumed `json:"consumed"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("kafkajs output %q: %v", res.Stdout, err)
	}
	if len(out.Consumed) < 50 {
		t.Fatalf("kafkajs read %d records, want at least 50", len(out.Consumed))
	}
	for _, c := range out.Consumed {
		led.add("kafkajs", &kgo.Record{Value: []byte(c.Value), Partition: c.Partition, Offset: c.Offset})
	}
	typeIs("consumer")
	if err := produce(100); err != nil {
		t.Fatal(err)
	}
	atLeast(produced())
	m.leave()

	checkProcessedOnce(t, ctx, adm, led, group, topic, int(produced()))
}
