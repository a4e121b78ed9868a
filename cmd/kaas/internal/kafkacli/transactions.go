package kafkacli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kaas transactions is Kafka 4's kafka-transactions.sh (TransactionsCommand):
// the connection flags, then a command, then that command's flags.
var _ = register(Tool{Name: "transactions", Kafka: "kafka-transactions.sh", Run: runTransactions})

// txnCommands are kafka-transactions.sh's commands, in its help's order.
var txnCommands = []string{"list", "describe", "describe-producers", "abort", "find-hanging", "forceTerminateTransaction"}

// txnOpTimeout bounds each command's requests, as the admin client's
// default.api.timeout.ms bounds Kafka's.
const txnOpTimeout = time.Minute

// txnOpts is one command line: the command and every flag it may take.
type txnOpts struct {
	conn    Conn
	command string
	set     map[string]bool

	topic                 string
	partition             int
	brokerID              int
	transactionalID       string
	startOffset           int64
	producerID            int64
	producerEpoch         int
	coordinatorEpoch      int
	durationFilter        int64
	txnIDPattern          string
	maxTransactionTimeout int
}

func runTransactions(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	o, err := parseTxnArgs(args, stderr)
	if err != nil {
		return err
	}
	cl, adm, err := o.conn.Client()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, txnOpTimeout)
	defer cancel()
	t := &txnCmd{o: o, cl: cl, adm: adm, out: stdout, now: time.Now}
	switch o.command {
	case "list":
		return t.list(ctx)
	case "describe":
		return t.describe(ctx)
	case "describe-producers":
		return t.describeProducers(ctx)
	case "abort":
		return t.abort(ctx)
	case "find-hanging":
		return t.findHanging(ctx)
	default:
		return t.forceTerminate(ctx)
	}
}

// parseTxnArgs reads `[connection flags] COMMAND [command flags]` and makes
// Kafka's checks, so a refused command reaches no broker. The connection
// flags are taken after the command too.
func parseTxnArgs(args []string, stderr io.Writer) (*txnOpts, error) {
	o := &txnOpts{}
	tool := subcommandTool{
		name:     "transactions",
		commands: txnCommands,
		global:   o.conn.Register,
		command: func(cmd string, sub *flag.FlagSet) {
			switch cmd {
			case "list":
				sub.Int64Var(&o.durationFilter, "duration-filter", -1, "Duration (in millis) to filter by: if < 0, all transactions are listed; otherwise only those running longer than this.")
				sub.StringVar(&o.txnIDPattern, "transactional-id-pattern", "", "A regular expression the transactional ids listed match (Kafka 4.1, KIP-1152; brokers with ListTransactions v2).")
			case "describe":
				sub.StringVar(&o.transactionalID, "transactional-id", "", "REQUIRED: the transactional id to describe.")
			case "describe-producers":
				sub.IntVar(&o.brokerID, "broker-id", 0, "Describe the producer state on this replica rather than on the leader.")
				sub.StringVar(&o.topic, "topic", "", "REQUIRED: topic name.")
				sub.IntVar(&o.partition, "partition", 0, "REQUIRED: partition number.")
			case "abort":
				sub.StringVar(&o.topic, "topic", "", "REQUIRED: topic name.")
				sub.IntVar(&o.partition, "partition", 0, "REQUIRED: partition number.")
				sub.Int64Var(&o.startOffset, "start-offset", 0, "The start offset of the transaction to abort (brokers on 3.0 and above).")
				sub.Int64Var(&o.producerID, "producer-id", 0, "The producer id (with --producer-epoch and --coordinator-epoch, for brokers older than 3.0).")
				sub.IntVar(&o.producerEpoch, "producer-epoch", 0, "The producer epoch.")
				sub.IntVar(&o.coordinatorEpoch, "coordinator-epoch", 0, "The coordinator epoch.")
			case "find-hanging":
				sub.IntVar(&o.brokerID, "broker-id", 0, "The broker whose partitions are searched.")
				sub.IntVar(&o.maxTransactionTimeout, "max-transaction-timeout", 15, "The maximum transaction timeout in minutes: only transactions open longer are candidates.")
				sub.StringVar(&o.topic, "topic", "", "The topic to search (required with --partition).")
				sub.IntVar(&o.partition, "partition", 0, "The partition to search.")
			case "forceTerminateTransaction":
				sub.StringVar(&o.transactionalID, "transactionalId", "", "REQUIRED: the transactional id whose producer is fenced and whose open transaction is aborted (KIP-939).")
			}
		},
	}
	cmd, given, err := tool.parse(args, stderr)
	if err != nil {
		return nil, err
	}
	o.command, o.set = cmd, given
	if o.conn.Bootstrap == "" {
		return nil, errors.New("argument --bootstrap-server is required")
	}
	return o, o.check()
}

