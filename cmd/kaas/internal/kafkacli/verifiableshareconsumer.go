package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kaas verifiable-share-consumer is Kafka 4.2's
// kafka-verifiable-share-consumer.sh (VerifiableShareConsumer): a member
// of share group --group-id on --topic that accepts what it consumes and
// prints each poll's records and each acknowledgement's outcome as a JSON
// event line.
var _ = register(Tool{Name: "verifiable-share-consumer", Kafka: "kafka-verifiable-share-consumer.sh", Run: runVerifiableShareConsumer})

type verifiableShareOpts struct {
	conn                   Conn
	topic, group, cfg      string
	ackMode, resetStrategy string
	maxMessages            int
	verbose                bool
	given                  map[string]bool
}

func parseVerifiableShareArgs(args []string, stderr io.Writer) (*verifiableShareOpts, error) {
	o := &verifiableShareOpts{}
	fs := NewFlagSet("verifiable-share-consumer", stderr)
	o.conn.Register(fs)
	fs.StringVar(&o.topic, "topic", "", "REQUIRED: Consumes messages from this topic.")
	fs.StringVar(&o.group, "group-id", "", "REQUIRED: The group id of the share group.")
	fs.IntVar(&o.maxMessages, "max-messages", -1, "Consume this many messages. If -1 (the default), the share consumer will consume until the process is killed externally")
	fs.BoolVar(&o.verbose, "verbose", false, "Enable to log individual consumed records")
	fs.StringVar(&o.ackMode, "acknowledgement-mode", "auto", "Acknowledgement mode for the share consumer (must be either 'auto', 'sync' or 'async')")
	fs.StringVar(&o.resetStrategy, "offset-reset-strategy", "", "Set the share group's share.auto.offset.reset (must be either 'earliest' or 'latest')")
	fs.StringVar(&o.cfg, "consumer.config", "", "(DEPRECATED) Consumer config properties file; use --command-config.")
	var ackPattern string
	fs.StringVar(&ackPattern, "ack-pattern", "", "Not supported: Kafka trunk's per-offset accept/release/reject/renew cycle.")
	given, err := Parse(fs, args)
	if err != nil {
		return nil, err
	}
	o.given = given
	switch {
	case given["ack-pattern"]:
		return nil, errors.New("--ack-pattern is not supported: kaas verifiable-share-consumer accepts every record it consumes (implicit acknowledgement)")
	case o.conn.Bootstrap == "":
		return nil, errors.New("one of the arguments --bootstrap-server is required")
	case !given["topic"]:
		return nil, errors.New("argument --topic is required")
	case !given["group-id"]:
		return nil, errors.New("argument --group-id is required")
	case o.cfg != "" && o.conn.CommandConfig != "":
		return nil, errors.New("Options --consumer.config and --command-config are mutually exclusive.")
	}
	o.ackMode = strings.ToLower(o.ackMode)
	switch o.ackMode {
	case "auto", "sync", "async":
	default:
		return nil, fmt.Errorf("--acknowledgement-mode %s: must be either 'auto', 'sync' or 'async'", o.ackMode)
	}
	o.resetStrategy = strings.ToLower(o.resetStrategy)
	switch o.resetStrategy {
	case "", "earliest", "latest":
	default:
		return nil, fmt.Errorf("--offset-reset-strategy %s: must be either 'earliest' or 'latest'", o.resetStrategy)
	}
	return o, nil
}

// clientOpts maps the config file to franz-go options: the connection's,
// and the share consumer's on top of them.
func (o *verifiableShareOpts) clientOpts(stderr io.Writer) (conn, share []kgo.Opt, pollMax int, err error) {
	file := o.conn.CommandConfig
	if o.cfg != "" {
		fmt.Fprintln(stderr, "Option --consumer.config has been deprecated and will be removed in a future version. Use --command-config instead.")
		file = o.cfg
	}
	p, err := newConsoleClientProps("verifiable-share-consumer", "consumer", file, "command-config", nil)
	if err != nil {
		return nil, nil, 0, err
	}
	if p.given["group.id"] {
		fmt.Fprintln(stderr, "kaas verifiable-share-consumer: consumer property group.id is overridden by --group-id")
	}
	p.props["group.id"] = o.group
	if err := shareImplicitAcks(p); err != nil {
		return nil, nil, 0, err
	}
	noEffect := map[string]string{
		"key.deserializer":   "the verifiable share consumer reads keys and values as UTF-8 strings, as Kafka's does",
		"value.deserializer": "the verifiable share consumer reads keys and values as UTF-8 strings, as Kafka's does",
	}
	if err := p.check(consoleShareKnown, noEffect, stderr); err != nil {
		return nil, nil, 0, err
	}
	if conn, err = p.commonOpts(); err != nil {
		return nil, nil, 0, err
	}
	consume, pollMax, err := p.consumeOpts()
	if err != nil {
		return nil, nil, 0, err
	}
	share = append(append(slices.Clone(conn), consume...), kgo.ShareGroup(o.group), kgo.ConsumeTopics(o.topic))
	return conn, share, pollMax, nil
}

