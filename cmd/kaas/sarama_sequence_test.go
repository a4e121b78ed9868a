package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestSaramaOutOfOrderSequenceLogged: an idempotent batch whose sequence
// leaves a gap is refused with OUT_OF_ORDER_SEQUENCE_NUMBER and logged under
// Kafka's name for it, OutOfOrderSequenceException, which sarama's
// TestFuncIdempotentBufferedSequence looks for in the leader's log; batches in
// sequence are not logged.
func TestSaramaOutOfOrderSequenceLogged(t *testing.T) {
	k := startKaas(t)
	const topic = "sarama-sequence"
	if _, err := newAdmin(t, k.Addr).CreateTopics(ctxT(t, 10*time.Second), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	client, err := sarama.NewClient([]string{k.Addr}, saramaConfig(sarama.V3_6_0_0))
	if err != nil {
		t.Fatalf("sarama.NewClient: %v", err)
	}
	defer client.Close()
	leader, err := client.Leader(topic, 0)
	if err != nil {
		t.Fatalf("leader of %s/0: %v", topic, err)
	}
	pid, err := leader.InitProducerID(&sarama.InitProducerIDRequest{Version: 1, TransactionTimeout: time.Minute})
	if err != nil || !errors.Is(pid.Err, sarama.ErrNoError) {
		t.Fatalf("InitProducerId: %v %v", err, pid)
	}
	produce := func(seq int32) sarama.KError {
		t.Helper()
		req := &sarama.ProduceRequest{RequiredAcks: sarama.WaitForAll, Timeout: 10_000, Version: 7}
		now := time.Now()
		req.AddBatch(topic, 0, &sarama.RecordBatch{
			Version: 2, ProducerID: pid.ProducerID, ProducerEpoch: pid.ProducerEpoch, FirstSequence: seq,
			FirstTimestamp: now, MaxTimestamp: now,
			Records: []*sarama.Record{{Value: []byte(fmt.Sprintf("seq-%d", seq))}},
		})
		resp, err := leader.Produce(req)
		if err != nil {
			t.Fatalf("produce sequence %d: %v", seq, err)
		}
		block := resp.GetBlock(topic, 0)
		if block == nil {
			t.Fatalf("produce sequence %d: no answer for %s/0", seq, topic)
		}
		return block.Err
	}
	for _, seq := range []int32{0, 1} {
		if kerr := produce(seq); !errors.Is(kerr, sarama.ErrNoError) {
			t.Fatalf("sequence %d in order: %v", seq, kerr)
		}
	}
	if strings.Contains(k.Log(), "OutOfOrderSequenceException") {
		t.Fatalf("batches in sequence were logged as out of order:\n%s", k.Log())
	}
	if kerr := produce(5); !errors.Is(kerr, sarama.ErrOutOfOrderSequenceNumber) {
		t.Fatalf("sequence 5 after 1: got %v, want %v", kerr, sarama.ErrOutOfOrderSequenceNumber)
	}
	want := fmt.Sprintf(`"producer_id":%d`, pid.ProducerID)
	logged := func() bool {
		for _, line := range strings.Split(k.Log(), "\n") {
			if strings.Contains(line, "OutOfOrderSequenceException") && strings.Contains(line, want) &&
				strings.Contains(line, `"topic":"`+topic+`"`) {
				return true
			}
		}
		return false
	}
	// The answer can reach the client before the log line reaches the pipe.
	deadline := time.Now().Add(30 * time.Second)
	for !logged() {
		if time.Now().After(deadline) {
			t.Fatalf("no OutOfOrderSequenceException line for producer %d in the log:\n%s", pid.ProducerID, k.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
