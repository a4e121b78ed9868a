package kafkacli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kaas-project/kaas/cmd/kaas/internal/bench"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kaas producer-perf-test is kafka-producer-perf-test.sh: it sends
// --num-records records to --topic at up to --throughput records a second
// and prints Kafka's window line every five seconds and its total line
// with latency percentiles.
var _ = register(Tool{Name: "producer-perf-test", Kafka: "kafka-producer-perf-test.sh", Run: runProducerPerf})

// producerPerfKnown are the producer properties mapped to franz-go: the
// console producer's, the brokers, and the transaction's.
var producerPerfKnown = func() map[string]bool {
	m := map[string]bool{"bootstrap.servers": true, "transactional.id": true, "transaction.timeout.ms": true}
	for k := range consoleProducerKnown {
		m[k] = true
	}
	return m
}()

// producerPerfNoEffect are producer properties accepted with no effect.
var producerPerfNoEffect = func() map[string]string {
	m := map[string]string{}
	for k, v := range consoleProducerNoEffect {
		m[k] = v
	}
	m["key.serializer"] = "the perf test sends byte payloads, as Kafka's does"
	m["value.serializer"] = m["key.serializer"]
	return m
}()

// producerPerfReportInterval is Kafka's window: a line every five seconds.
const producerPerfReportInterval = 5 * time.Second

type producerPerfOpts struct {
	topic           string
	numRecords      int64
	recordSize      int
	payloadFile     string
	payloadDelim    string
	payloadMono     bool
	throughput      float64
	props           Repeated
	configFile      string
	bootstrap       string
	printMetrics    bool
	transactionalID string
	txnDurationMs   int64
	given           map[string]bool
}

func parseProducerPerfArgs(args []string, stderr io.Writer) (*producerPerfOpts, error) {
	o := &producerPerfOpts{}
	fs := NewFlagSet("producer-perf-test", stderr)
	fs.StringVar(&o.topic, "topic", "", "REQUIRED: produce messages to this topic")
	fs.Int64Var(&o.numRecords, "num-records", 0, "REQUIRED: number of messages to produce")
	fs.IntVar(&o.recordSize, "record-size", 0, "message size in bytes (exactly one of --record-size, --payload-file, --payload-monotonic)")
	fs.StringVar(&o.payloadFile, "payload-file", "", "UTF-8 file of payloads, one picked at random for each message")
	fs.StringVar(&o.payloadDelim, "payload-delimiter", `\n`, "the regular expression splitting --payload-file into payloads")
	fs.BoolVar(&o.payloadMono, "payload-monotonic", false, "payload is a monotonically increasing integer")
	fs.Float64Var(&o.throughput, "throughput", 0, "REQUIRED: maximum messages/sec, approximately; -1 for no limit")
	fs.Var(&o.props, "producer-props", "producer properties PROP-NAME=PROP-VALUE ... (over --producer.config)")
	fs.StringVar(&o.configFile, "producer.config", "", "producer config properties file")
	fs.StringVar(&o.bootstrap, "bootstrap-server", "", "the broker(s) to connect to (over bootstrap.servers)")
	fs.BoolVar(&o.printMetrics, "print-metrics", false, "refused: Java client metrics")
	fs.StringVar(&o.transactionalID, "transactional-id", "", "the transactional id (enables transactions)")
	fs.Int64Var(&o.txnDurationMs, "transaction-duration-ms", 0, "commit a transaction after this many ms (enables transactions; default 3000 with one)")
	given, err := Parse(fs, perfExpandNargs(args, "producer-props"))
	if err != nil {
		return nil, err
	}
	o.given = given
	for _, f := range []string{"topic", "num-records", "throughput"} {
		if !given[f] {
			return nil, fmt.Errorf("argument --%s is required", f)
		}
	}
	var payloads []string
	for _, f := range []string{"record-size", "payload-file", "payload-monotonic"} {
		if given[f] && (f != "payload-monotonic" || o.payloadMono) {
			payloads = append(payloads, "--"+f)
		}
	}
	switch {
	case len(payloads) == 0:
		return nil, errors.New("one of the arguments --record-size --payload-file --payload-monotonic is required")
	case len(payloads) > 1:
		return nil, fmt.Errorf("argument %s: not allowed with argument %s", payloads[1], payloads[0])
	}
	if o.numRecords <= 0 {
		return nil, errors.New("--num-records should be greater than zero")
	}
	if given["record-size"] && o.recordSize <= 0 {
		return nil, errors.New("--record-size should be greater than zero")
	}
	if len(o.props) == 0 && o.configFile == "" && o.bootstrap == "" {
		return nil, errors.New("Either --producer-props or --producer.config must be specified.")
	}
	if given["transaction-duration-ms"] && o.txnDurationMs <= 0 {
		return nil, errors.New("--transaction-duration-ms should be greater than zero")
	}
	if o.printMetrics {
		return nil, errors.New("--print-metrics is not supported: kaas's client does not keep the Java client's metrics")
	}
	if o.throughput == 0 {
		// Kafka's throttler waits forever at a rate of 0.
		return nil, errors.New("--throughput 0 would never send: give a positive rate, or -1 for no limit")
	}
	return o, nil
}

