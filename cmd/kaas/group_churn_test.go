package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runChurn: a producer writes while group members join and leave; every
// record must be processed, none twice, and the group's committed offsets
// must end at the log end.
func runChurn(t *testing.T, group string, protocolOpts ...kgo.Opt) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 90*time.Second)
	topic := "churn-" + group
	const partitions, total = 6, 3000
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	produced := make(chan error, 1)
	go func() {
		for i := 0; i < total; i++ {
			prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 13)), Value: []byte(fmt.Sprintf("v-%05d", i))}, nil)
			if i%20 == 19 {
				time.Sleep(20 * time.Millisecond) // ~3 s of production
			}
		}
		produced <- prod.Flush(ctx)
	}()

	led := newLedger()
	opts := append(groupClientOpts(addr, topic, group), protocolOpts...)
	var members []*member
	join := func(name string) { members = append(members, startMember(t, ctx, name, led, opts)) }
	atLeast := func(n int64) {
		waitFor(t, ctx, fmt.Sprintf("%d records processed", n), func() bool { return led.count.Load() >= n })
	}

	join("m1")
	atLeast(300)
	join("m2")
	atLeast(800)
	join("m3")
	atLeast(1300)
	members[0].leave() // m1
	atLeast(1800)
	members[1].leave() // m2
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	atLeast(total)
	members[2].leave() // m3 commits what it processed, then leaves

	led.mu.Lock()
	for _, d := range led.dups {
		t.Error(d)
	}
	for i := 0; i < total; i++ {
		if led.seen[fmt.Sprintf("v-%05d", i)] == 0 {
			t.Errorf("v-%05d never processed", i)
		}
	}
	led.mu.Unlock()

	// Committed offsets reach the end of every partition.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(topic, o.Partition)
		if !ok || c.At != o.Offset {
			t.Errorf("partition %d: committed %+v, end %d", o.Partition, c, o.Offset)
		}
		sum += o.Offset
	})
	if sum != total {
		t.Errorf("log end offsets sum to %d, want %d", sum, total)
	}
}

func TestGroupChurnEagerRange(t *testing.T) {
	runChurn(t, "eager-range", kgo.Balancers(kgo.RangeBalancer()))
}

func TestGroupChurnCooperativeSticky(t *testing.T) {
	runChurn(t, "coop-sticky", kgo.Balancers(kgo.CooperativeStickyBalancer()))
}

func TestGroupChurnKIP848Uniform(t *testing.T) {
	runChurn(t, "kip848-uniform", kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
}

func TestGroupChurnKIP848Range(t *testing.T) {
	runChurn(t, "kip848-range", kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
}
