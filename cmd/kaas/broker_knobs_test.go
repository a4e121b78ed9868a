package main

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// brokerConfigValue is broker 0's value of a config, as DescribeConfigs
// reports it.
func brokerConfigValue(t *testing.T, adm *kadm.Client, name string) string {
	t.Helper()
	rcs, err := adm.DescribeBrokerConfigs(ctxT(t, 10*time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == name {
			return c.MaybeValue()
		}
	}
	t.Fatalf("broker 0 does not describe %s", name)
	return ""
}

// TestDeleteTopicDisabled: with --delete-topic-enable=false DeleteTopics
// refuses every topic (TOPIC_DELETION_DISABLED from v3, INVALID_REQUEST
// before, as Kafka's controller answers) and deletes nothing; the broker
// describes delete.topic.enable as false.
func TestDeleteTopicDisabled(t *testing.T) {
	_, addr, _ := startTestBroker(t, "--delete-topic-enable=false")
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "kept"); err != nil {
		t.Fatal(err)
	}
	res, err := adm.DeleteTopics(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if r := res["kept"]; r.Err != kerr.TopicDeletionDisabled {
		t.Fatalf("DeleteTopics: %v, want TOPIC_DELETION_DISABLED", r.Err)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{"kept"}
	if resp := rawRequest(t, addr, req, 2).(*kmsg.DeleteTopicsResponse); resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("DeleteTopics v2: %+v, want INVALID_REQUEST", resp.Topics[0])
	}
	td, err := adm.ListTopics(ctx, "kept")
	if err != nil || td["kept"].Err != nil {
		t.Fatalf("the topic after refused deletions: %v %v", err, td["kept"].Err)
	}
	if v := brokerConfigValue(t, adm, "delete.topic.enable"); v != "false" {
		t.Fatalf("delete.topic.enable described as %q", v)
	}
}

// TestTransactionMaxTimeout: InitProducerId asking for more than
// --transaction-max-timeout (Kafka's transaction.max.timeout.ms, 15
// minutes by default) is refused with INVALID_TRANSACTION_TIMEOUT; raised
// to an hour, Flink's default of one hour is accepted.
func TestTransactionMaxTimeout(t *testing.T) {
	init := func(addr, id string, timeout time.Duration) int16 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = int32(timeout.Milliseconds())
		return rawRequest(t, addr, req, 4).(*kmsg.InitProducerIDResponse).ErrorCode
	}
	_, byDefault, _ := startTestBroker(t)
	if code := init(byDefault, "tx-default-16m", 16*time.Minute); code != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("16 minutes under the default maximum: code %d", code)
	}
	if code := init(byDefault, "tx-default-15m", 15*time.Minute); code != 0 {
		t.Fatalf("15 minutes under the default maximum: code %d", code)
	}
	_, raised, _ := startTestBroker(t, "--transaction-max-timeout", "1h")
	if code := init(raised, "tx-flink", time.Hour); code != 0 {
		t.Fatalf("one hour under a maximum of one hour: code %d", code)
	}
	if code := init(raised, "tx-too-long", time.Hour+time.Millisecond); code != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("just over an hour: code %d", code)
	}
	if v := brokerConfigValue(t, newAdmin(t, raised), "transaction.max.timeout.ms"); v != fmt.Sprint(time.Hour.Milliseconds()) {
		t.Fatalf("transaction.max.timeout.ms described as %q", v)
	}
}

// TestConnectionsMaxIdle: a connection that sends no request for
// --connections-max-idle is closed by the broker; one that keeps asking
// is not.
func TestConnectionsMaxIdle(t *testing.T) {
	_, addr, _ := startTestBroker(t, "--connections-max-idle", "300ms")
	idle, busy := dialProbe(t, "idle", 1, addr), dialProbe(t, "busy", 1, addr)
	idle.want(idle.ask(), "answered")
	for range 10 {
		busy.want(busy.ask(), "answered")
		time.Sleep(100 * time.Millisecond)
	}
	// A second has passed since idle's request: the broker closed it.
	idle.send()
	idle.want(idle.await(10*time.Second), "closed")
	busy.want(busy.ask(), "answered")
}

// TestFetchMaxBytes: --fetch-max-bytes (Kafka's fetch.max.bytes) caps a
// Fetch answer however much the request asks, still sending its first
// batch whole; the default broker sends what the request asks.
func TestFetchMaxBytes(t *testing.T) {
	fetchAll := func(addr string) (batches, size int) {
		cl := newClient(t, addr, kgo.DefaultProduceTopic("capped"), kgo.AllowAutoTopicCreation(), producesByName())
		for i := range 8 {
			v := make([]byte, 1000+i)
			_, _ = rand.Read(v) // incompressible: each batch about 1 KiB
			if err := cl.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Value: v}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 10<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "capped"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.LogStartOffset = 10<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rawRequest(t, addr, req, 11).(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("fetch: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		for b := p.RecordBatches; len(b) >= 12; {
			n := 12 + int(binary.BigEndian.Uint32(b[8:12]))
			batches++
			b = b[min(n, len(b)):]
		}
		return batches, len(p.RecordBatches)
	}
	_, capped, _ := startTestBroker(t, "--fetch-max-bytes", "2048")
	if n, size := fetchAll(capped); n != 1 || size > 2048 {
		t.Fatalf("under fetch.max.bytes 2048: %d batches, %d bytes; want the first alone", n, size)
	}
	_, byDefault, _ := startTestBroker(t)
	if n, _ := fetchAll(byDefault); n != 8 {
		t.Fatalf("under the default fetch.max.bytes: %d batches of 8", n)
	}
	if v := brokerConfigValue(t, newAdmin(t, capped), "fetch.max.bytes"); v != "2048" {
		t.Fatalf("fetch.max.bytes described as %q", v)
	}
}

// TestProducerIDExpirationConfig: --producer-id-expiration is the static
// producer.id.expiration.ms; the dynamic broker config overrides it at
// runtime, and its value is what the partitions read at each maintenance
// (TestProducerExpirationIsReadAtEachMaintenance, actors/partition, shows
// them forget a producer by it).
func TestProducerIDExpirationConfig(t *testing.T) {
	b, addr, _ := startTestBroker(t, "--producer-id-expiration", "2h")
	adm := newAdmin(t, addr)
	if v := brokerConfigValue(t, adm, "producer.id.expiration.ms"); v != "7200000" {
		t.Fatalf("producer.id.expiration.ms described as %q, want the flag's 7200000", v)
	}
	if got := b.dynCfgs.ProducerExpiration(); got != 2*time.Hour {
		t.Fatalf("partitions read %v, want 2h", got)
	}
	v := "60000"
	if res, err := adm.AlterBrokerConfigs(ctxT(t, 10*time.Second), []kadm.AlterConfig{{Name: "producer.id.expiration.ms", Value: &v}}); err != nil || res[0].Err != nil {
		t.Fatalf("alter producer.id.expiration.ms: %v %v", err, res)
	}
	waitUntil(t, 10*time.Second, "the dynamic producer.id.expiration.ms in force", func() bool {
		return b.dynCfgs.ProducerExpiration() == time.Minute
	})
	if v := brokerConfigValue(t, adm, "producer.id.expiration.ms"); v != "60000" {
		t.Fatalf("producer.id.expiration.ms described as %q after the change, want 60000", v)
	}
}
