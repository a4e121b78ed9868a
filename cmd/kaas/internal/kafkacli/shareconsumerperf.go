package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kaas share-consumer-perf-test is Kafka 4.2's
// kafka-share-consumer-perf-test.sh (ShareConsumerPerformance): --threads
// share consumers of share group --group consume --num-records records of
// --topic between them, accepting each (the Java share consumer's implicit
// acknowledgement), and print the throughput as Kafka's CSV-like lines.
var _ = register(Tool{Name: "share-consumer-perf-test", Kafka: "kafka-share-consumer-perf-test.sh", Run: runShareConsumerPerf})

type shareConsumerPerfOpts struct {
	conn                             Conn
	topic, group, consumerCfg        string
	dateFormat                       string
	props                            Repeated
	fetchSize, socketBuffer, threads int
	records, timeoutMs, report       int64
	detailed, hide, consumerStats    bool
	printMetrics                     bool
	given                            map[string]bool
}

func parseShareConsumerPerfArgs(args []string, stdout, stderr io.Writer) (*shareConsumerPerfOpts, error) {
	o := &shareConsumerPerfOpts{}
	fs := NewFlagSet("share-consumer-perf-test", stderr)
	o.conn.Register(fs)
	fs.StringVar(&o.topic, "topic", "", "REQUIRED: The topic to consume from.")
	fs.StringVar(&o.group, "group", "perf-share-consumer", "The share group id to consume on.")
	fs.IntVar(&o.fetchSize, "fetch-size", 1024*1024, "The amount of data to fetch in a single request (fetch.max.bytes).")
	fs.Var(&o.props, "command-property", "A share consumer property key=value (repeatable); wins over --command-config.")
	fs.IntVar(&o.socketBuffer, "socket-buffer-size", 2*1024*1024, "The size of the tcp RECV size (no effect: the operating system's).")
	fs.StringVar(&o.consumerCfg, "consumer.config", "", "(DEPRECATED) Share consumer config properties file; use --command-config.")
	fs.BoolVar(&o.printMetrics, "print-metrics", false, "Refused: Java client metrics.")
	fs.BoolVar(&o.detailed, "show-detailed-stats", false, "Report stats for each --reporting-interval.")
	fs.Int64Var(&o.timeoutMs, "timeout", 10000, "The maximum allowed time in milliseconds between returned records.")
	fs.Int64Var(&o.records, "messages", 0, "(DEPRECATED) The number of records to consume; use --num-records.")
	fs.Int64Var(&o.records, "num-records", 0, "REQUIRED: The number of records to consume.")
	fs.Int64Var(&o.report, "reporting-interval", 5000, "Interval in milliseconds at which to print progress info.")
	fs.StringVar(&o.dateFormat, "date-format", "yyyy-MM-dd HH:mm:ss:SSS", "The java.text.SimpleDateFormat pattern of the time fields.")
	fs.BoolVar(&o.hide, "hide-header", false, "Skip printing the header for the stats.")
	fs.IntVar(&o.threads, "threads", 1, "The number of share consumers to use for sharing the load.")
	fs.BoolVar(&o.consumerStats, "show-consumer-stats", false, "Report stats for each share consumer.")
	given, err := Parse(fs, args)
	if err != nil {
		return nil, err
	}
	o.given = given
	for _, f := range []string{"topic", "bootstrap-server"} {
		if !given[f] {
			return nil, fmt.Errorf("Missing required argument \"[%s]\"", f)
		}
	}
	switch {
	case given["messages"] == given["num-records"]:
		return nil, errors.New("Exactly one of the following arguments is required: [messages], [num-records]")
	case given["consumer.config"] && given["command-config"]:
		return nil, errors.New(`Option "[consumer.config]" can't be used with option "[command-config]"`)
	case o.report <= 0:
		return nil, errors.New("Reporting interval must be greater than 0.")
	case o.printMetrics:
		return nil, errors.New("--print-metrics is not supported: kaas's client does not keep the Java client's metrics")
	case o.fetchSize < 1:
		return nil, fmt.Errorf("--fetch-size %d: want at least 1", o.fetchSize)
	case o.threads < 1:
		return nil, fmt.Errorf("--threads %d: want at least 1 share consumer", o.threads)
	case o.timeoutMs < 0:
		return nil, fmt.Errorf("--timeout %d: want at least 0 ms", o.timeoutMs)
	}
	// Kafka prints its deprecation warnings on standard output.
	if given["messages"] {
		fmt.Fprintln(stdout, "Warning: --messages is deprecated. Use --num-records instead.")
	}
	if given["consumer.config"] {
		fmt.Fprintln(stdout, "Warning: --consumer.config is deprecated. Use --command-config instead.")
	}
	return o, nil
}

