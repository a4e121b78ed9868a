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
	besideKIP848(t, "kjs-mixed", func(addr, topic string, n int) []consumed {
		res := runNode(t, dir, 60*time.Second, "mixed-group.js", addr, topic, fmt.Sprint(n))
		var out struct {
			Consumed []consumed `json:"consumed"`
		}
		if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
			t.Fatalf("kafkajs output %q: %v", res.Stdout, err)
		}
		return out.Consumed
	})
}

// TestExternalPlatformaticBesideKIP848: the same with @platformatic/kafka's
// own KIP-848 consumer joining. (Its classic member cannot join a KIP-848
// group: its subscription metadata says version 1 but carries version 0's
// fields only, and the coordinator, which reads it to assign, answers
// INCONSISTENT_GROUP_PROTOCOL.)
func TestExternalPlatformaticBesideKIP848(t *testing.T) {
	besideKIP848(t, "pk-mixed", func(addr, topic string, n int) []consumed {
		var out struct {
			Consumed []consumed `json:"consumed"`
		}
		runPlatformatic(t, 60*time.Second, "mixed-group.mjs", &out, addr, topic, fmt.Sprint(n), "consumer")
		return out.Consumed
	})
}

// besideKIP848 runs a franz-go KIP-848 consumer of group kaas-mixed-<topic>
// while a producer writes; join runs another client's consumer of that
// group until it has read at least n records, committing each, and returns
// what it read. Every record must be processed once, by one of them.
func besideKIP848(t *testing.T, topic string, join func(addr, topic string, n int) []consumed) {
	_, addr := testBroker(t)
	group := "kaas-mixed-" + topic
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

	// The producer writes on while the other consumer joins, reads at
	// least 50 records and leaves.
	stop, stopped := make(chan struct{}), make(chan struct{})
	var stopOnce sync.Once
	stopProducing := func() {
		stopOnce.Do(func() { close(stop) })
		<-stopped
	}
	// If join fails the test, the producer must still end before the
	// test does: it reports to t.
	t.Cleanup(stopProducing)
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
	joined := join(addr, topic, 50)
	stopProducing()
	if len(joined) < 50 {
		t.Fatalf("the joining consumer read %d records, want at least 50", len(joined))
	}
	for _, c := range joined {
		led.add("joined", &kgo.Record{Value: []byte(c.Value), Partition: c.Partition, Offset: c.Offset})
	}
	typeIs("consumer")
	if err := produce(100); err != nil {
		t.Fatal(err)
	}
	atLeast(produced())
	m.leave()

	checkProcessedOnce(t, ctx, adm, led, group, topic, int(produced()))
}
