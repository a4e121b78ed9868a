package main

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/claim"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// TestClusterShareGroup: in a 3-broker cluster two share consumers fetch
// from every partition's leader and get each record once; after a broker
// is killed and its partitions move, the new leaders read the
// share-partition state from the volume: accepted records are not
// delivered again, and the records produced after the move are; every
// share-partition has its leader's claim beside its snapshot. Then,
// the group empty, AlterShareGroupOffsets moves every partition's start
// back to 0 through the group's coordinator: DescribeShareGroupOffsets
// reports every partition's lag as its end offset, the leaders, on either
// broker, drop the state they hold for the one on the volume, and every
// record is delivered again.
func TestClusterShareGroup(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, append(clusterFlags, "--share-auto-offset-reset", "earliest")...)
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	adm := kadm.NewClient(c.client())
	ctx := ctxFor(t, 30*time.Second)
	const topic, group = "share-cluster", "sg-cluster"
	waitUntil(t, 30*time.Second, "topic created", func() bool {
		resp, err := adm.CreateTopic(ctx, 6, 1, nil, topic)
		return err == nil && resp.Err == nil
	})
	waitUntil(t, 30*time.Second, "6 partitions led, 2 per broker", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == 2 && led["kaas-1"] == 2 && led["kaas-2"] == 2
	})

	var mu sync.Mutex
	seen := map[string]int{}
	acked := 0 // records whose acceptance the broker answered
	consume := func(ctx context.Context, cl *kgo.Client) {
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 100)
			fs.EachRecord(func(r *kgo.Record) {
				mu.Lock()
				seen[string(r.Key)]++
				mu.Unlock()
			})
			cl.MarkAcks(kgo.AckAccept)
			if err := cl.FlushAcks(ctx); err != nil {
				if ctx.Err() == nil {
					t.Errorf("flush acks: %v", err)
				}
				continue
			}
			mu.Lock()
			acked += fs.NumRecords()
			mu.Unlock()
		}
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	var consumers []*kgo.Client
	for range 2 {
		cl := c.client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(time.Second))
		consumers = append(consumers, cl)
		wg.Add(1)
		go func() { defer wg.Done(); consume(runCtx, cl) }()
	}
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i))})
		}
		if err := prod.ProduceSync(ctxFor(t, 60*time.Second), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	all := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) == n && acked >= n
		}
	}
	produce(0, 300)
	// Every acceptance is answered (so on the volume) before the kill.
	waitUntil(t, 60*time.Second, "300 records consumed and accepted", all(300))

	c.brokers["kaas-2"].kill()
	waitUntil(t, 60*time.Second, "every partition led by kaas-0 and kaas-1", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"]+led["kaas-1"] == 6
	})
	produce(300, 400)
	waitUntil(t, 90*time.Second, "400 records consumed", all(400))
	stop()
	wg.Wait()
	// In cluster mode each share-partition's leader claimed it.
	for p := range 6 {
		cf := claim.File{Dir: filepath.Join(c.dataDir, "__share", groupstore.DirName(group)), Name: topic + "-" + strconv.Itoa(p) + ".claim"}
		if at, ok, err := cf.Read(); !ok || err != nil || at.Version == 0 {
			t.Errorf("share-partition %d: claim %v (found %v, %v), want one of a leader's assignment file", p, at, ok, err)
		}
	}
	mu.Lock()
	for k, n := range seen {
		if n != 1 {
			t.Errorf("record %s delivered %d times, want once", k, n)
		}
	}
	seen, acked = map[string]int{}, 0
	mu.Unlock()

	for _, cl := range consumers {
		cl.Close() // leaves the group, closes its share sessions
	}
	waitUntil(t, 60*time.Second, "the share group empty", func() bool {
		d, err := adm.DescribeShareGroups(ctx, group)
		return err == nil && d[group].Err == nil && len(d[group].Members) == 0
	})
	var starts kadm.Offsets
	for p := range int32(6) {
		starts.AddOffset(topic, p, 0, -1)
	}
	waitUntil(t, 30*time.Second, "share-partition starts set to 0", func() bool {
		r, err := adm.AlterShareGroupOffsets(ctx, group, starts)
		return err == nil && r.Error() == nil
	})
	// Lag (KIP-1226): the starts at 0 and nothing in flight, each
	// share-partition's lag is its end offset; the broker answering asks
	// the leaders on the other broker for theirs.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets: %v %v", err, ends.Error())
	}
	offs, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var lags int64
	for p := range int32(6) {
		o, ok := offs[group].Offsets[topic][p]
		end, _ := ends.Lookup(topic, p)
		if !ok || o.Err != nil || o.StartOffset != 0 || o.Lag != end.Offset {
			t.Errorf("partition %d: start %d lag %d (%v, found %v), want 0 and its end offset %d", p, o.StartOffset, o.Lag, o.Err, ok, end.Offset)
		}
		lags += o.Lag
	}
	if lags != 400 {
		t.Errorf("lags add up to %d, want the 400 records", lags)
	}
	again, stopAgain := context.WithCancel(context.Background())
	defer stopAgain()
	wg.Add(1)
	go func() {
		defer wg.Done()
		consume(again, c.client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(time.Second)))
	}()
	waitUntil(t, 90*time.Second, "400 records consumed again", all(400))
	stopAgain()
	wg.Wait()
}

