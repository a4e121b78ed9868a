package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// __consumer_offsets is shown as Kafka shows it (internal, 50 partitions),
// served for reads, and refuses what Kafka refuses a client: regex
// consumers skip it, admin listings mark it, and writes, record deletions,
// topic deletion, growth and config changes fail.
func TestInternalConsumerOffsetsTopic(t *testing.T) {
	b, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 20*time.Second)
	const offsets = "__consumer_offsets"
	createTopic(t, addr, "regex-a", 1, nil)
	createTopic(t, addr, "regex-b", 1, nil)

	all, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := all[offsets]
	if !ok || !td.IsInternal || len(td.Partitions) != 50 || td.Err != nil {
		t.Fatalf("%s in metadata: present=%v %+v", offsets, ok, td)
	}
	self := b.views.Load().Self
	for _, p := range td.Partitions.Sorted() {
		if p.Leader != self || p.Err != nil {
			t.Fatalf("%s partition %d: leader %d err %v, want %d", offsets, p.Partition, p.Leader, p.Err, self)
		}
	}
	if user, err := adm.ListTopics(ctx); err != nil || user.Has(offsets) || !user.Has("regex-a") {
		t.Fatalf("ListTopics without internal: %v %v", user.Names(), err)
	}
	// Asked by name, with auto-creation on: the internal topic, not a new one.
	named, err := adm.ListTopics(ctx, offsets)
	if err != nil || !named[offsets].IsInternal || len(named[offsets].Partitions) != 50 {
		t.Fatalf("metadata by name: %+v %v", named[offsets], err)
	}

	// A match-everything regex consumer (franz-go skips internal topics).
	cl := newClient(t, addr, kgo.ConsumeTopics(".*"), kgo.ConsumeRegex(), kgo.MetadataMinAge(100*time.Millisecond))
	waitUntil(t, 10*time.Second, "regex consumer sees the user topics", func() bool {
		cl.ForceMetadataRefresh()
		got := cl.GetConsumeTopics()
		for _, n := range got {
			if n == offsets {
				t.Fatalf("regex consumer subscribed to %s: %v", offsets, got)
			}
		}
		return len(got) == 2
	})

	// Produce: Kafka's INVALID_TOPIC_EXCEPTION.
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequestRetries(0))
	err = prod.ProduceSync(ctx, &kgo.Record{Topic: offsets, Partition: 3, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", offsets, err)
	}
	// Its offsets are listed; its records cannot be deleted (Kafka's
	// INVALID_TOPIC_EXCEPTION).
	ends, err := adm.ListEndOffsets(ctx, offsets)
	if err != nil || len(ends[offsets]) != 50 {
		t.Fatalf("list offsets of %s: %v %v", offsets, ends, err)
	}
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: offsets, Partition: 0, At: 0})
	if dr, err := adm.DeleteRecords(ctx, del); err != nil || !errors.Is(dr[offsets][0].Err, kerr.InvalidTopicException) {
		t.Fatalf("delete records of %s: %v %+v", offsets, err, dr)
	}
	// Create: it exists; delete, grow, alter: refused.
	if cr, err := adm.CreateTopic(ctx, 1, 1, nil, offsets); err == nil && !errors.Is(cr.Err, kerr.TopicAlreadyExists) || err != nil && cr.Err == nil {
		t.Fatalf("create %s: %v %v", offsets, cr.Err, err)
	}
	createTopic(t, addr, "deletable", 1, nil)
	dr, err := adm.DeleteTopics(ctx, offsets, "deletable")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dr[offsets].Err, kerr.InvalidRequest) || dr["deletable"].Err != nil {
		t.Fatalf("delete: %s=%v deletable=%v", offsets, dr[offsets].Err, dr["deletable"].Err)
	}
	if gr, err := adm.CreatePartitions(ctx, 5, offsets); err != nil || !errors.Is(gr[offsets].Err, kerr.InvalidRequest) {
		t.Fatalf("grow %s: %v %v", offsets, err, gr[offsets].Err)
	}
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: sp("1000")}}, offsets)
	if err != nil || len(ar) != 1 || !errors.Is(ar[0].Err, kerr.InvalidRequest) {
		t.Fatalf("alter %s: %v %+v", offsets, err, ar)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, offsets)
	if err != nil || rc[0].Err != nil {
		t.Fatalf("describe configs: %v %v", err, rc)
	}
	policy := ""
	for _, c := range rc[0].Configs {
		if c.Key == "cleanup.policy" {
			policy = c.MaybeValue()
		}
	}
	if policy != "compact" {
		t.Fatalf("cleanup.policy of %s: %q, want compact", offsets, policy)
	}
	// Fetch by hand, by topic id: served.
	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = offsets, td.ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes = 0, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	resp, err := fr.RequestWith(ctx, prod)
	if err != nil {
		t.Fatal(err)
	}
	if rp := resp.Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.HighWatermark < 0 {
		t.Fatalf("fetch %s: code %d, high watermark %d", offsets, rp.ErrorCode, rp.HighWatermark)
	}
}

