package main

// Real external Kafka clients — kcat (librdkafka), sarama and kafkajs —
// against a started `kaas` binary over loopback TCP. The tools are
// installed by .ci/install-test-deps.sh; a missing tool fails the test.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produced is one message a client sent, in send order.
type produced struct{ Key, Value string }

// consumed is one message a client read back.
type consumed struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
}

// keyedMessages is n messages over nKeys keys; values are unique.
func keyedMessages(prefix string, n, nKeys int, pad string) []produced {
	out := make([]produced, n)
	for i := range out {
		out[i] = produced{Key: fmt.Sprintf("key-%d", i%nKeys), Value: fmt.Sprintf("%s-%05d%s", prefix, i, pad)}
	}
	return out
}

// checkConsumed asserts that got holds every message of want exactly once,
// that each partition's offsets run 0, 1, 2, ... (the topic holds only
// these messages), that a key always lands in one partition, that each
// partition keeps send order, and (wantPartitions > 0) how many partitions
// were used.
func checkConsumed(t *testing.T, want []produced, got []consumed, wantPartitions int) {
	t.Helper()
	index := map[string]int{}
	for i, m := range want {
		index[m.Value] = i
	}
	seen := map[string]bool{}
	keyPart := map[string]int32{}
	lastIdx := map[int32]int{}
	nextOff := map[int32]int64{}
	errs := 0
	fail := func(format string, args ...any) {
		if errs++; errs <= 20 {
			t.Errorf(format, args...)
		}
	}
	byPart := map[int32][]consumed{}
	for _, m := range got {
		byPart[m.Partition] = append(byPart[m.Partition], m)
	}
	for p, ms := range byPart {
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Offset < ms[j].Offset })
		lastIdx[p] = -1
		for _, m := range ms {
			if m.Offset != nextOff[p] {
				fail("partition %d: offset %d, want %d", p, m.Offset, nextOff[p])
			}
			nextOff[p] = m.Offset + 1
			i, ok := index[m.Value]
			switch {
			case !ok:
				fail("partition %d offset %d: unexpected value %q", p, m.Offset, m.Value)
				continue
			case seen[m.Value]:
				fail("partition %d offset %d: duplicate value %q", p, m.Offset, m.Value)
				continue
			}
			seen[m.Value] = true
			if m.Key != want[i].Key {
				fail("value %q: key %q, want %q", m.Value, m.Key, want[i].Key)
			}
			if kp, ok := keyPart[m.Key]; ok && kp != p {
				fail("key %q in partitions %d and %d", m.Key, kp, p)
			}
			keyPart[m.Key] = p
			if i < lastIdx[p] {
				fail("partition %d offset %d: %q after message #%d (send order broken)", p, m.Offset, m.Value, lastIdx[p])
			}
			lastIdx[p] = i
		}
	}
	if len(seen) != len(want) {
		missing := 0
		for _, m := range want {
			if !seen[m.Value] {
				missing++
			}
		}
		t.Errorf("consumed %d distinct of %d messages (%d received, %d missing)", len(seen), len(want), len(got), missing)
	}
	if wantPartitions > 0 && len(byPart) != wantPartitions {
		t.Errorf("messages landed in %d partitions, want %d", len(byPart), wantPartitions)
	}
}

// rawBatches reads every record batch of topic/partition as stored, with a
// raw Fetch, so tests can check what the broker kept (codec, producer id,
// sequences) rather than what a client decoded.
func rawBatches(t *testing.T, addr, topic string, partition int32) []kmsg.RecordBatch {
	t.Helper()
	cl := newClient(t, addr)
	ctx := ctxT(t, 10*time.Second)
	// The client sends its highest common Fetch version (v13+ name topics
	// by id), so give both.
	td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, td[topic].Err)
	}
	var out []kmsg.RecordBatch
	offset := int64(0)
	for {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 16<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, td[topic].ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 16<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("raw fetch %s/%d@%d: %v", topic, partition, offset, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("raw fetch %s/%d: malformed response %+v", topic, partition, resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("raw fetch %s/%d@%d: error code %d", topic, partition, offset, p.ErrorCode)
		}
		b, got := p.RecordBatches, 0
		for len(b) >= 12 {
			n := 12 + int(int32(binary.BigEndian.Uint32(b[8:12])))
			if n > len(b) {
				break // partial batch at the end of the response
			}
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b[:n]); err != nil {
				t.Fatalf("raw fetch %s/%d: bad batch at offset %d: %v", topic, partition, offset, err)
			}
			out = append(out, rb)
			offset = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
			b, got = b[n:], got+1
		}
		if got == 0 || offset >= p.HighWatermark {
			if offset != p.HighWatermark {
				t.Fatalf("raw fetch %s/%d: stopped at offset %d, high watermark %d", topic, partition, offset, p.HighWatermark)
			}
			return out
		}
	}
}

// ---------------------------------------------------------------- kcat

// kcatMessage is a line of `kcat -C -J`.
type kcatMessage struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Key       *string `json:"key"`
	Payload   *string `json:"payload"`
}

