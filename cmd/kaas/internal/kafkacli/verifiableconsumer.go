package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kaas verifiable-consumer is Kafka 4.2's kafka-verifiable-consumer.sh
// (VerifiableConsumer): a group member of --group-id on --topic that prints
// each rebalance, each poll's records and each commit as a JSON event line.
var _ = register(Tool{Name: "verifiable-consumer", Kafka: "kafka-verifiable-consumer.sh", Run: runVerifiableConsumer})

type verifiableConsumerOpts struct {
	conn                         Conn
	topic, group, instance       string
	protocol, remoteAssignor     string
	maxMessages, sessionTimeout  int
	verbose, autoCommit          bool
	resetPolicy, assignment, cfg string
	given                        map[string]bool
}

func parseVerifiableConsumerArgs(args []string, stderr io.Writer) (*verifiableConsumerOpts, error) {
	o := &verifiableConsumerOpts{}
	fs := NewFlagSet("verifiable-consumer", stderr)
	o.conn.Register(fs)
	fs.StringVar(&o.topic, "topic", "", "REQUIRED: Consumes messages from this topic.")
	fs.StringVar(&o.protocol, "group-protocol", "classic", "Group protocol (must be one of CLASSIC, CONSUMER)")
	fs.StringVar(&o.remoteAssignor, "group-remote-assignor", "", "Group remote assignor (uniform or range); only used if the group protocol is CONSUMER")
	fs.StringVar(&o.group, "group-id", "", "REQUIRED: The groupId shared among members of the consumer group")
	fs.StringVar(&o.instance, "group-instance-id", "", "A unique identifier of the consumer instance")
	fs.IntVar(&o.maxMessages, "max-messages", -1, "Consume this many messages. If -1 (the default), the consumer will consume until the process is killed externally")
	fs.IntVar(&o.sessionTimeout, "session-timeout", 0, "Set the consumer's session timeout (ms); CLASSIC only")
	fs.BoolVar(&o.verbose, "verbose", false, "Enable to log individual consumed records")
	fs.BoolVar(&o.autoCommit, "enable-autocommit", false, "Enable offset auto-commit on consumer")
	fs.StringVar(&o.resetPolicy, "reset-policy", "earliest", "Set reset policy (must be either 'earliest', 'latest', or 'none')")
	fs.StringVar(&o.assignment, "assignment-strategy", "org.apache.kafka.clients.consumer.RangeAssignor", "Set assignment strategy (e.g. org.apache.kafka.clients.consumer.RoundRobinAssignor); only used if the group protocol is CLASSIC")
	fs.StringVar(&o.cfg, "consumer.config", "", "(DEPRECATED) Consumer config properties file; use --command-config.")
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
	case o.conn.Bootstrap == "":
		return nil, errors.New("one of the arguments --bootstrap-server is required")
	case !given["topic"]:
		return nil, errors.New("argument --topic is required")
	case !given["group-id"]:
		return nil, errors.New("argument --group-id is required")
	case o.cfg != "" && o.conn.CommandConfig != "":
		return nil, errors.New("Options --consumer.config and --command-config are mutually exclusive.")
	}
	switch strings.ToLower(o.protocol) {
	case "classic":
		if given["group-remote-assignor"] {
			return nil, errors.New("--group-remote-assignor is only used with --group-protocol consumer (the broker assigns)")
		}
		if _, ok := consoleAssignors[o.assignment]; !ok {
			return nil, fmt.Errorf("--assignment-strategy %s: not one of Kafka's RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor", o.assignment)
		}
		if given["session-timeout"] && o.sessionTimeout < 1 {
			return nil, fmt.Errorf("--session-timeout %d: a session timeout is a positive number of ms", o.sessionTimeout)
		}
	case "consumer":
		// The Java consumer refuses the client-side settings under
		// KIP-848, where the broker owns the assignment and the session.
		if given["assignment-strategy"] {
			return nil, errors.New("--assignment-strategy is only used with --group-protocol classic (with consumer the broker assigns)")
		}
		if given["session-timeout"] {
			return nil, errors.New("--session-timeout is not supported with --group-protocol consumer: the broker's group.consumer.session.timeout.ms applies")
		}
		switch o.remoteAssignor {
		case "", "uniform", "range":
		default:
			return nil, fmt.Errorf("--group-remote-assignor %s: the broker's assignors are uniform and range", o.remoteAssignor)
		}
	default:
		return nil, fmt.Errorf("--group-protocol %s: must be one of CLASSIC, CONSUMER", o.protocol)
	}
	switch o.resetPolicy {
	case "earliest", "latest", "none":
	default:
		return nil, fmt.Errorf("Invalid value %s for configuration auto.offset.reset: String must be one of: latest, earliest, none", o.resetPolicy)
	}
	return o, nil
}

// verifiableConsumerKnown are the consumer properties a config file may
// set: the group and fetch settings the console consumer maps too.
var verifiableConsumerKnown = map[string]bool{
	"client.id": true, "isolation.level": true, "fetch.min.bytes": true, "fetch.max.bytes": true,
	"fetch.max.wait.ms": true, "max.partition.fetch.bytes": true, "max.poll.records": true, "client.rack": true,
	"retry.backoff.ms": true, "metadata.max.age.ms": true, "heartbeat.interval.ms": true, "max.poll.interval.ms": true,
	"auto.commit.interval.ms": true,
}