// A KIP-848 regex subscription resolves on the broker against every topic,
// __consumer_offsets included, as Kafka 4's coordinator does (franz-go's
// Test848RegexBrokerResolves): the member is assigned its partitions and
// reads them, as on Kafka (another group's commit reaches it), beside the
// user topics the same regex matched.
func TestKIP848RegexResolvesInternalTopic(t *testing.T) {
	_, addr := testBroker(t)
	ctx := ctxT(t, 90*time.Second)
	const offsets = "__consumer_offsets"
	topics := []string{"rx-orders", "rx-orders-v2"}
	for _, n := range topics {
		createTopic(t, addr, n, 1, nil)
	}
	prod := newClient(t, addr)
	produce := func(round int) {
		t.Helper()
		for _, n := range topics {
			for i := range 10 {
				r := &kgo.Record{Topic: n, Value: []byte(fmt.Sprintf("%s-%d-%d", n, round, i))}
				if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatalf("produce to %s: %v", n, err)
				}
			}
		}
	}
	produce(0)

	cl := newClient(t, addr,
		kgo.ServerSideBalancer(), kgo.ConsumerGroup("rx-848"), kgo.ConsumeRegex(),
		// franz-go sends .*(?:(?:__consumer_offsets)|(?:rx-orders)).*, which
		// matches both user topics.
		kgo.ConsumeTopics("rx-orders", regexp.QuoteMeta(offsets)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.FetchMaxWait(250*time.Millisecond))
	seen := map[string]int{}
	// poll takes one PollFetches (waiting at most d); no error is allowed.
	poll := func(d time.Duration) {
		t.Helper()
		pctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		fs := cl.PollFetches(pctx)
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return
			}
			t.Fatalf("fetch error on %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) { seen[r.Topic]++ })
	}
	consumed := func(each int) func() bool {
		return func() bool {
			poll(time.Second)
			return seen["rx-orders"] == each && seen["rx-orders-v2"] == each
		}
	}
	waitUntil(t, 60*time.Second, "10 records of each user topic consumed", consumed(10))

	// The coordinator assigned all 50 partitions of the internal topic to the
	// one member, and the client adopted the topic.
	adm := newAdmin(t, addr)
	waitUntil(t, 30*time.Second, "the member owns every partition of "+offsets, func() bool {
		d, err := adm.DescribeConsumerGroups(ctx, "rx-848")
		if err != nil || len(d["rx-848"].Members) != 1 {
			return false
		}
		m := d["rx-848"].Members[0]
		return len(m.Assignment[offsets]) == 50 && len(m.Assignment["rx-orders"]) == 1 && len(m.Assignment["rx-orders-v2"]) == 1
	})
	waitUntil(t, 30*time.Second, "the client consumes "+offsets, func() bool {
		return slices.Contains(cl.GetConsumeTopics(), offsets)
	})
	// Another group's commit is a record of the internal topic.
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "rx-orders", Partition: 0, At: 3, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, "rx-other", commit); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	waitUntil(t, 30*time.Second, "a record of "+offsets+" read", func() bool {
		poll(time.Second)
		return seen[offsets] > 0
	})

	produce(1)
	waitUntil(t, 60*time.Second, "20 records of each user topic consumed", consumed(20))
}
