package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kaas consumer-perf-test is kafka-consumer-perf-test.sh: it consumes
// --messages records of --topic in a consumer group and prints Kafka's
// CSV-like line of throughput and rebalance time (one per interval with
// --show-detailed-stats).
var _ = register(Tool{Name: "consumer-perf-test", Kafka: "kafka-consumer-perf-test.sh", Run: runConsumerPerf})

// consumerPerfKnown are the consumer properties mapped to franz-go.
var consumerPerfKnown = map[string]bool{
	"group.id": true, "client.id": true, "auto.offset.reset": true, "enable.auto.commit": true,
	"auto.commit.interval.ms": true, "isolation.level": true, "session.timeout.ms": true,
	"heartbeat.interval.ms": true, "max.poll.interval.ms": true, "fetch.min.bytes": true,
	"fetch.max.bytes": true, "fetch.max.wait.ms": true, "max.partition.fetch.bytes": true,
	"client.rack": true, "retry.backoff.ms": true, "metadata.max.age.ms": true,
}

// consumerPerfNoEffect are consumer properties accepted with no effect.
var consumerPerfNoEffect = map[string]string{
	"key.deserializer":   "the perf test counts bytes, as Kafka's does",
	"value.deserializer": "the perf test counts bytes, as Kafka's does",
	"check.crcs":         "franz-go always checks batch CRCs",
	"max.poll.records":   "the perf test counts every record fetched",
}

type consumerPerfOpts struct {
	conn                        Conn
	topic, group, consumerCfg   string
	dateFormat                  string
	fetchSize, socketBuffer     int
	messages, timeoutMs, report int64
	fromLatest, detailed, hide  bool
	printMetrics                bool
	given                       map[string]bool
}

func parseConsumerPerfArgs(args []string, stderr io.Writer) (*consumerPerfOpts, error) {
	o := &consumerPerfOpts{}
	fs := NewFlagSet("consumer-perf-test", stderr)
	o.conn.Register(fs)
	fs.StringVar(&o.topic, "topic", "", "REQUIRED: the topic to consume from")
	fs.StringVar(&o.group, "group", "", "the group id to consume on (default perf-consumer-N, N random)")
	fs.IntVar(&o.fetchSize, "fetch-size", 1024*1024, "the amount of data to fetch in a single request (max.partition.fetch.bytes)")
	fs.BoolVar(&o.fromLatest, "from-latest", false, "with no committed offset, start at the latest record rather than the earliest")
	fs.IntVar(&o.socketBuffer, "socket-buffer-size", 2*1024*1024, "the TCP receive buffer size (no effect: the operating system's)")
	fs.StringVar(&o.consumerCfg, "consumer.config", "", "consumer config properties file")
	fs.BoolVar(&o.printMetrics, "print-metrics", false, "refused: Java client metrics")
	fs.BoolVar(&o.detailed, "show-detailed-stats", false, "report stats for each --reporting-interval")
	fs.Int64Var(&o.timeoutMs, "timeout", 10000, "the maximum time in ms between returned records")
	fs.Int64Var(&o.messages, "messages", 0, "REQUIRED: the number of messages to consume")
	fs.Int64Var(&o.report, "reporting-interval", 5000, "interval in ms at which to print progress info")
	fs.StringVar(&o.dateFormat, "date-format", "yyyy-MM-dd HH:mm:ss:SSS", "the java.text.SimpleDateFormat pattern of the time fields")
	fs.BoolVar(&o.hide, "hide-header", false, "skip printing the header for the stats")
	given, err := Parse(fs, args)
	if err != nil {
		return nil, err
	}
	o.given = given
	for _, f := range []string{"topic", "messages"} {
		if !given[f] {
			return nil, fmt.Errorf("Missing required argument \"[%s]\"", f)
		}
	}
	if o.report <= 0 {
		return nil, errors.New("Reporting interval must be greater than 0.")
	}
	if o.printMetrics {
		return nil, errors.New("--print-metrics is not supported: kaas's client does not keep the Java client's metrics")
	}
	if o.fetchSize < 1 {
		return nil, fmt.Errorf("--fetch-size %d: want at least 1", o.fetchSize)
	}
	return o, nil
}

