package kafkacli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kaas console-producer is Kafka 4's kafka-console-producer.sh
// (ConsoleProducer with its LineMessageReader): each line of standard
// input becomes a record of --topic, optionally split into headers, key
// and value; every record is acknowledged before the tool exits.
var _ = register(Tool{Name: "console-producer", Kafka: "kafka-console-producer.sh", Run: runConsoleProducer})

// consoleLineReaders are the names of Kafka's line reader, the only one
// kaas has.
var consoleLineReaders = map[string]bool{
	"org.apache.kafka.tools.LineMessageReader": true,
	"kafka.tools.LineMessageReader":            true,
}

// consoleProducerKnown are the producer properties mapped to franz-go.
var consoleProducerKnown = map[string]bool{
	"acks": true, "linger.ms": true, "compression.type": true, "enable.idempotence": true, "client.id": true,
	"batch.size": true, "retries": true, "retry.backoff.ms": true, "buffer.memory": true, "metadata.max.age.ms": true,
	"delivery.timeout.ms": true, "max.in.flight.requests.per.connection": true, "request.timeout.ms": true,
}

// consoleProducerNoEffect are producer properties accepted with no effect.
var consoleProducerNoEffect = map[string]string{
	"max.block.ms":     "a record waits for its topic's metadata as franz-go's unknown-topic retries allow",
	"key.serializer":   "the console producer sends the bytes of each line, as Kafka's does",
	"value.serializer": "the console producer sends the bytes of each line, as Kafka's does",
}

// consoleLineReader is Kafka's LineMessageReader: its --property settings.
type consoleLineReader struct {
	parseKey, parseHeaders, ignoreError bool
	keySeparator, headersDelimiter      string
	headersSeparator                    *regexp.Regexp
	headersKeySeparator                 string
	nullMarker                          string
	hasNullMarker                       bool
}

// consoleLineReaderProps are the properties the line reader reads.
var consoleLineReaderProps = map[string]bool{
	"parse.key": true, "key.separator": true, "parse.headers": true, "headers.delimiter": true,
	"headers.separator": true, "headers.key.separator": true, "null.marker": true, "ignore.error": true,
}

// newConsoleLineReader configures the reader as LineMessageReader.configure
// does, with its checks and messages.
func newConsoleLineReader(props map[string]string) (*consoleLineReader, error) {
	for k := range props {
		if !consoleLineReaderProps[k] {
			return nil, fmt.Errorf("--property %s: the line reader reads only parse.key, key.separator, parse.headers, headers.delimiter, headers.separator, headers.key.separator, null.marker and ignore.error", k)
		}
	}
	isTrue := func(k string) bool { return strings.EqualFold(strings.TrimSpace(props[k]), "true") }
	r := &consoleLineReader{
		parseKey: isTrue("parse.key"), parseHeaders: isTrue("parse.headers"), ignoreError: isTrue("ignore.error"),
		keySeparator: "\t", headersDelimiter: "\t", headersKeySeparator: ":",
	}
	sep := ","
	if v, ok := props["key.separator"]; ok {
		r.keySeparator = v
	}
	if v, ok := props["headers.delimiter"]; ok {
		r.headersDelimiter = v
	}
	if v, ok := props["headers.separator"]; ok {
		sep = v
	}
	if v, ok := props["headers.key.separator"]; ok {
		r.headersKeySeparator = v
	}
	// Kafka compiles headers.separator as a Java regular expression.
	re, err := regexp.Compile(sep)
	if err != nil {
		return nil, fmt.Errorf("--property headers.separator=%s is not a regular expression: %v", sep, err)
	}
	r.headersSeparator = re
	switch {
	case r.headersDelimiter == sep:
		return nil, errors.New("headers.delimiter and headers.separator may not be equal")
	case r.headersDelimiter == r.headersKeySeparator:
		return nil, errors.New("headers.delimiter and headers.key.separator may not be equal")
	case sep == r.headersKeySeparator:
		return nil, errors.New("headers.separator and headers.key.separator may not be equal")
	}
	r.nullMarker, r.hasNullMarker = props["null.marker"]
	if r.hasNullMarker {
		for _, c := range []struct{ name, v string }{
			{"key.separator", r.keySeparator}, {"headers.separator", sep},
			{"headers.delimiter", r.headersDelimiter}, {"headers.key.separator", r.headersKeySeparator},
		} {
			if c.v == r.nullMarker {
				return nil, fmt.Errorf("null.marker and %s may not be equal", c.name)
			}
		}
	}
	return r, nil
}