// kcatAbortOn are librdkafka complaints about the broker's answers; kcat
// retries them for ever.
var kcatAbortOn = []string{"PROTOERR", "Protocol parse failure", "UNSUPPORTED"}

// kcatProduce sends msgs as "key<TAB>value" lines with `kcat -P -K\t`.
func kcatProduce(t *testing.T, addr, topic string, msgs []produced, extra ...string) runResult {
	t.Helper()
	var in strings.Builder
	for _, m := range msgs {
		in.WriteString(m.Key + "\t" + m.Value + "\n")
	}
	args := append([]string{"-b", addr, "-P", "-t", topic, "-K", "\t", "-X", "message.timeout.ms=20000"}, extra...)
	res := runToolAbortOn(t, 30*time.Second, "", in.String(), kcatAbortOn, "kcat", args...)
	if strings.Contains(res.Stderr, "elivery failed") || strings.Contains(res.Stderr, "ERROR") {
		t.Errorf("kcat -P reported errors:\n%s", truncate(res.Stderr, 4000))
	}
	// librdkafka decides from ApiVersions whether the broker takes a codec,
	// and quietly sends uncompressed batches when it thinks not.
	for _, line := range strings.Split(res.Stderr, "\n") {
		if strings.Contains(line, "does not support compression") {
			t.Errorf("kcat -P: %s", line)
			break
		}
	}
	return res
}

// kcatConsume reads topic from the beginning to its end with `kcat -C -e`.
func kcatConsume(t *testing.T, addr, topic string) []consumed {
	t.Helper()
	return kcatRead(t, addr, "-C", "-t", topic, "-o", "beginning")
}

// kcatConsumeGroup reads topic to its end as a member of group (`kcat -G`,
// librdkafka's balanced consumer): from the committed offsets, or the start.
func kcatConsumeGroup(t *testing.T, addr, group, topic string) []consumed {
	t.Helper()
	return kcatRead(t, addr, "-G", group, "-X", "auto.offset.reset=earliest", topic)
}

func kcatRead(t *testing.T, addr string, args ...string) []consumed {
	t.Helper()
	args = append([]string{"-b", addr, "-e", "-J"}, args...)
	res := runToolAbortOn(t, 20*time.Second, "", "", kcatAbortOn, "kcat", args...)
	if strings.Contains(res.Stderr, "ERROR") || strings.Contains(res.Stderr, "PROTOERR") {
		t.Errorf("kcat %s reported errors:\n%s", strings.Join(args, " "), truncate(res.Stderr, 4000))
	}
	var out []consumed
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if line == "" {
			continue
		}
		var m kcatMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("kcat -J line %q: %v", line, err)
		}
		c := consumed{Partition: m.Partition, Offset: m.Offset}
		if m.Key != nil {
			c.Key = *m.Key
		}
		if m.Payload != nil {
			c.Value = *m.Payload
		}
		out = append(out, c)
	}
	return out
}

