package main

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// __consumer_offsets is shown as Kafka shows it (internal, 50 partitions)
// and refuses what Kafka refuses a client: regex consumers skip it, admin
// listings mark it, and writes, deletes, growth and config changes fail.
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
	// Reads are refused with a final error.
	// (kadm turns the per-partition code into the call's error.)
	if _, err := adm.ListEndOffsets(ctx, offsets); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("list offsets of %s: %v, want TOPIC_AUTHORIZATION_FAILED", offsets, err)
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
	// Fetch by hand: TOPIC_AUTHORIZATION_FAILED per partition.
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
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch %s: code %d", offsets, code)
	}
}