// isNull: the field equals null.marker, so it is sent as null.
func (r *consoleLineReader) isNull(s string) bool { return r.hasNullMarker && s == r.nullMarker }

// field cuts the part of line before sep from start, as
// LineMessageReader.parse; ok false when the part is not parsed.
func (r *consoleLineReader) field(enabled bool, line string, start int, sep, name string, lineNo int) (string, bool, error) {
	if !enabled {
		return "", false, nil
	}
	i := strings.Index(line[start:], sep)
	if i < 0 {
		if r.ignoreError {
			return "", false, nil
		}
		return "", false, fmt.Errorf("No %s found on line number %d: '%s'", name, lineNo, line)
	}
	return line[start : start+i], true, nil
}

// record turns line lineNo (from 1) into a record.
func (r *consoleLineReader) record(topic, line string, lineNo int) (*kgo.Record, error) {
	headers, hasHeaders, err := r.field(r.parseHeaders, line, 0, r.headersDelimiter, "headers delimiter", lineNo)
	if err != nil {
		return nil, err
	}
	off := 0
	if hasHeaders {
		off = len(headers) + len(r.headersDelimiter)
	}
	key, hasKey, err := r.field(r.parseKey, line, off, r.keySeparator, "key separator", lineNo)
	if err != nil {
		return nil, err
	}
	if hasKey {
		off += len(key) + len(r.keySeparator)
	}
	rec := &kgo.Record{Topic: topic}
	if hasKey && !r.isNull(key) {
		rec.Key = []byte(key)
	}
	if value := line[off:]; !r.isNull(value) {
		rec.Value = []byte(value)
	}
	if hasHeaders && !r.isNull(headers) {
		for _, pair := range consoleSplitJava(r.headersSeparator, headers) {
			k, v, found := strings.Cut(pair, r.headersKeySeparator)
			if !found {
				if !r.ignoreError {
					return nil, fmt.Errorf("No header key separator found in pair '%s' on line number %d", pair, lineNo)
				}
				rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: pair})
				continue
			}
			if r.isNull(k) {
				return nil, fmt.Errorf("Header keys should not be equal to the null marker '%s' as they can't be null", r.nullMarker)
			}
			h := kgo.RecordHeader{Key: k}
			if !r.isNull(v) {
				h.Value = []byte(v)
			}
			rec.Headers = append(rec.Headers, h)
		}
	}
	return rec, nil
}