func TestExternalKcat(t *testing.T) {
	requireTool(t, "kcat")
	k := startKaas(t, "--default-partitions", "3")

	t.Run("Metadata", func(t *testing.T) {
		adm := newAdmin(t, k.Addr)
		if _, err := adm.CreateTopic(ctxT(t, 10*time.Second), 2, 1, nil, "kcat-meta"); err != nil {
			t.Fatal(err)
		}
		res := runTool(t, 20*time.Second, "", "", "kcat", "-b", k.Addr, "-L", "-J")
		var md struct {
			ControllerID int32 `json:"controllerid"`
			Brokers      []struct {
				ID   int32  `json:"id"`
				Name string `json:"name"`
			} `json:"brokers"`
			Topics []struct {
				Topic      string `json:"topic"`
				Error      string `json:"error"`
				Partitions []struct {
					Partition int32  `json:"partition"`
					Leader    int32  `json:"leader"`
					Error     string `json:"error"`
					Replicas  []struct {
						ID int32 `json:"id"`
					} `json:"replicas"`
					ISRs []struct {
						ID int32 `json:"id"`
					} `json:"isrs"`
				} `json:"partitions"`
			} `json:"topics"`
		}
		if err := json.Unmarshal([]byte(res.Stdout), &md); err != nil {
			t.Fatalf("kcat -L -J: %v\n%s", err, res.Stdout)
		}
		if len(md.Brokers) != 1 || md.Brokers[0].ID != 0 || md.Brokers[0].Name != k.Addr {
			t.Errorf("brokers = %+v, want [{ID:0 Name:%s}]\n%s", md.Brokers, k.Addr, res.Stdout)
		}
		if md.ControllerID != 0 {
			t.Errorf("controllerid = %d, want 0", md.ControllerID)
		}
		found := false
		for _, tp := range md.Topics {
			if tp.Topic != "kcat-meta" {
				continue
			}
			found = true
			if tp.Error != "" || len(tp.Partitions) != 2 {
				t.Errorf("topic kcat-meta: error %q, %d partitions, want 2\n%s", tp.Error, len(tp.Partitions), res.Stdout)
			}
			for _, p := range tp.Partitions {
				if p.Leader != 0 || p.Error != "" || len(p.Replicas) != 1 || p.Replicas[0].ID != 0 || len(p.ISRs) != 1 || p.ISRs[0].ID != 0 {
					t.Errorf("kcat-meta partition %+v: want leader 0, replicas [0], isrs [0]", p)
				}
			}
		}
		if !found {
			t.Errorf("topic kcat-meta not listed by kcat -L:\n%s", res.Stdout)
		}
		// The plain text form, as a person would read it.
		res = runTool(t, 20*time.Second, "", "", "kcat", "-b", k.Addr, "-L")
		if want := "broker 0 at " + k.Addr; !strings.Contains(res.Stdout, want) {
			t.Errorf("kcat -L does not show %q:\n%s", want, res.Stdout)
		}
	})

	t.Run("ProduceConsumeKeyed", func(t *testing.T) {
		// Not created first: the producer's Metadata auto-creates it with
		// --default-partitions 3.
		msgs := keyedMessages("plain", 600, 20, "")
		kcatProduce(t, k.Addr, "kcat-keyed", msgs)
		checkConsumed(t, msgs, kcatConsume(t, k.Addr, "kcat-keyed"), 3)
	})

	t.Run("ConsumerGroup", func(t *testing.T) {
		msgs := keyedMessages("group", 300, 10, "")
		kcatProduce(t, k.Addr, "kcat-group", msgs)
		checkConsumed(t, msgs, kcatConsumeGroup(t, k.Addr, "kcat-g1", "kcat-group"), 3)
		// The group committed its offsets: a new member resumes after them.
		more := keyedMessages("more", 60, 10, "")
		kcatProduce(t, k.Addr, "kcat-group", more)
		got := kcatConsumeGroup(t, k.Addr, "kcat-g1", "kcat-group")
		want := map[string]bool{}
		for _, m := range more {
			want[m.Value] = true
		}
		for _, c := range got {
			if !want[c.Value] {
				t.Errorf("resumed group read %q at %d/%d: not produced after the first read (or read twice)", c.Value, c.Partition, c.Offset)
			}
			delete(want, c.Value)
		}
		if len(want) != 0 {
			t.Errorf("resumed group missed %d of %d new messages", len(want), len(more))
		}
	})

	t.Run("Idempotent", func(t *testing.T) {
		msgs := keyedMessages("idem", 500, 10, "")
		kcatProduce(t, k.Addr, "kcat-idem", msgs, "-X", "enable.idempotence=true", "-X", "acks=all")
		checkConsumed(t, msgs, kcatConsume(t, k.Addr, "kcat-idem"), 3)
		// The stored batches carry the producer id and gapless sequences.
		pid := int64(-1)
		for p := int32(0); p < 3; p++ {
			seq := int32(0)
			for _, b := range rawBatches(t, k.Addr, "kcat-idem", p) {
				if b.ProducerID < 0 {
					t.Fatalf("partition %d: batch at %d has producer id %d: idempotence not in effect", p, b.FirstOffset, b.ProducerID)
				}
				if pid == -1 {
					pid = b.ProducerID
				} else if b.ProducerID != pid {
					t.Errorf("partition %d: producer id %d, want %d", p, b.ProducerID, pid)
				}
				if b.FirstSequence != seq {
					t.Errorf("partition %d: batch at %d has first sequence %d, want %d", p, b.FirstOffset, b.FirstSequence, seq)
				}
				seq = b.FirstSequence + b.LastOffsetDelta + 1
			}
		}
	})

	// librdkafka sends a batch uncompressed when compression does not make
	// it smaller, so the values are compressible.
	pad := strings.Repeat(" the quick brown fox", 8)
	for _, c := range []struct {
		codec string
		attr  int16 // the batch attributes' codec bits
	}{{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}} {
		codec, attr := c.codec, c.attr
		t.Run("Compression/"+codec, func(t *testing.T) {
			topic := "kcat-" + codec
			msgs := keyedMessages(codec, 400, 10, pad)
			// -d msg: librdkafka says "Broker does not support compression
			// type" only as a debug message.
			kcatProduce(t, k.Addr, topic, msgs, "-z", codec, "-X", "linger.ms=20", "-d", "msg")
			checkConsumed(t, msgs, kcatConsume(t, k.Addr, topic), 3)
			// Stored verbatim: the batches keep the producer's codec.
			for p := int32(0); p < 3; p++ {
				batches := rawBatches(t, k.Addr, topic, p)
				for _, b := range batches {
					if got := b.Attributes & 0x07; got != attr {
						t.Errorf("partition %d batch at %d: codec attribute %d, want %d (%s)", p, b.FirstOffset, got, attr, codec)
					}
				}
			}
		})
	}
}

// ---------------------------------------------------------------- sarama

func saramaConfig(version sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.ClientID = "kaas-sarama-test"
	cfg.Version = version
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	cfg.Net.DialTimeout = 3 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	cfg.Net.WriteTimeout = 10 * time.Second
	cfg.Admin.Timeout = 10 * time.Second
	return cfg
}

