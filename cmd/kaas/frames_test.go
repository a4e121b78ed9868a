package main

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// frameRecordValue is record i's value: its index repeated to a length
// that varies with i, so produce frames span several pool size classes.
func frameRecordValue(producer string, i int) []byte {
	head := fmt.Sprintf("%s-%d|", producer, i)
	return bytes.Repeat([]byte(head), 1+(i*37)%(3000/len(head)))
}

// TestProduceFramesReusedOnlyAfterEveryPartitionAnswered produces through
// idempotent acks=all, acks=1 and transactional producers at once while the
// broker poisons every request frame it releases to its pool, then reads
// everything back: a partition that still used a batch's bytes after its
// frame went back (appended, queued behind a transaction's verification,
// or copied late) would store or serve poison or another request's bytes.
// Under -race the reuse of a frame by the next read also shows up as a
// race with any late reader.
func TestProduceFramesReusedOnlyAfterEveryPartitionAnswered(t *testing.T) {
	for _, mode := range []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"memory", func(*testing.T) []string { return nil }},
		{"disk", func(t *testing.T) []string { return []string{"--data-dir", t.TempDir()} }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			b, addr, _ := startTestBroker(t, mode.args(t)...)
			b.srv.Frames().Poison.Store(true)
			ctx := ctxT(t, 90*time.Second)
			const topic, n = "frames", 1500
			if _, err := newAdmin(t, addr).CreateTopic(ctx, 6, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			producers := map[string][]kgo.Opt{
				"idem":  {kgo.RequiredAcks(kgo.AllISRAcks())},
				"acks1": {kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()},
				"txn":   {kgo.TransactionalID("frames-txn"), kgo.TransactionTimeout(60 * time.Second)},
			}
			var wg sync.WaitGroup
			for name, opts := range producers {
				cl := newClient(t, addr, append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(2 * time.Millisecond)}, opts...)...)
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := produceFrames(ctx, cl, name, n); err != nil {
						t.Errorf("%s: %v", name, err)
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			cons := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			got := map[string]bool{}
			for len(got) < n*len(producers) {
				fs := cons.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatalf("poll: %v (got %d of %d)", err, len(got), n*len(producers))
				}
				fs.EachRecord(func(r *kgo.Record) {
					var name string
					var i int
					if _, err := fmt.Sscanf(string(r.Key), "%s %d", &name, &i); err != nil {
						t.Fatalf("record key %q: %v", r.Key, err)
					}
					if want := frameRecordValue(name, i); !bytes.Equal(r.Value, want) {
						t.Fatalf("record %s: value of %d bytes differs from the %d produced (starts %q)", r.Key, len(r.Value), len(want), r.Value[:min(len(r.Value), 32)])
					}
					if got[string(r.Key)] {
						t.Fatalf("record %s read twice", r.Key)
					}
					got[string(r.Key)] = true
				})
			}
			reused, released := b.srv.Frames().Stats()
			if released == 0 || reused == 0 {
				t.Fatalf("frame pool: %d released, %d reused; the produce path does not use it", released, reused)
			}
		})
	}
}

// produceFrames produces n records named producer (in transactions of 100
// for a transactional client) and waits for every acknowledgement.
func produceFrames(ctx context.Context, cl *kgo.Client, producer string, n int) error {
	txn := cl.OptValue(kgo.TransactionalID) != ""
	for start := 0; start < n; start += 100 {
		if txn {
			if err := cl.BeginTransaction(); err != nil {
				return err
			}
		}
		var failed error
		var mu sync.Mutex
		for i := start; i < min(start+100, n); i++ {
			r := &kgo.Record{Key: []byte(fmt.Sprintf("%s %d", producer, i)), Value: frameRecordValue(producer, i)}
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		if failed != nil {
			return failed
		}
		if txn {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				return err
			}
		}
	}
	return nil
}
