package main

// segmentio/kafka-go against an in-process broker over loopback TCP. It is
// its own implementation of the protocol (requests, record batches,
// codecs) and of the classic consumer group, so it checks kaas from a
// side franz-go and sarama do not.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestExternalKafkaGo(t *testing.T) {
	_, addr := testBroker(t, "--group-initial-rebalance-delay", "0")
	t.Run("Writer", func(t *testing.T) { testKafkaGoWriter(t, addr) })
	t.Run("WriterAutoCreate", func(t *testing.T) { testKafkaGoAutoCreate(t, addr) })
	t.Run("ReaderGroup", func(t *testing.T) { testKafkaGoReaderGroup(t, addr) })
	t.Run("Client", func(t *testing.T) { testKafkaGoClient(t, addr) })
	t.Run("Conn", func(t *testing.T) { testKafkaGoConn(t, addr) })
	t.Run("SASL", testKafkaGoSASL)
}

// testKafkaGoSASL: kafka-go's SCRAM-SHA-512 and PLAIN (SaslHandshake v1,
// SaslAuthenticate) on a SASL_SSL listener (client certificate required),
// from its Transport (Client, Writer) and its Dialer (Conn); a wrong
// password is refused with SASL_AUTHENTICATION_FAILED, and PLAIN on a
// SASL_PLAINTEXT listener, which does not enable it, with
// UNSUPPORTED_SASL_MECHANISM.
func testKafkaGoSASL(t *testing.T) {
	e := newSecureEnv(t)
	mech := func(name, pass string) sasl.Mechanism {
		if name == "PLAIN" {
			return plain.Mechanism{Username: "alice", Password: pass}
		}
		m, err := scram.Mechanism(scram.SHA512, "alice", pass)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, name := range []string{"SCRAM-SHA-512", "PLAIN"} {
		t.Run(name, func(t *testing.T) {
			topic := "kafkago-sasl-" + strings.ToLower(name)
			ctx := ctxT(t, 15*time.Second)
			tlsc := e.tlsClient(&e.client)
			tr := &kafka.Transport{ClientID: kafkaGoClientID, TLS: tlsc, SASL: mech(name, "alice-secret")}
			defer tr.CloseIdleConnections()
			cl := &kafka.Client{Addr: kafka.TCP(e.saslSSL), Timeout: 10 * time.Second, Transport: tr}
			kafkaGoCreateTopic(t, cl, topic, 1)
			msgs := keyedMessages("kgs", 5, 1, "")
			kafkaGoWrite(t, ctx, cl, topic, 0, msgs)

			d := &kafka.Dialer{ClientID: kafkaGoClientID, Timeout: 10 * time.Second, TLS: tlsc, SASLMechanism: mech(name, "alice-secret")}
			c, err := d.DialLeader(ctx, "tcp", e.saslSSL, topic, 0)
			if err != nil {
				t.Fatalf("DialLeader with %s: %v", name, err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			batch := c.ReadBatch(1, 1<<20)
			var got []consumed
			for {
				m, err := batch.ReadMessage()
				if err != nil {
					break
				}
				got = append(got, consumed{Partition: int32(m.Partition), Offset: m.Offset, Key: string(m.Key), Value: string(m.Value)})
			}
			_ = batch.Close()
			checkConsumed(t, msgs, got, 1)

			bad := &kafka.Client{Addr: kafka.TCP(e.saslSSL), Timeout: 5 * time.Second,
				Transport: &kafka.Transport{ClientID: kafkaGoClientID, TLS: tlsc, SASL: mech(name, "wrong")}}
			if _, err := bad.Metadata(ctx, &kafka.MetadataRequest{}); !errors.Is(err, kafka.SASLAuthenticationFailed) {
				t.Errorf("Metadata with a wrong %s password: %v, want SASL_AUTHENTICATION_FAILED", name, err)
			}
			if _, err := (&kafka.Dialer{Timeout: 5 * time.Second, TLS: tlsc, SASLMechanism: mech(name, "wrong")}).DialContext(ctx, "tcp", e.saslSSL); !errors.Is(err, kafka.SASLAuthenticationFailed) {
				t.Errorf("Dial with a wrong %s password: %v, want SASL_AUTHENTICATION_FAILED", name, err)
			}
		})
	}
	_, err := (&kafka.Dialer{Timeout: 5 * time.Second, SASLMechanism: mech("PLAIN", "alice-secret")}).DialContext(ctxT(t, 10*time.Second), "tcp", e.saslPlaintext)
	if !errors.Is(err, kafka.UnsupportedSASLMechanism) {
		t.Errorf("PLAIN on SASL_PLAINTEXT: %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
}

// kafkaGoClientID replaces kafka-go's default client id, which names the
// program and the host.
const kafkaGoClientID = "kaas-kafkago-test"

// kafkaGoDialer dials kafka-go Conns (and a Reader's) with kafkaGoClientID.
var kafkaGoDialer = &kafka.Dialer{ClientID: kafkaGoClientID, Timeout: 10 * time.Second}

// kafkaGoClient is a kafka-go Client with a Transport of its own: a
// Transport answers Metadata from its cache (refreshed every 6 s, and after
// its own CreateTopics), so a shared one would not see topics made
// elsewhere.
func kafkaGoClient(t *testing.T, addr string) *kafka.Client {
	tr := &kafka.Transport{ClientID: kafkaGoClientID}
	t.Cleanup(tr.CloseIdleConnections)
	return &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second, Transport: tr}
}

// kafkaGoCreateTopic creates topic with kafka-go's Client, which makes its
// Transport wait until the topic is in its metadata.
func kafkaGoCreateTopic(t *testing.T, cl *kafka.Client, topic string, partitions int) {
	t.Helper()
	resp, err := cl.CreateTopics(ctxT(t, 10*time.Second), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1},
	}})
	if err != nil || resp.Errors[topic] != nil {
		t.Fatalf("kafka-go CreateTopics %s: %v %v", topic, err, resp)
	}
}

// kafkaGoWrite writes msgs to topic with an acks=all Writer keyed by the
// Hash balancer, in chunks of 100 (each WriteMessages waits for its acks).
func kafkaGoWrite(t *testing.T, ctx context.Context, cl *kafka.Client, topic string, codec kafka.Compression, msgs []produced) {
	t.Helper()
	w := &kafka.Writer{
		Addr:         cl.Addr,
		Transport:    cl.Transport,
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		Compression:  codec,
		BatchTimeout: 5 * time.Millisecond, // the default, 1 s, is waited for by every short batch
		MaxAttempts:  3,
	}
	defer func() {
		if err := w.Close(); err != nil {
			t.Errorf("writer close: %v", err)
		}
	}()
	for i := 0; i < len(msgs); i += 100 {
		var kms []kafka.Message
		for _, m := range msgs[i:min(i+100, len(msgs))] {
			kms = append(kms, kafka.Message{Key: []byte(m.Key), Value: []byte(m.Value)})
		}
		if err := w.WriteMessages(ctx, kms...); err != nil {
			t.Fatalf("kafka-go WriteMessages to %s: %v", topic, err)
		}
	}
	if s := w.Stats(); s.Messages != int64(len(msgs)) || s.Errors != 0 {
		t.Errorf("writer stats: %d messages, %d errors; want %d, 0", s.Messages, s.Errors, len(msgs))
	}
}

// endOffsets is topic's high watermark per partition, as franz-go lists it.
func endOffsets(t *testing.T, addr, topic string) map[int32]int64 {
	t.Helper()
	ends, err := newAdmin(t, addr).ListEndOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("end offset of %s/%d: %v", topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// testKafkaGoWriter: each codec kafka-go has, and none; every message is
// read back once, in per-key order, and the broker keeps each batch with
// the codec the writer used.
func testKafkaGoWriter(t *testing.T, addr string) {
	const partitions = 4
	for _, c := range []struct {
		name  string
		codec kafka.Compression
	}{{"none", 0}, {"gzip", kafka.Gzip}, {"snappy", kafka.Snappy}, {"lz4", kafka.Lz4}, {"zstd", kafka.Zstd}} {
		t.Run(c.name, func(t *testing.T) {
			topic := "kafkago-writer-" + c.name
			cl := kafkaGoClient(t, addr)
			kafkaGoCreateTopic(t, cl, topic, partitions)
			// Values padded so compression has something to do.
			msgs := keyedMessages("kgw-"+c.name, 400, 16, "-padding-padding-padding-padding")
			kafkaGoWrite(t, ctxT(t, 20*time.Second), cl, topic, c.codec, msgs)
			checkConsumed(t, msgs, franzReadAll(t, addr, topic, endOffsets(t, addr, topic)), partitions)
			for p := range int32(partitions) {
				for _, b := range rawBatches(t, addr, topic, p) {
					if codec := kafka.Compression(b.Attributes & 0x07); codec != c.codec {
						t.Errorf("partition %d batch at %d stored with codec %d, want %d", p, b.FirstOffset, codec, c.codec)
					}
				}
			}
		})
	}
}

// testKafkaGoAutoCreate: a Writer allowed to create its topic asks for it
// in Metadata, and the broker (local-dev mode) creates it with
// num.partitions.
func testKafkaGoAutoCreate(t *testing.T, addr string) {
	const topic = "kafkago-auto"
	cl := kafkaGoClient(t, addr)
	w := &kafka.Writer{Addr: cl.Addr, Transport: cl.Transport, Topic: topic, AllowAutoTopicCreation: true,
		RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond}
	defer w.Close()
	msgs := keyedMessages("kga", 10, 3, "")
	var kms []kafka.Message
	for _, m := range msgs {
		kms = append(kms, kafka.Message{Key: []byte(m.Key), Value: []byte(m.Value)})
	}
	if err := w.WriteMessages(ctxT(t, 10*time.Second), kms...); err != nil {
		t.Fatalf("WriteMessages to a new topic: %v", err)
	}
	checkConsumed(t, msgs, franzReadAll(t, addr, topic, endOffsets(t, addr, topic)), 1)
}

// kafkaGoMember is a kafka-go Reader in a group, processing (and
// committing, synchronously) every message it fetches.
type kafkaGoMember struct {
	r    *kafka.Reader
	done chan struct{}
}

// kafkaGoLedger counts how often each value was processed, and by whom.
type kafkaGoLedger struct {
	mu    sync.Mutex
	seen  map[string]int
	by    map[string]int
	dups  int
	parts map[string]map[int]bool // member -> partitions it processed
}

func (l *kafkaGoLedger) add(member string, m kafka.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[string(m.Value)]++; l.seen[string(m.Value)] > 1 {
		l.dups++
	}
	l.by[member]++
	if l.parts[member] == nil {
		l.parts[member] = map[int]bool{}
	}
	l.parts[member][m.Partition] = true
}

func (l *kafkaGoLedger) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

func startKafkaGoMember(t *testing.T, ctx context.Context, addr, group, topic, name string, led *kafkaGoLedger) *kafkaGoMember {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:  []string{addr},
		GroupID:  group,
		Dialer:   kafkaGoDialer,
		Topic:    topic,
		MinBytes: 1,
		MaxBytes: 1 << 20,
		// The Reader gives a fetch its MaxWait as the socket deadline and
		// asks the broker to wait that less 1 s (a quarter below 1 s): 1.5 s
		// leaves a loaded machine a second to answer in.
		MaxWait:           1500 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond,
		SessionTimeout:    6 * time.Second,
		RebalanceTimeout:  6 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
		StartOffset:       kafka.FirstOffset,
		ReadBackoffMin:    20 * time.Millisecond,
		ReadBackoffMax:    100 * time.Millisecond,
		ErrorLogger:       kafka.LoggerFunc(func(f string, a ...any) { t.Logf("%s: "+f, append([]any{name}, a...)...) }),
	})
	m := &kafkaGoMember{r: r, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			msg, err := r.FetchMessage(ctx)
			if err != nil {
				return // ctx ended or the reader closed
			}
			led.add(name, msg)
			// A commit refused in a rebalance leaves the message to the
			// partition's next owner, which processes it again.
			if err := r.CommitMessages(ctx, msg); err != nil && ctx.Err() == nil {
				t.Logf("%s: commit %d/%d: %v", name, msg.Partition, msg.Offset, err)
			}
		}
	}()
	return m
}