// consoleSplitJava splits as Java's Pattern.split: no match gives s
// itself; trailing empty strings are dropped.
func consoleSplitJava(re *regexp.Regexp, s string) []string {
	parts := re.Split(s, -1)
	if len(parts) == 1 {
		return parts
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

type consoleProducerOpts struct {
	conn                    Conn
	topic                   string
	sync                    bool
	compression             consoleOptionalValue
	lineReader, readerCfg   string
	producerCfg             string
	props, producerProps    Repeated
	given                   map[string]bool
	batchSize, partitionMem int
	retries                 int
	retryBackoff, lingerMs  int64
	acks                    string
	requestTimeout          int
	metadataExpiry          int64
	maxBlock, maxMemory     int64
	socketBuffer            int
}

// consoleOptionalValue is a flag whose value may be left out, as
// --compression-codec's: given alone it is set with no value.
type consoleOptionalValue struct {
	value string
	set   bool
}

func (v *consoleOptionalValue) String() string { return v.value }
func (v *consoleOptionalValue) Set(s string) error {
	v.set = true
	if s == "true" { // what the flag package passes for a bare boolean flag
		s = ""
	}
	v.value = s
	return nil
}
func (v *consoleOptionalValue) IsBoolFlag() bool { return true }

// consoleJoinOptional joins a flag that takes an optional value with the
// value after it (--compression-codec gzip), as Kafka's option parser
// does, since Go's flag package takes an optional value only after "=".
func consoleJoinOptional(args []string, name string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if (a == "--"+name || a == "-"+name) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

func parseConsoleProducerArgs(args []string, stderr io.Writer) (*consoleProducerOpts, error) {
	o := &consoleProducerOpts{}
	fs := NewFlagSet("console-producer", stderr)
	o.conn.Register(fs)
	fs.StringVar(&o.topic, "topic", "", "REQUIRED: The topic name to produce messages to.")
	fs.BoolVar(&o.sync, "sync", false, "Send each record on its own and wait for its acknowledgement before reading the next line.")
	fs.Var(&o.compression, "compression-codec", "The compression codec: 'none', 'gzip', 'snappy', 'lz4' or 'zstd'; given without a value, 'gzip'.")
	fs.IntVar(&o.batchSize, "batch-size", 16*1024, "The largest batch in bytes (batch.size).")
	fs.IntVar(&o.retries, "message-send-max-retries", 3, "How many times a record is retried before the producer gives up on it (retries).")
	fs.Int64Var(&o.retryBackoff, "retry-backoff-ms", 100, "The wait before a retry (retry.backoff.ms).")
	fs.Int64Var(&o.lingerMs, "timeout", 1000, "How long a record may wait for its batch to fill, in ms (linger.ms).")
	fs.StringVar(&o.acks, "request-required-acks", "-1", "The required acks of the produce requests (acks): -1 or all, 1, 0.")
	fs.IntVar(&o.requestTimeout, "request-timeout-ms", 1500, "The broker's timeout for a produce request, in ms (request.timeout.ms).")
	fs.Int64Var(&o.metadataExpiry, "metadata-expiry-ms", 5*60*1000, "How often metadata is refreshed, in ms (metadata.max.age.ms).")
	fs.Int64Var(&o.maxBlock, "max-block-ms", 60*1000, "Accepted for Kafka's scripts; no effect (max.block.ms).")
	fs.Int64Var(&o.maxMemory, "max-memory-bytes", 32*1024*1024, "The most bytes of records buffered before a send waits (buffer.memory).")
	fs.IntVar(&o.partitionMem, "max-partition-memory-bytes", 16*1024, "The largest batch in bytes (batch.size); wins over --batch-size.")
	fs.IntVar(&o.socketBuffer, "socket-buffer-size", 100*1024, "Accepted for Kafka's scripts; no effect (send.buffer.bytes).")
	fs.StringVar(&o.lineReader, "line-reader", "org.apache.kafka.tools.LineMessageReader", "The reader of standard input: only Kafka's LineMessageReader.")
	fs.Var(&o.props, "property", "A line reader setting key=value (repeatable): parse.key, key.separator (default tab), parse.headers,\nheaders.delimiter (tab), headers.separator (,), headers.key.separator (:), null.marker, ignore.error.")
	fs.StringVar(&o.readerCfg, "reader-config", "", "A properties file of line reader settings; --property wins over it.")
	fs.Var(&o.producerProps, "producer-property", "A producer property key=value (repeatable).")
	fs.StringVar(&o.producerCfg, "producer.config", "", "A producer properties file; --producer-property wins over it.")
	var brokerList string
	fs.StringVar(&brokerList, "broker-list", "", "Not supported: removed in Kafka 4.0; use --bootstrap-server.")
	given, err := Parse(fs, consoleJoinOptional(args, "compression-codec"))
	if err != nil {
		return nil, err
	}
	o.given = given
	if o.given["broker-list"] {
		return nil, errors.New("--broker-list is not supported: Kafka 4.0 removed it; use --bootstrap-server")
	}
	if o.topic == "" {
		return nil, errors.New(`Missing required argument "[topic]"`)
	}
	if o.conn.Bootstrap == "" {
		return nil, errors.New(`Missing required argument "[bootstrap-server]"`)
	}
	if !consoleLineReaders[o.lineReader] {
		return nil, fmt.Errorf("--line-reader %s: kaas reads standard input with Kafka's LineMessageReader only (custom reader classes are Java)", o.lineReader)
	}
	return o, nil
}

// consoleCodecs are compression.type's values.
var consoleCodecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

// producerProps builds the producer's properties as ConsoleProducer does,
// and maps them to franz-go options.
func (o *consoleProducerOpts) clientOpts(stderr io.Writer) ([]kgo.Opt, error) {
	file, err := consoleConfigFile("producer.config", o.producerCfg, o.conn.CommandConfig)
	if err != nil {
		return nil, err
	}
	p, err := newConsoleClientProps("console-producer", "producer", file, "producer-property", o.producerProps)
	if err != nil {
		return nil, err
	}
	// Kafka sets compression.type from --compression-codec always
	// (none without it); kaas lets a compression.type property stand when
	// --compression-codec is not given.
	if o.given["compression-codec"] {
		codec := o.compression.value
		if codec == "" {
			codec = "gzip"
		}
		p.props["compression.type"], p.given["compression.type"] = codec, true
	} else if !p.has("compression.type") {
		p.props["compression.type"] = "none" // Kafka's default; franz-go's is snappy
	}
	if !p.has("client.id") {
		p.props["client.id"] = "console-producer"
	}
	g := o.given
	p.merge("linger.ms", g["timeout"], strconv.FormatInt(o.lingerMs, 10))
	p.merge("acks", g["request-required-acks"], o.acks)
	p.merge("request.timeout.ms", g["request-timeout-ms"], strconv.Itoa(o.requestTimeout))
	p.merge("retries", g["message-send-max-retries"], strconv.Itoa(o.retries))
	p.merge("retry.backoff.ms", g["retry-backoff-ms"], strconv.FormatInt(o.retryBackoff, 10))
	p.merge("send.buffer.bytes", g["socket-buffer-size"], strconv.Itoa(o.socketBuffer))
	p.merge("buffer.memory", g["max-memory-bytes"], strconv.FormatInt(o.maxMemory, 10))
	p.merge("batch.size", g["batch-size"], strconv.Itoa(o.batchSize))
	p.merge("batch.size", g["max-partition-memory-bytes"], strconv.Itoa(o.partitionMem))
	p.merge("metadata.max.age.ms", g["metadata-expiry-ms"], strconv.FormatInt(o.metadataExpiry, 10))
	p.merge("max.block.ms", g["max-block-ms"], strconv.FormatInt(o.maxBlock, 10))
	if err := p.check(consoleProducerKnown, consoleProducerNoEffect, stderr); err != nil {
		return nil, err
	}
	return consoleProducerKgoOpts(p)
}

// consoleProducerKgoOpts maps producer properties to franz-go options,
// with the Java producer's checks on them.
func consoleProducerKgoOpts(p *consoleClientProps) ([]kgo.Opt, error) {
	opts, err := p.commonOpts()
	if err != nil {
		return nil, err
	}
	// The Java producer's Metadata requests allow topic creation: a broker
	// with auto.create.topics.enable creates the topic on the first send.
	opts = append(opts, kgo.AllowAutoTopicCreation())
	acksAll := true
	switch strings.ToLower(strings.TrimSpace(p.props["acks"])) {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts, acksAll = append(opts, kgo.RequiredAcks(kgo.LeaderAck())), false
	case "0":
		opts, acksAll = append(opts, kgo.RequiredAcks(kgo.NoAck())), false
	default:
		return nil, fmt.Errorf("Invalid value %s for configuration acks: String must be one of: all, -1, 0, 1", p.props["acks"])
	}
	retries, _, err := p.int("retries")
	if err != nil {
		return nil, err
	}
	if retries < 0 {
		return nil, fmt.Errorf("Invalid value %d for configuration retries: Value must be at least 0", retries)
	}
	opts = append(opts, kgo.RecordRetries(int(retries)))
	// The Java producer is idempotent unless a setting rules it out; set
	// explicitly, such a setting is an error.
	idem, idemSet, err := p.bool("enable.idempotence")
	if err != nil {
		return nil, err
	}
	switch {
	case idemSet && idem && !acksAll:
		return nil, errors.New("Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence.")
	case idemSet && idem && retries == 0:
		return nil, errors.New("Must set retries to non-zero when using the idempotent producer.")
	case (idemSet && !idem) || !acksAll || retries == 0:
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if d, _, err := p.ms("linger.ms"); err != nil {
		return nil, err
	} else if d > time.Minute {
		return nil, fmt.Errorf("linger.ms %d: kaas's client lingers at most 60000 ms", d.Milliseconds())
	} else {
		opts = append(opts, kgo.ProducerLinger(d))
	}
	codec, ok := consoleCodecs[strings.ToLower(p.props["compression.type"])]
	if c := p.props["compression.type"]; c != "" && !ok {
		return nil, fmt.Errorf("Invalid value %s for configuration compression.type: String must be one of: none, gzip, snappy, lz4, zstd", c)
	} else if ok {
		opts = append(opts, kgo.ProducerBatchCompression(codec))
	}
	if n, _, err := p.int("batch.size"); err != nil {
		return nil, err
	} else if n < 512 || n > 1<<30 {
		return nil, fmt.Errorf("batch.size %d: kaas's client takes 512 to 1073741824 bytes", n)
	} else {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(n)))
	}
	if n, _, err := p.int("buffer.memory"); err != nil {
		return nil, err
	} else if n > 0 {
		opts = append(opts, kgo.MaxBufferedBytes(int(n)))
	}
	if d, _, err := p.ms("request.timeout.ms"); err != nil {
		return nil, err
	} else if d < 100*time.Millisecond {
		return nil, fmt.Errorf("request.timeout.ms %d: kaas's client needs at least 100", d.Milliseconds())
	} else {
		opts = append(opts, kgo.ProduceRequestTimeout(d))
	}
	// The Java producer's delivery.timeout.ms defaults to two minutes:
	// a record the brokers never take fails rather than hangs.
	delivery := 2 * time.Minute
	if d, ok, err := p.ms("delivery.timeout.ms"); err != nil {
		return nil, err
	} else if ok {
		delivery = d
	}
	opts = append(opts, kgo.RecordDeliveryTimeout(delivery))
	if n, ok, err := p.int("max.in.flight.requests.per.connection"); err != nil {
		return nil, err
	} else if ok {
		if n < 1 {
			return nil, fmt.Errorf("Invalid value %d for configuration max.in.flight.requests.per.connection: Value must be at least 1", n)
		}
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(int(n)))
	}
	return opts, nil
}

func runConsoleProducer(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o, err := parseConsoleProducerArgs(args, stderr)
	if err != nil {
		return err
	}
	readerProps := map[string]string{}
	if o.readerCfg != "" {
		if readerProps, err = consoleReadProperties(o.readerCfg); err != nil {
			return err
		}
	}
	flagProps, err := consoleKeyValues("property", o.props)
	if err != nil {
		return err
	}
	for k, v := range flagProps {
		readerProps[k] = v
	}
	reader, err := newConsoleLineReader(readerProps)
	if err != nil {
		return err
	}
	opts, err := o.clientOpts(stderr)
	if err != nil {
		return err
	}
	// The security settings came with the producer's properties.
	conn := Conn{Bootstrap: o.conn.Bootstrap}
	cl, err := newTopicProducer(ctx, o.topic, conn.producer, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	return consoleProduceLines(ctx, cl, reader, o.topic, o.sync, stdin, stdout, stderr, consoleIsTerminal(stdin) && consoleIsTerminal(stdout))
}

// consoleProduceLines sends a record per line of in until its end (or ctx
// is done), then waits for every record's acknowledgement. A record the
// brokers refuse is reported as Kafka's ErrorLoggingCallback does and
// fails the run; a line the reader cannot parse stops it.
func consoleProduceLines(ctx context.Context, cl *kgo.Client, reader *consoleLineReader, topic string, syncSend bool, in io.Reader, stdout, stderr io.Writer, prompt bool) error {
	// Records already handed to the client are delivered even after an
	// interrupt, as Kafka's shutdown hook closes (and so flushes) its
	// producer.
	sendCtx := context.WithoutCancel(ctx)
	var mu sync.Mutex
	var failed, sent int
	var firstErr error
	report := func(r *kgo.Record, err error) {
		if err == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		failed++
		if firstErr == nil {
			firstErr = err
		}
		fmt.Fprintf(stderr, "Error when sending message to topic %s with key: %s, value: %s with error: %v\n",
			r.Topic, consoleByteCount(r.Key), consoleByteCount(r.Value), err)
	}
	lines := make(chan consoleLine)
	stop := make(chan struct{})
	defer close(stop)
	go consoleReadLines(in, lines, stop)
	var readErr error
	for lineNo := 1; ; lineNo++ {
		if prompt {
			fmt.Fprint(stdout, ">")
		}
		var l consoleLine
		var ok bool
		select {
		case <-ctx.Done():
		case l, ok = <-lines:
		}
		if !ok {
			break // end of input, or interrupted
		}
		if l.err != nil {
			readErr = fmt.Errorf("read standard input: %w", l.err)
			break
		}
		rec, err := reader.record(topic, l.text, lineNo)
		if err != nil {
			readErr = err
			break
		}
		sent++
		if syncSend {
			report(rec, cl.ProduceSync(sendCtx, rec).FirstErr())
			continue
		}
		cl.Produce(sendCtx, rec, report)
	}
	if err := cl.Flush(sendCtx); err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	mu.Lock()
	defer mu.Unlock()
	if failed > 0 {
		return fmt.Errorf("%d of %d records were not acknowledged; the first error: %w", failed, sent, firstErr)
	}
	return nil
}

// consoleByteCount is how Kafka's ErrorLoggingCallback names a key or
// value: its length, or null.
func consoleByteCount(b []byte) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprintf("%d bytes", len(b))
}

type consoleLine struct {
	text string
	err  error
}

// consoleReadLines sends in's lines without their line ends (\n, \r\n)
// until its end, an error, or stop; on its own so that an interrupt does
// not wait for input.
func consoleReadLines(in io.Reader, lines chan<- consoleLine, stop <-chan struct{}) {
	defer close(lines)
	br := bufio.NewReader(in)
	for {
		s, err := br.ReadString('\n')
		if s != "" {
			s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
			select {
			case lines <- consoleLine{text: s}:
			case <-stop:
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				select {
				case lines <- consoleLine{err: err}:
				case <-stop:
				}
			}
			return
		}
	}
}

// producer is c.Client without its admin client.
func (c *Conn) producer(opts ...kgo.Opt) (*kgo.Client, error) {
	cl, _, err := c.Client(opts...)
	return cl, err
}

// newTopicProducer is a client (made by newClient with opts) producing to
// topic in batches no larger than the topic's max.message.bytes. The Java
// producer splits a batch the broker refuses as too large and sends its
// records again, so that only a record over the limit on its own fails;
// franz-go fails every record of such a batch, so its batches are capped
// to the limit instead. Without the topic's configs (not yet created, or
// no DESCRIBE_CONFIGS permission) the client is left as opts make it.
func newTopicProducer(ctx context.Context, topic string, newClient func(opts ...kgo.Opt) (*kgo.Client, error), opts ...kgo.Opt) (*kgo.Client, error) {
	cl, err := newClient(opts...)
	if err != nil {
		return nil, err
	}
	limit, ok := topicMaxMessageBytes(ctx, kadm.NewClient(cl), topic)
	batchMax, _ := cl.OptValue(kgo.ProducerBatchMaxBytes).(int32)
	if !ok || limit >= batchMax {
		return cl, nil
	}
	cl.Close()
	return newClient(append(opts, kgo.ProducerBatchMaxBytes(limit))...)
}

// topicMaxMessageBytes is topic's max.message.bytes as the broker states
// it; false if it cannot be read within a few seconds.
func topicMaxMessageBytes(ctx context.Context, adm *kadm.Client, topic string) (int32, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return 0, false
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		return 0, false
	}
	for _, c := range rc.Configs {
		if c.Key != "max.message.bytes" || c.Value == nil {
			continue
		}
		n, err := strconv.ParseInt(*c.Value, 10, 32)
		return int32(n), err == nil && n > 0
	}
	return 0, false
}