// verifiableOffsetSet is VerifiableShareConsumer's RecordSetSummary and
// AcknowledgedData: a partition's offsets, in increasing order.
type verifiableOffsetSet struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Count     int64   `json:"count"`
	Offsets   []int64 `json:"offsets"`
}

type verifiableShareRecordsConsumed struct {
	verifiableEvent
	Count      int64                 `json:"count"`
	Partitions []verifiableOffsetSet `json:"partitions"`
}

type verifiableOffsetsAcknowledged struct {
	verifiableEvent
	Count      int64                 `json:"count"`
	Partitions []verifiableOffsetSet `json:"partitions"`
	Success    bool                  `json:"success"`
	Error      *string               `json:"error,omitempty"`
}

type verifiableResetStrategySet struct {
	verifiableEvent
	OffsetResetStrategy string `json:"offsetResetStrategy"`
}

// verifiableShareAcks matches the acknowledgement results franz-go reports
// per partition to the offsets the tool marked, and counts the ones the
// broker took. A result covers every offset of its partition marked
// before it, as Kafka's callback reports each partition's acknowledged
// offsets.
type verifiableShareAcks struct {
	mu          sync.Mutex
	ev          *verifiableEvents
	marked      map[verifiableTopicPartition][]int64
	polled      map[verifiableTopicPartition][]int64 // the last poll's, not yet marked
	accepted    int
	maxMessages int
	done        context.CancelFunc // called once accepted reaches maxMessages
}

// poll records the offsets a poll returned.
func (a *verifiableShareAcks) poll(tp verifiableTopicPartition, offsets []int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.polled[tp] = append(a.polled[tp], offsets...)
}

// markPolled notes that the last poll's records are marked accepted.
func (a *verifiableShareAcks) markPolled() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for tp, offs := range a.polled {
		a.marked[tp] = append(a.marked[tp], offs...)
	}
	clear(a.polled)
}

func (a *verifiableShareAcks) total() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.accepted
}

// callback prints an offsets_acknowledged event for each partition result.
func (a *verifiableShareAcks) callback(_ *kgo.Client, rs kgo.ShareAckResults) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range rs {
		tp := verifiableTopicPartition{r.Topic, r.Partition}
		offs := a.marked[tp]
		if len(offs) == 0 {
			continue
		}
		delete(a.marked, tp)
		slices.Sort(offs)
		offs = slices.Compact(offs)
		e := verifiableOffsetsAcknowledged{verifiableEvent: a.ev.head("offsets_acknowledged"), Count: int64(len(offs)),
			Partitions: []verifiableOffsetSet{{r.Topic, r.Partition, int64(len(offs)), offs}}, Success: r.Err == nil}
		if r.Err != nil {
			msg := r.Err.Error()
			var ke *kerr.Error
			if errors.As(r.Err, &ke) {
				msg = ke.Description // the Java exception's message
			}
			e.Error = &msg
		} else {
			a.accepted += len(offs)
		}
		a.ev.print(e)
	}
	if a.maxMessages >= 0 && a.accepted >= a.maxMessages {
		a.done()
	}
}

func runVerifiableShareConsumer(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseVerifiableShareArgs(args, stderr)
	if err != nil {
		return err
	}
	connOpts, shareOpts, pollMax, err := o.clientOpts(stderr)
	if err != nil {
		return err
	}
	ev := &verifiableEvents{out: stdout}
	ev.print(ev.head("startup_complete"))
	runErr := verifiableShareRun(ctx, o, connOpts, shareOpts, pollMax, ev)
	ev.print(ev.head("shutdown_complete"))
	if runErr != nil {
		fmt.Fprintf(stderr, "Error during processing, terminating share consumer process: %v\n", runErr)
	}
	return runErr
}

// verifiableShareSetReset sets the share group's share.auto.offset.reset,
// as Kafka's tool does with its admin client before it subscribes.
func verifiableShareSetReset(ctx context.Context, o *verifiableShareOpts, connOpts []kgo.Opt) error {
	cl, adm, err := (&Conn{Bootstrap: o.conn.Bootstrap}).Client(connOpts...)
	if err != nil {
		return err
	}
	defer adm.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, o.group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = "share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(o.resetStrategy)
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	alterCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, shard := range cl.RequestSharded(alterCtx, req) {
		if shard.Err != nil {
			return fmt.Errorf("set share.auto.offset.reset of group %s: %w", o.group, shard.Err)
		}
		for _, res := range shard.Resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
			if err := brokerError(res.ErrorCode, res.ErrorMessage); err != nil {
				return fmt.Errorf("set share.auto.offset.reset of group %s: %w", o.group, err)
			}
		}
	}
	return nil
}

