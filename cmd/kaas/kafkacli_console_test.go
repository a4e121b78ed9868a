package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/cmd/kaas/internal/kafkacli"
)

// consoleTool runs `kaas args...` through the tool's Run with input on
// standard input, as main does but for stdin.
func consoleTool(t *testing.T, ctx context.Context, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	tool, ok := kafkacli.Lookup(args[0])
	if !ok {
		t.Fatalf("no tool %s", args[0])
	}
	var out, errb bytes.Buffer
	if err := tool.Run(ctx, args[1:], strings.NewReader(input), &out, &errb); err != nil {
		fmt.Fprintf(&errb, "kaas: %v\n", err)
		code = 2
	}
	return out.String(), errb.String(), code
}

// consoleRecords reads topic's first n records (all partitions, from the
// start) with franz-go, waiting for them.
func consoleRecords(t *testing.T, ctx context.Context, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: %d records of %d: %v", topic, len(got), n, err)
		}
		got = append(got, fs.Records()...)
	}
	return got
}

// consoleEnds is the end offset of each of topic's partitions.
func consoleEnds(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// consoleTopicExists asks through a new client (no metadata cached)
// whether topic exists, never creating it.
func consoleTopicExists(t *testing.T, ctx context.Context, addr, topic string) bool {
	t.Helper()
	tds, err := newAdmin(t, addr).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return tds.Has(topic) && tds[topic].Err == nil
}

// TestConsoleProducerTool: `kaas console-producer` sends each line of
// standard input as kafka-console-producer.sh does (keys, headers and the
// null marker parsed by Kafka's rules, keyed records on Kafka's
// partitions, the codec asked for), every record acknowledged before it
// exits, and refuses what Kafka refuses or kaas cannot do.
func TestConsoleProducerTool(t *testing.T) {
	_, addr := testBroker(t)
	ctx := ctxT(t, 60*time.Second)
	adm := newAdmin(t, addr)
	small := "1000"
	for topic, parts := range map[string]int32{"cp-keys": 3, "cp-plain": 1, "cp-codec": 1, "cp-refused": 1} {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &small}, "cp-small"); err != nil {
		t.Fatal(err)
	}
	produce := func(input string, args ...string) (string, string, int) {
		t.Helper()
		return consoleTool(t, ctx, input, append([]string{"console-producer", "--bootstrap-server", addr}, args...)...)
	}

	t.Run("keys headers and null marker", func(t *testing.T) {
		input := "h1:v1,h2:v2\tk1\tone\n" +
			"NULL\tk2\ttwo\twith a tab\n" +
			"h:NULL\tNULL\tthree\n" +
			"a:1\tk4\tNULL\r\n" +
			"x:y\tk5\t" // no line end: still a record
		_, errOut, code := produce(input, "--topic", "cp-keys", "--property", "parse.key=true", "--property", "parse.headers=true", "--property", "null.marker=NULL")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		recs := consoleRecords(t, ctx, addr, "cp-keys", 5)
		byValue := map[string]*kgo.Record{}
		var tombstone *kgo.Record
		for _, r := range recs {
			if r.Value == nil {
				tombstone = r
				continue
			}
			byValue[string(r.Value)] = r
		}
		hdrs := func(r *kgo.Record) string {
			var s []string
			for _, h := range r.Headers {
				v := "<nil>"
				if h.Value != nil {
					v = string(h.Value)
				}
				s = append(s, h.Key+"="+v)
			}
			return strings.Join(s, ",")
		}
		check := func(r *kgo.Record, key any, headers string) {
			t.Helper()
			if r == nil {
				t.Fatalf("record missing from %d read", len(recs))
			}
			if key == nil && r.Key != nil || key != nil && string(r.Key) != key.(string) || hdrs(r) != headers {
				t.Errorf("value %q: key %q headers %q, want %v %q", r.Value, r.Key, hdrs(r), key, headers)
			}
			// A keyed record goes where Kafka's partitioner puts it.
			if key != nil {
				want := kgo.StickyKeyPartitioner(nil).ForTopic(r.Topic).Partition(r, 3)
				if int(r.Partition) != want {
					t.Errorf("key %q on partition %d, Kafka's partitioner says %d", r.Key, r.Partition, want)
				}
			}
		}
		check(byValue["one"], "k1", "h1=v1,h2=v2")
		check(byValue["two\twith a tab"], "k2", "")
		check(byValue["three"], nil, "h=<nil>")
		check(tombstone, "k4", "a=1")
		check(byValue[""], "k5", "x=y")
	})

	t.Run("plain lines, sync, compression codecs", func(t *testing.T) {
		if _, errOut, code := produce("a\tb\n\nc:d\n", "--topic", "cp-plain", "--sync"); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var vals []string
		for _, r := range consoleRecords(t, ctx, addr, "cp-plain", 3) {
			if r.Key != nil {
				t.Errorf("record %q has key %q", r.Value, r.Key)
			}
			vals = append(vals, string(r.Value))
		}
		if !slices.Equal(vals, []string{"a\tb", "", "c:d"}) {
			t.Fatalf("values %q", vals)
		}
		// Kafka's --compression-codec alone is gzip; compression.type
		// stands when --compression-codec is not given.
		for i, args := range [][]string{
			{"--compression-codec"}, {"--compression-codec", "zstd"}, {"--producer-property", "compression.type=lz4"}, {},
		} {
			line := fmt.Sprintf("codec %d %s\n", i, strings.Repeat("x", 100))
			if _, errOut, code := produce(line, append([]string{"--topic", "cp-codec"}, args...)...); code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
		}
		want := []uint8{1, 4, 3, 0} // gzip, zstd, lz4, none
		for i, r := range consoleRecords(t, ctx, addr, "cp-codec", 4) {
			if !strings.HasPrefix(string(r.Value), fmt.Sprintf("codec %d ", i)) || r.Attrs.CompressionType() != want[i] {
				t.Errorf("record %d %q: codec %d, want %d", i, r.Value[:8], r.Attrs.CompressionType(), want[i])
			}
		}
	})

	t.Run("a topic that does not exist is created", func(t *testing.T) {
		// As by the Java producer, whose Metadata requests allow the broker
		// (auto.create.topics.enable) to create the topic.
		if _, errOut, code := produce("first\n", "--topic", "cp-auto"); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if rs := consoleRecords(t, ctx, addr, "cp-auto", 1); string(rs[0].Value) != "first" {
			t.Fatalf("read back %q", rs[0].Value)
		}
	})

	t.Run("producer config file", func(t *testing.T) {
		cfg := writeProperties(t, "client.id=cp-from-file", "linger.ms=5", "acks=1", "send.buffer.bytes=65536", "batch.size=32768")
		_, errOut, code := produce("from file\n", "--topic", "cp-plain", "--producer.config", cfg, "--producer-property", "acks=all")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		// Accepted without effect, and said so.
		if !strings.Contains(errOut, "producer property send.buffer.bytes has no effect") {
			t.Errorf("no note on send.buffer.bytes: %q", errOut)
		}
		if ends := consoleEnds(t, ctx, adm, "cp-plain"); ends[0] != 4 {
			t.Fatalf("cp-plain ends at %v, want 4", ends)
		}
	})

	t.Run("a refused record fails the run", func(t *testing.T) {
		big := strings.Repeat("b", 3000)
		// --sync sends each record in a batch of its own, so only the big
		// one is refused.
		_, errOut, code := produce("fits\n"+big+"\nfits too\n", "--topic", "cp-small", "--sync")
		if code != 2 || !strings.Contains(errOut, "Error when sending message to topic cp-small with key: null, value: 3000 bytes with error:") ||
			!strings.Contains(errOut, "MESSAGE_TOO_LARGE") || !strings.Contains(errOut, "1 of 3 records were not acknowledged") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if ends := consoleEnds(t, ctx, adm, "cp-small"); ends[0] != 2 {
			t.Fatalf("cp-small ends at %v, want the 2 records that fit", ends)
		}
	})

	t.Run("a batch over max.message.bytes whose records each fit", func(t *testing.T) {
		limit := "2000"
		if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": &limit}, "cp-split"); err != nil {
			t.Fatal(err)
		}
		// 50 lines of 500 bytes, lingered into batches far over the
		// topic's 2000 bytes, and one line of 2500 bytes that fits no batch.
		var in strings.Builder
		var want []string
		for i := range 50 {
			line := fmt.Sprintf("%03d", i) + strings.Repeat("s", 497)
			if i == 25 {
				in.WriteString(strings.Repeat("L", 2500) + "\n")
			}
			in.WriteString(line + "\n")
			want = append(want, line)
		}
		_, errOut, code := produce(in.String(), "--topic", "cp-split", "--producer-property", "linger.ms=200")
		if code != 2 || strings.Count(errOut, "Error when sending message") != 1 ||
			!strings.Contains(errOut, "Error when sending message to topic cp-split with key: null, value: 2500 bytes with error:") ||
			!strings.Contains(errOut, "MESSAGE_TOO_LARGE") || !strings.Contains(errOut, "1 of 51 records were not acknowledged") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		recs := consoleRecords(t, ctx, addr, "cp-split", 50)
		for i, r := range recs {
			if string(r.Value) != want[i] {
				t.Fatalf("record %d: %.10q..., want %.10q...", i, r.Value, want[i])
			}
		}
		if ends := consoleEnds(t, ctx, adm, "cp-split"); ends[0] != 50 {
			t.Fatalf("cp-split ends at %v, want 50", ends)
		}
	})

	t.Run("a line the reader cannot parse stops it", func(t *testing.T) {
		_, errOut, code := produce("k\tfirst\nno separator\nk\tthird\n", "--topic", "cp-refused", "--property", "parse.key=true")
		if code != 2 || !strings.Contains(errOut, "No key separator found on line number 2: 'no separator'") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		// The line before was sent, as Kafka's closing producer sends it.
		if recs := consoleRecords(t, ctx, addr, "cp-refused", 1); string(recs[0].Value) != "first" {
			t.Fatalf("got %q", recs[0].Value)
		}
		if ends := consoleEnds(t, ctx, adm, "cp-refused"); ends[0] != 1 {
			t.Fatalf("cp-refused ends at %v, want 1", ends)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		cfg := writeProperties(t, "acks=1")
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{}, `Missing required argument "[topic]"`},
			{[]string{"--topic", "cp-refused", "--broker-list", addr}, "--broker-list is not supported"},
			{[]string{"--topic", "cp-refused", "--line-reader", "com.example.MyReader"}, "--line-reader com.example.MyReader: kaas reads standard input with Kafka's LineMessageReader only"},
			{[]string{"--topic", "cp-refused", "--producer-property", "interceptor.classes=com.example.I"}, "producer property interceptor.classes is not supported"},
			{[]string{"--topic", "cp-refused", "--producer-property", "enable.idempotence=true", "--request-required-acks", "1"}, "Must set acks to all in order to use the idempotent producer"},
			{[]string{"--topic", "cp-refused", "--request-required-acks", "2"}, "Invalid value 2 for configuration acks"},
			{[]string{"--topic", "cp-refused", "--compression-codec", "brotli"}, "Invalid value brotli for configuration compression.type"},
			{[]string{"--topic", "cp-refused", "--property", "headers.delimiter=,"}, "headers.delimiter and headers.separator may not be equal"},
			{[]string{"--topic", "cp-refused", "--property", "print.key=true"}, "--property print.key: the line reader reads only"},
			{[]string{"--topic", "cp-refused", "--producer.config", cfg, "--command-config", cfg}, "--producer.config and --command-config both name the client properties file"},
			{[]string{"--topic", "cp-refused", "stray"}, `unexpected argument "stray"`},
		} {
			_, errOut, code := produce("never sent\n", c.args...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("%v: exit %d, %q; want %q", c.args, code, errOut, c.want)
			}
		}
		if _, errOut, code := consoleTool(t, ctx, "x\n", "console-producer", "--topic", "cp-refused"); code != 2 || !strings.Contains(errOut, "bootstrap-server") {
			t.Errorf("no --bootstrap-server: exit %d, %q", code, errOut)
		}
		if ends := consoleEnds(t, ctx, adm, "cp-refused"); ends[0] != 1 {
			t.Fatalf("a refused run wrote: cp-refused ends at %v", ends)
		}
	})
}

