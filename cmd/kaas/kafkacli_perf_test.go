package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// perfTotalLine is producer-perf-test's last line, as Kafka prints it.
var perfTotalLine = regexp.MustCompile(`^(\d+) records sent, \d+\.\d records/sec \(\d+\.\d\d MB/sec\), \d+\.\d\d ms avg latency, \d+\.\d\d ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$`)

// perfWindowLine is its line every five seconds.
var perfWindowLine = regexp.MustCompile(`^\d+ records sent, \d+\.\d records/sec \(\d+\.\d\d MB/sec\), \d+\.\d ms avg latency, \d+\.\d ms max latency\.$`)

// perfEndOffsets sums the end offsets of topic's partitions.
func perfEndOffsets(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets of %s: %v %v", topic, err, ends.Error())
	}
	var n int64
	ends.Each(func(l kadm.ListedOffset) { n += l.Offset })
	return n
}

// perfTotal checks producer-perf-test's output: only window lines, then
// the total line, whose count it returns.
func perfTotal(t *testing.T, out string) int64 {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for _, l := range lines[:len(lines)-1] {
		if !perfWindowLine.MatchString(l) && !strings.HasPrefix(l, "Reading payloads from: ") && !strings.HasPrefix(l, "Number of messages read: ") {
			t.Errorf("unexpected line %q", l)
		}
	}
	m := perfTotalLine.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("last line %q is not Kafka's total line", lines[len(lines)-1])
	}
	var p []int
	for _, s := range m[2:] {
		v, _ := strconv.Atoi(s)
		p = append(p, v)
	}
	if !(p[0] <= p[1] && p[1] <= p[2] && p[2] <= p[3]) {
		t.Errorf("percentiles %v not ascending", p)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// TestProducerPerfTest: kaas producer-perf-test sends exactly
// --num-records records in each payload mode, throttles, runs in
// transactions, and refuses bad flags and properties without producing.
func TestProducerPerfTest(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	bs := "bootstrap.servers=" + addr

	t.Run("record-size", func(t *testing.T) {
		out := mustTool(t, "producer-perf-test", "--topic", "pp-size", "--num-records", "2000", "--record-size", "100",
			"--throughput", "-1", "--producer-props", bs, "acks=1", "linger.ms=1", "compression.type=lz4")
		if n := perfTotal(t, out); n != 2000 {
			t.Errorf("reported %d records sent, want 2000", n)
		}
		if n := perfEndOffsets(t, adm, "pp-size"); n != 2000 {
			t.Errorf("topic holds %d records, want 2000", n)
		}
		// Each value is --record-size upper-case letters.
		cl := newClient(t, addr, kgo.ConsumeTopics("pp-size"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		fs := cl.PollRecords(ctxT(t, 10*time.Second), 1)
		if recs := fs.Records(); len(recs) != 1 || !regexp.MustCompile(`^[A-Z]{100}$`).Match(recs[0].Value) {
			t.Errorf("first record %v, want 100 letters", recs)
		}
	})

	t.Run("batches capped to the topic's max.message.bytes", func(t *testing.T) {
		limit := "2000"
		if _, err := adm.CreateTopic(ctxT(t, 10*time.Second), 1, 1, map[string]*string{"max.message.bytes": &limit}, "pp-limit"); err != nil {
			t.Fatal(err)
		}
		// 500-byte records lingered together would make batches far over
		// 2000 bytes; each fits alone, so every one is written.
		out := mustTool(t, "producer-perf-test", "--topic", "pp-limit", "--num-records", "50", "--record-size", "500",
			"--throughput", "-1", "--producer-props", bs, "linger.ms=200")
		if n := perfTotal(t, out); n != 50 {
			t.Errorf("reported %d records sent, want 50", n)
		}
		if n := perfEndOffsets(t, adm, "pp-limit"); n != 50 {
			t.Errorf("topic holds %d records, want 50", n)
		}
	})

	t.Run("payload-file and throttle, bootstrap from --producer.config", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "payloads")
		if err := os.WriteFile(file, []byte("alpha|beta|gamma|"), 0o600); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		out := mustTool(t, "producer-perf-test", "--topic", "pp-file", "--num-records", "200", "--payload-file", file,
			"--payload-delimiter", `\|`, "--throughput", "400", "--producer.config", writeProperties(t, bs, "client.id=perf-x"))
		if !strings.Contains(out, "Number of messages read: 3\n") {
			t.Errorf("output %q lacks the payload count", out)
		}
		if n := perfTotal(t, out); n != 200 {
			t.Errorf("reported %d records sent, want 200", n)
		}
		// 200 records at 400/s cannot take less than ~half a second.
		if d := time.Since(start); d < 400*time.Millisecond {
			t.Errorf("200 records at --throughput 400 took %v", d)
		}
		cl := newClient(t, addr, kgo.ConsumeTopics("pp-file"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		seen := map[string]int{}
		for len(seen) < 3 {
			fs := cl.PollFetches(ctxT(t, 10*time.Second))
			if fs.IsClientClosed() || len(fs.Errors()) > 0 {
				t.Fatalf("poll: %v", fs.Errors())
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
			for v := range seen {
				if v != "alpha" && v != "beta" && v != "gamma" {
					t.Fatalf("payload %q not from the file", v)
				}
			}
		}
	})

	t.Run("monotonic, transactional", func(t *testing.T) {
		out := mustTool(t, "producer-perf-test", "--bootstrap-server", addr, "--topic", "pp-txn", "--num-records", "300",
			"--payload-monotonic", "--throughput", "-1", "--transactional-id", "pp-tx", "--transaction-duration-ms", "1")
		if n := perfTotal(t, out); n != 300 {
			t.Errorf("reported %d records sent, want 300", n)
		}
		// A committed record each, and the commit markers: more than 300
		// offsets; a read_committed consumer reads 0..299 in order.
		if n := perfEndOffsets(t, adm, "pp-txn"); n <= 300 {
			t.Errorf("end offset %d: want the records and the transactions' markers", n)
		}
		cl := newClient(t, addr, kgo.ConsumeTopics("pp-txn"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		var got []string
		for len(got) < 300 {
			fs := cl.PollFetches(ctxT(t, 10*time.Second))
			if len(fs.Errors()) > 0 {
				t.Fatalf("poll: %v", fs.Errors())
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		for i, v := range got {
			if v != strconv.Itoa(i) {
				t.Fatalf("record %d is %q, want %d", i, v, i)
			}
		}
		txns, err := adm.DescribeTransactions(ctxT(t, 10*time.Second), "pp-tx")
		if err != nil || txns["pp-tx"].Err != nil || txns["pp-tx"].State != "CompleteCommit" {
			t.Fatalf("transaction pp-tx: %v %+v, want committed", err, txns["pp-tx"])
		}
	})

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no topic", []string{"--num-records", "10", "--record-size", "1", "--throughput", "-1", "--producer-props", bs}, "argument --topic is required"},
		{"no payload", []string{"--topic", "pp-bad", "--num-records", "10", "--throughput", "-1", "--producer-props", bs}, "one of the arguments --record-size --payload-file --payload-monotonic is required"},
		{"two payloads", []string{"--topic", "pp-bad", "--num-records", "10", "--record-size", "1", "--payload-monotonic", "--throughput", "-1", "--producer-props", bs}, "argument --payload-monotonic: not allowed with argument --record-size"},
		{"zero records", []string{"--topic", "pp-bad", "--num-records", "0", "--record-size", "1", "--throughput", "-1", "--producer-props", bs}, "--num-records should be greater than zero"},
		{"no props", []string{"--topic", "pp-bad", "--num-records", "10", "--record-size", "1", "--throughput", "-1"}, "Either --producer-props or --producer.config must be specified."},
		{"bad prop", []string{"--topic", "pp-bad", "--num-records", "10", "--record-size", "1", "--throughput", "-1", "--producer-props", bs, "acks="}, "Invalid property: acks="},
		{"unknown prop", []string{"--topic", "pp-bad", "--num-records", "10", "--record-size", "1", "--throughput", "-1", "--producer-props", bs, "partitioner.class=x"}, "producer property partitioner.class is not supported"},
		{"bad acks", []string{"--topic", "pp-bad", "--num-records", "10", "--record-size", "1", "--throughput", "-1", "--producer-props", bs, "acks=2"}, "Invalid value 2 for configuration acks"},
		{"print-metrics", []string{"--topic", "pp-bad", "--num-records", "10", "--record-size", "1", "--throughput", "-1", "--producer-props", bs, "--print-metrics"}, "--print-metrics is not supported"},
		{"throughput 0", []string{"--topic", "pp-bad", "--num-records", "10", "--record-size", "1", "--throughput", "0", "--producer-props", bs}, "--throughput 0 would never send"},
		{"bad txn duration", []string{"--topic", "pp-bad", "--num-records", "10", "--record-size", "1", "--throughput", "-1", "--producer-props", bs, "--transaction-duration-ms", "0"}, "--transaction-duration-ms should be greater than zero"},
		{"missing payload file", []string{"--topic", "pp-bad", "--num-records", "10", "--payload-file", "/nonexistent", "--throughput", "-1", "--producer-props", bs}, "File does not exist or empty file provided."},
	} {
		t.Run("refuses "+c.name, func(t *testing.T) {
			_, errOut, code := runKaas(t, append([]string{"producer-perf-test"}, c.args...)...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, stderr %q; want non-zero and %q", code, errOut, c.want)
			}
		})
	}
	topics, err := adm.ListTopics(ctxT(t, 10*time.Second), "pp-bad")
	if err != nil || topics.Has("pp-bad") {
		t.Errorf("a refused run created topic pp-bad (err %v)", err)
	}
}

// TestConsumerPerfTestAndE2ELatency: kaas consumer-perf-test reads what
// was produced and commits it under --group, prints Kafka's header and
// line; kaas e2e-latency round-trips its records; both refuse bad input.
func TestConsumerPerfTestAndE2ELatency(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	mustTool(t, "topics", "--bootstrap-server", addr, "--create", "--topic", "cp", "--partitions", "3")
	mustTool(t, "producer-perf-test", "--topic", "cp", "--num-records", "1000", "--record-size", "50",
		"--throughput", "-1", "--producer-props", "bootstrap.servers="+addr)

	t.Run("summary, committed under --group", func(t *testing.T) {
		out := mustTool(t, "consumer-perf-test", "--bootstrap-server", addr, "--topic", "cp", "--messages", "1000", "--group", "cp-g", "--timeout", "5000")
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != 2 || lines[0] != "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec" {
			t.Fatalf("output %q: want Kafka's header and one line", out)
		}
		f := strings.Split(lines[1], ", ")
		if len(f) != 10 {
			t.Fatalf("line %q: want 10 fields", lines[1])
		}
		if f[4] != "1000" || f[2] != "0.0477" { // 1000 x 50 bytes = 0.0477 MiB
			t.Errorf("line %q: want 1000 messages of 0.0477 MB", lines[1])
		}
		for _, i := range []int{0, 1} { // yyyy-MM-dd HH:mm:ss:SSS
			if !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}$`).MatchString(f[i]) {
				t.Errorf("time %q is not yyyy-MM-dd HH:mm:ss:SSS", f[i])
			}
		}
		for _, i := range []int{6, 7} {
			if _, err := strconv.ParseInt(f[i], 10, 64); err != nil {
				t.Errorf("field %d %q is not whole ms", i, f[i])
			}
		}
		offs, err := adm.FetchOffsets(ctxT(t, 10*time.Second), "cp-g")
		if err != nil {
			t.Fatal(err)
		}
		var committed int64
		offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
		if committed != 1000 {
			t.Errorf("group cp-g committed %d records in all, want 1000", committed)
		}
	})

	t.Run("detailed stats, hide header, date format, timeout warning", func(t *testing.T) {
		out := mustTool(t, "consumer-perf-test", "--bootstrap-server", addr, "--topic", "cp", "--messages", "2000",
			"--show-detailed-stats", "--reporting-interval", "1", "--hide-header", "--date-format", "yyyy'T'HH", "--timeout", "500")
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		last := lines[len(lines)-1]
		if last != "WARNING: Exiting before consuming the expected number of messages: timeout (500 ms) exceeded. You can use the --timeout option to increase the timeout." {
			t.Errorf("last line %q: want Kafka's timeout warning", last)
		}
		if len(lines) < 2 {
			t.Fatalf("output %q: want detailed stats lines before the warning", out)
		}
		detail := regexp.MustCompile(`^\d{4}T\d\d, 0, \d+\.\d{4}, \d+\.\d{4}, (\d+), \d+\.\d{4}, \d+, -?\d+, \d+\.\d{4}, \d+\.\d{4}$`)
		prev := 0
		for _, l := range lines[:len(lines)-1] {
			m := detail.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("line %q is not a detailed stats line", l)
			}
			n, _ := strconv.Atoi(m[1])
			if n <= prev || n > 1000 {
				t.Errorf("running count %d after %d", n, prev)
			}
			prev = n
		}
	})

	t.Run("consumer-perf-test refusals", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--bootstrap-server", addr, "--messages", "1"}, `Missing required argument "[topic]"`},
			{[]string{"--bootstrap-server", addr, "--topic", "cp"}, `Missing required argument "[messages]"`},
			{[]string{"--bootstrap-server", addr, "--topic", "cp", "--messages", "1", "--reporting-interval", "0"}, "Reporting interval must be greater than 0."},
			{[]string{"--bootstrap-server", addr, "--topic", "cp", "--messages", "1", "--print-metrics"}, "--print-metrics is not supported"},
			{[]string{"--bootstrap-server", addr, "--topic", "cp", "--messages", "1", "--threads", "2"}, "-threads"},
			{[]string{"--bootstrap-server", addr, "--topic", "cp", "--messages", "1", "--date-format", "yyyy-ww"}, "--date-format"},
			{[]string{"--bootstrap-server", addr, "--topic", "cp", "--messages", "1", "--consumer.config", writeProperties(t, "interceptor.classes=x")}, "consumer property interceptor.classes is not supported"},
		} {
			_, errOut, code := runKaas(t, append([]string{"consumer-perf-test"}, c.args...)...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("%q: exit %d, stderr %q; want non-zero and %q", c.args, code, errOut, c.want)
			}
		}
	})

	t.Run("e2e-latency", func(t *testing.T) {
		out := mustTool(t, "e2e-latency", addr, "e2e", "30", "all", "20")
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != 4 || lines[0] != `Topic "e2e" does not exist. Will create topic with 1 partition(s) and replication factor = 1` ||
			!regexp.MustCompile(`^0\t\d+\.\d+(E-?\d+)?$`).MatchString(lines[1]) ||
			!regexp.MustCompile(`^Avg latency: \d+\.\d{4} ms$`).MatchString(lines[2]) ||
			!regexp.MustCompile(`^Percentiles: 50th = \d+, 99th = \d+, 99\.9th = \d+$`).MatchString(lines[3]) {
			t.Fatalf("output %q is not Kafka's", out)
		}
		if n := perfEndOffsets(t, adm, "e2e"); n != 30 {
			t.Errorf("topic e2e holds %d records, want 30", n)
		}
		// The topic exists now: a second run appends to it.
		out = mustTool(t, "e2e-latency", addr, "e2e", "5", "1", "3", writeProperties(t, "client.id=e2e"))
		if strings.Contains(out, "does not exist") {
			t.Errorf("second run %q: the topic exists", out)
		}
		if n := perfEndOffsets(t, adm, "e2e"); n != 35 {
			t.Errorf("topic e2e holds %d records, want 35", n)
		}
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{addr, "e2e", "5", "1"}, "USAGE: kaas e2e-latency broker_list topic num_messages producer_acks message_size_bytes"},
			{[]string{addr, "e2e", "5", "0", "10"}, "Latency testing requires synchronous acknowledgement. Please use 1 or all"},
			{[]string{addr, "e2e", "x", "1", "10"}, `num_messages "x"`},
			{[]string{addr, "e2e", "5", "1", "10", writeProperties(t, "linger.ms=5")}, "linger.ms not supported by kaas e2e-latency"},
			{[]string{"--bootstrap-server", addr, "--topic", "e2e", "x"}, "arguments are positional"},
		} {
			_, errOut, code := runKaas(t, append([]string{"e2e-latency"}, c.args...)...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("%q: exit %d, stderr %q; want non-zero and %q", c.args, code, errOut, c.want)
			}
		}
		if n := perfEndOffsets(t, adm, "e2e"); n != 35 {
			t.Errorf("refused runs changed topic e2e: %d records, want 35", n)
		}
	})
}