// testKafkaGoReaderGroup: two kafka-go Readers share a group's partitions
// (kafka-go's own JoinGroup/SyncGroup/Heartbeat/OffsetCommit and range
// assignment). The group is described with both members and their
// assignments; every message is processed once, by the reader assigned its
// partition; after they close the committed offsets are the log end
// offsets, and the group is empty and listed.
func testKafkaGoReaderGroup(t *testing.T, addr string) {
	const topic, group, partitions, n = "kafkago-group", "kafkago-g", 6, 600
	ctx := ctxT(t, 30*time.Second)
	cl := kafkaGoClient(t, addr)
	kafkaGoCreateTopic(t, cl, topic, partitions)
	led := &kafkaGoLedger{seen: map[string]int{}, by: map[string]int{}, parts: map[string]map[int]bool{}}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	a := startKafkaGoMember(t, runCtx, addr, group, topic, "a", led)
	b := startKafkaGoMember(t, runCtx, addr, group, topic, "b", led)

	// Both members hold a share of the partitions before anything is written.
	var desc kafka.DescribeGroupsResponseGroup
	waitFor(t, ctx, "two members with disjoint assignments of all partitions", func() bool {
		resp, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
		if err != nil || len(resp.Groups) != 1 {
			return false
		}
		desc = resp.Groups[0]
		if desc.Error != nil || desc.GroupState != "Stable" || len(desc.Members) != 2 {
			return false
		}
		owned := map[int]int{}
		for _, m := range desc.Members {
			if len(m.MemberAssignments.Topics) != 1 || len(m.MemberAssignments.Topics[0].Partitions) == 0 {
				return false
			}
			for _, p := range m.MemberAssignments.Topics[0].Partitions {
				owned[p]++
			}
		}
		return len(owned) == partitions && !slices.ContainsFunc(slices.Collect(maps.Values(owned)), func(c int) bool { return c != 1 })
	})
	for _, m := range desc.Members {
		if m.ClientID != kafkaGoClientID || m.ClientHost == "" || !slices.Equal(m.MemberMetadata.Topics, []string{topic}) || m.MemberAssignments.Topics[0].Topic != topic {
			t.Errorf("described member %+v", m)
		}
	}

	msgs := keyedMessages("kgg", n, 24, "")
	kafkaGoWrite(t, ctx, cl, topic, kafka.Snappy, msgs)
	ends := endOffsets(t, addr, topic)
	committedAtEnd := func() bool {
		resp, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1, 2, 3, 4, 5}}})
		if err != nil || resp.Error != nil || len(resp.Topics[topic]) != partitions {
			return false
		}
		for _, p := range resp.Topics[topic] {
			if p.Error != nil || p.CommittedOffset != ends[int32(p.Partition)] {
				return false
			}
		}
		return true
	}
	waitFor(t, ctx, fmt.Sprintf("%d messages processed and committed", n), func() bool { return led.distinct() == n && committedAtEnd() })
	cancel()
	for _, m := range []*kafkaGoMember{a, b} {
		<-m.done
		if err := m.r.Close(); err != nil { // leaves the group
			t.Errorf("reader close: %v", err)
		}
	}

	// The group was stable before the first write: each reader processed
	// the partitions described as its own, and no message twice.
	led.mu.Lock()
	t.Logf("processed by a: %d, by b: %d", led.by["a"], led.by["b"])
	if led.dups != 0 {
		t.Errorf("%d messages processed twice without a rebalance", led.dups)
	}
	var processed, assigned [][]int
	for _, r := range []string{"a", "b"} {
		processed = append(processed, slices.Sorted(maps.Keys(led.parts[r])))
	}
	for _, m := range desc.Members {
		assigned = append(assigned, slices.Sorted(slices.Values(m.MemberAssignments.Topics[0].Partitions)))
	}
	if !slices.EqualFunc(processed, assigned, slices.Equal) && !slices.EqualFunc(processed, [][]int{assigned[1], assigned[0]}, slices.Equal) {
		t.Errorf("readers processed partitions %v, members were assigned %v", processed, assigned)
	}
	for _, m := range msgs {
		if led.seen[m.Value] == 0 {
			t.Errorf("%s never processed", m.Value)
		}
	}
	led.mu.Unlock()

	if !committedAtEnd() {
		t.Errorf("committed offsets after close are not the end offsets %v", ends)
	}
	resp, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].GroupState != "Empty" || len(resp.Groups[0].Members) != 0 {
		t.Errorf("group after both readers closed: %+v, %v; want Empty with no members", resp, err)
	}
	lg, err := cl.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err != nil || lg.Error != nil {
		t.Fatalf("ListGroups: %v %+v", err, lg)
	}
	if !slices.ContainsFunc(lg.Groups, func(g kafka.ListGroupsResponseGroup) bool {
		return g.GroupID == group && g.ProtocolType == "consumer" && g.Coordinator == 0
	}) {
		t.Errorf("ListGroups = %+v, want %s (consumer, coordinator 0)", lg.Groups, group)
	}
}