// consoleLockedBuffer is a buffer a running tool writes while the test
// reads it.
type consoleLockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *consoleLockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *consoleLockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestConsoleConsumerTool: `kaas console-consumer` prints records as
// kafka-console-consumer.sh does (DefaultMessageFormatter's fields,
// labels and separators), starts where --from-beginning, --partition and
// --offset say, stops at --max-messages, --timeout-ms or an interrupt,
// skips aborted transactions under read_committed, commits what it
// printed for --group, and refuses what Kafka refuses.
func TestConsoleConsumerTool(t *testing.T) {
	_, addr := testBroker(t, "--group-initial-rebalance-delay", "0")
	ctx := ctxT(t, 90*time.Second)
	adm := newAdmin(t, addr)
	for topic, parts := range map[string]int32{"cc-fmt": 1, "cc-parts": 2, "cc-txn": 1, "cc-group": 1, "cc-inc-a": 1, "cc-inc-b": 1, "xcc-inc-a": 1} {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	must := func(rs ...*kgo.Record) {
		t.Helper()
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	base := time.UnixMilli(1700000000000)
	must(
		&kgo.Record{Topic: "cc-fmt", Key: []byte("k0"), Value: []byte("v0"), Timestamp: base,
			Headers: []kgo.RecordHeader{{Key: "h1", Value: []byte("a")}, {Key: "h2"}}},
		&kgo.Record{Topic: "cc-fmt", Value: []byte("v1"), Timestamp: base.Add(time.Millisecond)},
		&kgo.Record{Topic: "cc-fmt", Key: []byte("k2"), Timestamp: base.Add(2 * time.Millisecond)},
		&kgo.Record{Topic: "cc-fmt", Key: []byte{0, 0, 0, 42}, Value: []byte{0, 0, 0, 0, 0, 0, 1, 0}, Timestamp: base.Add(3 * time.Millisecond)},
	)
	for p := range int32(2) {
		for i := range 4 {
			must(&kgo.Record{Topic: "cc-parts", Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	for i := range 5 {
		must(&kgo.Record{Topic: "cc-group", Value: fmt.Appendf(nil, "g%d", i)})
	}
	must(&kgo.Record{Topic: "cc-inc-a", Value: []byte("inc a")}, &kgo.Record{Topic: "cc-inc-b", Value: []byte("inc b")},
		&kgo.Record{Topic: "xcc-inc-a", Value: []byte("not included")})

	consume := func(args ...string) (string, string, int) {
		t.Helper()
		return consoleTool(t, ctx, "", append([]string{"console-consumer", "--bootstrap-server", addr}, args...)...)
	}
	mustConsume := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, code := consume(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out, errOut
	}
	processed := func(errOut string, n int) {
		t.Helper()
		if want := fmt.Sprintf("Processed a total of %d messages\n", n); !strings.HasSuffix(errOut, want) {
			t.Errorf("stderr %q does not end with %q", errOut, want)
		}
	}

	t.Run("from-beginning max-messages", func(t *testing.T) {
		out, errOut := mustConsume("--topic", "cc-fmt", "--from-beginning", "--max-messages", "2")
		if out != "v0\nv1\n" {
			t.Fatalf("got %q", out)
		}
		processed(errOut, 2)
	})

	t.Run("print properties", func(t *testing.T) {
		all := []string{"--topic", "cc-fmt", "--from-beginning", "--max-messages", "3",
			"--property", "print.timestamp=true", "--property", "print.partition=true", "--property", "print.offset=true",
			"--property", "print.headers=true", "--property", "print.key=true"}
		out, _ := mustConsume(all...)
		want := "CreateTime:1700000000000\tPartition:0\tOffset:0\th1:a,h2:null\tk0\tv0\n" +
			"CreateTime:1700000000001\tPartition:0\tOffset:1\tNO_HEADERS\tnull\tv1\n" +
			"CreateTime:1700000000002\tPartition:0\tOffset:2\tNO_HEADERS\tk2\tnull\n"
		if out != want {
			t.Fatalf("got\n%q\nwant\n%q", out, want)
		}
		// The separators, the null literal and print.value=false, from a
		// --formatter-config file with Java's escapes, --property winning.
		cfg := writeProperties(t, `key.separator=\u0020|\u0020`, `line.separator=;\n`, "null.literal=NIL", "print.value=true")
		out, _ = mustConsume("--topic", "cc-fmt", "--from-beginning", "--max-messages", "3", "--formatter-config", cfg,
			"--property", "print.key=true", "--property", "print.offset=true", "--property", "print.value=false")
		if want := "Offset:0 | k0;\nOffset:1 | NIL;\nOffset:2 | k2;\n"; out != want {
			t.Fatalf("got %q, want %q", out, want)
		}
		out, _ = mustConsume("--topic", "cc-fmt", "--from-beginning", "--max-messages", "1", "--property", "print.epoch=true", "--property", "print.value=false")
		if !regexp.MustCompile(`^Epoch:\d+\n$`).MatchString(out) {
			t.Fatalf("print.epoch: %q", out)
		}
	})

	t.Run("deserializers and skip-message-on-error", func(t *testing.T) {
		intKey := []string{"--topic", "cc-fmt", "--partition", "0", "--offset", "3", "--max-messages", "1", "--property", "print.key=true",
			"--key-deserializer", "org.apache.kafka.common.serialization.IntegerDeserializer",
			"--property", "value.deserializer=org.apache.kafka.common.serialization.LongDeserializer"}
		if out, _ := mustConsume(intKey...); out != "42\t256\n" {
			t.Fatalf("got %q", out)
		}
		// "v0" is no 4-byte integer: Kafka's error stops the run...
		longVal := []string{"--topic", "cc-fmt", "--from-beginning", "--max-messages", "4",
			"--value-deserializer", "org.apache.kafka.common.serialization.IntegerDeserializer"}
		out, errOut, code := consume(longVal...)
		if code != 2 || out != "" || !strings.Contains(errOut, "Size of data received by IntegerDeserializer is not 4") {
			t.Fatalf("exit %d, %q, %q", code, out, errOut)
		}
		// ...or, with --skip-message-on-error, skips the record: only the
		// 4-byte "null" literal of record 2 is an integer.
		out, errOut, code = consume(append(longVal, "--skip-message-on-error")...)
		if code != 0 || out != "1853189228\n" || strings.Count(errOut, "skipping this message") != 3 {
			t.Fatalf("exit %d, %q, %q", code, out, errOut)
		}
		processed(errOut, 4)
	})

	t.Run("partition and offset", func(t *testing.T) {
		out, errOut := mustConsume("--topic", "cc-parts", "--partition", "1", "--offset", "2", "--timeout-ms", "700", "--property", "print.partition=true", "--property", "print.offset=true")
		if out != "Partition:1\tOffset:2\tp1-2\nPartition:1\tOffset:3\tp1-3\n" {
			t.Fatalf("got %q", out)
		}
		processed(errOut, 2)
		out, _ = mustConsume("--topic", "cc-parts", "--partition", "0", "--offset", "earliest", "--max-messages", "4")
		if out != "p0-0\np0-1\np0-2\np0-3\n" {
			t.Fatalf("earliest: %q", out)
		}
		out, _ = mustConsume("--topic", "cc-parts", "--partition", "0", "--from-beginning", "--max-messages", "1")
		if out != "p0-0\n" {
			t.Fatalf("from-beginning: %q", out)
		}
		// Without --offset a partition is read from its end: nothing yet.
		start := time.Now()
		out, errOut = mustConsume("--topic", "cc-parts", "--partition", "0", "--timeout-ms", "500")
		if out != "" || !strings.Contains(errOut, "no message for 500 ms") {
			t.Fatalf("latest: %q, %q", out, errOut)
		}
		if d := time.Since(start); d < 500*time.Millisecond || d > 5*time.Second {
			t.Errorf("--timeout-ms 500 exited after %v", d)
		}
		processed(errOut, 0)
	})

	t.Run("timeout-ms after the last record", func(t *testing.T) {
		start := time.Now()
		out, errOut := mustConsume("--topic", "cc-parts", "--from-beginning", "--timeout-ms", "800")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		slices.Sort(lines)
		if !slices.Equal(lines, []string{"p0-0", "p0-1", "p0-2", "p0-3", "p1-0", "p1-1", "p1-2", "p1-3"}) {
			t.Fatalf("got %q", out)
		}
		processed(errOut, 8)
		if d := time.Since(start); d < 800*time.Millisecond || d > 10*time.Second {
			t.Errorf("exited after %v", d)
		}
	})

	t.Run("a subscribed topic that does not exist is created", func(t *testing.T) {
		// allow.auto.create.topics, the Java consumer's, true by default.
		_, errOut, _ := consume("--topic", "cc-auto-off", "--timeout-ms", "300", "--consumer-property", "allow.auto.create.topics=false")
		processed(errOut, 0)
		if consoleTopicExists(t, ctx, addr, "cc-auto-off") {
			t.Fatal("created with allow.auto.create.topics=false")
		}
		_, errOut, _ = consume("--topic", "cc-auto", "--timeout-ms", "300")
		processed(errOut, 0)
		if !consoleTopicExists(t, ctx, addr, "cc-auto") {
			t.Fatal("cc-auto was not created")
		}
	})

	t.Run("include", func(t *testing.T) {
		out, errOut := mustConsume("--include", "cc-inc-.*", "--from-beginning", "--timeout-ms", "1000")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		slices.Sort(lines)
		if !slices.Equal(lines, []string{"inc a", "inc b"}) {
			t.Fatalf("got %q (xcc-inc-a does not match as a whole name)", out)
		}
		processed(errOut, 2)
	})

	t.Run("read_committed skips an aborted transaction", func(t *testing.T) {
		txn := newClient(t, addr, kgo.TransactionalID("cc-txn-producer"), kgo.DefaultProduceTopic("cc-txn"))
		for _, tx := range []struct {
			values []string
			commit kgo.TransactionEndTry
		}{{[]string{"c1", "c2"}, kgo.TryCommit}, {[]string{"a1", "a2"}, kgo.TryAbort}, {[]string{"c3"}, kgo.TryCommit}} {
			if err := txn.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for _, v := range tx.values {
				if err := txn.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			if err := txn.EndTransaction(ctx, tx.commit); err != nil {
				t.Fatal(err)
			}
		}
		out, errOut := mustConsume("--topic", "cc-txn", "--from-beginning", "--isolation-level", "read_committed", "--timeout-ms", "800")
		if out != "c1\nc2\nc3\n" {
			t.Fatalf("read_committed: %q", out)
		}
		processed(errOut, 3)
		out, _ = mustConsume("--topic", "cc-txn", "--from-beginning", "--timeout-ms", "800")
		if out != "c1\nc2\na1\na2\nc3\n" {
			t.Fatalf("read_uncommitted: %q", out)
		}
		// The isolation level as a consumer property does the same.
		out, _ = mustConsume("--topic", "cc-txn", "--from-beginning", "--consumer-property", "isolation.level=read_committed", "--max-messages", "3")
		if out != "c1\nc2\nc3\n" {
			t.Fatalf("isolation.level=read_committed: %q", out)
		}
	})

	t.Run("group commits what it printed", func(t *testing.T) {
		out, _ := mustConsume("--topic", "cc-group", "--group", "cc-g1", "--from-beginning", "--max-messages", "3")
		if out != "g0\ng1\ng2\n" {
			t.Fatalf("got %q", out)
		}
		if got := consumerGroupsCommitted(t, ctx, adm, "cc-g1", "cc-group"); got[0] != 3 {
			t.Fatalf("cc-g1 committed %v, want 3", got)
		}
		// The group resumes where it committed; --from-beginning only
		// applies where it has none.
		out, _ = mustConsume("--topic", "cc-group", "--group", "cc-g1", "--from-beginning", "--max-messages", "2")
		if out != "g3\ng4\n" {
			t.Fatalf("resumed: %q", out)
		}
		if got := consumerGroupsCommitted(t, ctx, adm, "cc-g1", "cc-group"); got[0] != 5 {
			t.Fatalf("cc-g1 committed %v, want 5", got)
		}
		// The group named by a consumer property, on KIP-848's protocol.
		out, _ = mustConsume("--topic", "cc-group", "--consumer-property", "group.id=cc-g848", "--consumer-property", "group.protocol=consumer",
			"--from-beginning", "--max-messages", "4")
		if out != "g0\ng1\ng2\ng3\n" {
			t.Fatalf("group.protocol=consumer: %q", out)
		}
		if got := consumerGroupsCommitted(t, ctx, adm, "cc-g848", "cc-group"); got[0] != 4 {
			t.Fatalf("cc-g848 committed %v, want 4", got)
		}
		// enable.auto.commit=false commits nothing; neither does the
		// generated group of a run without --group.
		mustConsume("--topic", "cc-group", "--group", "cc-nocommit", "--consumer-property", "enable.auto.commit=false", "--from-beginning", "--max-messages", "2")
		if got := consumerGroupsCommitted(t, ctx, adm, "cc-nocommit", "cc-group"); len(got) != 0 {
			t.Fatalf("cc-nocommit committed %v", got)
		}
		mustConsume("--topic", "cc-group", "--from-beginning", "--max-messages", "2")
		groups, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		generated := 0
		for _, g := range groups.Groups() {
			if strings.HasPrefix(g, "console-consumer-") {
				generated++
				if got := consumerGroupsCommitted(t, ctx, adm, g, "cc-group"); len(got) != 0 {
					t.Errorf("generated group %s committed %v", g, got)
				}
			}
		}
		if generated == 0 {
			t.Fatal("no console-consumer-NNNNN group was made for the runs without --group")
		}
	})

	t.Run("interrupt closes cleanly", func(t *testing.T) {
		tool, _ := kafkacli.Lookup("console-consumer")
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		var out, errOut consoleLockedBuffer
		done := make(chan error, 1)
		go func() {
			done <- tool.Run(runCtx, []string{"--bootstrap-server", addr, "--topic", "cc-group", "--group", "cc-int", "--from-beginning"}, strings.NewReader(""), &out, &errOut)
		}()
		waitFor(t, ctx, "five records printed", func() bool { return out.String() == "g0\ng1\ng2\ng3\ng4\n" })
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("interrupted run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the consumer did not stop on interrupt")
		}
		processed(errOut.String(), 5)
		if got := consumerGroupsCommitted(t, ctx, adm, "cc-int", "cc-group"); got[0] != 5 {
			t.Fatalf("cc-int committed %v, want 5", got)
		}
		ds, err := adm.DescribeConsumerGroups(ctx, "cc-int")
		if err != nil {
			t.Fatal(err)
		}
		if d := ds["cc-int"]; len(d.Members) != 0 {
			t.Fatalf("cc-int still has members after the interrupt: %+v", d.Members)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		cfg := writeProperties(t, "group.id=from-file")
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{}, "Exactly one of --include/--topic is required."},
			{[]string{"--topic", "cc-fmt", "--include", "cc-.*"}, "Exactly one of --include/--topic is required."},
			{[]string{"--include", "cc-.*", "--partition", "0"}, "The topic is required when partition is specified."},
			{[]string{"--topic", "cc-fmt", "--partition", "0", "--offset", "1", "--from-beginning"}, "Options from-beginning and offset cannot be specified together."},
			{[]string{"--topic", "cc-fmt", "--offset", "1"}, "The partition is required when offset is specified."},
			{[]string{"--topic", "cc-fmt", "--partition", "0", "--group", "g"}, "Options group and partition cannot be specified together."},
			{[]string{"--topic", "cc-fmt", "--partition", "0", "--offset", "-3"}, "The provided offset value '-3' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long."},
			{[]string{"--topic", "cc-fmt", "--partition", "5", "--offset", "earliest"}, "--partition 5: topic cc-fmt has 1 partitions"},
			{[]string{"--topic", "cc-missing", "--partition", "0"}, "--topic cc-missing: no such topic"},
			{[]string{"--whitelist", "cc-.*"}, "--whitelist is not supported: Kafka 4.0 removed it; use --include"},
			{[]string{"--topic", "cc-fmt", "--formatter", "org.apache.kafka.tools.consumer.OffsetsMessageFormatter"}, "--formatter org.apache.kafka.tools.consumer.OffsetsMessageFormatter: kaas prints with Kafka's"},
			{[]string{"--topic", "cc-fmt", "--value-deserializer", "org.apache.kafka.common.serialization.DoubleDeserializer"}, "value.deserializer org.apache.kafka.common.serialization.DoubleDeserializer: kaas formats with"},
			{[]string{"--topic", "cc-fmt", "--property", "print.everything=true"}, "--property print.everything: the formatter reads"},
			{[]string{"--topic", "cc-fmt", "--consumer-property", "interceptor.classes=x"}, "consumer property interceptor.classes is not supported"},
			{[]string{"--topic", "cc-fmt", "--group", "a", "--consumer.config", cfg}, "do not match. Detected group ids: 'a', 'from-file'"},
			{[]string{"--topic", "cc-fmt", "--isolation-level", "read_some"}, "Invalid value read_some for configuration isolation.level"},
			{[]string{"--topic", "cc-fmt", "--from-beginning", "--consumer-property", "auto.offset.reset=latest"}, "Can't simultaneously specify --from-beginning and 'auto.offset.reset=latest'"},
			{[]string{"--include", "cc-(", "--timeout-ms", "100"}, "--include cc-( is not a regular expression"},
			{[]string{"--topic", "cc-fmt", "--consumer-property", "group.protocol=consumer", "--consumer-property", "partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor"}, "partition.assignment.strategy cannot be set when group.protocol=consumer"},
		} {
			out, errOut, code := consume(c.args...)
			if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
				t.Errorf("%v: exit %d, %q, %q; want %q", c.args, code, out, errOut, c.want)
			}
		}
		if _, errOut, code := consoleTool(t, ctx, "", "console-consumer", "--topic", "cc-fmt"); code != 2 || !strings.Contains(errOut, "bootstrap-server") {
			t.Errorf("no --bootstrap-server: exit %d, %q", code, errOut)
		}
		// No refused run joined a group.
		groups, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range []string{"a", "from-file", "g"} {
			if slices.Contains(groups.Groups(), g) {
				t.Errorf("a refused run made group %s", g)
			}
		}
	})
}
