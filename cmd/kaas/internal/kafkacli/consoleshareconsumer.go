package kafkacli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kaas console-share-consumer is Kafka 4.1's
// kafka-console-share-consumer.sh (ConsoleShareConsumer): records of
// --topic delivered through share group --group (KIP-932), printed with
// the console consumer's DefaultMessageFormatter and acknowledged one by
// one (accepted, or with --release or --reject released or rejected).
var _ = register(Tool{Name: "console-share-consumer", Kafka: "kafka-console-share-consumer.sh", Run: runConsoleShareConsumer})

// consoleShareKnown are the share consumer properties mapped to franz-go.
var consoleShareKnown = map[string]bool{
	"group.id": true, "client.id": true, "fetch.min.bytes": true, "fetch.max.bytes": true, "fetch.max.wait.ms": true,
	"max.partition.fetch.bytes": true, "max.poll.records": true, "client.rack": true, "retry.backoff.ms": true,
	"metadata.max.age.ms": true, "share.acknowledgement.mode": true,
}

type consoleShareOpts struct {
	conn                                 Conn
	topic, group, formatter              string
	props, fmtProps, consumerProps, cmds Repeated
	formatterCfg, consumerCfg, oldCfg    string
	maxMessages                          int
	timeoutMs                            int64
	reject, release, rejectOnError       bool
	keyDeser, valueDeser                 string
	given                                map[string]bool
}

func parseConsoleShareArgs(args []string, stderr io.Writer) (*consoleShareOpts, error) {
	o := &consoleShareOpts{}
	fs := NewFlagSet("console-share-consumer", stderr)
	o.conn.Register(fs)
	fs.StringVar(&o.topic, "topic", "", "REQUIRED: The topic to consume from.")
	fs.StringVar(&o.group, "group", "console-share-consumer", "The share group id of the consumer.")
	fs.Var(&o.consumerProps, "consumer-property", "A consumer property key=value (repeatable).")
	fs.Var(&o.cmds, "command-property", "A consumer property key=value (repeatable); Kafka 4.2's name for --consumer-property.")
	fs.StringVar(&o.consumerCfg, "consumer-config", "", "A consumer properties file; --consumer-property wins over it.")
	fs.StringVar(&o.oldCfg, "consumer.config", "", "A consumer properties file (the console consumer's name for --consumer-config).")
	fs.StringVar(&o.formatter, "formatter", "org.apache.kafka.tools.consumer.DefaultMessageFormatter", "The formatter: Kafka's DefaultMessageFormatter, or NoOpMessageFormatter (prints nothing).")
	fs.Var(&o.props, "property", "A formatter setting key=value (repeatable): print.timestamp, print.key, print.offset, print.delivery,\nprint.epoch, print.partition, print.headers, print.value, key.separator, line.separator,\nheaders.separator, null.literal, key.deserializer, value.deserializer, headers.deserializer.")
	fs.Var(&o.fmtProps, "formatter-property", "A formatter setting key=value (repeatable); Kafka 4.2's name for --property.")
	fs.StringVar(&o.formatterCfg, "formatter-config", "", "A properties file of formatter settings; --property wins over it.")
	fs.IntVar(&o.maxMessages, "max-messages", -1, "The maximum number of messages to consume before exiting. If not set, consumption is continual.")
	fs.Int64Var(&o.timeoutMs, "timeout-ms", -1, "If specified, exit if no message is available for consumption for the specified interval.")
	fs.BoolVar(&o.reject, "reject", false, "If specified, messages are rejected as they are consumed.")
	fs.BoolVar(&o.release, "release", false, "If specified, messages are released as they are consumed.")
	fs.BoolVar(&o.rejectOnError, "reject-message-on-error", false, "If there is an error when processing a message, reject it instead of halting.")
	fs.StringVar(&o.keyDeser, "key-deserializer", "", "The name of the class to use for deserializing keys.")
	fs.StringVar(&o.valueDeser, "value-deserializer", "", "The name of the class to use for deserializing values.")
	var systest bool
	fs.BoolVar(&systest, "enable-systest-events", false, "Not supported: Kafka's system-test events.")
	if _, err := Parse(fs, args); err != nil {
		return nil, err
	}
	o.given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.given[f.Name] = true })
	g := o.given
	switch {
	case g["enable-systest-events"]:
		return nil, errors.New("--enable-systest-events is not supported: it logs lifecycle events for Kafka's own system tests")
	case !g["topic"]:
		return nil, errors.New("--topic is a required argument")
	case o.conn.Bootstrap == "":
		return nil, errors.New(`Missing required argument "[bootstrap-server]"`)
	case o.reject && o.release:
		return nil, errors.New("At most one of --reject and --release may be specified.")
	case len(o.consumerProps) > 0 && len(o.cmds) > 0:
		return nil, errors.New("Options --consumer-property and --command-property cannot be specified together.")
	case len(o.props) > 0 && len(o.fmtProps) > 0:
		return nil, errors.New("Options --property and --formatter-property cannot be specified together.")
	}
	var files []string
	for _, f := range []string{"consumer-config", "consumer.config", "command-config"} {
		if g[f] {
			files = append(files, "--"+f)
		}
	}
	if len(files) > 1 {
		return nil, fmt.Errorf("Options %s cannot be specified together: each names the consumer properties file.", strings.Join(files, " and "))
	}
	if _, ok := consoleFormatters[o.formatter]; !ok {
		return nil, fmt.Errorf("--formatter %s: kaas prints with Kafka's org.apache.kafka.tools.consumer.DefaultMessageFormatter or NoOpMessageFormatter only (other formatters are Java classes)", o.formatter)
	}
	if g["max-messages"] && o.maxMessages < 0 {
		return nil, fmt.Errorf("--max-messages %d: give a count of at least 0, or leave it out to consume continually", o.maxMessages)
	}
	return o, nil
}