// testKafkaGoClient: the admin calls of kafka-go's Client, each answer
// checked against what was asked and what franz-go sees.
func testKafkaGoClient(t *testing.T, addr string) {
	ctx := ctxT(t, 20*time.Second)
	cl := kafkaGoClient(t, addr)
	const topic, other = "kafkago-admin", "kafkago-admin-2"

	t.Run("ApiVersions", func(t *testing.T) {
		resp, err := cl.ApiVersions(ctx, &kafka.ApiVersionsRequest{})
		if err != nil || resp.Error != nil {
			t.Fatalf("ApiVersions: %v %v", err, resp)
		}
		want, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, newClient(t, addr))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.ApiKeys) != len(want.ApiKeys) {
			t.Errorf("kafka-go sees %d API keys, franz-go %d", len(resp.ApiKeys), len(want.ApiKeys))
		}
		got := map[int][2]int{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int{k.MinVersion, k.MaxVersion}
		}
		for _, k := range want.ApiKeys {
			if g := got[int(k.ApiKey)]; g != [2]int{int(k.MinVersion), int(k.MaxVersion)} {
				t.Errorf("%s: kafka-go sees %v, franz-go %d-%d", kmsg.NameForKey(k.ApiKey), g, k.MinVersion, k.MaxVersion)
			}
		}
		// Kafka 4 serves Fetch from v4 (KIP-896).
		if got[int(kmsg.Fetch)][0] != 4 {
			t.Errorf("Fetch versions %v, want from v4", got[int(kmsg.Fetch)])
		}
	})

	t.Run("CreateTopics", func(t *testing.T) {
		resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
			{Topic: topic, NumPartitions: 3, ReplicationFactor: 1, ConfigEntries: []kafka.ConfigEntry{
				{ConfigName: "retention.ms", ConfigValue: "3600000"}, {ConfigName: "cleanup.policy", ConfigValue: "compact,delete"},
			}},
			{Topic: other, NumPartitions: 2, ReplicationFactor: 1},
			{Topic: "kafkago-bad-rf", NumPartitions: 1, ReplicationFactor: 0},
		}})
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		if len(resp.Errors) != 3 || resp.Errors[topic] != nil || resp.Errors[other] != nil || !errors.Is(resp.Errors["kafkago-bad-rf"], kafka.InvalidReplicationFactor) {
			t.Errorf("CreateTopics errors %v; want none for %s and %s, INVALID_REPLICATION_FACTOR for kafkago-bad-rf", resp.Errors, topic, other)
		}
		resp, err = cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 3, ReplicationFactor: 1}}})
		if err != nil || !errors.Is(resp.Errors[topic], kafka.TopicAlreadyExists) {
			t.Errorf("CreateTopics again: %v %v, want TOPIC_ALREADY_EXISTS", err, resp)
		}
		// kafka-go's Transport waits for a topic it created to show in its
		// metadata, validate-only too: until the deadline.
		vctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		resp, err = cl.CreateTopics(vctx, &kafka.CreateTopicsRequest{ValidateOnly: true, Topics: []kafka.TopicConfig{{Topic: "kafkago-validate", NumPartitions: 1, ReplicationFactor: 1}}})
		if err != nil || resp.Errors["kafkago-validate"] != nil {
			t.Errorf("CreateTopics validate-only: %v %v", err, resp)
		}
		td, err := newAdmin(t, addr).ListTopics(ctx, topic, other, "kafkago-validate")
		if err != nil {
			t.Fatal(err)
		}
		if len(td[topic].Partitions) != 3 || len(td[other].Partitions) != 2 || td["kafkago-validate"].Err == nil {
			t.Errorf("topics after CreateTopics: %s %d partitions, %s %d, kafkago-validate %v (want 3, 2, absent)",
				topic, len(td[topic].Partitions), other, len(td[other].Partitions), td["kafkago-validate"].Err)
		}
	})

	// Each call on a new Client: a Transport answers Metadata from the
	// cluster metadata it last fetched (every 6 s), so it would not see a
	// change this client just made.
	metadata := func(t *testing.T, topics ...string) *kafka.MetadataResponse {
		t.Helper()
		resp, err := kafkaGoClient(t, addr).Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
		if err != nil {
			t.Fatalf("Metadata: %v", err)
		}
		return resp
	}

	t.Run("Metadata", func(t *testing.T) {
		resp := metadata(t, topic, "kafkago-missing")
		// The broker as franz-go sees it advertised.
		bs, err := newAdmin(t, addr).ListBrokers(ctx)
		if err != nil || len(bs) != 1 {
			t.Fatalf("franz-go ListBrokers: %v %v", bs, err)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].ID != 0 || resp.Brokers[0].Host != bs[0].Host || resp.Brokers[0].Port != int(bs[0].Port) {
			t.Errorf("brokers %+v, want broker 0 at %s:%d", resp.Brokers, bs[0].Host, bs[0].Port)
		}
		if resp.Controller.ID != 0 || resp.ClusterID == "" {
			t.Errorf("controller %+v, cluster id %q", resp.Controller, resp.ClusterID)
		}
		if len(resp.Topics) != 2 {
			t.Fatalf("topics %+v, want 2", resp.Topics)
		}
		for _, tp := range resp.Topics {
			switch tp.Name {
			case topic:
				if tp.Error != nil || tp.Internal || len(tp.Partitions) != 3 {
					t.Errorf("%s: %+v", topic, tp)
				}
				for i, p := range tp.Partitions {
					if p.Error != nil || p.ID != i || p.Topic != topic || p.Leader.ID != 0 || len(p.Replicas) != 1 || len(p.Isr) != 1 {
						t.Errorf("%s partition %d: %+v", topic, i, p)
					}
				}
			case "kafkago-missing": // absent from the broker's list of every topic
				if !errors.Is(tp.Error, kafka.UnknownTopicOrPartition) {
					t.Errorf("kafkago-missing: %v, want UNKNOWN_TOPIC_OR_PARTITION", tp.Error)
				}
			default:
				t.Errorf("unasked topic %q", tp.Name)
			}
		}
	})

	// Three records to partition 0 of topic a second apart in time, one to
	// partition 1.
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i, p := range []int32{0, 0, 0, 1} {
		r := &kgo.Record{Topic: topic, Partition: p, Key: []byte("k"), Value: []byte("v"), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("ListOffsets", func(t *testing.T) {
		resp, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {
			kafka.FirstOffsetOf(0), kafka.LastOffsetOf(0), kafka.FirstOffsetOf(1), kafka.LastOffsetOf(1), kafka.LastOffsetOf(2),
			kafka.TimeOffsetOf(0, base.Add(1500*time.Millisecond)),
		}}})
		if err != nil {
			t.Fatalf("ListOffsets: %v", err)
		}
		got := map[int]kafka.PartitionOffsets{}
		for _, p := range resp.Topics[topic] {
			got[p.Partition] = p
			if p.Error != nil {
				t.Errorf("partition %d: %v", p.Partition, p.Error)
			}
		}
		for p, want := range map[int][2]int64{0: {0, 3}, 1: {0, 1}, 2: {-1, 0}} {
			if g := got[p]; g.FirstOffset != want[0] || g.LastOffset != want[1] {
				t.Errorf("partition %d: first %d last %d, want %d %d", p, g.FirstOffset, g.LastOffset, want[0], want[1])
			}
		}
		// The first record at or after base+1.5s is offset 2 (kafka-go keys
		// the answer by the time asked, not the record's).
		if ts, ok := got[0].Offsets[2]; !ok || len(got[0].Offsets) != 1 || !ts.Equal(base.Add(1500*time.Millisecond)) {
			t.Errorf("partition 0 by time: %v, want offset 2", got[0].Offsets)
		}
	})

	t.Run("ListOffsetsAfterDeleteRecords", func(t *testing.T) {
		// kafka-go has no DeleteRecords; franz-go moves partition 0's log
		// start, and kafka-go lists it.
		dr, err := newAdmin(t, addr).DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 1}}})
		if err != nil || dr.Error() != nil {
			t.Fatalf("franz-go DeleteRecords: %v %v", err, dr.Error())
		}
		resp, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.FirstOffsetOf(0), kafka.LastOffsetOf(0)}}})
		if err != nil || len(resp.Topics[topic]) != 1 {
			t.Fatalf("ListOffsets: %v %+v", err, resp)
		}
		if p := resp.Topics[topic][0]; p.Error != nil || p.FirstOffset != 1 || p.LastOffset != 3 {
			t.Errorf("partition 0 after DeleteRecords to 1: %+v, want first 1, last 3", p)
		}
	})

	t.Run("Fetch", func(t *testing.T) {
		// Client.Fetch is kafka-go's own Fetch (up to v11), apart from the
		// Conn's that Readers use.
		resp, err := cl.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: 0, Offset: 1, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond})
		if err != nil || resp.Error != nil {
			t.Fatalf("Fetch: %v %+v", err, resp)
		}
		if resp.HighWatermark != 3 || resp.LogStartOffset != 1 || resp.LastStableOffset != 3 {
			t.Errorf("Fetch: high watermark %d, log start %d, last stable %d; want 3, 1, 3", resp.HighWatermark, resp.LogStartOffset, resp.LastStableOffset)
		}
		var offsets []int64
		for {
			r, err := resp.Records.ReadRecord()
			if err != nil {
				break
			}
			k, _ := kafka.ReadAll(r.Key)
			if string(k) != "k" || !r.Time.Equal(base.Add(time.Duration(r.Offset)*time.Second)) {
				t.Errorf("record %d: key %q time %v", r.Offset, k, r.Time)
			}
			offsets = append(offsets, r.Offset)
		}
		if !slices.Equal(offsets, []int64{1, 2}) {
			t.Errorf("fetched offsets %v, want 1, 2", offsets)
		}
		resp, err = cl.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: 0, Offset: 0, MaxBytes: 1 << 20})
		if err != nil || !errors.Is(resp.Error, kafka.OffsetOutOfRange) {
			t.Errorf("Fetch below the log start: %v %+v, want OFFSET_OUT_OF_RANGE", err, resp)
		}
	})

	const group = "kafkago-admin-g"
	t.Run("Offsets", func(t *testing.T) {
		// An empty group takes commits from outside (generation -1), as
		// Kafka's admin tools do.
		resp, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1, Topics: map[string][]kafka.OffsetCommit{
			topic: {{Partition: 0, Offset: 2, Metadata: "m0"}, {Partition: 1, Offset: 1}},
		}})
		if err != nil || len(resp.Topics[topic]) != 2 {
			t.Fatalf("OffsetCommit: %v %+v", err, resp)
		}
		for _, p := range resp.Topics[topic] {
			if p.Error != nil {
				t.Errorf("OffsetCommit partition %d: %v", p.Partition, p.Error)
			}
		}
		of, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1, 2}}})
		if err != nil || of.Error != nil {
			t.Fatalf("OffsetFetch: %v %+v", err, of)
		}
		got := map[int]kafka.OffsetFetchPartition{}
		for _, p := range of.Topics[topic] {
			got[p.Partition] = p
		}
		if g := got[0]; g.CommittedOffset != 2 || g.Metadata != "m0" || g.Error != nil {
			t.Errorf("partition 0: %+v, want offset 2 metadata m0", g)
		}
		if g := got[1]; g.CommittedOffset != 1 || g.Error != nil {
			t.Errorf("partition 1: %+v, want offset 1", g)
		}
		if g, ok := got[2]; !ok || g.CommittedOffset != -1 || g.Error != nil {
			t.Errorf("partition 2: %+v, want no offset (-1)", g)
		}
		// No topics: every committed offset of the group (v2+).
		of, err = cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group})
		if err != nil || len(of.Topics) != 1 || len(of.Topics[topic]) != 2 {
			t.Errorf("OffsetFetch of all: %v %+v, want partitions 0 and 1 of %s", err, of, topic)
		}
		offs, err := cl.ConsumerOffsets(ctx, kafka.TopicAndGroup{Topic: topic, GroupId: group})
		if err != nil || offs[0] != 2 || offs[1] != 1 {
			t.Errorf("ConsumerOffsets: %v %v", offs, err)
		}

		dg, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group, "kafkago-no-such-group"}})
		if err != nil || len(dg.Groups) != 2 {
			t.Fatalf("DescribeGroups: %v %+v", err, dg)
		}
		for _, g := range dg.Groups {
			want := map[string]string{group: "Empty", "kafkago-no-such-group": "Dead"}[g.GroupID]
			if g.Error != nil || g.GroupState != want || len(g.Members) != 0 {
				t.Errorf("DescribeGroups %s: %+v, want %s with no members", g.GroupID, g, want)
			}
		}
		lg, err := cl.ListGroups(ctx, &kafka.ListGroupsRequest{})
		if err != nil || !slices.ContainsFunc(lg.Groups, func(g kafka.ListGroupsResponseGroup) bool { return g.GroupID == group }) {
			t.Errorf("ListGroups: %v %+v, want %s", err, lg, group)
		}

		od, err := cl.OffsetDelete(ctx, &kafka.OffsetDeleteRequest{GroupID: group, Topics: map[string][]int{topic: {1}}})
		if err != nil || od.Error != nil || len(od.Topics[topic]) != 1 || od.Topics[topic][0].Error != nil {
			t.Errorf("OffsetDelete: %v %+v", err, od)
		}
		if offs, err := cl.ConsumerOffsets(ctx, kafka.TopicAndGroup{Topic: topic, GroupId: group}); err != nil || offs[0] != 2 || offs[1] != -1 {
			t.Errorf("offsets after OffsetDelete of partition 1: %v %v", offs, err)
		}
		del, err := cl.DeleteGroups(ctx, &kafka.DeleteGroupsRequest{GroupIDs: []string{group, "kafkago-no-such-group"}})
		if err != nil || del.Errors[group] != nil || !errors.Is(del.Errors["kafkago-no-such-group"], kafka.GroupIdNotFound) {
			t.Errorf("DeleteGroups: %v %+v, want %s deleted, GROUP_ID_NOT_FOUND for the other", err, del, group)
		}
		if offs, err := cl.ConsumerOffsets(ctx, kafka.TopicAndGroup{Topic: topic, GroupId: group}); err != nil || offs[0] != -1 {
			t.Errorf("offsets after DeleteGroups: %v %v", offs, err)
		}
	})

	describe := func(t *testing.T, names ...string) map[string]kafka.DescribeConfigResponseConfigEntry {
		t.Helper()
		resp, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
			Resources:       []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: names}},
			IncludeSynonyms: true, IncludeDocumentation: true,
		})
		if err != nil || len(resp.Resources) != 1 || resp.Resources[0].Error != nil || resp.Resources[0].ResourceName != topic {
			t.Fatalf("DescribeConfigs %s: %v %+v", topic, err, resp)
		}
		out := map[string]kafka.DescribeConfigResponseConfigEntry{}
		for _, e := range resp.Resources[0].ConfigEntries {
			out[e.ConfigName] = e
		}
		return out
	}
	// Kafka's config sources (DescribeConfigs v1+, where IsDefault is
	// gone) and types.
	const dynamicTopic, defaultConfig = 1, 5
	const typeBoolean, typeInt, typeLong, typeList = 1, 3, 5, 7

	t.Run("DescribeConfigs", func(t *testing.T) {
		all := describe(t)
		if len(all) < 20 {
			t.Errorf("%d topic configs described", len(all))
		}
		// kafka-go's Client drops IncludeSynonyms and IncludeDocumentation
		// when it splits the request by broker, so it asks for neither,
		// and gets neither, as from Kafka.
		for name, e := range all {
			if e.ConfigDocumentation != "" || len(e.ConfigSynonyms) != 0 || e.ConfigType == 0 || e.ReadOnly || e.IsSensitive {
				t.Errorf("%s: %+v, want a type and no documentation or synonyms", name, e)
			}
		}
		for name, want := range map[string]struct {
			value      string
			source, tp int8
		}{
			"retention.ms":                   {"3600000", dynamicTopic, typeLong},
			"cleanup.policy":                 {"compact,delete", dynamicTopic, typeList},
			"max.message.bytes":              {"1048588", defaultConfig, typeInt},
			"unclean.leader.election.enable": {"false", defaultConfig, typeBoolean},
		} {
			if e := all[name]; e.ConfigValue != want.value || e.ConfigSource != want.source || e.ConfigType != want.tp {
				t.Errorf("%s: %+v, want %s from source %d, type %d", name, e, want.value, want.source, want.tp)
			}
		}
		only := describe(t, "segment.bytes")
		if len(only) != 1 || only["segment.bytes"].ConfigValue != "1073741824" {
			t.Errorf("segment.bytes alone: %+v", only)
		}
		resp, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
			{ResourceType: kafka.ResourceTypeBroker, ResourceName: "0", ConfigNames: []string{"num.partitions"}},
			{ResourceType: kafka.ResourceTypeTopic, ResourceName: "kafkago-missing"},
		}})
		if err != nil || len(resp.Resources) != 2 {
			t.Fatalf("DescribeConfigs: %v %+v", err, resp)
		}
		if r := resp.Resources[0]; r.Error != nil || len(r.ConfigEntries) != 1 || r.ConfigEntries[0].ConfigValue != "1" || !r.ConfigEntries[0].ReadOnly {
			t.Errorf("broker 0 num.partitions: %+v", r)
		}
		if r := resp.Resources[1]; !errors.Is(r.Error, kafka.UnknownTopicOrPartition) {
			t.Errorf("missing topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", r)
		}
	})

	t.Run("AlterConfigs", func(t *testing.T) {
		// AlterConfigs replaces the topic's whole set: cleanup.policy
		// returns to its default.
		resp, err := cl.AlterConfigs(ctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, Configs: []kafka.AlterConfigRequestConfig{{Name: "retention.ms", Value: "7200000"}},
		}}})
		if err != nil || len(resp.Errors) != 1 || resp.Errors[kafka.AlterConfigsResponseResource{Type: int8(kafka.ResourceTypeTopic), Name: topic}] != nil {
			t.Fatalf("AlterConfigs: %v %+v", err, resp)
		}
		got := describe(t, "retention.ms", "cleanup.policy")
		if got["retention.ms"].ConfigValue != "7200000" || got["cleanup.policy"].ConfigValue != "delete" || got["cleanup.policy"].ConfigSource != defaultConfig {
			t.Errorf("after AlterConfigs: %+v", got)
		}
		resp, err = cl.AlterConfigs(ctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, Configs: []kafka.AlterConfigRequestConfig{{Name: "no.such.config", Value: "1"}},
		}}})
		if err != nil || !errors.Is(resp.Errors[kafka.AlterConfigsResponseResource{Type: int8(kafka.ResourceTypeTopic), Name: topic}], kafka.InvalidConfiguration) {
			t.Errorf("AlterConfigs with an unknown name: %v %+v, want INVALID_CONFIG", err, resp)
		}

		inc, err := cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, Configs: []kafka.IncrementalAlterConfigsRequestConfig{
				{Name: "max.message.bytes", Value: "2000000", ConfigOperation: kafka.ConfigOperationSet},
				{Name: "retention.ms", ConfigOperation: kafka.ConfigOperationDelete},
				{Name: "cleanup.policy", Value: "compact", ConfigOperation: kafka.ConfigOperationAppend},
			},
		}}})
		if err != nil || len(inc.Resources) != 1 || inc.Resources[0].Error != nil || inc.Resources[0].ResourceName != topic {
			t.Fatalf("IncrementalAlterConfigs: %v %+v", err, inc)
		}
		got = describe(t, "max.message.bytes", "retention.ms", "cleanup.policy")
		if got["max.message.bytes"].ConfigValue != "2000000" || got["retention.ms"].ConfigValue != "604800000" || got["retention.ms"].ConfigSource != defaultConfig ||
			got["cleanup.policy"].ConfigValue != "delete,compact" {
			t.Errorf("after IncrementalAlterConfigs: %+v", got)
		}
	})

	t.Run("CreatePartitions", func(t *testing.T) {
		resp, err := cl.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{{Name: topic, Count: 5}, {Name: other, Count: 1}}})
		if err != nil || resp.Errors[topic] != nil || !errors.Is(resp.Errors[other], kafka.InvalidPartitionNumber) {
			t.Fatalf("CreatePartitions: %v %+v; want %s grown to 5, INVALID_PARTITIONS for shrinking %s", err, resp, topic, other)
		}
		md := metadata(t, topic)
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 5 {
			t.Errorf("metadata after CreatePartitions: %+v", md.Topics)
		}
	})

	t.Run("DeleteTopics", func(t *testing.T) {
		resp, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic, other, "kafkago-missing"}})
		if err != nil || resp.Errors[topic] != nil || resp.Errors[other] != nil || !errors.Is(resp.Errors["kafkago-missing"], kafka.UnknownTopicOrPartition) {
			t.Fatalf("DeleteTopics: %v %+v", err, resp)
		}
		md := metadata(t, topic, other)
		for _, tp := range md.Topics {
			if !errors.Is(tp.Error, kafka.UnknownTopicOrPartition) {
				t.Errorf("%s after delete: %v, want UNKNOWN_TOPIC_OR_PARTITION", tp.Name, tp.Error)
			}
		}
	})
}