func TestExternalSarama(t *testing.T) {
	k := startKaas(t)
	for _, v := range []sarama.KafkaVersion{sarama.V2_8_0_0, sarama.V3_6_0_0} {
		t.Run("ProduceConsume/"+v.String(), func(t *testing.T) {
			testSaramaProduceConsume(t, k.Addr, v)
		})
	}
	t.Run("ClusterAdmin", func(t *testing.T) {
		testSaramaAdmin(t, k.Addr)
	})
	t.Run("ConsumerGroup", func(t *testing.T) {
		testSaramaConsumerGroup(t, k.Addr)
	})
	t.Run("ConsumerGroupBesideKIP848", func(t *testing.T) {
		testSaramaBesideKIP848(t, k.Addr)
	})
}

// testSaramaBesideKIP848: a sarama consumer (classic protocol, eager range)
// joins a group a franz-go KIP-848 consumer runs, then has it to itself
// when that one leaves and the group turns classic again. Every record is
// processed once, and the committed offsets end at the log end.
func testSaramaBesideKIP848(t *testing.T, addr string) {
	const topic, group = "sarama-mixed", "sarama-mixed-g"
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	next := 0
	produce := func(n int) {
		var recs []*kgo.Record
		for range n {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(next % 13)), Value: []byte(fmt.Sprintf("v-%05d", next))})
			next++
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	led := newLedger()
	atLeast := func(n int64) {
		waitFor(t, ctx, fmt.Sprintf("%d records processed", n), func() bool { return led.count.Load() >= n })
	}
	typeIs := func(want string) {
		cl := newClient(t, addr)
		waitFor(t, ctx, group+" listed as a "+want+" group", func() bool { return groupType(ctx, cl, group) == want })
	}

	produce(300)
	m := startMember(t, ctx, "kip848", led, append(groupClientOpts(addr, topic, group),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())))
	atLeast(300)
	typeIs("consumer")

	cfg := saramaConfig(sarama.V3_6_0_0)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
	cfg.Consumer.Group.Heartbeat.Interval = 200 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama.NewConsumerGroup: %v", err)
	}
	var saramaCount atomic.Int64
	h := &saramaGroupHandler{each: func(m *sarama.ConsumerMessage) {
		led.add("sarama", &kgo.Record{Value: m.Value, Partition: m.Partition, Offset: m.Offset})
		saramaCount.Add(1)
	}}
	stop := runSaramaGroup(t, ctx, cg, topic, h)
	// Both consume from the group, which stays a consumer group.
	for i := 0; saramaCount.Load() == 0; i++ {
		produce(60)
		waitFor(t, ctx, "sarama's first records", func() bool { return saramaCount.Load() > 0 || led.count.Load() >= int64(next) })
	}
	typeIs("consumer")
	m.leave() // the group turns classic; sarama takes every partition
	typeIs("classic")
	atLeast(int64(next))
	before := saramaCount.Load()
	produce(300)
	atLeast(int64(next))
	if got := saramaCount.Load() - before; got != 300 {
		t.Errorf("sarama processed %d of the 300 records written after the KIP-848 member left", got)
	}
	stop()
	if err := cg.Close(); err != nil { // commits the marked offsets
		t.Errorf("consumer group close: %v", err)
	}

	checkProcessedOnce(t, ctx, adm, led, group, topic, next)
}