// verifiableConsumerFlags are the properties the flags set over the file,
// as Kafka's createFromArgs puts them last.
var verifiableConsumerFlags = map[string]string{
	"group.id": "--group-id", "group.instance.id": "--group-instance-id", "group.protocol": "--group-protocol",
	"group.remote.assignor": "--group-remote-assignor", "partition.assignment.strategy": "--assignment-strategy",
	"session.timeout.ms": "--session-timeout", "enable.auto.commit": "--enable-autocommit", "auto.offset.reset": "--reset-policy",
}

// clientOpts maps the flags and the config file to franz-go options.
func (o *verifiableConsumerOpts) clientOpts(ev *verifiableEvents, stderr io.Writer) ([]kgo.Opt, int, error) {
	file := o.conn.CommandConfig
	if o.cfg != "" {
		fmt.Fprintln(stderr, "Option --consumer.config has been deprecated and will be removed in a future version. Use --command-config instead.")
		file = o.cfg
	}
	p, err := newConsoleClientProps("verifiable-consumer", "consumer", file, "command-config", nil)
	if err != nil {
		return nil, 0, err
	}
	// The flags override these; say so rather than let the file's value
	// look as if it applied.
	for k, flagName := range verifiableConsumerFlags {
		if p.given[k] {
			fmt.Fprintf(stderr, "kaas verifiable-consumer: consumer property %s is overridden by %s\n", k, flagName)
			delete(p.props, k)
		}
	}
	noEffect := map[string]string{
		"key.deserializer":   "the verifiable consumer reads keys and values as UTF-8 strings, as Kafka's does",
		"value.deserializer": "the verifiable consumer reads keys and values as UTF-8 strings, as Kafka's does",
	}
	if err := p.check(verifiableConsumerKnown, noEffect, stderr); err != nil {
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
	for _, f := range []struct {
		key string
		opt func(d int64) kgo.Opt
	}{
		{"heartbeat.interval.ms", func(n int64) kgo.Opt { return kgo.HeartbeatInterval(msDuration(n)) }},
		{"max.poll.interval.ms", func(n int64) kgo.Opt { return kgo.RebalanceTimeout(msDuration(n)) }},
		{"auto.commit.interval.ms", func(n int64) kgo.Opt { return kgo.AutoCommitInterval(msDuration(n)) }},
	} {
		if d, ok, err := p.ms(f.key); err != nil {
			return nil, 0, err
		} else if ok && d > 0 {
			opts = append(opts, f.opt(d.Milliseconds()))
		}
	}
	reset := map[string]kgo.Offset{"earliest": kgo.NewOffset().AtStart(), "latest": kgo.NewOffset().AtEnd(), "none": kgo.NoResetOffset()}[o.resetPolicy]
	opts = append(opts, kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(o.topic), kgo.ConsumeResetOffset(reset), kgo.AllowAutoTopicCreation())
	if !o.autoCommit {
		opts = append(opts, kgo.DisableAutoCommit())
	}
	if o.instance != "" {
		opts = append(opts, kgo.InstanceID(o.instance))
	}
	if strings.EqualFold(o.protocol, "consumer") {
		b := kgo.StickyBalancer() // the broker's "uniform" assignor
		if o.remoteAssignor == "range" {
			b = kgo.RangeBalancer()
		}
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(b))
	} else {
		opts = append(opts, kgo.Balancers(consoleAssignors[o.assignment]()))
		if o.given["session-timeout"] {
			opts = append(opts, kgo.SessionTimeout(msDuration(int64(o.sessionTimeout))))
		}
	}
	partitions := func(name string) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			ev.print(verifiablePartitionsEvent{ev.head(name), verifiablePartitionList(m)})
		}
	}
	// A lost partition is reported as revoked, as the Java listener's
	// default onPartitionsLost does.
	opts = append(opts, kgo.OnPartitionsAssigned(partitions("partitions_assigned")),
		kgo.OnPartitionsRevoked(partitions("partitions_revoked")), kgo.OnPartitionsLost(partitions("partitions_revoked")))
	return opts, pollMax, nil
}

type verifiableTopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type verifiablePartitionsEvent struct {
	verifiableEvent
	Partitions []verifiableTopicPartition `json:"partitions"`
}

