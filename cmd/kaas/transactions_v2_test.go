package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// requestCounter counts the requests a client writes, by key.
type requestCounter struct {
	mu sync.Mutex
	n  map[int16]int
}

func (c *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[int16]int{}
	}
	c.n[key]++
}

func (c *requestCounter) count(key kmsg.Key) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key.Int16()]
}

// TestTransactionProtocols runs franz-go consume-transform-produce rounds
// under each transaction protocol: v2 (KIP-890 part 2, which franz-go uses
// when the broker finalizes transaction.version 2: the partition leaders and
// the group coordinator add what the transaction writes, and every end bumps
// the epoch) and the classic v1 (a client capped at Kafka 3.9's versions).
// Either way every input's output is read once in read_committed, an
// aborted round's never, and the group's committed offsets reach the end.
func TestTransactionProtocols(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
		v2   bool
	}{
		{name: "v2", v2: true},
		{name: "v1", opts: []kgo.Opt{kgo.MaxVersions(kversion.V3_9_0())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := testBroker(t, "--data-dir", t.TempDir(), "--group-initial-rebalance-delay", "0s")
			ctx := ctxT(t, 60*time.Second)
			adm := newAdmin(t, addr)
			for topic, n := range map[string]int32{"in": 2, "out": 3} {
				if _, err := adm.CreateTopic(ctx, n, 1, nil, topic); err != nil {
					t.Fatal(err)
				}
			}
			const inputs = 40
			prod := newClient(t, addr, kgo.DefaultProduceTopic("in"))
			for i := range inputs {
				if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("in-%02d", i))}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}

			counter := &requestCounter{}
			opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.TransactionalID("etl-" + tc.name),
				kgo.ConsumerGroup("etl-" + tc.name), kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond),
				kgo.RetryTimeout(10 * time.Second), kgo.FetchMaxPartitionBytes(200),
				kgo.WithHooks(counter), clientLog(t)}, tc.opts...)
			s, err := kgo.NewGroupTransactSession(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			var want []string
			aborted := false
			for len(want) < inputs {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				fs := s.PollFetches(pctx)
				cancel()
				var in []*kgo.Record
				fs.EachRecord(func(r *kgo.Record) { in = append(in, r) })
				if len(in) == 0 {
					if ctx.Err() != nil {
						t.Fatalf("transformed %d of %d inputs", len(want), inputs)
					}
					continue
				}
				if err := s.Begin(); err != nil {
					t.Fatal(err)
				}
				commit := aborted // the first round aborts
				aborted = true
				for _, r := range in {
					s.Produce(ctx, &kgo.Record{Topic: "out", Key: r.Key, Value: append([]byte("out-"), r.Value...)}, func(_ *kgo.Record, err error) {
						if err != nil && commit {
							t.Errorf("produce: %v", err)
						}
					})
				}
				committed, err := s.End(ctx, kgo.TransactionEndTry(commit))
				if err != nil {
					t.Fatalf("end: %v", err)
				}
				if committed {
					for _, r := range in {
						want = append(want, "out-"+string(r.Value))
					}
				}
			}
			sort.Strings(want)
			if got := consumeIsolated(t, addr, "out", kgo.ReadCommitted(), inputs, 300*time.Millisecond); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("read_committed = %v\nwant %v", got, want)
			}
			ends, err := adm.ListEndOffsets(ctx, "in")
			if err != nil {
				t.Fatal(err)
			}
			offs, err := adm.FetchOffsets(ctx, "etl-"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			ends.Each(func(e kadm.ListedOffset) {
				if c, ok := offs.Lookup("in", e.Partition); !ok || c.At != e.Offset {
					t.Errorf("in-%d: committed %+v, end %d", e.Partition, c, e.Offset)
				}
			})

			adds, addOffsets, ends2 := counter.count(kmsg.AddPartitionsToTxn), counter.count(kmsg.AddOffsetsToTxn), counter.count(kmsg.EndTxn)
			described, err := adm.DescribeTransactions(ctx, "etl-"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			epoch := described["etl-"+tc.name].ProducerEpoch
			t.Logf("AddPartitionsToTxn %d, AddOffsetsToTxn %d, EndTxn %d, epoch %d", adds, addOffsets, ends2, epoch)
			switch {
			case tc.v2 && (adds != 0 || addOffsets != 0 || int(epoch) < ends2):
				t.Errorf("v2: the client sent %d AddPartitionsToTxn and %d AddOffsetsToTxn; %d ends left epoch %d", adds, addOffsets, ends2, epoch)
			case !tc.v2 && (adds == 0 || addOffsets == 0 || epoch != 0):
				t.Errorf("v1: the client sent %d AddPartitionsToTxn and %d AddOffsetsToTxn; epoch %d", adds, addOffsets, epoch)
			}
		})
	}
}