// testKafkaGoConn: kafka-go's low-level Conn to a partition leader writes
// (plain and compressed), reads back with ReadBatch, and lists offsets.
func testKafkaGoConn(t *testing.T, addr string) {
	const topic = "kafkago-conn"
	ctx := ctxT(t, 20*time.Second)
	boot, err := kafkaGoDialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer boot.Close()
	if err := boot.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatalf("Conn.CreateTopics: %v", err)
	}
	parts, err := boot.ReadPartitions(topic)
	if err != nil || len(parts) != 2 {
		t.Fatalf("ReadPartitions: %v %+v", err, parts)
	}
	ctl, err := boot.Controller()
	if err != nil || ctl.ID != 0 {
		t.Errorf("Controller: %+v %v", ctl, err)
	}

	c, err := kafkaGoDialer.DialLeader(ctx, "tcp", addr, topic, 1)
	if err != nil {
		t.Fatalf("DialLeader: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	var want []string
	var msgs []kafka.Message
	for i := range 20 {
		v := fmt.Sprintf("conn-%02d", i)
		want = append(want, v)
		msgs = append(msgs, kafka.Message{Key: []byte("k"), Value: []byte(v), Headers: []kafka.Header{{Key: "i", Value: []byte(strconv.Itoa(i))}}})
	}
	if _, err := c.WriteMessages(msgs[:10]...); err != nil {
		t.Fatalf("Conn.WriteMessages: %v", err)
	}
	if _, p, off, _, err := c.WriteCompressedMessagesAt(kafka.Lz4.Codec(), msgs[10:]...); err != nil || p != 1 || off != 10 {
		t.Fatalf("Conn.WriteCompressedMessagesAt: partition %d offset %d, %v; want 1, 10", p, off, err)
	}
	first, last, err := c.ReadOffsets()
	if err != nil || first != 0 || last != 20 {
		t.Errorf("ReadOffsets = %d, %d, %v; want 0, 20", first, last, err)
	}
	if _, err := c.Seek(5, kafka.SeekAbsolute); err != nil {
		t.Fatal(err)
	}
	batch := c.ReadBatch(1, 1<<20)
	var got []string
	for {
		m, err := batch.ReadMessage()
		if err != nil {
			break
		}
		if m.Partition != 1 || m.Offset != int64(5+len(got)) || len(m.Headers) != 1 || string(m.Headers[0].Value) != strconv.Itoa(int(m.Offset)) {
			t.Errorf("message %+v", m)
		}
		got = append(got, string(m.Value))
		if len(got) == 15 {
			break
		}
	}
	if err := batch.Close(); err != nil {
		t.Errorf("batch close: %v", err)
	}
	if batch.HighWaterMark() != 20 {
		t.Errorf("batch high watermark %d, want 20", batch.HighWaterMark())
	}
	if !slices.Equal(got, want[5:]) {
		t.Errorf("ReadBatch from 5: %v, want %v", got, want[5:])
	}

	// A partition Reader (no group) reads partition 1 with its own fetch loop.
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Dialer: kafkaGoDialer, Topic: topic, Partition: 1, MaxWait: 1500 * time.Millisecond})
	defer r.Close()
	got = got[:0]
	for len(got) < 20 {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("partition Reader: %v after %d messages", err, len(got))
		}
		got = append(got, string(m.Value))
	}
	if !slices.Equal(got, want) {
		t.Errorf("partition Reader: %v", got)
	}

	if err := boot.DeleteTopics(topic); err != nil {
		t.Errorf("Conn.DeleteTopics: %v", err)
	}
}