// TestClusterShareGroupDeadLetters: in a 2-broker cluster the records a
// share consumer rejects from both partitions of a topic, one led by each
// broker, all reach the group's one-partition dead-letter topic: the
// broker that does not lead it writes them there through the other.
func TestClusterShareGroupDeadLetters(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, append(clusterFlags, "--share-auto-offset-reset", "earliest")...)
	for _, n := range []string{"kaas-0", "kaas-1"} {
		c.start(n)
	}
	adm := kadm.NewClient(c.client())
	ctx := ctxFor(t, 60*time.Second)
	const src, dlq, group = "share-dlq-src", "dlq.share-dlq-src", "sg-cluster-dlq"
	waitUntil(t, 30*time.Second, "topics created", func() bool {
		r1, err1 := adm.CreateTopic(ctx, 2, 1, nil, src)
		r2, err2 := adm.CreateTopic(ctx, 1, 1, map[string]*string{"errors.deadletterqueue.group.enable": kmsg.StringPtr("true")}, dlq)
		ok := func(r kadm.CreateTopicResponse, err error) bool {
			return err == nil && (r.Err == nil || errors.Is(r.Err, kerr.TopicAlreadyExists))
		}
		return ok(r1, err1) && ok(r2, err2)
	})
	waitUntil(t, 30*time.Second, "the source partitions led by different brokers", func() bool {
		td, err := adm.ListTopics(ctx, src, dlq)
		if err != nil || td.Error() != nil {
			return false
		}
		p0, ok0 := td[src].Partitions[0]
		p1, ok1 := td[src].Partitions[1]
		d, ok2 := td[dlq].Partitions[0]
		return ok0 && ok1 && ok2 && p0.Leader >= 0 && p1.Leader >= 0 && d.Leader >= 0 && p0.Leader != p1.Leader
	})
	waitUntil(t, 30*time.Second, "the group's dead-letter topic set", func() bool {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = "errors.deadletterqueue.topic.name", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(dlq)
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, c.client())
		return err == nil && resp.Resources[0].ErrorCode == 0
	})
	prod := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	var recs []*kgo.Record
	for p := range int32(2) {
		for i := range 5 {
			recs = append(recs, &kgo.Record{Topic: src, Partition: p, Key: []byte(strconv.Itoa(int(p)*10 + i))})
		}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cons := c.client(kgo.ShareGroup(group), kgo.ConsumeTopics(src), kgo.FetchMaxWait(time.Second))
	rejected := map[string]bool{}
	for len(rejected) < 10 {
		fs := cons.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("rejected %d of 10 records: %v", len(rejected), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			rejected[string(r.Key)] = true
			r.Ack(kgo.AckReject)
		})
		if err := cons.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cons.Close()

	rd := c.client(kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	from := map[string]bool{}
	for len(from) < 10 {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of 10 dead letters: %v", len(from), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			h := map[string]string{}
			for _, x := range r.Headers {
				h[x.Key] = string(x.Value)
			}
			if h["__dlq.errors.group"] != group || h["__dlq.errors.topic"] != src {
				t.Errorf("dead letter with headers %v", h)
			}
			from[h["__dlq.errors.partition"]+"@"+h["__dlq.errors.offset"]] = true
		})
	}
	for p := range 2 {
		for o := range 5 {
			if k := strconv.Itoa(p) + "@" + strconv.Itoa(o); !from[k] {
				t.Errorf("no dead letter for partition %d offset %d (have %v)", p, o, from)
			}
		}
	}
}