// runSaramaGroup runs cg's member on topic with h until stop, which waits
// for it to end.
func runSaramaGroup(t *testing.T, ctx context.Context, cg sarama.ConsumerGroup, topic string, h sarama.ConsumerGroupHandler) (stop func()) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for runCtx.Err() == nil {
			if err := cg.Consume(runCtx, []string{topic}, h); err != nil && runCtx.Err() == nil {
				t.Errorf("Consume: %v", err)
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// saramaGroupHandler collects messages until it has want of them (or,
// with each set, hands each to it), marking each as it goes.
type saramaGroupHandler struct {
	mu   sync.Mutex
	got  []consumed
	want int
	done chan struct{}
	once sync.Once
	each func(*sarama.ConsumerMessage)
}

func (h *saramaGroupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaGroupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaGroupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			if h.each != nil {
				h.each(m)
				sess.MarkMessage(m, "")
				continue
			}
			h.mu.Lock()
			h.got = append(h.got, consumed{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value)})
			n := len(h.got)
			h.mu.Unlock()
			sess.MarkMessage(m, "")
			if n >= h.want {
				h.once.Do(func() { close(h.done) })
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

func testSaramaConsumerGroup(t *testing.T, addr string) {
	const topic, group, n = "sarama-group", "sarama-g1", 300
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	msgs := keyedMessages("sg", n, 12, "")
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	var recs []*kgo.Record
	for _, m := range msgs {
		recs = append(recs, &kgo.Record{Key: []byte(m.Key), Value: []byte(m.Value)})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cfg := saramaConfig(sarama.V2_8_0_0)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	cg, err := sarama.NewConsumerGroup([]string{addr}, group, cfg)
	if err != nil {
		t.Fatalf("sarama.NewConsumerGroup: %v", err)
	}
	h := &saramaGroupHandler{want: n, done: make(chan struct{})}
	stop := runSaramaGroup(t, ctx, cg, topic, h)
	go func() {
		for err := range cg.Errors() {
			t.Logf("consumer group error: %v", err)
		}
	}()
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		h.mu.Lock()
		t.Errorf("group read %d of %d messages in 20s", len(h.got), n)
		h.mu.Unlock()
	}
	stop()
	// Close commits the marked offsets.
	if err := cg.Close(); err != nil {
		t.Errorf("consumer group close: %v", err)
	}
	h.mu.Lock()
	checkConsumed(t, msgs, h.got, 3)
	h.mu.Unlock()

	offs, err := adm.FetchOffsets(ctxT(t, 10*time.Second), group)
	if err != nil {
		t.Fatalf("fetch committed offsets of %s: %v", group, err)
	}
	ends, err := adm.ListEndOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		c, ok := offs.Lookup(topic, e.Partition)
		if !ok || c.Err != nil || c.At != e.Offset {
			t.Errorf("partition %d: committed %+v (found %v), want offset %d", e.Partition, c, ok, e.Offset)
		}
	})
}

func testSaramaProduceConsume(t *testing.T, addr string, version sarama.KafkaVersion) {
	topic := "sarama-" + strings.ReplaceAll(version.String(), ".", "-")
	const partitions = 4
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctxT(t, 10*time.Second), partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	cfg := saramaConfig(version)
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 5
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama.NewSyncProducer: %v", err)
	}
	msgs := keyedMessages("sarama", 400, 16, "")
	// Half one by one, half in SendMessages batches.
	type where struct {
		p int32
		o int64
	}
	at := map[string]where{}
	for _, m := range msgs[:200] {
		p, o, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(m.Key), Value: sarama.StringEncoder(m.Value)})
		if err != nil {
			_ = prod.Close()
			t.Fatalf("SendMessage %s: %v", m.Value, err)
		}
		at[m.Value] = where{p, o}
	}
	for i := 200; i < len(msgs); i += 50 {
		var batch []*sarama.ProducerMessage
		for _, m := range msgs[i : i+50] {
			batch = append(batch, &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(m.Key), Value: sarama.StringEncoder(m.Value)})
		}
		if err := prod.SendMessages(batch); err != nil {
			_ = prod.Close()
			t.Fatalf("SendMessages: %v", err)
		}
		for _, pm := range batch {
			v, _ := pm.Value.Encode()
			at[string(v)] = where{pm.Partition, pm.Offset}
		}
	}
	if err := prod.Close(); err != nil {
		t.Errorf("producer close: %v", err)
	}

	ccfg := saramaConfig(version)
	ccfg.Consumer.Return.Errors = true
	ccfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	cons, err := sarama.NewConsumer([]string{addr}, ccfg)
	if err != nil {
		t.Fatalf("sarama.NewConsumer: %v", err)
	}
	defer cons.Close()
	parts, err := cons.Partitions(topic)
	if err != nil || len(parts) != partitions {
		t.Fatalf("Partitions(%s) = %v, %v; want %d partitions", topic, parts, err, partitions)
	}
	// Expected per partition, from the producer's reported offsets.
	wantCount := map[int32]int{}
	for _, w := range at {
		wantCount[w.p]++
	}
	var got []consumed
	deadline := time.After(20 * time.Second)
	for _, p := range parts {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition(%s, %d): %v", topic, p, err)
		}
		for n := 0; n < wantCount[p]; {
			select {
			case m := <-pc.Messages():
				got = append(got, consumed{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value)})
				n++
			case err := <-pc.Errors():
				t.Errorf("partition %d: consumer error: %v", p, err)
			case <-deadline:
				_ = pc.Close()
				t.Fatalf("partition %d: got %d of %d messages in 20s", p, n, wantCount[p])
			}
		}
		if hwm := pc.HighWaterMarkOffset(); hwm != int64(wantCount[p]) {
			t.Errorf("partition %d: high watermark %d, want %d", p, hwm, wantCount[p])
		}
		if err := pc.Close(); err != nil {
			t.Errorf("partition %d: close: %v", p, err)
		}
	}
	checkConsumed(t, msgs, got, 0)
	for _, c := range got {
		if w := at[c.Value]; w.p != c.Partition || w.o != c.Offset {
			t.Errorf("%s: read at %d/%d, producer reported %d/%d", c.Value, c.Partition, c.Offset, w.p, w.o)
		}
	}
	if len(wantCount) < 2 {
		t.Errorf("16 keys landed in %d partitions", len(wantCount))
	}
}