// check is argparse's required arguments and each command's own checks.
func (o *txnOpts) check() error {
	required := map[string][]string{
		"describe":                  {"transactional-id"},
		"describe-producers":        {"topic", "partition"},
		"abort":                     {"topic", "partition"},
		"forceTerminateTransaction": {"transactionalId"},
	}
	for _, name := range required[o.command] {
		if !o.set[name] {
			return fmt.Errorf("argument --%s is required", name)
		}
	}
	if o.set["partition"] && o.partition < 0 {
		return fmt.Errorf("--partition %d: a partition number is 0 or more", o.partition)
	}
	switch o.command {
	case "abort":
		if !o.set["start-offset"] && !o.set["producer-id"] {
			return errors.New("The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)")
		}
		if o.set["start-offset"] {
			// Kafka ignores the others then; kaas refuses a command that
			// names one transaction two ways.
			for _, f := range []string{"producer-id", "producer-epoch", "coordinator-epoch"} {
				if o.set[f] {
					return fmt.Errorf("--start-offset and --%s both identify the transaction: give one way", f)
				}
			}
			return nil
		}
		if !o.set["producer-epoch"] {
			return errors.New("Missing required argument --producer-epoch")
		}
		if !o.set["coordinator-epoch"] {
			return errors.New("Missing required argument --coordinator-epoch")
		}
		if o.producerEpoch < 0 || o.producerEpoch > 32767 {
			return fmt.Errorf("--producer-epoch %d: an epoch is 0 to 32767", o.producerEpoch)
		}
	case "find-hanging":
		if !o.set["topic"] && !o.set["broker-id"] {
			return errors.New("The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search")
		}
		if o.set["partition"] && !o.set["topic"] {
			return errors.New("The --partition argument requires --topic to be provided")
		}
		if o.maxTransactionTimeout < 0 {
			return fmt.Errorf("--max-transaction-timeout %d: minutes, 0 or more", o.maxTransactionTimeout)
		}
	}
	return nil
}

type txnCmd struct {
	o   *txnOpts
	cl  *kgo.Client
	adm *kadm.Client
	out io.Writer
	now func() time.Time
}

