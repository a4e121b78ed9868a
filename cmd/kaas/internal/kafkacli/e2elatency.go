package kafkacli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kaas-project/kaas/cmd/kaas/internal/bench"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kaas e2e-latency is kafka-e2e-latency.sh (EndToEndLatency): it sends
// num_messages records one at a time, each waited for until a consumer
// reads it back, and prints the round trip's average and percentiles.
// Its arguments are positional, as Kafka 4.0's are.
var _ = register(Tool{Name: "e2e-latency", Kafka: "kafka-e2e-latency.sh", Run: runE2ELatency})

const e2eUsage = "USAGE: kaas e2e-latency broker_list topic num_messages producer_acks message_size_bytes [optional] properties_file"

// e2ePollTimeout is how long a sent record may take to be read back.
const e2ePollTimeout = 60 * time.Second

type e2eOpts struct {
	brokers, topic, acks, propsFile string
	numMessages, size               int
}

func parseE2EArgs(args []string, stderr io.Writer) (*e2eOpts, error) {
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "-help") {
		fmt.Fprintln(stderr, e2eUsage)
		return nil, flag.ErrHelp
	}
	if len(args) != 5 && len(args) != 6 {
		return nil, errors.New(e2eUsage)
	}
	o := &e2eOpts{brokers: args[0], topic: args[1], acks: args[3]}
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			return nil, fmt.Errorf("%s: arguments are positional, as Kafka 4.0's (%s)", a, e2eUsage)
		}
	}
	var err error
	if o.numMessages, err = strconv.Atoi(args[2]); err != nil || o.numMessages <= 0 {
		return nil, fmt.Errorf("num_messages %q: want a positive whole number", args[2])
	}
	if o.size, err = strconv.Atoi(args[4]); err != nil || o.size < 0 {
		return nil, fmt.Errorf("message_size_bytes %q: want a whole number of bytes", args[4])
	}
	if o.acks != "1" && o.acks != "all" {
		return nil, errors.New("Latency testing requires synchronous acknowledgement. Please use 1 or all")
	}
	if len(args) == 6 {
		o.propsFile = strings.TrimSpace(args[5])
	}
	return o, nil
}

// e2eClientOpts reads the properties file: it is given to the producer,
// the consumer and the admin client alike, so only the connection's
// settings (client.id and the security ones) are taken; others are
// refused by name.
func e2eClientOpts(path string) ([]kgo.Opt, error) {
	if path == "" {
		return nil, nil
	}
	props, err := ReadProperties(path)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for k := range props {
		if !consoleSecurityKey(k) && k != "client.id" && k != "bootstrap.servers" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("%s: %s not supported by kaas e2e-latency (it takes client.id and the security settings)", path, strings.Join(unknown, ", "))
	}
	opts, err := SecurityOpts(props)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if id := props["client.id"]; id != "" {
		opts = append(opts, kgo.ClientID(id))
	}
	return opts, nil
}

func runE2ELatency(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseE2EArgs(args, stderr)
	if err != nil {
		return err
	}
	common, err := e2eClientOpts(o.propsFile)
	if err != nil {
		return err
	}
	common = append(common, kgo.SeedBrokers(strings.Split(o.brokers, ",")...), kgo.RetryTimeout(30*time.Second))
	acks, idem := kgo.AllISRAcks(), []kgo.Opt{}
	if o.acks == "1" {
		acks, idem = kgo.LeaderAck(), []kgo.Opt{kgo.DisableIdempotentWrite()}
	}
	// Linger 0: each record is sent on its own, as Kafka's tool asks.
	producer, err := kgo.NewClient(append(append(append([]kgo.Opt{}, common...), kgo.RequiredAcks(acks), kgo.ProducerLinger(0),
		kgo.DefaultProduceTopic(o.topic)), idem...)...)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", o.brokers, err)
	}
	defer producer.Close()
	adm := kadm.NewClient(producer)

	topics, err := adm.ListTopics(ctx, o.topic)
	if err != nil {
		return err
	}
	if !topics.Has(o.topic) {
		fmt.Fprintf(stdout, "Topic \"%s\" does not exist. Will create topic with %d partition(s) and replication factor = %d\n", o.topic, 1, 1)
		resp, err := adm.CreateTopic(ctx, 1, 1, nil, o.topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			fmt.Fprintf(stdout, "Creation of topic %s failed\n", o.topic)
			return err
		}
	}
	// The consumer starts at each partition's end, resolved before the
	// first send so that it cannot miss it.
	ends, err := e2eEndOffsets(ctx, adm, o.topic)
	if err != nil {
		return err
	}
	start := map[int32]kgo.Offset{}
	ends.Each(func(l kadm.ListedOffset) { start[l.Partition] = kgo.NewOffset().At(l.Offset) })
	consumer, err := kgo.NewClient(append(append([]kgo.Opt{}, common...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.topic: start}))...)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", o.brokers, err)
	}
	defer consumer.Close()

	var hist bench.Histogram
	var total time.Duration
	rng := rand.New(rand.NewPCG(0, 0))
	for i := 0; i < o.numMessages; i++ {
		// One random letter repeated, as Kafka's tool fills its message.
		msg := bytes.Repeat([]byte{byte('A' + rng.IntN(26))}, o.size)
		begin := time.Now()
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: msg}).FirstErr(); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		recs, err := e2ePoll(ctx, consumer)
		if err != nil {
			return err
		}
		elapsed := time.Since(begin)
		switch {
		case len(recs) == 0:
			return fmt.Errorf("poll() timed out before finding a result (timeout:[%d])", e2ePollTimeout.Milliseconds())
		case !bytes.Equal(recs[0].Value, msg):
			return fmt.Errorf("The message read [%s] did not match the message sent [%s]", recs[0].Value, msg)
		case len(recs) != 1:
			return fmt.Errorf("Only one result was expected during this test. We found [%d]", len(recs))
		}
		if i%1000 == 0 {
			fmt.Fprintf(stdout, "%d\t%s\n", i, perfDouble(float64(elapsed.Nanoseconds())/1000.0/1000.0))
		}
		total += elapsed
		perfRecordMs(&hist, elapsed.Milliseconds())
	}
	fmt.Fprintf(stdout, "Avg latency: %s ms\n", perfFixed(float64(total.Nanoseconds())/float64(o.numMessages)/1000.0/1000.0, 4))
	fmt.Fprintf(stdout, "Percentiles: 50th = %d, 99th = %d, 99.9th = %d\n",
		perfPercentile(&hist, 0.5), perfPercentile(&hist, 0.99), perfPercentile(&hist, 0.999))
	return nil
}

// e2ePoll waits up to e2ePollTimeout for records.
func e2ePoll(ctx context.Context, cl *kgo.Client) ([]*kgo.Record, error) {
	pollCtx, cancel := context.WithTimeout(ctx, e2ePollTimeout)
	defer cancel()
	for {
		fetches := cl.PollFetches(pollCtx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if recs := fetches.Records(); len(recs) > 0 {
			return recs, nil
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && fetchErr == nil {
				fetchErr = fmt.Errorf("fetch %s-%d: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			return nil, fetchErr
		}
		if pollCtx.Err() != nil {
			return nil, nil
		}
	}
}

// e2eEndOffsets lists topic's end offsets, waiting out a topic just
// created that the brokers do not all serve yet.
func e2eEndOffsets(ctx context.Context, adm *kadm.Client, topic string) (kadm.ListedOffsets, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil {
			return ends, nil
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) || time.Now().After(deadline) {
			return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
