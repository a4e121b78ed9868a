package kafkacli

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kaas console-consumer is Kafka 4's kafka-console-consumer.sh
// (ConsoleConsumer with its DefaultMessageFormatter): records of --topic
// or of the topics --include matches, printed one a line, then "Processed
// a total of N messages" on standard error.
var _ = register(Tool{Name: "console-consumer", Kafka: "kafka-console-consumer.sh", Run: runConsoleConsumer})

// consoleFormatters are the formatter classes kaas prints with.
var consoleFormatters = map[string]bool{
	"org.apache.kafka.tools.consumer.DefaultMessageFormatter": true,
	"kafka.tools.DefaultMessageFormatter":                     true,
	"org.apache.kafka.tools.consumer.NoOpMessageFormatter":    false, // prints nothing
	"kafka.tools.NoOpMessageFormatter":                        false,
}

// consoleConsumerKnown are the consumer properties mapped to franz-go.
var consoleConsumerKnown = map[string]bool{
	"group.id": true, "client.id": true, "auto.offset.reset": true, "enable.auto.commit": true,
	"auto.commit.interval.ms": true, "isolation.level": true, "session.timeout.ms": true,
	"heartbeat.interval.ms": true, "max.poll.interval.ms": true, "max.poll.records": true,
	"fetch.min.bytes": true, "fetch.max.bytes": true, "fetch.max.wait.ms": true,
	"max.partition.fetch.bytes": true, "group.instance.id": true, "client.rack": true,
	"group.protocol": true, "partition.assignment.strategy": true, "exclude.internal.topics": true,
	"retry.backoff.ms": true, "metadata.max.age.ms": true, "allow.auto.create.topics": true,
}

// consoleConsumerNoEffect are consumer properties accepted with no effect.
var consoleConsumerNoEffect = map[string]string{
	"key.deserializer":       "the console consumer reads bytes and --property key.deserializer formats them, as Kafka's does",
	"value.deserializer":     "the console consumer reads bytes and --property value.deserializer formats them, as Kafka's does",
	"default.api.timeout.ms": "franz-go times requests out by its own rules",
	"check.crcs":             "franz-go always checks batch CRCs",
}

// consoleAssignors maps the Java assignor classes to franz-go's balancers.
var consoleAssignors = map[string]func() kgo.GroupBalancer{
	"org.apache.kafka.clients.consumer.RangeAssignor":             kgo.RangeBalancer,
	"org.apache.kafka.clients.consumer.RoundRobinAssignor":        kgo.RoundRobinBalancer,
	"org.apache.kafka.clients.consumer.StickyAssignor":            kgo.StickyBalancer,
	"org.apache.kafka.clients.consumer.CooperativeStickyAssignor": kgo.CooperativeStickyBalancer,
}

type consoleConsumerOpts struct {
	conn                 Conn
	topic, include       string
	partition            int
	offset               string
	formatter            string
	props, consumerProps Repeated
	formatterCfg         string
	consumerCfg          string
	fromBeginning        bool
	maxMessages          int
	timeoutMs            int64
	skipOnError          bool
	keyDeser, valueDeser string
	isolation, group     string
	given                map[string]bool
}