// txnTable prints rows under headers as Kafka's ToolsUtils.prettyPrintTable
// does: each column padded to its widest cell, each cell followed by a tab.
func txnTable(w io.Writer, headers []string, rows [][]string) {
	widths := make([]int, len(headers))
	for i, h := range headers {
		widths[i] = len(h)
	}
	for _, r := range rows {
		for i := range headers {
			widths[i] = max(widths[i], len(r[i]))
		}
	}
	var b strings.Builder
	for _, r := range append([][]string{headers}, rows...) {
		for i, cell := range r {
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", widths[i]-len(cell)))
			b.WriteByte('\t')
		}
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}

// txnTP is a partition as Kafka's TopicPartition prints it.
func txnTP(topic string, partition int32) string {
	return topic + "-" + strconv.Itoa(int(partition))
}

// txnErr is an admin call's failure as Kafka's tool reports it: what was
// being done, then why.
func txnErr(what string, err error) error {
	return fmt.Errorf("%s: %w", what, err)
}

// needVersion refuses a filter the broker would not see: a field of a
// newer ListTransactions version is left off an older request, which the
// broker would answer unfiltered.
func (t *txnCmd) needVersion(ctx context.Context, key int16, version int16, flagName string) error {
	vs, err := t.adm.ApiVersions(ctx)
	if err != nil {
		return txnErr("Failed to list transactions", err)
	}
	var short []string
	vs.Each(func(b kadm.BrokerApiVersions) {
		if maxV, ok := b.KeyMaxVersion(key); !ok || maxV < version {
			short = append(short, strconv.Itoa(int(b.NodeID)))
		}
	})
	if len(short) > 0 {
		return fmt.Errorf("%s needs ListTransactions v%d, which broker(s) %s do not serve", flagName, version, strings.Join(short, ","))
	}
	return nil
}

func (t *txnCmd) list(ctx context.Context) error {
	req := kmsg.NewPtrListTransactionsRequest()
	req.DurationFilterMillis = t.o.durationFilter
	if t.o.durationFilter >= 0 {
		if err := t.needVersion(ctx, kmsg.ListTransactions.Int16(), 1, "--duration-filter"); err != nil {
			return err
		}
	}
	if t.o.set["transactional-id-pattern"] {
		if err := t.needVersion(ctx, kmsg.ListTransactions.Int16(), 2, "--transactional-id-pattern"); err != nil {
			return err
		}
		req.TransactionalIDPattern = kmsg.StringPtr(t.o.txnIDPattern)
	}
	type row struct {
		coordinator int32
		cells       []string
	}
	var rows []row
	for _, shard := range t.cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			return txnErr("Failed to list transactions", shard.Err)
		}
		resp := shard.Resp.(*kmsg.ListTransactionsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return txnErr("Failed to list transactions", err)
		}
		for _, s := range resp.TransactionStates {
			rows = append(rows, row{shard.Meta.NodeID, []string{s.TransactionalID, strconv.Itoa(int(shard.Meta.NodeID)), strconv.FormatInt(s.ProducerID, 10), s.TransactionState}})
		}
	}
	// Kafka prints the listings grouped by coordinator.
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].coordinator != rows[j].coordinator {
			return rows[i].coordinator < rows[j].coordinator
		}
		return rows[i].cells[0] < rows[j].cells[0]
	})
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = r.cells
	}
	txnTable(t.out, []string{"TransactionalId", "Coordinator", "ProducerId", "TransactionState"}, cells)
	return nil
}

func (t *txnCmd) describe(ctx context.Context) error {
	id := t.o.transactionalID
	what := "Failed to describe transaction state of transactional-id `" + id + "`"
	described, err := t.adm.DescribeTransactions(ctx, id)
	if err != nil {
		return txnErr(what, err)
	}
	d, err := described.On(id, nil)
	if err == nil {
		err = d.Err
	}
	if err != nil {
		return txnErr(what, err)
	}
	start, duration := "None", "None"
	if d.StartTimestamp >= 0 {
		start = strconv.FormatInt(d.StartTimestamp, 10)
		duration = strconv.FormatInt(t.now().UnixMilli()-d.StartTimestamp, 10)
	}
	var tps []string
	for _, tp := range d.Topics.Sorted() {
		for _, p := range tp.Partitions {
			tps = append(tps, txnTP(tp.Topic, p))
		}
	}
	txnTable(t.out, []string{"CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
		"TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"},
		[][]string{{strconv.Itoa(int(d.Coordinator)), id, strconv.FormatInt(d.ProducerID, 10), strconv.Itoa(int(d.ProducerEpoch)), d.State,
			strconv.Itoa(int(d.TimeoutMillis)), start, duration, strings.Join(tps, ",")}})
	return nil
}

// txnPartitionProducers is one partition's DescribeProducers answer.
type txnPartitionProducers struct {
	topic     string
	partition int32
	producers []kmsg.DescribeProducersResponseTopicPartitionActiveProducer
	err       error
}

