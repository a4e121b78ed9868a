package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceAcksZeroFailureClosesConnection: an acks=0 Produce gets no
// answer; one that fails for any partition closes the connection instead,
// as Kafka does, so that the producer learns of it and refreshes its
// metadata. Answers to the requests before it are still written, the
// requests after it get none. The failures are logged and counted.
func TestProduceAcksZeroFailureClosesConnection(t *testing.T) {
	addr, httpAddr := freeAddr(t), freeAddr(t)
	_, logs, _ := startLoggedBroker(t, []string{"--kafka-addr", addr, "--http-addr", httpAddr, "--log-level", "info", "--log-format", "json"})
	// The counters are the process's: this test's share is what it adds.
	_, before := scrape(t, httpAddr)
	ctx := ctxT(t, 30*time.Second)
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"max.message.bytes": new("2000")}, "acks0"); err != nil {
		t.Fatal(err)
	}
	record := recordsBatch(t, 0, 1, 1, rec(0, 0, nil, []byte("v")))
	produce := func(topic string, partition int32, records []byte) []byte {
		req := produceRequest(topic, partition, 0, records)
		req.SetVersion(8) // the last before flexible headers, which frame does not write
		return req.AppendTo(nil)
	}
	apiVersions := kmsg.NewPtrApiVersionsRequest().AppendTo(nil)
	// corrOf reads the next answer's correlation id.
	corrOf := func(what string, c interface{ Read([]byte) (int, error) }) int32 {
		t.Helper()
		f, err := readSizedFrame(c)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return int32(binary.BigEndian.Uint32(f))
	}

	// Stored, unanswered: the ApiVersions sent after it is the next answer.
	c := rawConn(t, addr)
	if _, err := c.Write(append(frame(0, 8, 1, produce("acks0", 0, record)), frame(18, 0, 2, apiVersions)...)); err != nil {
		t.Fatal(err)
	}
	if corr := corrOf("after a stored acks=0 produce", c); corr != 2 {
		t.Fatalf("answer with correlation id %d, want 2 (ApiVersions; the acks=0 produce gets none)", corr)
	}

	big := recordsBatch(t, 0, 1, 1, rec(0, 0, nil, make([]byte, 4000)))
	corrupt := append([]byte(nil), record...)
	corrupt[len(corrupt)-1] ^= 0xff // the CRC no longer matches
	for _, c := range []struct {
		name, topic string
		partition   int32
		records     []byte
		want        string // in the log line
	}{
		{"unknown partition", "acks0", 7, record, "acks0-7: UNKNOWN_TOPIC_OR_PARTITION"},
		{"unknown topic", "acks0-missing", 0, record, "acks0-missing-0: UNKNOWN_TOPIC_OR_PARTITION"},
		{"too large", "acks0", 1, big, "acks0-1: MESSAGE_TOO_LARGE"},
		{"corrupt", "acks0", 0, corrupt, "acks0-0: CORRUPT_MESSAGE"},
	} {
		conn := rawConn(t, addr)
		out := frame(18, 0, 1, apiVersions)
		out = append(out, frame(0, 8, 2, produce(c.topic, c.partition, c.records))...)
		out = append(out, frame(18, 0, 3, apiVersions)...)
		if _, err := conn.Write(out); err != nil {
			t.Fatal(err)
		}
		if corr := corrOf(c.name+": the request before", conn); corr != 1 {
			t.Fatalf("%s: answer with correlation id %d, want 1", c.name, corr)
		}
		assertClosed(t, conn, c.name+": after a failed acks=0 produce")
		waitUntil(t, 5*time.Second, c.name+" logged", func() bool {
			l := logs.String()
			return strings.Contains(l, "acks=0 produce failed; closing connection") && strings.Contains(l, c.want)
		})
	}

	// Only the stored record is in the log.
	end, err := adm.ListEndOffsets(ctx, "acks0")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("acks0", 0); o.Offset != 1 {
		t.Fatalf("acks0-0 ends at %d, want 1", o.Offset)
	}

	// A client's acks=0 producer goes on over a new connection after the
	// broker closed its last one.
	cl := newClient(t, addr, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic("acks0"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ClientID("acks0-client"))
	noise := make([]byte, 4000) // does not compress under max.message.bytes
	_, _ = rand.Read(noise)
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: noise}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the client's failed produce logged", func() bool {
		return strings.Contains(logs.String(), `"client_id":"acks0-client","errors":"acks0-1: MESSAGE_TOO_LARGE"`)
	})
	waitUntil(t, 20*time.Second, "a later acks=0 record of the client stored", func() bool {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("after")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		end, err := adm.ListEndOffsets(context.Background(), "acks0")
		o, _ := end.Lookup("acks0", 1)
		return err == nil && o.Err == nil && o.Offset > 0
	})

	_, after := scrape(t, httpAddr)
	for code, want := range map[string]float64{"UNKNOWN_TOPIC_OR_PARTITION": 2, "MESSAGE_TOO_LARGE": 2, "CORRUPT_MESSAGE": 1} {
		count := func(f map[string]*dto.MetricFamily) float64 {
			return max(0, sample(f, "kaas_partition_errors_total", "api", "Produce", "error", code))
		}
		if got := count(after) - count(before); got != want {
			t.Errorf("kaas_partition_errors_total{api=Produce,error=%s} rose by %v, want %v", code, got, want)
		}
	}
}