func parseConsoleConsumerArgs(args []string, stderr io.Writer) (*consoleConsumerOpts, error) {
	o := &consoleConsumerOpts{}
	fs := NewFlagSet("console-consumer", stderr)
	o.conn.Register(fs)
	fs.StringVar(&o.topic, "topic", "", "The topic to consume on.")
	fs.StringVar(&o.include, "include", "", "Regular expression specifying list of topics to include for consumption (matching whole names).")
	fs.IntVar(&o.partition, "partition", 0, "The partition to consume from. Consumption starts from the end of the partition unless '--offset' is specified.")
	fs.StringVar(&o.offset, "offset", "latest", "The offset to consume from (a non-negative number), or 'earliest' which means from beginning, or 'latest' which means from end")
	fs.Var(&o.consumerProps, "consumer-property", "A consumer property key=value (repeatable).")
	fs.StringVar(&o.consumerCfg, "consumer.config", "", "A consumer properties file; --consumer-property wins over it.")
	fs.StringVar(&o.formatter, "formatter", "org.apache.kafka.tools.consumer.DefaultMessageFormatter", "The formatter: Kafka's DefaultMessageFormatter, or NoOpMessageFormatter (prints nothing).")
	fs.Var(&o.props, "property", "A formatter setting key=value (repeatable): print.timestamp, print.key, print.offset, print.partition,\nprint.headers, print.value, print.epoch, print.delivery, key.separator, line.separator,\nheaders.separator, null.literal, key.deserializer, value.deserializer, headers.deserializer.")
	fs.StringVar(&o.formatterCfg, "formatter-config", "", "A properties file of formatter settings; --property wins over it.")
	fs.BoolVar(&o.fromBeginning, "from-beginning", false, "If the consumer does not already have an established offset to consume from, start with the earliest message present in the log rather than the latest message.")
	fs.IntVar(&o.maxMessages, "max-messages", -1, "The maximum number of messages to consume before exiting. If not set, consumption is continual.")
	fs.Int64Var(&o.timeoutMs, "timeout-ms", -1, "If specified, exit if no message is available for consumption for the specified interval.")
	fs.BoolVar(&o.skipOnError, "skip-message-on-error", false, "If there is an error when processing a message, skip it instead of halt.")
	fs.StringVar(&o.keyDeser, "key-deserializer", "", "The key's deserializer (the formatter's key.deserializer).")
	fs.StringVar(&o.valueDeser, "value-deserializer", "", "The value's deserializer (the formatter's value.deserializer).")
	fs.StringVar(&o.isolation, "isolation-level", "read_uncommitted", "Set to read_committed in order to filter out transactional messages which are not committed. Set to read_uncommitted to read all messages.")
	fs.StringVar(&o.group, "group", "", "The consumer group id of the consumer.")
	var whitelist string
	var systest bool
	fs.StringVar(&whitelist, "whitelist", "", "Not supported: removed in Kafka 4.0; use --include.")
	fs.BoolVar(&systest, "enable-systest-events", false, "Not supported: Kafka's system-test events.")
	if _, err := Parse(fs, args); err != nil {
		return nil, err
	}
	o.given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.given[f.Name] = true })
	g := o.given
	switch {
	case g["whitelist"]:
		return nil, errors.New("--whitelist is not supported: Kafka 4.0 removed it; use --include")
	case g["enable-systest-events"]:
		return nil, errors.New("--enable-systest-events is not supported: it logs lifecycle events for Kafka's own system tests")
	}
	// ConsoleConsumerOptions.checkRequiredArgs, in Kafka's order.
	if g["topic"] == g["include"] {
		return nil, errors.New("Exactly one of --include/--topic is required. ")
	}
	if g["partition"] {
		if !g["topic"] {
			return nil, errors.New("The topic is required when partition is specified.")
		}
		if o.fromBeginning && g["offset"] {
			return nil, errors.New("Options from-beginning and offset cannot be specified together.")
		}
	} else if g["offset"] {
		return nil, errors.New("The partition is required when offset is specified.")
	}
	if o.conn.Bootstrap == "" {
		return nil, errors.New(`Missing required argument "[bootstrap-server]"`)
	}
	if g["partition"] && o.partition < 0 {
		return nil, fmt.Errorf("--partition %d: a partition is a non-negative number", o.partition)
	}
	if _, ok := consoleFormatters[o.formatter]; !ok {
		return nil, fmt.Errorf("--formatter %s: kaas prints with Kafka's org.apache.kafka.tools.consumer.DefaultMessageFormatter or NoOpMessageFormatter only (other formatters are Java classes)", o.formatter)
	}
	return o, nil
}

// consoleStartOffset is --offset (or --from-beginning) for --partition.
func (o *consoleConsumerOpts) startOffset() (kgo.Offset, error) {
	if !o.given["offset"] {
		if o.fromBeginning {
			return kgo.NewOffset().AtStart(), nil
		}
		return kgo.NewOffset().AtEnd(), nil
	}
	switch strings.ToLower(o.offset) {
	case "earliest":
		return kgo.NewOffset().AtStart(), nil
	case "latest":
		return kgo.NewOffset().AtEnd(), nil
	}
	n, err := strconv.ParseInt(o.offset, 10, 64)
	if err != nil || n < 0 {
		return kgo.Offset{}, fmt.Errorf("The provided offset value '%s' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long.", o.offset)
	}
	return kgo.NewOffset().At(n), nil
}