// producers asks the partitions' leaders, or the broker brokerID
// when it is 0 or more, for their producers' state. A partition whose
// topic is unknown is answered UNKNOWN_TOPIC_OR_PARTITION without asking.
func (t *txnCmd) producers(ctx context.Context, brokerID int, tps map[string][]int32) ([]txnPartitionProducers, error) {
	var out []txnPartitionProducers
	topics := make([]string, 0, len(tps))
	for tp := range tps {
		topics = append(topics, tp)
	}
	sort.Strings(topics)
	md, err := t.adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	for _, topic := range topics {
		td := md.Topics[topic]
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic = topic
		for _, p := range tps[topic] {
			if td.Err != nil {
				out = append(out, txnPartitionProducers{topic: topic, partition: p, err: td.Err})
				continue
			}
			if _, ok := td.Partitions[p]; !ok {
				out = append(out, txnPartitionProducers{topic: topic, partition: p, err: kerr.UnknownTopicOrPartition})
				continue
			}
			rt.Partitions = append(rt.Partitions, p)
		}
		if len(rt.Partitions) > 0 {
			req.Topics = append(req.Topics, rt)
		}
	}
	if len(req.Topics) == 0 {
		return out, nil
	}
	var shards []kgo.ResponseShard
	if brokerID >= 0 {
		resp, err := t.cl.Broker(brokerID).Request(ctx, req)
		shards = []kgo.ResponseShard{{Req: req, Resp: resp, Err: err}}
	} else {
		shards = t.cl.RequestSharded(ctx, req)
	}
	for _, shard := range shards {
		sreq := shard.Req.(*kmsg.DescribeProducersRequest)
		if shard.Err != nil {
			for _, rt := range sreq.Topics {
				for _, p := range rt.Partitions {
					out = append(out, txnPartitionProducers{topic: rt.Topic, partition: p, err: shard.Err})
				}
			}
			continue
		}
		for _, rt := range shard.Resp.(*kmsg.DescribeProducersResponse).Topics {
			for _, rp := range rt.Partitions {
				pp := txnPartitionProducers{topic: rt.Topic, partition: rp.Partition, producers: rp.ActiveProducers, err: kerr.ErrorForCode(rp.ErrorCode)}
				if pp.err != nil && rp.ErrorMessage != nil && *rp.ErrorMessage != "" {
					pp.err = fmt.Errorf("%w: %s", pp.err, *rp.ErrorMessage)
				}
				sort.Slice(pp.producers, func(i, j int) bool { return pp.producers[i].ProducerID < pp.producers[j].ProducerID })
				out = append(out, pp)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].topic < out[j].topic || out[i].topic == out[j].topic && out[i].partition < out[j].partition
	})
	return out, nil
}

// onePartitionProducers describes the producers of --topic --partition.
func (t *txnCmd) onePartitionProducers(ctx context.Context, brokerID int) (txnPartitionProducers, error) {
	res, err := t.producers(ctx, brokerID, map[string][]int32{t.o.topic: {int32(t.o.partition)}})
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("no answer for partition %s", txnTP(t.o.topic, int32(t.o.partition)))
	}
	if err != nil {
		return txnPartitionProducers{}, err
	}
	return res[0], res[0].err
}

func (t *txnCmd) describeProducers(ctx context.Context) error {
	brokerID, on := -1, "leader"
	if t.o.set["broker-id"] {
		brokerID, on = t.o.brokerID, "broker "+strconv.Itoa(t.o.brokerID)
	}
	pp, err := t.onePartitionProducers(ctx, brokerID)
	if err != nil {
		return txnErr("Failed to describe producers for partition "+txnTP(t.o.topic, int32(t.o.partition))+" on "+on, err)
	}
	var rows [][]string
	for _, p := range pp.producers {
		start := "None"
		if p.CurrentTxnStartOffset >= 0 {
			start = strconv.FormatInt(p.CurrentTxnStartOffset, 10)
		}
		rows = append(rows, []string{strconv.FormatInt(p.ProducerID, 10), strconv.Itoa(int(p.ProducerEpoch)), strconv.Itoa(int(p.CoordinatorEpoch)),
			strconv.Itoa(int(p.LastSequence)), strconv.FormatInt(p.LastTimestamp, 10), start})
	}
	txnTable(t.out, []string{"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"}, rows)
	return nil
}