func testSaramaAdmin(t *testing.T, addr string) {
	adm, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig(sarama.V2_8_0_0))
	if err != nil {
		t.Fatalf("sarama.NewClusterAdmin: %v", err)
	}
	defer adm.Close()
	const topic = "sarama-admin"
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 5, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 5, ReplicationFactor: 1}, false)
	if !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		t.Errorf("CreateTopic again: %v, want %v", err, sarama.ErrTopicAlreadyExists)
	}
	// Any positive replication factor is accepted (storage is shared, one
	// copy); zero is not.
	err = adm.CreateTopic("sarama-bad", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 0}, false)
	if !errors.Is(err, sarama.ErrInvalidReplicationFactor) {
		t.Errorf("CreateTopic with replication factor 0: %v, want %v", err, sarama.ErrInvalidReplicationFactor)
	}
	topics, err := adm.ListTopics()
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != 5 || d.ReplicationFactor != 1 {
		t.Errorf("ListTopics[%s] = %+v, %v; want 5 partitions, replication factor 1", topic, d, ok)
	}
	md, err := adm.DescribeTopics([]string{topic})
	if err != nil {
		t.Fatalf("DescribeTopics: %v", err)
	}
	if len(md) != 1 || md[0].Err != sarama.ErrNoError || md[0].Name != topic || len(md[0].Partitions) != 5 {
		t.Fatalf("DescribeTopics = %+v", md)
	}
	for _, p := range md[0].Partitions {
		if p.Err != sarama.ErrNoError || p.Leader != 0 || len(p.Replicas) != 1 || len(p.Isr) != 1 {
			t.Errorf("partition %d: err %v leader %d replicas %v isr %v", p.ID, p.Err, p.Leader, p.Replicas, p.Isr)
		}
	}
	brokers, controller, err := adm.DescribeCluster()
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	if len(brokers) != 1 || brokers[0].ID() != 0 || brokers[0].Addr() != addr || controller != 0 {
		t.Errorf("DescribeCluster = %v, controller %d; want broker 0 at %s, controller 0", brokers, controller, addr)
	}
	testSaramaBrokerConfigs(t, adm)
	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	md, err = adm.DescribeTopics([]string{topic})
	if err != nil {
		t.Fatalf("DescribeTopics after delete: %v", err)
	}
	if len(md) != 1 || md[0].Err != sarama.ErrUnknownTopicOrPartition {
		t.Errorf("DescribeTopics after delete = %+v, want %v", md, sarama.ErrUnknownTopicOrPartition)
	}
	if err := adm.DeleteTopic(topic); !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		t.Errorf("DeleteTopic again: %v, want %v", err, sarama.ErrUnknownTopicOrPartition)
	}
}

// testSaramaBrokerConfigs: broker 0's configs are described with Kafka's
// names, types and documentation (DescribeConfigs v4, as sarama's
// TestFuncAdminDescribeConfig asks), read-only unless Kafka changes them at
// runtime; a dynamic one changes through IncrementalAlterConfigs (as
// sarama's TestFuncAdminIncrementalAlterConfigs does), a read-only one is
// refused as Kafka refuses it.
func testSaramaBrokerConfigs(t *testing.T, adm sarama.ClusterAdmin) {
	describe := func() map[string]sarama.ConfigEntry {
		t.Helper()
		res, err := adm.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: "0"}},
			sarama.DescribeConfigsOptions{IncludeSynonyms: true, IncludeDocumentation: true})
		if err != nil || len(res) != 1 || res[0].ErrorCode != sarama.ErrNoError {
			t.Fatalf("DescribeConfigs broker 0: %v %+v", err, res)
		}
		got := map[string]sarama.ConfigEntry{}
		for _, c := range res[0].Configs {
			got[c.Name] = c
			if c.Documentation == nil || *c.Documentation == "" || c.Type == sarama.UnknownConfigType {
				t.Errorf("broker config %s: type %v, documentation %v", c.Name, c.Type, c.Documentation)
			}
		}
		return got
	}
	got := describe()
	for name, want := range map[string]struct {
		value    string
		typ      sarama.ConfigType
		readOnly bool
	}{
		"log.cleaner.backoff.ms":           {"15000", sarama.LongConfigType, false},
		"num.partitions":                   {"1", sarama.IntConfigType, true},
		"auto.create.topics.enable":        {"true", sarama.BooleanConfigType, true},
		"group.initial.rebalance.delay.ms": {"3000", sarama.IntConfigType, true},
	} {
		c, ok := got[name]
		if !ok || c.Value != want.value || c.Type != want.typ || c.ReadOnly != want.readOnly {
			t.Errorf("broker config %s = %+v, want %s of type %v, read-only %v", name, c, want.value, want.typ, want.readOnly)
		}
	}
	v := "15001"
	err := adm.IncrementalAlterConfig(sarama.BrokerResource, "0", map[string]sarama.IncrementalAlterConfigsEntry{
		"log.cleaner.backoff.ms": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v},
	}, false)
	if err != nil {
		t.Fatalf("IncrementalAlterConfig broker 0 log.cleaner.backoff.ms: %v", err)
	}
	if c := describe()["log.cleaner.backoff.ms"]; c.Value != v || c.Source != sarama.SourceDynamicBroker || c.ReadOnly {
		t.Errorf("log.cleaner.backoff.ms after the change: %+v", c)
	}
	p := "3"
	err = adm.IncrementalAlterConfig(sarama.BrokerResource, "0", map[string]sarama.IncrementalAlterConfigsEntry{
		"num.partitions": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &p},
	}, false)
	if !errors.Is(err, sarama.ErrInvalidRequest) {
		t.Errorf("IncrementalAlterConfig broker 0 num.partitions: %v, want %v", err, sarama.ErrInvalidRequest)
	}
}