// clientOpts builds the consumer's properties as ConsumerPerformance does
// (the file, then the flags over it) and maps them to franz-go.
func (o *consumerPerfOpts) clientOpts(stderr io.Writer) ([]kgo.Opt, bool, error) {
	file, err := consoleConfigFile("consumer.config", o.consumerCfg, o.conn.CommandConfig)
	if err != nil {
		return nil, false, err
	}
	p, err := newConsoleClientProps("consumer-perf-test", "consumer", file, "", nil)
	if err != nil {
		return nil, false, err
	}
	group := o.group
	if !o.given["group"] {
		group = fmt.Sprintf("perf-consumer-%d", rand.IntN(100000))
	}
	p.props["group.id"] = group
	p.props["max.partition.fetch.bytes"] = strconv.Itoa(min(o.fetchSize, 1<<30))
	p.props["auto.offset.reset"] = map[bool]string{true: "latest", false: "earliest"}[o.fromLatest]
	if !p.has("client.id") {
		p.props["client.id"] = "perf-consumer-client"
	}
	if err := p.check(consumerPerfKnown, consumerPerfNoEffect, stderr); err != nil {
		return nil, false, err
	}
	opts, err := p.commonOpts()
	if err != nil {
		return nil, false, err
	}
	reset := kgo.NewOffset().AtStart()
	if o.fromLatest {
		reset = kgo.NewOffset().AtEnd()
	}
	opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(o.topic), kgo.ConsumeResetOffset(reset))
	consume, _, err := p.consumeOpts()
	if err != nil {
		return nil, false, err
	}
	opts = append(opts, consume...)
	for _, f := range []struct {
		key string
		opt func(time.Duration) kgo.Opt
	}{
		{"session.timeout.ms", func(d time.Duration) kgo.Opt { return kgo.SessionTimeout(d) }},
		{"heartbeat.interval.ms", func(d time.Duration) kgo.Opt { return kgo.HeartbeatInterval(d) }},
		{"max.poll.interval.ms", func(d time.Duration) kgo.Opt { return kgo.RebalanceTimeout(d) }},
	} {
		if d, ok, err := p.ms(f.key); err != nil {
			return nil, false, err
		} else if ok {
			opts = append(opts, f.opt(d))
		}
	}
	// The Java consumer commits automatically unless told not to, and
	// commits what it consumed when it closes.
	autoCommit, set, err := p.bool("enable.auto.commit")
	if err != nil {
		return nil, false, err
	}
	if !set {
		autoCommit = true
	}
	if !autoCommit {
		opts = append(opts, kgo.DisableAutoCommit())
	} else if d, ok, err := p.ms("auto.commit.interval.ms"); err != nil {
		return nil, false, err
	} else if ok && d > 0 {
		opts = append(opts, kgo.AutoCommitInterval(d))
	}
	return opts, autoCommit, nil
}

// consumerPerfJoin tracks the time spent joining the group: from the
// start, or from a revocation, to the next assignment.
type consumerPerfJoin struct {
	mu           sync.Mutex
	start        time.Time
	total, since int64 // ms: the whole run's, and since the last report
}

func (j *consumerPerfJoin) revoked() {
	j.mu.Lock()
	j.start = time.Now()
	j.mu.Unlock()
}

func (j *consumerPerfJoin) assigned() {
	j.mu.Lock()
	ms := time.Since(j.start).Milliseconds()
	j.total += ms
	j.since += ms
	j.mu.Unlock()
}

// take returns the join time since the last call and the total.
func (j *consumerPerfJoin) take() (since, total int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	since, j.since = j.since, 0
	return since, j.total
}