// consoleConsumer is what a run consumes with.
type consoleConsumer struct {
	opts       []kgo.Opt
	group      string // "" when --partition assigns
	autoCommit bool
	pollMax    int
	fmt        *consoleFormatter
}

// consumerSetup builds the consumer's properties as ConsoleConsumerOptions
// does and maps them to franz-go options.
func (o *consoleConsumerOpts) consumerSetup(stderr io.Writer) (*consoleConsumer, error) {
	file, err := consoleConfigFile("consumer.config", o.consumerCfg, o.conn.CommandConfig)
	if err != nil {
		return nil, err
	}
	p, err := newConsoleClientProps("console-consumer", "consumer", file, "consumer-property", o.consumerProps)
	if err != nil {
		return nil, err
	}
	// The group may be named three ways; they must agree.
	var groups []string
	seen := map[string]bool{}
	for _, g := range []struct {
		set bool
		v   string
	}{{o.given["group"], o.group}, {p.has("group.id"), p.props["group.id"]}} {
		if g.set && !seen[g.v] {
			seen[g.v] = true
			groups = append(groups, "'"+g.v+"'")
		}
	}
	if len(groups) > 1 {
		return nil, fmt.Errorf("The group ids provided in different places (directly using '--group', via '--consumer-property', or via '--consumer.config') do not match. Detected group ids: %s", strings.Join(groups, ", "))
	}
	if len(groups) == 1 && o.given["partition"] {
		return nil, errors.New("Options group and partition cannot be specified together.")
	}
	// auto.offset.reset: the property, else --from-beginning's earliest,
	// else latest.
	if v, ok := p.props["auto.offset.reset"]; ok {
		if o.fromBeginning && v != "earliest" {
			return nil, fmt.Errorf("Can't simultaneously specify --from-beginning and 'auto.offset.reset=%s', please remove one option", v)
		}
	} else if o.fromBeginning {
		p.props["auto.offset.reset"] = "earliest"
	} else {
		p.props["auto.offset.reset"] = "latest"
	}
	if !p.has("client.id") {
		p.props["client.id"] = "console-consumer"
	}
	p.merge("isolation.level", o.given["isolation-level"], o.isolation)
	if len(groups) == 0 {
		// Kafka's throwaway group: a random name, and no commits unless
		// asked for, so the coordinator keeps no offsets for it.
		p.props["group.id"] = fmt.Sprintf("console-consumer-%d", rand.IntN(100000))
		if !p.has("enable.auto.commit") {
			p.props["enable.auto.commit"] = "false"
		}
	} else if o.given["group"] {
		p.props["group.id"] = o.group
	}
	if err := p.check(consoleConsumerKnown, consoleConsumerNoEffect, stderr); err != nil {
		return nil, err
	}
	c := &consoleConsumer{}
	if c.opts, err = p.commonOpts(); err != nil {
		return nil, err
	}
	reset, ok := map[string]kgo.Offset{
		"earliest": kgo.NewOffset().AtStart(), "latest": kgo.NewOffset().AtEnd(), "none": kgo.NoResetOffset(),
	}[p.props["auto.offset.reset"]]
	if !ok {
		return nil, fmt.Errorf("Invalid value %s for configuration auto.offset.reset: String must be one of: latest, earliest, none", p.props["auto.offset.reset"])
	}
	c.opts = append(c.opts, kgo.ConsumeResetOffset(reset))
	if v, set, err := p.bool("exclude.internal.topics"); err != nil {
		return nil, err
	} else if set && !v {
		return nil, errors.New("consumer property exclude.internal.topics=false is not supported: --include never matches internal topics")
	}
	consume, pollMax, err := p.consumeOpts()
	if err != nil {
		return nil, err
	}
	c.opts, c.pollMax = append(c.opts, consume...), pollMax
	create, set, err := p.bool("allow.auto.create.topics")
	if err != nil {
		return nil, err
	}
	if o.given["partition"] {
		return c, nil // assigned: no group, nothing committed, nothing created
	}
	// allow.auto.create.topics (the Java consumer's, default true): a
	// subscribed topic that does not exist is created by a broker with
	// auto.create.topics.enable; an assigned one never is.
	if create || !set {
		c.opts = append(c.opts, kgo.AllowAutoTopicCreation())
	}
	c.group = p.props["group.id"]
	c.opts = append(c.opts, kgo.ConsumerGroup(c.group))
	if c.autoCommit, _, err = p.bool("enable.auto.commit"); err != nil {
		return nil, err
	} else if !p.has("enable.auto.commit") {
		c.autoCommit = true // the Java consumer's default
	}
	if c.autoCommit {
		// Only the records printed are committed, as Kafka's tool seeks
		// back over the ones it fetched but did not print before closing.
		c.opts = append(c.opts, kgo.AutoCommitMarks())
		if d, ok, err := p.ms("auto.commit.interval.ms"); err != nil {
			return nil, err
		} else if ok && d > 0 {
			c.opts = append(c.opts, kgo.AutoCommitInterval(d))
		}
	} else {
		c.opts = append(c.opts, kgo.DisableAutoCommit())
	}
	for _, f := range []struct {
		key string
		opt func(time.Duration) kgo.Opt
	}{
		{"session.timeout.ms", func(d time.Duration) kgo.Opt { return kgo.SessionTimeout(d) }},
		{"heartbeat.interval.ms", func(d time.Duration) kgo.Opt { return kgo.HeartbeatInterval(d) }},
		{"max.poll.interval.ms", func(d time.Duration) kgo.Opt { return kgo.RebalanceTimeout(d) }},
	} {
		if d, ok, err := p.ms(f.key); err != nil {
			return nil, err
		} else if ok {
			c.opts = append(c.opts, f.opt(d))
		}
	}
	if id := p.props["group.instance.id"]; id != "" {
		c.opts = append(c.opts, kgo.InstanceID(id))
	}
	var balancers []kgo.GroupBalancer
	if s, ok := p.props["partition.assignment.strategy"]; ok {
		for _, name := range strings.Split(s, ",") {
			name = strings.TrimSpace(name)
			b, ok := consoleAssignors[name]
			if !ok {
				return nil, fmt.Errorf("consumer property partition.assignment.strategy: %s is not one of Kafka's RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor", name)
			}
			balancers = append(balancers, b())
		}
	}
	switch strings.ToLower(p.props["group.protocol"]) {
	case "", "classic":
		if balancers != nil {
			c.opts = append(c.opts, kgo.Balancers(balancers...))
		}
	case "consumer":
		// KIP-848: the broker assigns; franz-go takes that protocol with
		// a range or sticky balancer named.
		if balancers != nil {
			return nil, errors.New("partition.assignment.strategy cannot be set when group.protocol=consumer (the broker assigns)")
		}
		c.opts = append(c.opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	default:
		return nil, fmt.Errorf("Invalid value %s for configuration group.protocol: String must be one of (case insensitive): CLASSIC, CONSUMER", p.props["group.protocol"])
	}
	return c, nil
}

func runConsoleConsumer(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseConsoleConsumerArgs(args, stderr)
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
	flagProps, err := consoleKeyValues("property", o.props)
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
	c, err := o.consumerSetup(stderr)
	if err != nil {
		return err
	}
	c.fmt = format
	switch {
	case o.given["partition"]:
		start, err := o.startOffset()
		if err != nil {
			return err
		}
		c.opts = append(c.opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: {int32(o.partition): start}}))
	case o.given["include"]:
		// Kafka matches the pattern against whole topic names.
		if _, err := regexp.Compile(o.include); err != nil {
			return fmt.Errorf("--include %s is not a regular expression: %v", o.include, err)
		}
		c.opts = append(c.opts, kgo.ConsumeRegex(), kgo.ConsumeTopics("^(?:"+o.include+")$"))
	default:
		c.opts = append(c.opts, kgo.ConsumeTopics(o.topic))
	}
	conn := Conn{Bootstrap: o.conn.Bootstrap}
	cl, adm, err := conn.Client(c.opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if o.given["partition"] {
		// Kafka's consumer waits on a partition that does not exist;
		// kaas says so.
		td, err := adm.ListTopics(ctx, o.topic)
		if err != nil {
			return err
		}
		t, ok := td[o.topic]
		if !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("--topic %s: no such topic", o.topic)
		} else if t.Err != nil {
			return fmt.Errorf("--topic %s: %w", o.topic, t.Err)
		}
		if _, ok := t.Partitions[int32(o.partition)]; !ok {
			return fmt.Errorf("--partition %d: topic %s has %d partitions", o.partition, o.topic, len(t.Partitions))
		}
	}
	return c.run(ctx, cl, o, stdout, stderr)
}