// producerProps are the producer's properties as Kafka's tool reads them:
// the file, then --producer-props; each value must be exactly key=value.
func (o *producerPerfOpts) producerProps(stderr io.Writer) (*consoleClientProps, error) {
	for _, kv := range o.props {
		// Java's String.split("=") drops trailing empty pieces: "a=" and
		// "a=b=c" are both refused.
		pieces := strings.Split(kv, "=")
		for len(pieces) > 0 && pieces[len(pieces)-1] == "" {
			pieces = pieces[:len(pieces)-1]
		}
		if len(pieces) != 2 {
			return nil, fmt.Errorf("Invalid property: %s", kv)
		}
	}
	p, err := newConsoleClientProps("producer-perf-test", "producer", o.configFile, "producer-props", o.props)
	if err != nil {
		return nil, err
	}
	if o.bootstrap != "" {
		p.props["bootstrap.servers"], p.given["bootstrap.servers"] = o.bootstrap, true
	}
	if strings.TrimSpace(p.props["bootstrap.servers"]) == "" {
		return nil, errors.New("Missing required configuration \"bootstrap.servers\" which has no default value.")
	}
	// The Java producer's defaults where franz-go's differ.
	for k, v := range map[string]string{
		"client.id": "perf-producer-client", "acks": "all", "linger.ms": "5", "batch.size": "16384",
		"compression.type": "none", "retries": "2147483647", "request.timeout.ms": "30000",
	} {
		if !p.has(k) {
			p.props[k] = v
		}
	}
	if err := p.check(producerPerfKnown, producerPerfNoEffect, stderr); err != nil {
		return nil, err
	}
	return p, nil
}

// payloadSource makes each record's value as Kafka's tool does.
type producerPerfPayloads struct {
	size    int
	list    [][]byte
	mono    bool
	randGen *mrand.Rand
}

func (s *producerPerfPayloads) next(i int64) []byte {
	switch {
	case s.list != nil:
		return s.list[s.randGen.IntN(len(s.list))]
	case s.mono:
		return []byte(strconv.FormatInt(i, 10))
	}
	b := make([]byte, s.size)
	for j := range b {
		b[j] = byte('A' + s.randGen.IntN(26))
	}
	return b
}

// readProducerPerfPayloads reads --payload-file, split at the delimiter
// (a regular expression, as Java's String.split; trailing empty payloads
// dropped as it drops them).
func readProducerPerfPayloads(path, delim string, stdout io.Writer) ([][]byte, error) {
	if delim == `\n` {
		delim = "\n"
	}
	re, err := regexp.Compile(delim)
	if err != nil {
		return nil, fmt.Errorf("--payload-delimiter %q: %w", delim, err)
	}
	abs, _ := filepath.Abs(path)
	fmt.Fprintf(stdout, "Reading payloads from: %s\n", abs)
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return nil, errors.New("File does not exist or empty file provided.")
	}
	parts := re.Split(string(data), -1)
	for len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	fmt.Fprintf(stdout, "Number of messages read: %d\n", len(parts))
	out := make([][]byte, len(parts))
	for i, s := range parts {
		out[i] = []byte(s)
	}
	return out, nil
}

// producerPerfStats is Kafka's Stats: the run's totals and the current
// window's, fed by each acknowledged record.
type producerPerfStats struct {
	mu                  sync.Mutex
	out                 io.Writer
	start, windowStart  time.Time
	count, bytes        int64
	totalLatency        int64
	maxLatency          int64
	hist                bench.Histogram
	windowCount, wBytes int64
	windowTotal, wMax   int64
	failed              int64
	firstErr            error
	reportEvery         time.Duration
}

func (s *producerPerfStats) record(latencyMs int64, bytes int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	s.bytes += int64(bytes)
	s.totalLatency += latencyMs
	s.maxLatency = max(s.maxLatency, latencyMs)
	perfRecordMs(&s.hist, latencyMs)
	s.windowCount++
	s.wBytes += int64(bytes)
	s.windowTotal += latencyMs
	s.wMax = max(s.wMax, latencyMs)
	if now.Sub(s.windowStart) >= s.reportEvery {
		s.printWindow(now)
		s.windowStart, s.windowCount, s.wBytes, s.windowTotal, s.wMax = now, 0, 0, 0, 0
	}
}

func (s *producerPerfStats) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed++
	if s.firstErr == nil {
		s.firstErr = err
	}
}

// rates are records/sec and MB/sec (2^20 bytes) over elapsed whole
// milliseconds, as Kafka computes them.
func producerPerfRates(records, bytes int64, elapsed time.Duration) (float64, float64) {
	ms := float64(elapsed.Milliseconds())
	return 1000.0 * float64(records) / ms, 1000.0 * float64(bytes) / ms / (1024.0 * 1024.0)
}

