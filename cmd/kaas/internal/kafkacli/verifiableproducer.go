package kafkacli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kaas verifiable-producer is Kafka 4.2's kafka-verifiable-producer.sh
// (VerifiableProducer): it produces increasing integers to --topic and
// prints one JSON event a line, so a test harness can see which records
// were acknowledged, at which offset.
var _ = register(Tool{Name: "verifiable-producer", Kafka: "kafka-verifiable-producer.sh", Run: runVerifiableProducer})

// verifiableEvents writes the JSON event lines of the verifiable tools,
// one line per event, serialized so concurrent callbacks do not interleave.
// Field order follows the Java tools' Jackson output: timestamp and name
// first, then the event's own fields in declaration order.
type verifiableEvents struct {
	mu  sync.Mutex
	out io.Writer
	now func() time.Time
}

// verifiableEvent is the head every event starts with.
type verifiableEvent struct {
	Timestamp int64  `json:"timestamp"`
	Name      string `json:"name"`
}

func (e *verifiableEvents) head(name string) verifiableEvent {
	now := time.Now
	if e.now != nil {
		now = e.now
	}
	return verifiableEvent{Timestamp: now().UnixMilli(), Name: name}
}

// print writes v as one JSON line. HTML characters stay as they are, as
// Jackson writes them.
func (e *verifiableEvents) print(v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.Reset()
		fmt.Fprintf(&b, "Bad data can't be written as json: %v\n", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.out.Write(b.Bytes())
}

// verifiableDouble is a float64 written as Jackson writes a Java double:
// Double.toString's text, NaN and the infinities quoted.
type verifiableDouble float64

func (d verifiableDouble) MarshalJSON() ([]byte, error) {
	f := float64(d)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return []byte(javaDouble(f)), nil
}

type verifiableProducerOpts struct {
	conn         Conn
	topic        string
	maxMessages  int
	throughput   int
	acks         string
	producerCfg  string
	createTime   int64
	valuePrefix  int
	repeatingKey int
	given        map[string]bool
}

func parseVerifiableProducerArgs(args []string, stderr io.Writer) (*verifiableProducerOpts, error) {
	o := &verifiableProducerOpts{}
	fs := NewFlagSet("verifiable-producer", stderr)
	o.conn.Register(fs)
	fs.StringVar(&o.topic, "topic", "", "REQUIRED: Produce messages to this topic.")
	fs.IntVar(&o.maxMessages, "max-messages", -1, "Produce this many messages. If -1, produce messages until the process is killed externally.")
	fs.IntVar(&o.throughput, "throughput", -1, "If set >= 0, throttle maximum message throughput to *approximately* THROUGHPUT messages/sec.")
	fs.StringVar(&o.acks, "acks", "-1", "Acks required on each produced message: 0, 1 or -1.")
	fs.StringVar(&o.producerCfg, "producer.config", "", "(DEPRECATED) Producer config properties file; use --command-config.")
	fs.Int64Var(&o.createTime, "message-create-time", -1, "Send messages with creation time starting at the arguments value, in milliseconds since epoch")
	fs.IntVar(&o.valuePrefix, "value-prefix", 0, "If specified, each produced value will have this prefix with a dot separator")
	fs.IntVar(&o.repeatingKey, "repeating-keys", 0, "If specified, each produced record will have a key starting at 0 increment by 1 up to the number specified (exclusive), then the key is set to 0 again")
	var brokerList string
	fs.StringVar(&brokerList, "broker-list", "", "Not supported: removed in Kafka 4.0; use --bootstrap-server.")
	given, err := Parse(fs, args)
	if err != nil {
		return nil, err
	}
	o.given = given
	switch {
	case given["broker-list"]:
		return nil, errors.New("--broker-list is not supported: Kafka 4.0 removed it; use --bootstrap-server")
	case !given["topic"]:
		return nil, errors.New("argument --topic is required")
	case o.conn.Bootstrap == "":
		return nil, errors.New("one of the arguments --bootstrap-server is required")
	}
	switch o.acks {
	case "0", "1", "-1":
	default:
		return nil, fmt.Errorf("argument --acks: invalid choice: '%s' (choose from {0,1,-1})", o.acks)
	}
	if o.producerCfg != "" && o.conn.CommandConfig != "" {
		return nil, errors.New("Options --producer.config and --command-config are mutually exclusive.")
	}
	// Kafka's throttler with 0 sleeps forever after the first record, and
	// its key counter never wraps below 1.
	if given["throughput"] && o.throughput == 0 {
		return nil, errors.New("--throughput 0 would send one message and then wait forever: give a positive rate, or -1 for no limit")
	}
	if given["repeating-keys"] && o.repeatingKey < 1 {
		return nil, fmt.Errorf("--repeating-keys %d: the keys cycle through 0 to N-1, so N must be at least 1", o.repeatingKey)
	}
	return o, nil
}

// verifiableProducerKnown are the producer properties mapped to franz-go.
var verifiableProducerKnown = consoleProducerKnown

// verifiableProducerNoEffect are producer properties accepted with no
// effect: the tool sends strings, as Kafka's does with StringSerializer.
var verifiableProducerNoEffect = func() map[string]string {
	m := map[string]string{}
	for k, v := range consoleProducerNoEffect {
		m[k] = v
	}
	m["key.serializer"] = "the verifiable producer sends its keys and values as UTF-8 strings, as Kafka's does"
	m["value.serializer"] = m["key.serializer"]
	return m
}()

// clientOpts builds the producer's properties as VerifiableProducer does:
// acks from --acks and no retries, then the config file over them.
func (o *verifiableProducerOpts) clientOpts(stderr io.Writer) ([]kgo.Opt, error) {
	file := o.conn.CommandConfig
	if o.producerCfg != "" {
		fmt.Fprintln(stderr, "Option --producer.config has been deprecated and will be removed in a future version. Use --command-config instead.")
		file = o.producerCfg
	}
	p, err := newConsoleClientProps("verifiable-producer", "producer", file, "command-config", nil)
	if err != nil {
		return nil, err
	}
	for k, v := range map[string]string{
		"acks": o.acks, "retries": "0",
		// The Java producer's defaults, which consoleProducerKgoOpts reads.
		"linger.ms": "5", "batch.size": "16384", "request.timeout.ms": "30000", "compression.type": "none",
	} {
		if !p.has(k) {
			p.props[k] = v
		}
	}
	if err := p.check(verifiableProducerKnown, verifiableProducerNoEffect, stderr); err != nil {
		return nil, err
	}
	return consoleProducerKgoOpts(p)
}

type verifiableSendSuccess struct {
	verifiableEvent
	Key       *string `json:"key"`
	Value     string  `json:"value"`
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
}

type verifiableSendError struct {
	verifiableEvent
	Key       *string `json:"key"`
	Value     string  `json:"value"`
	Topic     string  `json:"topic"`
	Exception string  `json:"exception"`
	Message   string  `json:"message"`
}

type verifiableToolData struct {
	verifiableEvent
	Sent             int64            `json:"sent"`
	Acked            int64            `json:"acked"`
	TargetThroughput int64            `json:"target_throughput"`
	AvgThroughput    verifiableDouble `json:"avg_throughput"`
}

// verifiableRenamedErrors are the error codes whose Java exception class
// is not named after the code (or after franz-go's older name for it).
var verifiableRenamedErrors = map[int16]string{
	kerr.NotLeaderForPartition.Code: "NotLeaderOrFollowerException",
	kerr.RequestTimedOut.Code:       "TimeoutException",
	kerr.CorruptMessage.Code:        "CorruptRecordException",
	kerr.MessageTooLarge.Code:       "RecordTooLargeException",
	kerr.RecordListTooLarge.Code:    "RecordBatchTooLargeException",
}

// verifiableJavaException names the Java exception class Kafka's client
// would have thrown for err, for producer_send_error's "exception" field.
func verifiableJavaException(err error) string {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		if class, ok := verifiableRenamedErrors[ke.Code]; ok {
			return "class org.apache.kafka.common.errors." + class
		}
		// Kafka's class is the code's name in camel case: NOT_ENOUGH_REPLICAS
		// is NotEnoughReplicasException, TOPIC_AUTHORIZATION_FAILED is
		// TopicAuthorizationException, INVALID_TOPIC_EXCEPTION is
		// InvalidTopicException.
		name := strings.TrimSuffix(strings.TrimSuffix(ke.Message, "_EXCEPTION"), "_FAILED")
		var b strings.Builder
		for _, w := range strings.Split(strings.ToLower(name), "_") {
			if w != "" {
				b.WriteString(strings.ToUpper(w[:1]) + w[1:])
			}
		}
		return "class org.apache.kafka.common.errors." + b.String() + "Exception"
	case errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, context.DeadlineExceeded):
		return "class org.apache.kafka.common.errors.TimeoutException"
	}
	return "class org.apache.kafka.common.KafkaException"
}