// run polls and prints until --max-messages, --timeout-ms, an error, or
// ctx is done; then commits what it printed (when committing), leaves the
// group, and reports the count as Kafka's tool does.
func (c *consoleConsumer) run(ctx context.Context, cl *kgo.Client, o *consoleConsumerOpts, stdout, stderr io.Writer) error {
	out := bufio.NewWriter(stdout)
	count := 0
	var runErr error
	var line []byte
	idle := time.Duration(o.timeoutMs) * time.Millisecond
	deadline := time.Now().Add(idle)
poll:
	for o.maxMessages == -1 || count < o.maxMessages { // -1: no limit, as Kafka's
		n := c.pollMax
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
			break // interrupted: close as Kafka's shutdown hook does
		}
		var timedOut bool
		for _, fe := range fetches.Errors() {
			var dataLoss *kgo.ErrDataLoss
			switch {
			case errors.Is(fe.Err, context.DeadlineExceeded):
				timedOut = true
			case errors.Is(fe.Err, kgo.ErrClientClosed):
				break poll
			case errors.As(fe.Err, &dataLoss):
				fmt.Fprintf(stderr, "WARN %v\n", fe.Err)
			case errors.Is(fe.Err, kerr.UnknownTopicOrPartition) || kerr.IsRetriable(fe.Err):
				// Kafka's consumer waits for the topic or the leader.
			default:
				if fe.Topic != "" {
					runErr = fmt.Errorf("consume %s partition %d: %w", fe.Topic, fe.Partition, fe.Err)
				} else {
					runErr = fmt.Errorf("consume: %w", fe.Err)
				}
				break poll
			}
		}
		recs := fetches.Records()
		if len(recs) == 0 {
			if timedOut || (o.timeoutMs >= 0 && !time.Now().Before(deadline)) {
				fmt.Fprintf(stderr, "kaas console-consumer: no message for %d ms (--timeout-ms): exiting\n", o.timeoutMs)
				break
			}
			continue
		}
		for _, r := range recs {
			count++
			if c.autoCommit {
				cl.MarkCommitRecords(r)
			}
			var err error
			if line, err = c.fmt.format(line[:0], r); err != nil {
				if !o.skipOnError {
					runErr = fmt.Errorf("Error processing message %s-%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
					break poll
				}
				fmt.Fprintf(stderr, "ERROR Error processing message, skipping this message: %v\n", err)
				continue
			}
			out.Write(line)
		}
		if err := out.Flush(); err != nil {
			fmt.Fprintln(stderr, "Unable to write to standard out, closing consumer.")
			break
		}
		deadline = time.Now().Add(idle)
	}
	if err := out.Flush(); err != nil && runErr == nil {
		fmt.Fprintln(stderr, "Unable to write to standard out, closing consumer.")
	}
	if c.autoCommit {
		commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := cl.CommitMarkedOffsets(commitCtx); err != nil && runErr == nil {
			runErr = fmt.Errorf("commit the offsets of group %s: %w", c.group, err)
		}
		cancel()
	}
	cl.Close() // leaves the group
	fmt.Fprintf(stderr, "Processed a total of %d messages\n", count)
	return runErr
}