// ackStatus is the acknowledgement each printed record gets.
func (o *consoleShareOpts) ackStatus() kgo.AckStatus {
	switch {
	case o.reject:
		return kgo.AckReject
	case o.release:
		return kgo.AckRelease
	}
	return kgo.AckAccept
}

// clientOpts builds the share consumer's properties as
// ConsoleShareConsumerOptions does and maps them to franz-go options.
func (o *consoleShareOpts) clientOpts(stderr io.Writer) ([]kgo.Opt, int, error) {
	file := o.consumerCfg + o.oldCfg + o.conn.CommandConfig // at most one is set
	kvs, kvFlag := o.consumerProps, "consumer-property"
	if len(o.cmds) > 0 {
		kvs, kvFlag = o.cmds, "command-property"
	}
	p, err := newConsoleClientProps("console-share-consumer", "consumer", file, kvFlag, kvs)
	if err != nil {
		return nil, 0, err
	}
	var groups []string
	seen := map[string]bool{}
	for _, gr := range []struct {
		set bool
		v   string
	}{{o.given["group"], o.group}, {p.has("group.id"), p.props["group.id"]}} {
		if gr.set && !seen[gr.v] {
			seen[gr.v] = true
			groups = append(groups, "'"+gr.v+"'")
		}
	}
	if len(groups) > 1 {
		return nil, 0, fmt.Errorf("The group ids provided in different places (directly using '--group', via '--consumer-property', or via '--consumer-config') do not match. Detected group ids: %s", strings.Join(groups, ", "))
	}
	if o.given["group"] || !p.has("group.id") {
		p.props["group.id"] = o.group
	}
	if !p.has("client.id") {
		p.props["client.id"] = "console-share-consumer"
	}
	// The tool acknowledges each record itself.
	if m, ok := p.props["share.acknowledgement.mode"]; ok && !strings.EqualFold(m, "explicit") {
		return nil, 0, fmt.Errorf("consumer property share.acknowledgement.mode=%s is not supported: the tool acknowledges each record explicitly", m)
	}
	noEffect := map[string]string{
		"key.deserializer":   "the share consumer reads bytes and --property key.deserializer formats them, as Kafka's does",
		"value.deserializer": "the share consumer reads bytes and --property value.deserializer formats them, as Kafka's does",
	}
	if err := p.check(consoleShareKnown, noEffect, stderr); err != nil {
		return nil, 0, err
	}
	opts, err := p.commonOpts()
	if err != nil {
		return nil, 0, err
	}
	consume, pollMax, err := p.consumeOpts()
	if err != nil {
		return nil, 0, err
	}
	opts = append(opts, consume...)
	return append(opts, kgo.ShareGroup(p.props["group.id"]), kgo.ConsumeTopics(o.topic)), pollMax, nil
}