func (s *producerPerfStats) printWindow(now time.Time) {
	rps, mbps := producerPerfRates(s.windowCount, s.wBytes, now.Sub(s.windowStart))
	fmt.Fprintf(s.out, "%d records sent, %s records/sec (%s MB/sec), %s ms avg latency, %s ms max latency.\n",
		s.windowCount, perfFixed(rps, 1), perfFixed(mbps, 2),
		perfFixed(float64(s.windowTotal)/float64(s.windowCount), 1), perfFixed(float64(s.wMax), 1))
}

func (s *producerPerfStats) printTotal(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rps, mbps := producerPerfRates(s.count, s.bytes, now.Sub(s.start))
	fmt.Fprintf(s.out, "%d records sent, %s records/sec (%s MB/sec), %s ms avg latency, %s ms max latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.\n",
		s.count, perfFixed(rps, 1), perfFixed(mbps, 2),
		perfFixed(float64(s.totalLatency)/float64(s.count), 2), perfFixed(float64(s.maxLatency), 2),
		perfPercentile(&s.hist, 0.5), perfPercentile(&s.hist, 0.95), perfPercentile(&s.hist, 0.99), perfPercentile(&s.hist, 0.999))
}

func runProducerPerf(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseProducerPerfArgs(args, stderr)
	if err != nil {
		return err
	}
	payloads := &producerPerfPayloads{size: o.recordSize, mono: o.payloadMono, randGen: mrand.New(mrand.NewPCG(0, 0))}
	if o.payloadFile != "" {
		if payloads.list, err = readProducerPerfPayloads(o.payloadFile, o.payloadDelim, stdout); err != nil {
			return err
		}
	}
	p, err := o.producerProps(stderr)
	if err != nil {
		return err
	}
	// Transactions: any of --transactional-id, --transaction-duration-ms
	// or a transactional.id property turns them on, as in Kafka's tool.
	txnDuration := time.Duration(o.txnDurationMs) * time.Millisecond
	txn := o.given["transactional-id"] || o.given["transaction-duration-ms"] || p.has("transactional.id")
	if txn {
		id := p.props["transactional.id"]
		if o.given["transactional-id"] {
			id = o.transactionalID
		}
		if id == "" {
			var u [16]byte
			_, _ = rand.Read(u[:])
			id = "performance-producer-" + hex.EncodeToString(u[:])
		}
		p.props["transactional.id"] = id
		if !o.given["transaction-duration-ms"] {
			txnDuration = 3 * time.Second
		}
	}
	opts, err := consoleProducerKgoOpts(p)
	if err != nil {
		return err
	}
	opts = append(opts, kgo.SeedBrokers(strings.Split(p.props["bootstrap.servers"], ",")...), kgo.DefaultProduceTopic(o.topic))
	if txn {
		opts = append(opts, kgo.TransactionalID(p.props["transactional.id"]))
		if d, ok, err := p.ms("transaction.timeout.ms"); err != nil {
			return err
		} else if ok {
			opts = append(opts, kgo.TransactionTimeout(d))
		}
	}
	cl, err := newTopicProducer(ctx, o.topic, kgo.NewClient, opts...)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", p.props["bootstrap.servers"], err)
	}
	defer cl.Close()

	start := time.Now()
	stats := &producerPerfStats{out: stdout, start: start, windowStart: start, reportEvery: producerPerfReportInterval}
	pacer := bench.Pacer{Start: start, Rate: o.throughput}
	inTxn := false
	var txnStart time.Time
	commit := func() error {
		// Java's commitTransaction flushes the transaction's records
		// first; franz-go's EndTransaction wants them flushed.
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("commit transaction: %w", err)
		}
		inTxn = false
		return nil
	}
	for i := int64(0); i < o.numRecords; i++ {
		if w := pacer.Wait(i, time.Now()); w > 0 {
			select {
			case <-time.After(w):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		value := payloads.next(i)
		if txn && !inTxn {
			if err := cl.BeginTransaction(); err != nil {
				return fmt.Errorf("begin transaction: %w", err)
			}
			inTxn, txnStart = true, time.Now()
		}
		sendStart := time.Now()
		n := len(value)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			now := time.Now()
			if err != nil {
				stats.fail(err)
				return
			}
			stats.record(now.Sub(sendStart).Milliseconds(), n, now)
		})
		if txn && sendStart.Sub(txnStart) >= txnDuration {
			if err := commit(); err != nil {
				return err
			}
		}
	}
	if txn && inTxn {
		if err := commit(); err != nil {
			return err
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	stats.printTotal(time.Now())
	if stats.failed > 0 {
		return fmt.Errorf("%d of %d records failed; the first: %w", stats.failed, o.numRecords, stats.firstErr)
	}
	return nil
}