// consoleFormatter is Kafka's DefaultMessageFormatter.
type consoleFormatter struct {
	noop bool // NoOpMessageFormatter

	timestamp, key, value, partition, offset, delivery, epoch, headers bool

	keySep, lineSep, headersSep, nullLiteral []byte

	keyDeser, valueDeser, headersDeser consoleDeserializer
}

// consoleDeserializer turns a key, value or header into its text, as a
// Kafka deserializer's result's toString(); nil prints the bytes.
type consoleDeserializer func([]byte) ([]byte, error)

// consoleFormatterProps are the settings DefaultMessageFormatter reads.
var consoleFormatterProps = map[string]bool{
	"print.timestamp": true, "print.key": true, "print.offset": true, "print.delivery": true, "print.epoch": true,
	"print.partition": true, "print.headers": true, "print.value": true, "key.separator": true, "line.separator": true,
	"headers.separator": true, "null.literal": true, "key.deserializer": true, "value.deserializer": true, "headers.deserializer": true,
}

func newConsoleFormatter(props map[string]string) (*consoleFormatter, error) {
	f := &consoleFormatter{
		value: true, keySep: []byte("\t"), lineSep: []byte("\n"), headersSep: []byte(","), nullLiteral: []byte("null"),
	}
	for k, v := range props {
		if !consoleFormatterProps[k] {
			return nil, fmt.Errorf("--property %s: the formatter reads print.timestamp, print.key, print.offset, print.partition, print.headers, print.value, print.epoch, print.delivery, key.separator, line.separator, headers.separator, null.literal and key/value/headers.deserializer", k)
		}
		isTrue := strings.EqualFold(strings.TrimSpace(v), "true")
		switch k {
		case "print.timestamp":
			f.timestamp = isTrue
		case "print.key":
			f.key = isTrue
		case "print.offset":
			f.offset = isTrue
		case "print.delivery":
			f.delivery = isTrue
		case "print.epoch":
			f.epoch = isTrue
		case "print.partition":
			f.partition = isTrue
		case "print.headers":
			f.headers = isTrue
		case "print.value":
			f.value = isTrue
		case "key.separator":
			f.keySep = []byte(v)
		case "line.separator":
			f.lineSep = []byte(v)
		case "headers.separator":
			f.headersSep = []byte(v)
		case "null.literal":
			f.nullLiteral = []byte(v)
		}
	}
	var err error
	for _, d := range []struct {
		key string
		to  *consoleDeserializer
	}{{"key.deserializer", &f.keyDeser}, {"value.deserializer", &f.valueDeser}, {"headers.deserializer", &f.headersDeser}} {
		name, ok := props[d.key]
		if !ok {
			continue
		}
		if *d.to, err = consoleDeserializerNamed(name); err != nil {
			return nil, fmt.Errorf("%s %s: %w", d.key, name, err)
		}
	}
	return f, nil
}

