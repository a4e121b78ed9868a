package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/wire"
)

// recordingProxy forwards TCP connections to target and records every
// client->broker frame.
type recordingProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frames [][]byte
}

func startRecordingProxy(t *testing.T, ln net.Listener, target string) *recordingProxy {
	p := &recordingProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
	return p
}

func (p *recordingProxy) handle(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { _, _ = io.Copy(c, up) }()
	for {
		frame, err := wire.ReadFrame(c, 1<<30)
		if err != nil {
			return
		}
		p.mu.Lock()
		p.frames = append(p.frames, frame)
		p.mu.Unlock()
		out := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
		if _, err := up.Write(append(out, frame...)); err != nil {
			return
		}
	}
}

// recordClient starts a broker behind a recording proxy (the broker
// advertises the proxy, so every connection goes through it), runs drive
// with the proxy's address, and returns every request frame sent.
func recordClient(t *testing.T, drive func(t *testing.T, addr string)) [][]byte {
	t.Helper()
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyAddr := proxyLn.Addr().String()
	_, addr, stop := startTestBroker(t, "--advertised-addr", proxyAddr)
	p := startRecordingProxy(t, proxyLn, addr)
	drive(t, proxyAddr)
	stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.frames...)
}

// TestRecordedClientTrafficDecodes drives each real client (franz-go,
// sarama, kcat, kafkajs, @platformatic/kafka, kafka-go, kafka-python,
// confluent-kafka-python, confluent-kafka-go) through a recording proxy and checks that every request it sent decodes.
// With KAAS_WRITE_FUZZ_SEEDS=1 it also writes the frames as the wire fuzz
// seed corpus (wire/testdata/fuzz/FuzzDecodeRequest), named by client.
func TestRecordedClientTrafficDecodes(t *testing.T) {
	for _, c := range []struct {
		name  string
		drive func(t *testing.T, addr string)
		sends []kmsg.Key // beyond ApiVersions, Metadata, Produce and Fetch
	}{
		{"franz-go", driveFranzGo, []kmsg.Key{kmsg.CreateTopics, kmsg.InitProducerID, kmsg.DescribeConfigs, kmsg.ListOffsets, kmsg.DeleteTopics}},
		{"sarama", driveSarama, nil},
		{"kcat", func(t *testing.T, addr string) {
			msgs := keyedMessages("kcat", 20, 4, "")
			kcatProduce(t, addr, "traffic-kcat", msgs)
			checkConsumed(t, msgs, kcatConsume(t, addr, "traffic-kcat"), 0)
		}, nil},
		{"kafkajs", func(t *testing.T, addr string) {
			runNode(t, kafkajsDir(t), 60*time.Second, "produce-consume.js", addr, "traffic-kafkajs", "20")
		}, []kmsg.Key{kmsg.CreateTopics, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.OffsetCommit}},
		{"platformatic", func(t *testing.T, addr string) {
			runNode(t, platformaticDir(t), 60*time.Second, "produce-consume.mjs", addr, "traffic-platformatic", "20", "lz4")
		}, []kmsg.Key{kmsg.CreateTopics, kmsg.InitProducerID, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.OffsetCommit, kmsg.OffsetFetch}},
		{"kafka-go", driveKafkaGo, []kmsg.Key{kmsg.CreateTopics, kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup,
			kmsg.OffsetFetch, kmsg.OffsetCommit, kmsg.LeaveGroup, kmsg.ListOffsets, kmsg.DescribeConfigs}},
		{"kafka-python", func(t *testing.T, addr string) {
			var pc kpyProduceConsume
			runKafkaPython(t, 60*time.Second, "produce-consume.py", &pc, addr, "traffic-kpy", "20", "traffic-kpy-group", "gzip")
			var adm map[string]any
			runKafkaPython(t, 60*time.Second, "admin.py", &adm, addr, "traffic-kpy-admin", "traffic-kpy-group")
		}, []kmsg.Key{kmsg.CreateTopics, kmsg.ListOffsets, kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.LeaveGroup,
			kmsg.DescribeConfigs, kmsg.AlterConfigs, kmsg.CreatePartitions, kmsg.ListGroups, kmsg.DescribeGroups, kmsg.DeleteGroups, kmsg.DeleteTopics}},
		{"confluent-kafka-python", func(t *testing.T, addr string) {
			var pc kpyProduceConsume
			runConfluentKafka(t, 60*time.Second, "produce-consume.py", &pc, addr, "traffic-cfk", "20", "traffic-cfk-group", "gzip")
			var txn, adm map[string]any
			runConfluentKafka(t, 60*time.Second, "transactions.py", &txn, addr, "traffic-cfk-gzip", "traffic-cfk-out", "traffic-cfk-fence", "traffic-cfk-txn-group", "traffic-cfk-txn")
			runConfluentKafka(t, 60*time.Second, "admin.py", &adm, addr, "traffic-cfk-admin", "traffic-cfk-group")
		}, []kmsg.Key{kmsg.CreateTopics, kmsg.ListOffsets, kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.LeaveGroup,
			kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.TxnOffsetCommit, kmsg.EndTxn,
			kmsg.DescribeConfigs, kmsg.AlterConfigs, kmsg.CreatePartitions, kmsg.ListGroups, kmsg.DescribeGroups, kmsg.DeleteTopics}},
		{"confluent-kafka-go", func(t *testing.T, addr string) {
			var out map[string]any
			runConfluentGo(t, 60*time.Second, &out, "consumer848", addr, "traffic-cfg", "traffic-cfg-group", "20", "traffic-cfg-re-", "traffic-cfg-re-group", "traffic-cfg-re-late")
		}, []kmsg.Key{kmsg.CreateTopics, kmsg.InitProducerID, kmsg.FindCoordinator, kmsg.ConsumerGroupHeartbeat, kmsg.OffsetCommit, kmsg.OffsetFetch,
			kmsg.ConsumerGroupDescribe, kmsg.ListOffsets}},
	} {
		t.Run(c.name, func(t *testing.T) {
			frames := recordClient(t, c.drive)
			keys := map[int16]bool{}
			for i, f := range frames {
				hdr, body, err := wire.ParseHeader(f)
				if err != nil {
					t.Fatalf("frame %d header: %v", i, err)
				}
				if _, err := wire.DecodeBody(hdr, body); err != nil {
					t.Fatalf("frame %d (%s v%d): %v", i, kmsg.NameForKey(hdr.Key), hdr.Version, err)
				}
				keys[hdr.Key] = true
			}
			for _, k := range append([]kmsg.Key{kmsg.ApiVersions, kmsg.Metadata, kmsg.Produce, kmsg.Fetch}, c.sends...) {
				if !keys[k.Int16()] {
					t.Errorf("recorded traffic (%d frames) has no %s request", len(frames), kmsg.NameForKey(k.Int16()))
				}
			}
			if os.Getenv("KAAS_WRITE_FUZZ_SEEDS") != "" {
				writeFuzzSeeds(t, c.name, frames)
			}
		})
	}
}