func verifiablePartitionList(m map[string][]int32) []verifiableTopicPartition {
	out := []verifiableTopicPartition{}
	for t, ps := range m {
		for _, p := range ps {
			out = append(out, verifiableTopicPartition{t, p})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

type verifiableRecordSet struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Count     int64  `json:"count"`
	MinOffset int64  `json:"minOffset"`
	MaxOffset int64  `json:"maxOffset"`
}

type verifiableRecordsConsumed struct {
	verifiableEvent
	Count      int64                 `json:"count"`
	Partitions []verifiableRecordSet `json:"partitions"`
}

type verifiableRecordData struct {
	verifiableEvent
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
}

type verifiableCommitData struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

type verifiableOffsetsCommitted struct {
	verifiableEvent
	Offsets []verifiableCommitData `json:"offsets"`
	Error   *string                `json:"error,omitempty"`
	Success bool                   `json:"success"`
}

// verifiableString is a record's key or value as Java's StringDeserializer
// gives it: null stays null.
func verifiableString(b []byte) *string {
	if b == nil {
		return nil
	}
	s, _ := consoleUTF8(b)
	str := string(s)
	return &str
}

func runVerifiableConsumer(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseVerifiableConsumerArgs(args, stderr)
	if err != nil {
		return err
	}
	ev := &verifiableEvents{out: stdout}
	opts, pollMax, err := o.clientOpts(ev, stderr)
	if err != nil {
		return err
	}
	cl, _, err := (&Conn{Bootstrap: o.conn.Bootstrap}).Client(opts...)
	if err != nil {
		return err
	}
	ev.print(ev.head("startup_complete"))
	runErr := verifiableConsume(ctx, cl, o, pollMax, ev)
	if ctx.Err() != nil {
		ev.print(ev.head("shutdown_requested"))
	}
	if o.autoCommit {
		// The Java consumer commits what it polled when it closes.
		commitCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := cl.CommitUncommittedOffsets(commitCtx); err != nil && runErr == nil {
			runErr = fmt.Errorf("commit the offsets of group %s: %w", o.group, err)
		}
		cancel()
	}
	cl.Close() // leaves the group
	ev.print(ev.head("shutdown_complete"))
	if runErr != nil {
		fmt.Fprintf(stderr, "Error during processing, terminating consumer process: %v\n", runErr)
	}
	return runErr
}

// verifiableConsume polls until --max-messages records are consumed, ctx
// ends, or the group fails; each poll prints records_consumed and, without
// auto-commit, commits what it consumed and prints offsets_committed.
func verifiableConsume(ctx context.Context, cl *kgo.Client, o *verifiableConsumerOpts, pollMax int, ev *verifiableEvents) error {
	consumed := 0
	for o.maxMessages < 0 || consumed < o.maxMessages {
		fetches := cl.PollRecords(ctx, pollMax)
		if ctx.Err() != nil {
			return nil
		}
		for _, fe := range fetches.Errors() {
			switch {
			case errors.Is(fe.Err, kgo.ErrClientClosed):
				return nil
			case errors.Is(fe.Err, kerr.UnknownTopicOrPartition) || kerr.IsRetriable(fe.Err):
				// The Java consumer waits for the topic or the leader.
			default:
				return fe.Err
			}
		}
		total := int64(fetches.NumRecords())
		if total == 0 {
			continue
		}
		var sets []verifiableRecordSet
		offsets := map[string]map[int32]kgo.EpochOffset{}
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			recs := p.Records
			if o.maxMessages >= 0 && consumed+len(recs) > o.maxMessages {
				recs = recs[:o.maxMessages-consumed]
			}
			if len(recs) == 0 {
				return
			}
			last := recs[len(recs)-1]
			sets = append(sets, verifiableRecordSet{p.Topic, p.Partition, int64(len(recs)), recs[0].Offset, last.Offset})
			if offsets[p.Topic] == nil {
				offsets[p.Topic] = map[int32]kgo.EpochOffset{}
			}
			offsets[p.Topic][p.Partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
			if o.verbose {
				for _, r := range recs {
					ev.print(verifiableRecordData{ev.head("record_data"), verifiableString(r.Key), verifiableString(r.Value), r.Topic, r.Partition, r.Offset})
				}
			}
			consumed += len(recs)
		})
		if sets == nil {
			sets = []verifiableRecordSet{}
		}
		ev.print(verifiableRecordsConsumed{ev.head("records_consumed"), total, sets})
		if !o.autoCommit {
			verifiableCommit(ctx, cl, sets, offsets, ev)
		}
	}
	return nil
}

// verifiableCommit commits offsets synchronously and prints the outcome,
// listing the offsets in the order the poll returned their partitions.
func verifiableCommit(ctx context.Context, cl *kgo.Client, sets []verifiableRecordSet, offsets map[string]map[int32]kgo.EpochOffset, ev *verifiableEvents) {
	var commitErr error
	cl.CommitOffsetsSync(context.WithoutCancel(ctx), offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		if err != nil || resp == nil {
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil && commitErr == nil {
					commitErr = e
				}
			}
		}
	})
	data := make([]verifiableCommitData, 0, len(sets))
	for _, s := range sets {
		data = append(data, verifiableCommitData{s.Topic, s.Partition, offsets[s.Topic][s.Partition].Offset})
	}
	e := verifiableOffsetsCommitted{verifiableEvent: ev.head("offsets_committed"), Offsets: data, Success: commitErr == nil}
	if commitErr != nil {
		msg := commitErr.Error()
		e.Error = &msg
	}
	ev.print(e)
}

// msDuration is n milliseconds.
func msDuration(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
