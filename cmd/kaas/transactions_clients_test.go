package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// checkTxnOutcome is the checker of a committed and an aborted transaction
// of n records each, "committed-<i>" and "aborted-<i>", on a 3-partition
// topic, the committed one carrying offset 5 of partition 0 for group
// topic+"-group" and the aborted one offset 7: read_committed (franz-go)
// sees every committed record exactly once and no aborted one, while
// read_uncommitted sees both (so the aborted records were written and
// filtered, not lost); the group's offset is the committed transaction's.
func checkTxnOutcome(t *testing.T, addr, topic string, n int) {
	t.Helper()
	var committed, all []string
	for i := 0; i < n; i++ {
		committed = append(committed, fmt.Sprintf("committed-%d", i))
		all = append(all, fmt.Sprintf("committed-%d", i), fmt.Sprintf("aborted-%d", i))
	}
	sort.Strings(committed)
	sort.Strings(all)
	if got := consumeIsolated(t, addr, topic, kgo.ReadCommitted(), n, 500*time.Millisecond); fmt.Sprint(got) != fmt.Sprint(committed) {
		t.Errorf("read_committed read %d records, want the %d committed ones exactly once:\n%v", len(got), n, got)
	}
	if got := consumeIsolated(t, addr, topic, kgo.ReadUncommitted(), 2*n, 500*time.Millisecond); fmt.Sprint(got) != fmt.Sprint(all) {
		t.Errorf("read_uncommitted read %d records, want both transactions' %d:\n%v", len(got), 2*n, got)
	}
	offs, err := newAdmin(t, addr).FetchOffsets(ctxT(t, 10*time.Second), topic+"-group")
	if err != nil {
		t.Fatalf("fetch offsets of %s-group: %v", topic, err)
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.Err != nil || o.At != 5 {
		t.Errorf("group %s-group offset of %s-0 = %+v (found %v), want 5 (the committed transaction's)", topic, topic, o, ok)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Partition != 0 {
			t.Errorf("group %s-group has an offset for %s-%d: %+v", topic, o.Topic, o.Partition, o)
		}
	})
}

// TestExternalKafkajsTransactions drives kafkajs's transactional producer
// (testdata/kafkajs/txn-produce.js) against a kaas process over TCP: one
// transaction with offsets committed, one aborted.
func TestExternalKafkajsTransactions(t *testing.T) {
	dir := kafkajsDir(t)
	k := startKaas(t, "--data-dir", t.TempDir())
	const n, topic = 200, "kafkajs-txn"
	res := runNode(t, dir, 60*time.Second, "txn-produce.js", k.Addr, topic, strconv.Itoa(n))
	var out struct {
		Created   bool          `json:"created"`
		Committed []kafkajsMeta `json:"committed"`
		Aborted   []kafkajsMeta `json:"aborted"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("txn-produce.js output: %v\n%s", err, res.Stdout)
	}
	checkKafkajsProduced(t, topic, out.Created, out.Committed)
	checkKafkajsProduced(t, topic, true, out.Aborted)
	checkTxnOutcome(t, k.Addr, topic, n)
}

// TestExternalSaramaTransactions drives sarama's transactional producer
// (Producer.Transaction.ID, idempotent, one request in flight) against a
// kaas process over TCP at two protocol versions: BeginTxn, SendMessages
// and AddOffsetsToTxn, then CommitTxn; the same again ended with AbortTxn.
func TestExternalSaramaTransactions(t *testing.T) {
	k := startKaas(t, "--data-dir", t.TempDir())
	for _, v := range []sarama.KafkaVersion{sarama.V2_8_0_0, sarama.V3_6_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			const n = 200
			topic := "sarama-txn-" + strings.ReplaceAll(v.String(), ".", "-")
			if _, err := newAdmin(t, k.Addr).CreateTopic(ctxT(t, 10*time.Second), 3, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			cfg := saramaConfig(v)
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Idempotent = true
			cfg.Producer.Transaction.ID = topic + "-txn"
			cfg.Net.MaxOpenRequests = 1
			cfg.Producer.Return.Successes = true
			cfg.Producer.Retry.Backoff = 100 * time.Millisecond
			cfg.Producer.Transaction.Retry.Backoff = 100 * time.Millisecond
			prod, err := sarama.NewSyncProducer([]string{k.Addr}, cfg)
			if err != nil {
				t.Fatalf("sarama.NewSyncProducer: %v", err)
			}
			defer prod.Close()
			if !prod.IsTransactional() {
				t.Fatal("the producer is not transactional")
			}
			transact := func(prefix string, offset int64, commit bool) {
				t.Helper()
				if err := prod.BeginTxn(); err != nil {
					t.Fatalf("BeginTxn: %v", err)
				}
				var msgs []*sarama.ProducerMessage
				for i := 0; i < n; i++ {
					msgs = append(msgs, &sarama.ProducerMessage{Topic: topic,
						Key: sarama.StringEncoder(fmt.Sprintf("key-%d", i%10)), Value: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i))})
				}
				if err := prod.SendMessages(msgs); err != nil {
					t.Fatalf("SendMessages (%s): %v", prefix, err)
				}
				offsets := map[string][]*sarama.PartitionOffsetMetadata{topic: {{Partition: 0, Offset: offset, LeaderEpoch: -1}}}
				if err := prod.AddOffsetsToTxn(offsets, topic+"-group"); err != nil {
					t.Fatalf("AddOffsetsToTxn (%s): %v", prefix, err)
				}
				end, what := prod.CommitTxn, "CommitTxn"
				if !commit {
					end, what = prod.AbortTxn, "AbortTxn"
				}
				if err := end(); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			transact("committed", 5, true)
			transact("aborted", 7, false)
			if st := prod.TxnStatus(); st&sarama.ProducerTxnFlagReady == 0 {
				t.Errorf("producer transaction status after the abort = %v, want ready", st)
			}
			checkTxnOutcome(t, k.Addr, topic, n)
		})
	}
}