// shareImplicitAcks refuses share.acknowledgement.mode=explicit: these
// tools accept what they consume as the Java share consumer's implicit
// mode does, and acknowledge no record one by one.
func shareImplicitAcks(p *consoleClientProps) error {
	if m, ok := p.props["share.acknowledgement.mode"]; ok && !strings.EqualFold(strings.TrimSpace(m), "implicit") {
		return fmt.Errorf("consumer property share.acknowledgement.mode=%s is not supported: kaas %s acknowledges implicitly, as Kafka's does", m, p.tool)
	}
	return nil
}

// clientOpts builds the share consumers' properties as
// ShareConsumerPerfOptions.props does (the file, --command-property over
// it, then the flags) and maps them to franz-go; it returns the client id
// and max.poll.records.
func (o *shareConsumerPerfOpts) clientOpts(stderr io.Writer) ([]kgo.Opt, string, int, error) {
	file := o.consumerCfg + o.conn.CommandConfig // at most one is set
	p, err := newConsoleClientProps("share-consumer-perf-test", "consumer", file, "command-property", o.props)
	if err != nil {
		return nil, "", 0, err
	}
	p.props["group.id"] = o.group
	p.props["fetch.max.bytes"] = strconv.Itoa(min(o.fetchSize, 1<<30))
	if !p.has("client.id") {
		p.props["client.id"] = "perf-share-consumer-client"
	}
	if err := shareImplicitAcks(p); err != nil {
		return nil, "", 0, err
	}
	if err := p.check(consoleShareKnown, consumerPerfNoEffect, stderr); err != nil {
		return nil, "", 0, err
	}
	opts, err := p.commonOpts()
	if err != nil {
		return nil, "", 0, err
	}
	consume, pollMax, err := p.consumeOpts()
	if err != nil {
		return nil, "", 0, err
	}
	opts = append(opts, consume...)
	return append(opts, kgo.ShareGroup(o.group), kgo.ConsumeTopics(o.topic)), p.props["client.id"], pollMax, nil
}

// shareConsumerPerfStats are one share consumer's running totals.
type shareConsumerPerfStats struct {
	clientID       string
	records, bytes int64
}

func runShareConsumerPerf(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseShareConsumerPerfArgs(args, stdout, stderr)
	if err != nil {
		return err
	}
	datef, err := parsePerfDateFormat(o.dateFormat)
	if err != nil {
		return err
	}
	opts, clientID, pollMax, err := o.clientOpts(stderr)
	if err != nil {
		return err
	}
	if !o.hide {
		fmt.Fprintln(stdout, "start.time, end.time, data.consumed.in.MB, MB.sec, nMsg.sec, data.consumed.in.nMsg, fetch.time.ms")
	}
	stats := make([]*shareConsumerPerfStats, o.threads)
	clients := make([]*kgo.Client, 0, o.threads)
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()
	for i := range stats {
		id := clientID
		if o.threads > 1 {
			id = fmt.Sprintf("%s-%d", clientID, i+1)
		}
		stats[i] = &shareConsumerPerfStats{clientID: id}
		cl, _, err := (&Conn{Bootstrap: o.conn.Bootstrap}).Client(append(opts, kgo.ClientID(id))...)
		if err != nil {
			return err
		}
		clients = append(clients, cl)
	}

	var total atomic.Int64
	var outMu sync.Mutex // the consumers' progress lines do not interleave
	startMs := time.Now().UnixMilli()
	errs := make([]error, o.threads)
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = shareConsumerPerfConsume(ctx, cl, o, pollMax, &total, stats[i], i+1, func(line string) {
				outMu.Lock()
				defer outMu.Unlock()
				fmt.Fprintln(stdout, line)
			}, datef)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.consumerStats {
		endMs := time.Now().UnixMilli()
		for i, s := range stats {
			fmt.Fprintf(stdout, "Share consumer %d having client id %s consumption metrics- %s\n", i+1, s.clientID,
				shareConsumerPerfLine(datef, startMs, endMs, s.bytes, s.records))
		}
	}
	read := total.Load()
	if read < o.records {
		fmt.Fprintf(stdout, "WARNING: Exiting before consuming the expected number of records: timeout (%d ms) exceeded. You can use the --timeout option to increase the timeout.\n", o.timeoutMs)
	}
	endMs := time.Now().UnixMilli()
	// What Kafka's tool does before it closes: commitSync, accepting the
	// records of each consumer's last poll.
	for _, cl := range clients {
		cl.MarkAcks(kgo.AckAccept)
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := cl.FlushAcks(flushCtx); err != nil {
			fmt.Fprintf(stderr, "kaas share-consumer-perf-test: acknowledging the last records of share group %s: %v\n", o.group, err)
		}
		cancel()
	}
	var bytes int64
	for _, s := range stats {
		bytes += s.bytes
	}
	fmt.Fprintln(stdout, shareConsumerPerfLine(datef, startMs, endMs, bytes, read))
	return nil
}