func runConsoleShareConsumer(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseConsoleShareArgs(args, stderr)
	if err != nil {
		return err
	}
	fmtProps := map[string]string{}
	if o.formatterCfg != "" {
		if fmtProps, err = consoleReadProperties(o.formatterCfg); err != nil {
			return err
		}
	}
	if o.keyDeser != "" {
		fmtProps["key.deserializer"] = o.keyDeser
	}
	if o.valueDeser != "" {
		fmtProps["value.deserializer"] = o.valueDeser
	}
	props, propsFlag := o.props, "property"
	if len(o.fmtProps) > 0 {
		props, propsFlag = o.fmtProps, "formatter-property"
	}
	flagProps, err := consoleKeyValues(propsFlag, props)
	if err != nil {
		return err
	}
	for k, v := range flagProps {
		fmtProps[k] = v
	}
	format, err := newConsoleFormatter(fmtProps)
	if err != nil {
		return err
	}
	format.noop = !consoleFormatters[o.formatter]
	opts, pollMax, err := o.clientOpts(stderr)
	if err != nil {
		return err
	}
	// Acknowledgements the broker refused are reported, not dropped.
	var ackMu sync.Mutex
	var ackErr error
	opts = append(opts, kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
		if err := rs.Error(); err != nil {
			ackMu.Lock()
			if ackErr == nil {
				ackErr = err
			}
			ackMu.Unlock()
		}
	}))
	cl, _, err := (&Conn{Bootstrap: o.conn.Bootstrap}).Client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	count, runErr := consoleShareRun(ctx, cl, o, pollMax, format, stdout, stderr)
	// Send the acknowledgements before leaving, so the broker has each
	// record's outcome rather than a released lock.
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	if err := cl.FlushAcks(flushCtx); err != nil && runErr == nil {
		runErr = fmt.Errorf("acknowledge the records of share group %s: %w", o.group, err)
	}
	cancel()
	cl.Close() // leaves the share group; records polled but not printed are released
	fmt.Fprintf(stderr, "Processed a total of %d messages\n", count)
	ackMu.Lock()
	defer ackMu.Unlock()
	if runErr == nil && ackErr != nil {
		runErr = fmt.Errorf("acknowledge the records of share group %s: %w", o.group, ackErr)
	}
	return runErr
}

// consoleShareRun polls, prints and acknowledges until --max-messages,
// --timeout-ms, an error, or ctx is done, and returns the count processed.
func consoleShareRun(ctx context.Context, cl *kgo.Client, o *consoleShareOpts, pollMax int, format *consoleFormatter, stdout, stderr io.Writer) (int, error) {
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	status := o.ackStatus()
	count := 0
	var line []byte
	idle := time.Duration(o.timeoutMs) * time.Millisecond
	deadline := time.Now().Add(idle)
	for o.maxMessages < 0 || count < o.maxMessages {
		// No more records are acquired than are to be printed: the
		// others would stay locked to this member until it leaves.
		n := pollMax
		if o.maxMessages >= 0 && o.maxMessages-count < n {
			n = o.maxMessages - count
		}
		pollCtx, cancel := ctx, context.CancelFunc(func() {})
		if o.timeoutMs >= 0 {
			pollCtx, cancel = context.WithDeadline(ctx, deadline)
		}
		fetches := cl.PollRecords(pollCtx, n)
		cancel()
		if ctx.Err() != nil {
			return count, nil // interrupted: close as Kafka's shutdown hook does
		}
		var timedOut bool
		for _, fe := range fetches.Errors() {
			switch {
			case errors.Is(fe.Err, context.DeadlineExceeded):
				timedOut = true
			case errors.Is(fe.Err, kgo.ErrClientClosed):
				return count, nil
			case errors.Is(fe.Err, kerr.UnknownTopicOrPartition) || kerr.IsRetriable(fe.Err):
				// The share consumer waits for the topic or the leader.
			default:
				return count, fmt.Errorf("consume %s: %w", o.topic, fe.Err)
			}
		}
		recs := fetches.Records()
		if len(recs) == 0 {
			if timedOut || (o.timeoutMs >= 0 && !time.Now().Before(deadline)) {
				fmt.Fprintf(stderr, "kaas console-share-consumer: no message for %d ms (--timeout-ms): exiting\n", o.timeoutMs)
				return count, nil
			}
			continue
		}
		for _, r := range recs {
			count++
			var err error
			if line, err = format.formatDelivery(line[:0], r, r.DeliveryCount()); err != nil {
				if !o.rejectOnError {
					// Unacknowledged, the record is released when the
					// consumer leaves, as Kafka's tool's close does.
					return count, fmt.Errorf("Error processing message %s-%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
				}
				fmt.Fprintf(stderr, "ERROR Error processing message, rejecting this message: %v\n", err)
				cl.MarkAcks(kgo.AckReject, r)
				continue
			}
			out.Write(line)
			cl.MarkAcks(status, r)
		}
		if err := out.Flush(); err != nil {
			fmt.Fprintln(stderr, "Unable to write to standard out, closing consumer.")
			return count, nil
		}
		deadline = time.Now().Add(idle)
	}
	return count, nil
}
