package main

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSaramaTxnOffsetsToLiveGroup: sarama's AddOffsetsToTxn names only the
// group (TxnOffsetCommit without member or generation), as sarama's
// AddMessageToTxn does; a group with a live member takes the offsets when the
// transaction commits, as on Kafka (sarama's TestFuncTxnProduceAndCommitOffset).
func TestSaramaTxnOffsetsToLiveGroup(t *testing.T) {
	k := startKaas(t, "--group-initial-rebalance-delay", "0")
	const group, in, out = "sarama-live-group", "sarama-txn-in", "sarama-txn-out"
	if _, err := newAdmin(t, k.Addr).CreateTopics(ctxT(t, 10*time.Second), 1, 1, nil, in, out); err != nil {
		t.Fatal(err)
	}
	// A live member of a classic group (kgo's default protocol), which never
	// commits itself.
	member, err := kgo.NewClient(kgo.SeedBrokers(k.Addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	go func() {
		for !member.PollFetches(context.Background()).IsClientClosed() {
		}
	}()
	adm, err := sarama.NewClusterAdmin([]string{k.Addr}, saramaConfig(sarama.V3_6_0_0))
	if err != nil {
		t.Fatalf("sarama.NewClusterAdmin: %v", err)
	}
	defer adm.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		gs, err := adm.DescribeConsumerGroups([]string{group})
		if err == nil && len(gs) == 1 && gs[0].State == "Stable" && len(gs[0].Members) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group never became stable with one member: %v %+v", err, gs)
		}
		time.Sleep(100 * time.Millisecond)
	}

	for _, v := range []sarama.KafkaVersion{sarama.V2_1_0_0, sarama.V3_6_0_0} { // TxnOffsetCommit v2 and v3
		cfg := saramaConfig(v)
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Idempotent = true
		cfg.Producer.Transaction.ID = "sarama-live-group-txn-" + v.String()
		cfg.Net.MaxOpenRequests = 1
		cfg.Producer.Return.Successes = true
		cfg.Producer.Transaction.Retry.Max = 3
		prod, err := sarama.NewSyncProducer([]string{k.Addr}, cfg)
		if err != nil {
			t.Fatalf("%s: sarama.NewSyncProducer: %v", v, err)
		}
		want := int64(10)
		if v == sarama.V3_6_0_0 {
			want = 20
		}
		if err := prod.BeginTxn(); err != nil {
			t.Fatalf("%s: BeginTxn: %v", v, err)
		}
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: out, Value: sarama.StringEncoder("x")}); err != nil {
			t.Fatalf("%s: SendMessage: %v", v, err)
		}
		offsets := map[string][]*sarama.PartitionOffsetMetadata{in: {{Partition: 0, Offset: want, LeaderEpoch: -1}}}
		if err := prod.AddOffsetsToTxn(offsets, group); err != nil {
			t.Fatalf("%s: AddOffsetsToTxn to a live group: %v", v, err)
		}
		if err := prod.CommitTxn(); err != nil {
			t.Fatalf("%s: CommitTxn: %v", v, err)
		}
		_ = prod.Close()
		res, err := adm.ListConsumerGroupOffsets(group, map[string][]int32{in: {0}})
		if err != nil {
			t.Fatalf("%s: ListConsumerGroupOffsets: %v", v, err)
		}
		if b := res.GetBlock(in, 0); b == nil || b.Err != sarama.ErrNoError || b.Offset != want {
			t.Fatalf("%s: committed offset %+v, want %d", v, b, want)
		}
	}
}