// shareConsumerPerfLine is ShareConsumerPerformance's stats line: start,
// end, MB, MB/s, records/s, records and the fetch time, which is the
// elapsed time (a share consumer has no rebalance to subtract).
func shareConsumerPerfLine(datef perfDateFormat, startMs, endMs, bytes, records int64) string {
	const mb = 1024.0 * 1024.0
	elapsedSec := float64(endMs-startMs) / 1000.0
	totalMB := float64(bytes) / mb
	return fmt.Sprintf("%s, %s, %s, %s, %s, %d, %d", datef(time.UnixMilli(startMs)), datef(time.UnixMilli(endMs)),
		perfFixed(totalMB, 4), perfFixed(totalMB/elapsedSec, 4), perfFixed(float64(records)/elapsedSec, 4), records, endMs-startMs)
}

// shareConsumerPerfConsume is one share consumer's loop: poll until the
// consumers together have read --num-records records or this one has had
// none for --timeout ms. Each poll accepts the records of the one before.
func shareConsumerPerfConsume(ctx context.Context, cl *kgo.Client, o *shareConsumerPerfOpts, pollMax int, total *atomic.Int64,
	s *shareConsumerPerfStats, index int, println func(string), datef perfDateFormat) error {
	const mb = 1024.0 * 1024.0
	timeout := time.Duration(o.timeoutMs) * time.Millisecond
	interval := time.Duration(o.report) * time.Millisecond
	now := time.Now()
	lastConsumed, lastReport := now, now
	var lastRecords, lastBytes int64
	for total.Load() < o.records && now.Sub(lastConsumed) <= timeout {
		pollCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fetches := cl.PollRecords(pollCtx, pollMax)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		for _, fe := range fetches.Errors() {
			switch {
			case errors.Is(fe.Err, context.DeadlineExceeded), errors.Is(fe.Err, context.Canceled):
			case errors.Is(fe.Err, kerr.UnknownTopicOrPartition) || kerr.IsRetriable(fe.Err):
				// The share consumer waits for the topic or the leader.
			default:
				return fmt.Errorf("consume %s: %w", o.topic, fe.Err)
			}
		}
		now = time.Now()
		if fetches.NumRecords() > 0 {
			lastConsumed = now
		}
		fetches.EachRecord(func(r *kgo.Record) {
			s.records++
			total.Add(1)
			s.bytes += int64(len(r.Key) + len(r.Value))
			if now.Sub(lastReport) < interval {
				return
			}
			if o.detailed {
				elapsedMs := float64(now.Sub(lastReport).Milliseconds())
				intervalMB := float64(s.bytes-lastBytes) / mb
				println(fmt.Sprintf("%s, %s, %s, %s, %s, %d, %d for share consumer %d", datef(lastReport), datef(now),
					perfFixed(float64(s.bytes)/mb, 4), perfFixed(1000.0*intervalMB/elapsedMs, 4),
					perfFixed(float64(s.records-lastRecords)/elapsedMs*1000.0, 4), s.records, now.Sub(lastReport).Milliseconds(), index))
			}
			lastReport, lastRecords, lastBytes = now, s.records, s.bytes
		})
	}
	return nil
}