// abort writes an abort marker for one producer's open transaction on one
// partition (WriteTxnMarkers, KIP-664), as Kafka's admin abortTransaction.
func (t *txnCmd) abort(ctx context.Context) error {
	tp := txnTP(t.o.topic, int32(t.o.partition))
	pid, epoch, coordEpoch := t.o.producerID, int16(t.o.producerEpoch), int32(t.o.coordinatorEpoch)
	if t.o.set["start-offset"] {
		pp, err := t.onePartitionProducers(ctx, -1)
		if err != nil {
			return txnErr("Failed to validate producer state for partition "+tp, err)
		}
		found := false
		for _, p := range pp.producers {
			if p.CurrentTxnStartOffset >= 0 && p.CurrentTxnStartOffset == t.o.startOffset {
				pid, epoch, coordEpoch, found = p.ProducerID, int16(p.ProducerEpoch), p.CoordinatorEpoch, true
				break
			}
		}
		if !found {
			return fmt.Errorf("Could not find any open transactions starting at offset %d on partition %s", t.o.startOffset, tp)
		}
	}
	if !t.o.set["start-offset"] {
		// Checked first: the markers' request would wait for an unknown
		// partition to appear.
		if _, err := t.onePartitionProducers(ctx, -1); errors.Is(err, kerr.UnknownTopicOrPartition) {
			return txnErr("Failed to abort transaction on partition "+tp, err)
		}
	}
	// A transaction that hung before its first commit or abort shows
	// coordinator epoch -1; 0 is at most any real one.
	coordEpoch = max(coordEpoch, 0)
	spec := fmt.Sprintf("AbortTransactionSpec(topicPartition=%s, producerId=%d, producerEpoch=%d, coordinatorEpoch=%d)", tp, pid, epoch, coordEpoch)
	resp, err := t.adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: pid, ProducerEpoch: epoch, CoordinatorEpoch: coordEpoch,
		Topics: kadm.TopicsSet{t.o.topic: {int32(t.o.partition): {}}}})
	if err == nil {
		resp.EachPartition(func(r kadm.TxnMarkersPartitionResponse) {
			if r.Err != nil && err == nil {
				err = r.Err
			}
		})
	}
	if err != nil {
		return txnErr("Failed to abort transaction "+spec, err)
	}
	return nil
}