// consoleDeserializerNamed is the Go form of one of Kafka's built-in
// deserializers.
func consoleDeserializerNamed(name string) (consoleDeserializer, error) {
	short := strings.TrimPrefix(name, "org.apache.kafka.common.serialization.")
	fixed := func(class string, size int, text func([]byte) string) consoleDeserializer {
		return func(b []byte) ([]byte, error) {
			if len(b) != size {
				return nil, fmt.Errorf("Size of data received by %s is not %d", class, size)
			}
			return []byte(text(b)), nil
		}
	}
	switch short {
	case "StringDeserializer":
		return consoleUTF8, nil
	case "ByteArrayDeserializer", "ByteBufferDeserializer", "BytesDeserializer":
		return nil, nil // the bytes as they are
	case "IntegerDeserializer":
		return fixed(short, 4, func(b []byte) string { return strconv.Itoa(int(int32(binary.BigEndian.Uint32(b)))) }), nil
	case "LongDeserializer":
		return fixed(short, 8, func(b []byte) string { return strconv.FormatInt(int64(binary.BigEndian.Uint64(b)), 10) }), nil
	case "ShortDeserializer":
		return fixed(short, 2, func(b []byte) string { return strconv.Itoa(int(int16(binary.BigEndian.Uint16(b)))) }), nil
	case "UUIDDeserializer":
		return consoleUUID, nil
	}
	return nil, errors.New("kaas formats with Kafka's StringDeserializer, ByteArrayDeserializer, IntegerDeserializer, LongDeserializer, ShortDeserializer or UUIDDeserializer only")
}