func runVerifiableProducer(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseVerifiableProducerArgs(args, stderr)
	if err != nil {
		return err
	}
	opts, err := o.clientOpts(stderr)
	if err != nil {
		return err
	}
	if o.createTime >= 0 {
		// franz-go times a batch out from its first record's timestamp,
		// which --message-create-time sets in the past: no delivery
		// timeout, so such records are not failed before being sent.
		opts = append(opts, kgo.RecordDeliveryTimeout(0))
	}
	cl, err := newTopicProducer(ctx, o.topic, (&Conn{Bootstrap: o.conn.Bootstrap}).producer, opts...)
	if err != nil {
		return err
	}
	ev := &verifiableEvents{out: stdout}
	start := time.Now()
	var sent, acked int64
	var ackMu sync.Mutex
	ev.print(ev.head("startup_complete"))

	createTime := o.createTime
	keyCounter := 0
	limit := int64(o.maxMessages)
	if limit < 0 {
		limit = math.MaxInt64
	}
	for i := int64(0); i < limit && ctx.Err() == nil; i++ {
		var key *string
		if o.given["repeating-keys"] {
			k := strconv.Itoa(keyCounter)
			key = &k
			if keyCounter++; keyCounter == o.repeatingKey {
				keyCounter = 0
			}
		}
		value := strconv.FormatInt(i, 10)
		if o.given["value-prefix"] {
			value = strconv.Itoa(o.valuePrefix) + "." + value
		}
		r := &kgo.Record{Topic: o.topic, Value: []byte(value)}
		if key != nil {
			r.Key = []byte(*key)
		}
		if createTime >= 0 {
			// Kafka's quirk kept: each record's create time grows by the
			// time elapsed since start, added up.
			r.Timestamp = time.UnixMilli(createTime)
			createTime += time.Since(start).Milliseconds()
		}
		sent++
		cl.Produce(context.WithoutCancel(ctx), r, func(r *kgo.Record, err error) {
			if err != nil {
				ev.print(verifiableSendError{ev.head("producer_send_error"), key, value, o.topic, verifiableJavaException(err), err.Error()})
				return
			}
			ackMu.Lock()
			acked++
			ackMu.Unlock()
			ev.print(verifiableSendSuccess{ev.head("producer_send_success"), key, value, r.Topic, r.Partition, r.Offset})
		})
		if o.throughput > 0 {
			// Kafka's ThroughputThrottler: keep the rate since start at or
			// under the target.
			due := start.Add(time.Duration(float64(i+1) / float64(o.throughput) * float64(time.Second)))
			if wait := time.Until(due); wait > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		}
	}
	// Close flushes what is buffered, then the summary, as Kafka's shutdown
	// hook does.
	cl.Flush(context.WithoutCancel(ctx))
	cl.Close()
	ev.print(ev.head("shutdown_complete"))
	elapsed := time.Since(start).Milliseconds()
	ackMu.Lock()
	defer ackMu.Unlock()
	avg := 1000 * (float64(acked) / float64(elapsed))
	ev.print(verifiableToolData{ev.head("tool_data"), sent, acked, int64(o.throughput), verifiableDouble(avg)})
	return nil
}