// findHanging is Kafka's search for hanging transactions: producers whose
// transaction on a partition has been open longer than the longest
// transaction timeout, and which the transaction's coordinator does not
// count as part of an ongoing (or completing) transaction, so no marker
// will ever close it.
func (t *txnCmd) findHanging(ctx context.Context) error {
	brokerID := -1
	if t.o.set["broker-id"] {
		brokerID = t.o.brokerID
	}
	tps := map[string][]int32{}
	if t.o.set["partition"] {
		tps[t.o.topic] = []int32{int32(t.o.partition)}
	} else {
		var topics []string
		if t.o.set["topic"] {
			topics = []string{t.o.topic}
		}
		md, err := t.adm.Metadata(ctx, topics...)
		if err != nil {
			return txnErr("Failed to describe topics", err)
		}
		for _, td := range md.Topics.Sorted() {
			if td.Err != nil {
				return txnErr("Failed to describe topic "+td.Topic, td.Err)
			}
			for _, pd := range td.Partitions.Sorted() {
				if brokerID < 0 || txnHasReplica(pd.Replicas, int32(brokerID)) {
					tps[td.Topic] = append(tps[td.Topic], pd.Partition)
				}
			}
		}
	}
	type open struct {
		topic     string
		partition int32
		p         kmsg.DescribeProducersResponseTopicPartitionActiveProducer
	}
	var candidates []open
	maxMs := int64(t.o.maxTransactionTimeout) * 60_000
	if len(tps) > 0 {
		pps, err := t.producers(ctx, brokerID, tps)
		if err != nil {
			return txnErr("Failed to describe producers", err)
		}
		nowMs := t.now().UnixMilli()
		for _, pp := range pps {
			if pp.err != nil {
				return txnErr("Failed to describe producers for partition "+txnTP(pp.topic, pp.partition), pp.err)
			}
			for _, p := range pp.producers {
				if p.CurrentTxnStartOffset >= 0 && nowMs-p.LastTimestamp > maxMs {
					candidates = append(candidates, open{pp.topic, pp.partition, p})
				}
			}
		}
	}
	var hanging []open
	if len(candidates) > 0 {
		pidSet := map[int64]bool{}
		for _, c := range candidates {
			pidSet[c.p.ProducerID] = true
		}
		pids := make([]int64, 0, len(pidSet))
		for pid := range pidSet {
			pids = append(pids, pid)
		}
		listed, err := t.adm.ListTransactions(ctx, pids, nil)
		if err != nil {
			return txnErr(fmt.Sprintf("Failed to list transactions for %d producers", len(pids)), err)
		}
		idOf := map[int64]string{}
		var ids []string
		listed.Each(func(l kadm.ListedTransaction) {
			if pidSet[l.ProducerID] {
				idOf[l.ProducerID] = l.TxnID
				ids = append(ids, l.TxnID)
			}
		})
		described := kadm.DescribedTransactions{}
		if len(ids) > 0 {
			if described, err = t.adm.DescribeTransactions(ctx, ids...); err != nil {
				return txnErr(fmt.Sprintf("Failed to describe %d transactions", len(ids)), err)
			}
		}
		for _, c := range candidates {
			id, known := idOf[c.p.ProducerID]
			if !known {
				hanging = append(hanging, c)
				continue
			}
			d, ok := described[id]
			if ok && d.Err != nil && !errors.Is(d.Err, kerr.TransactionalIDNotFound) {
				return txnErr(fmt.Sprintf("Failed to describe %d transactions", len(ids)), d.Err)
			}
			if !ok || d.Err != nil {
				hanging = append(hanging, c)
				continue
			}
			// The coordinator still lists the partitions it will write
			// markers to; a partition it does not list has none coming.
			if _, listed := d.Topics[c.topic][c.partition]; !listed {
				hanging = append(hanging, c)
			}
		}
	}
	nowMs := t.now().UnixMilli()
	var rows [][]string
	for _, h := range hanging {
		rows = append(rows, []string{h.topic, strconv.Itoa(int(h.partition)), strconv.FormatInt(h.p.ProducerID, 10), strconv.Itoa(int(h.p.ProducerEpoch)),
			strconv.Itoa(int(h.p.CoordinatorEpoch)), strconv.FormatInt(h.p.CurrentTxnStartOffset, 10), strconv.FormatInt(h.p.LastTimestamp, 10),
			strconv.FormatInt((nowMs-h.p.LastTimestamp)/60_000, 10)})
	}
	txnTable(t.out, []string{"Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp", "Duration(min)"}, rows)
	return nil
}

func txnHasReplica(replicas []int32, broker int32) bool {
	for _, r := range replicas {
		if r == broker {
			return true
		}
	}
	return false
}

// forceTerminate fences the transactional id's producer and aborts its
// open transaction: an InitProducerId for the id, as Kafka 4.1's admin
// forceTerminateTransaction sends (KIP-939, without keeping a prepared
// transaction). The coordinator answers CONCURRENT_TRANSACTIONS while the
// abort it started completes, so it is asked again until it is done.
func (t *txnCmd) forceTerminate(ctx context.Context) error {
	id := t.o.transactionalID
	what := "Could not force terminate transaction for transactional id " + id
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr(id)
	// The new epoch only fences; no records are written with it, and a
	// producer taking the id over sets its own timeout.
	req.TransactionTimeoutMillis = 1
	for {
		resp, err := req.RequestWith(ctx, t.cl)
		if err != nil {
			return txnErr(what, err)
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		if err == nil {
			return nil
		}
		if !kerr.IsRetriable(err) && !errors.Is(err, kerr.ConcurrentTransactions) {
			return txnErr(what, err)
		}
		select {
		case <-ctx.Done():
			return txnErr(what, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