func runConsumerPerf(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseConsumerPerfArgs(args, stderr)
	if err != nil {
		return err
	}
	datef, err := parsePerfDateFormat(o.dateFormat)
	if err != nil {
		return err
	}
	opts, autoCommit, err := o.clientOpts(stderr)
	if err != nil {
		return err
	}
	if !o.hide {
		extra := ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
		if o.detailed {
			fmt.Fprintf(stdout, "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec%s\n", extra)
		} else {
			fmt.Fprintf(stdout, "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec%s\n", extra)
		}
	}
	start := time.Now()
	join := &consumerPerfJoin{start: start}
	opts = append(opts,
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { join.assigned() }),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) { join.revoked() }),
	)
	o.conn.CommandConfig = "" // read above, with the consumer's properties
	cl, adm, err := o.conn.Client(opts...)
	if err != nil {
		return err
	}
	defer adm.Close()

	const mb = 1024.0 * 1024.0
	timeout := time.Duration(o.timeoutMs) * time.Millisecond
	interval := time.Duration(o.report) * time.Millisecond
	var read, bytes, lastRead, lastBytes int64
	now := time.Now()
	lastReport, lastConsumed := now, now
	for read < o.messages && now.Sub(lastConsumed) <= timeout {
		pollCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && fetchErr == nil {
				fetchErr = fmt.Errorf("fetch %s-%d: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			return fetchErr
		}
		now = time.Now()
		if fetches.NumRecords() > 0 {
			lastConsumed = now
		}
		fetches.EachRecord(func(r *kgo.Record) {
			read++
			bytes += int64(len(r.Key) + len(r.Value))
			if now.Sub(lastReport) < interval {
				return
			}
			since, _ := join.take()
			if o.detailed {
				elapsed := float64(now.Sub(lastReport).Milliseconds())
				intervalMB := float64(bytes-lastBytes) / mb
				fetchMs := now.Sub(lastReport).Milliseconds() - since
				fetchMBps, fetchRps := 0.0, 0.0
				if fetchMs > 0 {
					fetchMBps = 1000.0 * intervalMB / float64(fetchMs)
					fetchRps = 1000.0 * float64(read-lastRead) / float64(fetchMs)
				}
				fmt.Fprintf(stdout, "%s, %d, %s, %s, %d, %s, %d, %d, %s, %s\n", datef(now), 0,
					perfFixed(float64(bytes)/mb, 4), perfFixed(1000.0*intervalMB/elapsed, 4),
					read, perfFixed(float64(read-lastRead)/elapsed*1000.0, 4),
					since, fetchMs, perfFixed(fetchMBps, 4), perfFixed(fetchRps, 4))
			}
			lastReport, lastRead, lastBytes = now, read, bytes
		})
	}
	if read < o.messages {
		fmt.Fprintf(stdout, "WARNING: Exiting before consuming the expected number of messages: timeout (%d ms) exceeded. You can use the --timeout option to increase the timeout.\n", o.timeoutMs)
	}
	end := time.Now()
	if autoCommit {
		// What the Java consumer does as it closes: commit the position.
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			return fmt.Errorf("commit offsets of group: %w", err)
		}
	}
	if !o.detailed {
		_, joinMs := join.take()
		elapsedMs := end.Sub(start).Milliseconds()
		elapsedSec := float64(elapsedMs) / 1000.0
		fetchMs := elapsedMs - joinMs
		totalMB := float64(bytes) / mb
		fmt.Fprintf(stdout, "%s, %s, %s, %s, %d, %s, %d, %d, %s, %s\n", datef(start), datef(end),
			perfFixed(totalMB, 4), perfFixed(totalMB/elapsedSec, 4), read, perfFixed(float64(read)/elapsedSec, 4),
			joinMs, fetchMs, perfFixed(totalMB/(float64(fetchMs)/1000.0), 4), perfFixed(float64(read)/(float64(fetchMs)/1000.0), 4))
	}
	return nil
}