// consoleUTF8 decodes as Java's new String(bytes, UTF_8): each invalid
// byte becomes U+FFFD.
func consoleUTF8(b []byte) ([]byte, error) {
	if utf8.Valid(b) {
		return b, nil
	}
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		out = utf8.AppendRune(out, r)
		b = b[n:]
	}
	return out, nil
}

// consoleUUID is UUIDDeserializer: the text of a UUID, printed in
// lower case.
func consoleUUID(b []byte) ([]byte, error) {
	s := string(b)
	var raw [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return nil, errors.New("Error parsing data into UUID")
	}
	if _, err := hex.Decode(raw[:], []byte(s[0:8]+s[9:13]+s[14:18]+s[19:23]+s[24:])); err != nil {
		return nil, errors.New("Error parsing data into UUID")
	}
	return []byte(strings.ToLower(s)), nil
}

// deserialize is DefaultMessageFormatter.deserialize: null becomes
// null.literal before the deserializer sees it.
func (f *consoleFormatter) deserialize(d consoleDeserializer, b []byte) ([]byte, error) {
	if b == nil {
		b = f.nullLiteral
	}
	if d == nil {
		return b, nil
	}
	return d(b)
}

// format appends r's line to dst: the fields asked for, in Kafka's order,
// separated by key.separator and ended by line.separator.
func (f *consoleFormatter) format(dst []byte, r *kgo.Record) ([]byte, error) {
	return f.formatDelivery(dst, r, -1) // only share consumers count deliveries
}

// formatDelivery is format with the delivery count of a record a share
// group delivered (print.delivery); a negative count is not present.
func (f *consoleFormatter) formatDelivery(dst []byte, r *kgo.Record, delivery int32) ([]byte, error) {
	if f.noop {
		return dst, nil
	}
	var fields [][]byte
	if f.timestamp {
		switch r.Attrs.TimestampType() {
		case 0:
			fields = append(fields, fmt.Appendf(nil, "CreateTime:%d", r.Timestamp.UnixMilli()))
		case 1:
			fields = append(fields, fmt.Appendf(nil, "LogAppendTime:%d", r.Timestamp.UnixMilli()))
		default:
			fields = append(fields, []byte("NO_TIMESTAMP"))
		}
	}
	if f.partition {
		fields = append(fields, fmt.Appendf(nil, "Partition:%d", r.Partition))
	}
	if f.offset {
		fields = append(fields, fmt.Appendf(nil, "Offset:%d", r.Offset))
	}
	if f.delivery {
		if delivery >= 0 {
			fields = append(fields, fmt.Appendf(nil, "Delivery:%d", delivery))
		} else {
			fields = append(fields, []byte("Delivery:NOT_PRESENT"))
		}
	}
	if f.epoch {
		if r.LeaderEpoch >= 0 {
			fields = append(fields, fmt.Appendf(nil, "Epoch:%d", r.LeaderEpoch))
		} else {
			fields = append(fields, []byte("Epoch:NOT_PRESENT"))
		}
	}
	if f.headers {
		var h []byte
		if len(r.Headers) == 0 {
			h = []byte("NO_HEADERS")
		}
		for i, hd := range r.Headers {
			if i > 0 {
				h = append(h, f.headersSep...)
			}
			v, err := f.deserialize(f.headersDeser, hd.Value)
			if err != nil {
				return dst, err
			}
			h = append(append(append(h, hd.Key...), ':'), v...)
		}
		fields = append(fields, h)
	}
	if f.key {
		k, err := f.deserialize(f.keyDeser, r.Key)
		if err != nil {
			return dst, err
		}
		fields = append(fields, k)
	}
	if f.value {
		v, err := f.deserialize(f.valueDeser, r.Value)
		if err != nil {
			return dst, err
		}
		fields = append(fields, v)
	}
	for i, fl := range fields {
		if i > 0 {
			dst = append(dst, f.keySep...)
		}
		dst = append(dst, fl...)
	}
	if len(fields) > 0 {
		dst = append(dst, f.lineSep...)
	}
	return dst, nil
}