// driveKafkaGo creates a topic with kafka-go's Client, writes to it with
// an lz4 Writer, reads it with a Reader in a group (committing), then
// lists its offsets and describes its configs.
func driveKafkaGo(t *testing.T, addr string) {
	const topic, group, n = "traffic-kafkago", "traffic-kafkago-g", 30
	ctx := ctxT(t, 30*time.Second)
	cl := kafkaGoClient(t, addr)
	kafkaGoCreateTopic(t, cl, topic, 3)
	kafkaGoWrite(t, ctx, cl, topic, kafka.Lz4, keyedMessages("kg", n, 6, ""))
	led := &kafkaGoLedger{seen: map[string]int{}, by: map[string]int{}, parts: map[string]map[int]bool{}}
	runCtx, cancel := context.WithCancel(ctx)
	m := startKafkaGoMember(t, runCtx, addr, group, topic, "a", led)
	waitFor(t, ctx, fmt.Sprintf("%d messages processed", n), func() bool { return led.distinct() == n })
	cancel()
	<-m.done
	if err := m.r.Close(); err != nil {
		t.Errorf("reader close: %v", err)
	}
	if _, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.LastOffsetOf(0)}}}); err != nil {
		t.Errorf("ListOffsets: %v", err)
	}
	if _, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic}}}); err != nil {
		t.Errorf("DescribeConfigs: %v", err)
	}
}