// ---------------------------------------------------------------- kafkajs

// kafkajsDir is the npm project of the kafkajs scripts; it fails the test
// when node or the kafkajs package is not installed.
func kafkajsDir(t *testing.T) string {
	t.Helper()
	return npmProject(t, "kafkajs", "kafkajs")
}

// npmProject is testdata/<name>, an npm project whose scripts need the
// package pkg; it fails the test when node or pkg is not installed there.
func npmProject(t *testing.T, name, pkg string) string {
	t.Helper()
	requireTool(t, "node")
	dir, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
		t.Fatalf("%s is not installed in %s (npm ci): %s", pkg, dir, installHint)
	}
	return dir
}

// kafkajsMeta is kafkajs's RecordMetadata from producer.send.
type kafkajsMeta struct {
	TopicName  string `json:"topicName"`
	Partition  int32  `json:"partition"`
	ErrorCode  int16  `json:"errorCode"`
	BaseOffset string `json:"baseOffset"`
}

// runNode runs a node script of the npm project dir; its stderr (client
// logs) goes to the test log.
func runNode(t *testing.T, dir string, timeout time.Duration, script string, args ...string) runResult {
	t.Helper()
	res := runTool(t, timeout, dir, "", "node", append([]string{script}, args...)...)
	if strings.TrimSpace(res.Stderr) != "" {
		t.Logf("%s stderr:\n%s", script, truncate(res.Stderr, 4000))
	}
	return res
}

func checkKafkajsProduced(t *testing.T, topic string, created bool, meta []kafkajsMeta) {
	t.Helper()
	if !created {
		t.Errorf("admin.createTopics returned false: the topic existed already")
	}
	if len(meta) == 0 {
		t.Errorf("producer.send returned no record metadata")
	}
	for _, m := range meta {
		if m.TopicName != topic || m.ErrorCode != 0 {
			t.Errorf("producer.send metadata %+v", m)
		}
	}
}

func TestExternalKafkajsProduce(t *testing.T) {
	dir := kafkajsDir(t)
	k := startKaas(t)
	const n = 300
	for _, variant := range []struct{ name, flag string }{{"Plain", ""}, {"Idempotent", "--idempotent"}, {"Gzip", "--gzip"}} {
		t.Run(variant.name, func(t *testing.T) {
			topic := "kafkajs-produce-" + strings.ToLower(variant.name)
			args := []string{k.Addr, topic, strconv.Itoa(n)}
			if variant.flag != "" {
				args = append(args, variant.flag)
			}
			res := runNode(t, dir, 40*time.Second, "produce-offsets.js", args...)
			var out struct {
				Created  bool          `json:"created"`
				Produced []kafkajsMeta `json:"produced"`
				Offsets  []struct {
					Partition int32  `json:"partition"`
					Offset    string `json:"offset"`
					High      string `json:"high"`
					Low       string `json:"low"`
				} `json:"offsets"`
			}
			if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
				t.Fatalf("produce-offsets.js output: %v\n%s", err, res.Stdout)
			}
			checkKafkajsProduced(t, topic, out.Created, out.Produced)
			if len(out.Offsets) != 3 {
				t.Fatalf("fetchTopicOffsets: %d partitions, want 3: %+v", len(out.Offsets), out.Offsets)
			}
			total := int64(0)
			highs := map[int32]int64{}
			for _, o := range out.Offsets {
				hi, err1 := strconv.ParseInt(o.High, 10, 64)
				lo, err2 := strconv.ParseInt(o.Low, 10, 64)
				if err1 != nil || err2 != nil || lo != 0 || o.Offset != o.High {
					t.Errorf("fetchTopicOffsets partition %+v", o)
				}
				total += hi - lo
				highs[o.Partition] = hi
			}
			if total != n {
				t.Errorf("fetchTopicOffsets counts %d messages, want %d", total, n)
			}
			// Read the records themselves (no group) and compare.
			want := keyedMessages("value", n, 10, "")
			for i := range want {
				want[i].Value = fmt.Sprintf("value-%d", i)
			}
			got := franzReadAll(t, k.Addr, topic, highs)
			checkConsumed(t, want, got, 0)
			if variant.flag == "--idempotent" || variant.flag == "--gzip" {
				for p := int32(0); p < 3; p++ {
					for _, b := range rawBatches(t, k.Addr, topic, p) {
						if variant.flag == "--idempotent" && b.ProducerID < 0 {
							t.Errorf("partition %d batch at %d: producer id %d, want an idempotent producer's", p, b.FirstOffset, b.ProducerID)
						}
						if variant.flag == "--gzip" && b.Attributes&0x07 != 1 {
							t.Errorf("partition %d batch at %d: codec attribute %d, want 1 (gzip)", p, b.FirstOffset, b.Attributes&0x07)
						}
					}
				}
			}
		})
	}
}