// driveFranzGo creates a topic, produces to it idempotently, reads it back,
// describes its configs, lists its offsets and deletes it.
func driveFranzGo(t *testing.T, addr string) {
	ctx := ctxT(t, 20*time.Second)
	createTopic(t, addr, "traffic", 3, map[string]*string{"retention.ms": sp("3600000")})
	cl := newClient(t, addr, kgo.DefaultProduceTopic("traffic"))
	defer cl.Close()
	for i := 0; i < 50; i++ {
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("value")}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, addr, kgo.ConsumeTopics("traffic"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cons.Close()
	for n := 0; n < 50; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += len(fs.Records())
	}
	adm := kadm.NewClient(cl)
	_, _ = adm.DescribeTopicConfigs(ctx, "traffic")
	_, _ = adm.ListStartOffsets(ctx, "traffic")
	_, _ = adm.DeleteTopics(ctx, "traffic")
}

// driveSarama produces with an idempotent acks=all producer to a topic the
// broker creates and reads it back with a partition consumer.
func driveSarama(t *testing.T, addr string) {
	cfg := saramaConfig(sarama.V3_6_0_0)
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Return.Successes = true
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama.NewSyncProducer: %v", err)
	}
	for i := range 20 {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "traffic-sarama", Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
	_ = prod.Close()
	cons, err := sarama.NewConsumer([]string{addr}, saramaConfig(sarama.V3_6_0_0))
	if err != nil {
		t.Fatalf("sarama.NewConsumer: %v", err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition("traffic-sarama", 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("ConsumePartition: %v", err)
	}
	defer pc.Close()
	for n := 0; n < 20; n++ {
		select {
		case <-pc.Messages():
		case err := <-pc.Errors():
			t.Fatalf("consume: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatalf("read %d of 20 records", n)
		}
	}
}

// writeFuzzSeeds writes up to three frames of each request key as seeds of
// the wire decoder's fuzz target, named after the client that sent them.
func writeFuzzSeeds(t *testing.T, client string, frames [][]byte) {
	dir := filepath.Join("..", "..", "wire", "testdata", "fuzz", "FuzzDecodeRequest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	seen := map[int16]int{}
	for _, f := range frames {
		k := int16(binary.BigEndian.Uint16(f))
		if seen[k] >= 3 || len(f) > 64<<10 {
			continue
		}
		seen[k]++
		prefix := fmt.Sprintf("%s-%s-", client, kmsg.NameForKey(k))
		name := fmt.Sprintf("%s%x", prefix, sha256.Sum256(f))
		// 40 characters, or more after a long client and request name:
		// at least 10 digits of the hash, so frames do not share a name.
		name = name[:max(40, len(prefix)+10)]
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", f)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