// verifiableShareRun sets the reset strategy, then consumes until
// --max-messages records are acknowledged or ctx ends, and closes the
// share consumer, accepting what it last polled.
func verifiableShareRun(ctx context.Context, o *verifiableShareOpts, connOpts, shareOpts []kgo.Opt, pollMax int, ev *verifiableEvents) error {
	if o.resetStrategy != "" {
		if err := verifiableShareSetReset(ctx, o, connOpts); err != nil {
			return err
		}
		ev.print(verifiableResetStrategySet{ev.head("offset_reset_strategy_set"), o.resetStrategy})
	}
	if o.maxMessages == 0 {
		return nil // Kafka's loop ends before its first poll
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	acks := &verifiableShareAcks{ev: ev, marked: map[verifiableTopicPartition][]int64{}, polled: map[verifiableTopicPartition][]int64{},
		maxMessages: o.maxMessages, done: stop}
	cl, _, err := (&Conn{Bootstrap: o.conn.Bootstrap}).Client(append(shareOpts, kgo.ShareAckCallback(acks.callback))...)
	if err != nil {
		return err
	}
	defer cl.Close()

	// async sends each poll's acknowledgements at once without waiting:
	// one flusher, signalled after each poll.
	flush := make(chan struct{}, 1)
	var flusher sync.WaitGroup
	if o.ackMode == "async" {
		flusher.Add(1)
		go func() {
			defer flusher.Done()
			for {
				select {
				case <-runCtx.Done():
					return
				case <-flush:
					cl.FlushAcks(runCtx)
				}
			}
		}()
	}
	runErr := verifiableShareConsume(runCtx, cl, o, pollMax, acks, flush)
	if ctx.Err() != nil {
		ev.print(ev.head("shutdown_requested"))
	}
	stop()
	flusher.Wait()
	// Closing accepts the records of the last poll, as the Java share
	// consumer's close does in its implicit mode; their outcome is
	// printed before shutdown_complete.
	acks.markPolled()
	cl.MarkAcks(kgo.AckAccept)
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	if err := cl.FlushAcks(flushCtx); err != nil && runErr == nil {
		runErr = fmt.Errorf("acknowledge the records of share group %s: %w", o.group, err)
	}
	cancel()
	cl.Close() // leaves the share group
	return runErr
}

// verifiableShareConsume polls and prints records_consumed for each poll
// with records; auto leaves their acceptance to the next poll, sync
// accepts them and waits for the outcome, async accepts them and goes on.
func verifiableShareConsume(ctx context.Context, cl *kgo.Client, o *verifiableShareOpts, pollMax int, acks *verifiableShareAcks, flush chan struct{}) error {
	for o.maxMessages < 0 || acks.total() < o.maxMessages {
		acks.markPolled() // the poll below accepts the records of the one before
		// Records a poll returns are reported even when ctx ended during
		// it: closing accepts them.
		fetches := cl.PollRecords(ctx, pollMax)
		for _, fe := range fetches.Errors() {
			switch {
			case errors.Is(fe.Err, context.DeadlineExceeded), errors.Is(fe.Err, context.Canceled):
			case errors.Is(fe.Err, kgo.ErrClientClosed):
				return nil
			case errors.Is(fe.Err, kerr.UnknownTopicOrPartition) || kerr.IsRetriable(fe.Err):
				// The share consumer waits for the topic or the leader.
			default:
				return fmt.Errorf("consume %s: %w", o.topic, fe.Err)
			}
		}
		total := int64(fetches.NumRecords())
		if total == 0 {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		sets := []verifiableOffsetSet{}
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			offs := make([]int64, 0, len(p.Records))
			for _, r := range p.Records {
				offs = append(offs, r.Offset)
			}
			acks.poll(verifiableTopicPartition{p.Topic, p.Partition}, offs)
			slices.Sort(offs)
			offs = slices.Compact(offs)
			sets = append(sets, verifiableOffsetSet{p.Topic, p.Partition, int64(len(offs)), offs})
			if o.verbose {
				for _, r := range p.Records {
					acks.ev.print(verifiableRecordData{acks.ev.head("record_data"), verifiableString(r.Key), verifiableString(r.Value), r.Topic, r.Partition, r.Offset})
				}
			}
		})
		acks.ev.print(verifiableShareRecordsConsumed{acks.ev.head("records_consumed"), total, sets})
		switch o.ackMode {
		case "sync":
			acks.markPolled()
			cl.MarkAcks(kgo.AckAccept)
			if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
				return fmt.Errorf("acknowledge the records of share group %s: %w", o.group, err)
			}
		case "async":
			acks.markPolled()
			cl.MarkAcks(kgo.AckAccept)
			select {
			case flush <- struct{}{}:
			default:
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	return nil
}