// franzReadAll reads topic's partitions up to the given high watermarks
// with franz-go (direct partition consumption, no group).
func franzReadAll(t *testing.T, addr, topic string, highs map[int32]int64) []consumed {
	t.Helper()
	var got []consumed
	for _, r := range franzReadRecords(t, addr, topic, highs) {
		got = append(got, consumed{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)})
	}
	return got
}

// franzReadRecords reads topic's partitions from offset 0 up to highs with
// franz-go and returns the records, headers included.
func franzReadRecords(t *testing.T, addr, topic string, highs map[int32]int64) []*kgo.Record {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	want := 0
	for p, hi := range highs {
		offsets[p] = kgo.NewOffset().At(0)
		want += int(hi)
	}
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}), kgo.FetchMaxWait(250*time.Millisecond))
	defer cl.Close()
	ctx := ctxT(t, 20*time.Second)
	var got []*kgo.Record
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("franz-go read back %s: %v (got %d of %d)", topic, err, len(got), want)
		}
		got = append(got, fs.Records()...)
	}
	return got
}

func TestExternalKafkajsConsumerGroup(t *testing.T) {
	dir := kafkajsDir(t)
	k := startKaas(t)
	const n, topic = 300, "kafkajs-group"
	res := runNode(t, dir, 60*time.Second, "produce-consume.js", k.Addr, topic, strconv.Itoa(n))
	var out struct {
		Created    bool          `json:"created"`
		Partitions int           `json:"partitions"`
		Produced   []kafkajsMeta `json:"produced"`
		Consumed   []struct {
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
			Key       string `json:"key"`
			Value     string `json:"value"`
		} `json:"consumed"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("produce-consume.js output: %v\n%s", err, res.Stdout)
	}
	checkKafkajsProduced(t, topic, out.Created, out.Produced)
	if out.Partitions != 3 {
		t.Errorf("fetchTopicMetadata: %d partitions, want 3", out.Partitions)
	}
	want := keyedMessages("value", n, 10, "")
	for i := range want {
		want[i].Value = fmt.Sprintf("value-%d", i)
	}
	got := make([]consumed, len(out.Consumed))
	for i, c := range out.Consumed {
		got[i] = consumed(c)
	}
	checkConsumed(t, want, got, 0)
}

// TestExternalKafkajsAdminConfigs: the broker and topic configs kafkajs's
// own suite relies on. describeConfigs of the broker gives
// default.replication.factor (1: one copy) and num.partitions, and a topic
// created without either gets them; message.timestamp.difference.max.ms,
// removed in Kafka 4 but still set by kafkajs users, is accepted, described
// and enforced as Kafka 3.x did (both timestamp bounds): old records are
// refused with INVALID_TIMESTAMP and nothing of them is appended.
func TestExternalKafkajsAdminConfigs(t *testing.T) {
	dir := kafkajsDir(t)
	k := startKaas(t, "--data-dir", t.TempDir(), "--default-partitions", "2")
	const n, topic = 5, "kafkajs-configs"
	res := runNode(t, dir, 40*time.Second, "admin-configs.js", k.Addr, topic, strconv.Itoa(n))
	var out struct {
		BrokerConfigs map[string]string `json:"brokerConfigs"`
		Defaults      struct {
			Partitions int   `json:"partitions"`
			Replicas   []int `json:"replicas"`
		} `json:"defaults"`
		TopicConfig *string `json:"topicConfig"`
		Old         *struct {
			Error string `json:"error"`
			Type  string `json:"type"`
		} `json:"old"`
		Current []kafkajsMeta `json:"current"`
		Offsets []struct {
			Partition int32  `json:"partition"`
			High      string `json:"high"`
			Low       string `json:"low"`
		} `json:"offsets"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("admin-configs.js output: %v\n%s", err, res.Stdout)
	}
	if got := out.BrokerConfigs; got["default.replication.factor"] != "1" || got["num.partitions"] != "2" {
		t.Errorf("broker configs %v, want default.replication.factor 1 and num.partitions 2", got)
	}
	if out.Defaults.Partitions != 2 || len(out.Defaults.Replicas) != 2 || out.Defaults.Replicas[0] != 1 || out.Defaults.Replicas[1] != 1 {
		t.Errorf("topic created with the defaults: %+v, want 2 partitions of 1 replica", out.Defaults)
	}
	if out.TopicConfig == nil || *out.TopicConfig != "3600000" {
		t.Errorf("described message.timestamp.difference.max.ms = %v, want 3600000", out.TopicConfig)
	}
	if out.Old == nil || out.Old.Type != "INVALID_TIMESTAMP" {
		t.Errorf("records 90 minutes old: %+v, want INVALID_TIMESTAMP", out.Old)
	}
	checkKafkajsProduced(t, topic, true, out.Current)
	if len(out.Current) != 1 || out.Current[0].BaseOffset != "0" {
		t.Errorf("current records %+v, want them at offset 0 (the refused ones not appended)", out.Current)
	}
	if len(out.Offsets) != 1 || out.Offsets[0].Low != "0" || out.Offsets[0].High != strconv.Itoa(n) {
		t.Errorf("offsets %+v, want 0 to %d", out.Offsets, n)
	}
}
