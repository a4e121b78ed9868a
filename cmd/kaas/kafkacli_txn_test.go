package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnToolTable parses a table printed as Kafka's prettyPrintTable prints
// it (cells padded to their column's width, each followed by a tab) into
// rows of header -> cell, checking the layout on the way.
func txnToolTable(t *testing.T, out string, headers ...string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !strings.HasSuffix(out, "\n") || len(lines) == 0 {
		t.Fatalf("no table in %q", out)
	}
	split := func(line string) []string {
		if !strings.HasSuffix(line, "\t") {
			t.Fatalf("table line %q does not end with a tab", line)
		}
		return strings.Split(strings.TrimSuffix(line, "\t"), "\t")
	}
	head := split(lines[0])
	widths := make([]int, len(head))
	for i, h := range head {
		if strings.TrimRight(h, " ") != headers[i] {
			t.Fatalf("header %d is %q, want %q (table %q)", i, h, headers[i], out)
		}
		widths[i] = len(h)
	}
	if len(head) != len(headers) {
		t.Fatalf("headers %q, want %q", head, headers)
	}
	var rows []map[string]string
	for _, line := range lines[1:] {
		cells := split(line)
		if len(cells) != len(headers) {
			t.Fatalf("row %q has %d cells, want %d", line, len(cells), len(headers))
		}
		row := map[string]string{}
		for i, c := range cells {
			if len(c) != widths[i] {
				t.Fatalf("cell %q of row %q is not padded to its column's width %d", c, line, widths[i])
			}
			row[headers[i]] = strings.TrimRight(c, " ")
		}
		rows = append(rows, row)
	}
	return rows
}

// txnToolRefused runs a tool that must fail and checks what it says.
func txnToolRefused(t *testing.T, want string, args ...string) string {
	t.Helper()
	out, errOut, code := runKaas(t, args...)
	if code == 0 || !strings.Contains(errOut, want) {
		t.Fatalf("kaas %q: exit %d, stdout %q, stderr %q; want a refusal saying %q", args, code, out, errOut, want)
	}
	return out
}

// txnToolOpen starts a transaction of a new transactional producer that
// writes values to partition 0 of topic and leaves it open.
func txnToolOpen(t *testing.T, ctx context.Context, addr, id, topic string, values ...string) *kgo.Client {
	t.Helper()
	cl := newClient(t, addr, kgo.TransactionalID(id), kgo.TransactionTimeout(2*time.Minute), kgo.DefaultProduceTopic(topic))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

// TestToolsTransactions runs kaas transactions (kafka-transactions.sh)
// against a broker holding open transactions made by franz-go producers:
// list, describe and describe-producers show them as kadm does, abort (by
// start offset and by producer id) and forceTerminateTransaction end them
// so that read_committed readers pass, find-hanging tells a healthy open
// transaction from a hanging one, and bad command lines are refused
// before anything is sent.
func TestToolsTransactions(t *testing.T) {
	_, addr := testBroker(t)
	ctx := ctxT(t, 2*time.Minute)
	adm := newAdmin(t, addr)
	bs := "--bootstrap-server=" + addr
	txn := func(t *testing.T, args ...string) string {
		t.Helper()
		return mustTool(t, append([]string{"transactions", bs}, args...)...)
	}
	for _, topic := range []string{"held", "manual", "forced", "done"} {
		createTopic(t, addr, topic, 1, nil)
	}
	// held: a committed-free record at offset 0, then a transaction open
	// from offset 1.
	plain := newClient(t, addr)
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: "held", Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txnToolOpen(t, ctx, addr, "txn-held", "held", "open-1", "open-2")
	manual := txnToolOpen(t, ctx, addr, "txn-manual", "manual", "m")
	forced := txnToolOpen(t, ctx, addr, "txn-forced", "forced", "f")
	doneCl := newClient(t, addr, kgo.TransactionalID("txn-done"))
	txnProduce(t, ctx, doneCl, "done", []string{"d"}, true)

	describe := func(t *testing.T, id string) kadm.DescribedTransaction {
		t.Helper()
		d, err := adm.DescribeTransactions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.On(id, nil)
		if err != nil || got.Err != nil {
			t.Fatalf("describe %s: %v %v", id, err, got.Err)
		}
		return got
	}
	lso := func(t *testing.T, topic string) (stable, end int64) {
		t.Helper()
		c, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		e, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		co, _ := c.Lookup(topic, 0)
		eo, _ := e.Lookup(topic, 0)
		return co.Offset, eo.Offset
	}
	held := describe(t, "txn-held")

	t.Run("list", func(t *testing.T) {
		headers := []string{"TransactionalId", "Coordinator", "ProducerId", "TransactionState"}
		rows := txnToolTable(t, txn(t, "list"), headers...)
		byID := map[string]map[string]string{}
		for _, r := range rows {
			byID[r["TransactionalId"]] = r
		}
		listed, err := adm.ListTransactions(ctx, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(listed) {
			t.Fatalf("the tool lists %d transactions, kadm %d: %v", len(rows), len(listed), rows)
		}
		listed.Each(func(l kadm.ListedTransaction) {
			r := byID[l.TxnID]
			if r == nil || r["Coordinator"] != strconv.Itoa(int(l.Coordinator)) || r["ProducerId"] != strconv.FormatInt(l.ProducerID, 10) || r["TransactionState"] != l.State {
				t.Errorf("row %v, kadm lists %+v", r, l)
			}
		})
		if byID["txn-held"]["TransactionState"] != "Ongoing" || byID["txn-done"]["TransactionState"] != "CompleteCommit" {
			t.Fatalf("states: %v", rows)
		}
		// Flags after the command, the connection flag after it too.
		rows = txnToolTable(t, mustTool(t, "transactions", "list", "--transactional-id-pattern", "txn-(held|done)", bs), headers...)
		if len(rows) != 2 || rows[0]["TransactionalId"] != "txn-done" || rows[1]["TransactionalId"] != "txn-held" {
			t.Fatalf("--transactional-id-pattern: %v", rows)
		}
		// Only transactions open longer than the filter.
		if rows := txnToolTable(t, txn(t, "list", "--duration-filter", "3600000"), headers...); len(rows) != 0 {
			t.Fatalf("--duration-filter 1h: %v", rows)
		}
		time.Sleep(20 * time.Millisecond)
		rows = txnToolTable(t, txn(t, "list", "--duration-filter", "10"), headers...)
		for _, r := range rows {
			if r["TransactionState"] != "Ongoing" {
				t.Fatalf("--duration-filter 10: %v", rows)
			}
		}
		if len(rows) != 3 {
			t.Fatalf("--duration-filter 10 lists %v, want the 3 open transactions", rows)
		}
	})

	t.Run("describe", func(t *testing.T) {
		before := time.Now().UnixMilli()
		rows := txnToolTable(t, txn(t, "describe", "--transactional-id", "txn-held"), "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
			"TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions")
		if len(rows) != 1 {
			t.Fatalf("rows %v", rows)
		}
		r := rows[0]
		want := map[string]string{"CoordinatorId": strconv.Itoa(int(held.Coordinator)), "TransactionalId": "txn-held", "ProducerId": strconv.FormatInt(held.ProducerID, 10),
			"ProducerEpoch": strconv.Itoa(int(held.ProducerEpoch)), "TransactionState": "Ongoing", "TransactionTimeoutMs": "120000",
			"CurrentTransactionStartTimeMs": strconv.FormatInt(held.StartTimestamp, 10), "TopicPartitions": "held-0"}
		for k, v := range want {
			if r[k] != v {
				t.Errorf("%s = %q, want %q", k, r[k], v)
			}
		}
		dur, err := strconv.ParseInt(r["TransactionDurationMs"], 10, 64)
		if err != nil || dur < before-held.StartTimestamp || dur > time.Now().UnixMilli()-held.StartTimestamp {
			t.Errorf("TransactionDurationMs %q, want the time since %d", r["TransactionDurationMs"], held.StartTimestamp)
		}
		rows = txnToolTable(t, txn(t, "describe", "--transactional-id", "txn-done"), "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
			"TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions")
		if r := rows[0]; r["TransactionState"] != "CompleteCommit" || r["CurrentTransactionStartTimeMs"] != "None" || r["TransactionDurationMs"] != "None" || r["TopicPartitions"] != "" {
			t.Errorf("a completed transaction: %v", r)
		}
		txnToolRefused(t, "Failed to describe transaction state of transactional-id `nosuch`: TRANSACTIONAL_ID_NOT_FOUND", "transactions", bs, "describe", "--transactional-id", "nosuch")
		txnToolRefused(t, "argument --transactional-id is required", "transactions", bs, "describe")
	})

	producerHeaders := []string{"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"}
	t.Run("describe-producers", func(t *testing.T) {
		described, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"held": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		// held's producers: the idempotent one that wrote offset 0, and
		// txn-held's.
		var p kadm.DescribedProducer
		described.EachProducer(func(d kadm.DescribedProducer) {
			if d.ProducerID == held.ProducerID {
				p = d
			}
		})
		for _, extra := range [][]string{nil, {"--broker-id", "0"}} {
			rows := txnToolTable(t, txn(t, append([]string{"describe-producers", "--topic", "held", "--partition", "0"}, extra...)...), producerHeaders...)
			if len(rows) != 2 || rows[0]["CurrentTransactionStartOffset"] != "None" {
				t.Fatalf("%v: rows %v", extra, rows)
			}
			rows = rows[1:]
			want := map[string]string{"ProducerId": strconv.FormatInt(held.ProducerID, 10), "ProducerEpoch": strconv.Itoa(int(p.ProducerEpoch)),
				"LatestCoordinatorEpoch": strconv.Itoa(int(p.CoordinatorEpoch)), "LastSequence": "1", "LastTimestamp": strconv.FormatInt(p.LastTimestamp, 10),
				"CurrentTransactionStartOffset": "1"}
			for k, v := range want {
				if rows[0][k] != v {
					t.Errorf("%v: %s = %q, want %q", extra, k, rows[0][k], v)
				}
			}
		}
		rows := txnToolTable(t, txn(t, "describe-producers", "--topic", "done", "--partition", "0"), producerHeaders...)
		if len(rows) != 1 || rows[0]["CurrentTransactionStartOffset"] != "None" {
			t.Fatalf("a producer with no open transaction: %v", rows)
		}
		txnToolRefused(t, "Failed to describe producers for partition nosuch-0 on leader: UNKNOWN_TOPIC_OR_PARTITION", "transactions", bs, "describe-producers", "--topic", "nosuch", "--partition", "0")
		txnToolRefused(t, "Failed to describe producers for partition held-7 on leader: UNKNOWN_TOPIC_OR_PARTITION", "transactions", bs, "describe-producers", "--topic", "held", "--partition", "7")
		txnToolRefused(t, "argument --partition is required", "transactions", bs, "describe-producers", "--topic", "held")
	})

	hangingHeaders := []string{"Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp", "Duration(min)"}
	t.Run("find-hanging", func(t *testing.T) {
		// With no timeout every open transaction is a candidate; the
		// coordinator counts each partition as part of its transaction, so
		// none hangs.
		time.Sleep(5 * time.Millisecond)
		for _, args := range [][]string{{"--topic", "held", "--max-transaction-timeout", "0"}, {"--topic", "held", "--partition", "0", "--max-transaction-timeout", "0"},
			{"--broker-id", "0", "--max-transaction-timeout", "0"}, {"--broker-id", "0"}} {
			if rows := txnToolTable(t, txn(t, append([]string{"find-hanging"}, args...)...), hangingHeaders...); len(rows) != 0 {
				t.Errorf("%v: healthy transactions reported hanging: %v", args, rows)
			}
		}
		txnToolRefused(t, "The `find-hanging` command requires either --topic or --broker-id to limit the scope of the search", "transactions", bs, "find-hanging")
		txnToolRefused(t, "The --partition argument requires --topic to be provided", "transactions", bs, "find-hanging", "--broker-id", "0", "--partition", "0")
	})

	t.Run("abort by start offset", func(t *testing.T) {
		txnToolRefused(t, "The transaction to abort must be identified either with --start-offset", "transactions", bs, "abort", "--topic", "held", "--partition", "0")
		txnToolRefused(t, "--start-offset and --producer-id both identify the transaction", "transactions", bs, "abort", "--topic", "held", "--partition", "0", "--start-offset", "1", "--producer-id", "5")
		txnToolRefused(t, "Could not find any open transactions starting at offset 0 on partition held-0", "transactions", bs, "abort", "--topic", "held", "--partition", "0", "--start-offset", "0")
		if stable, end := lso(t, "held"); stable != 1 || end != 3 {
			t.Fatalf("before the abort: last stable offset %d, end %d; want 1, 3", stable, end)
		}
		if out := txn(t, "abort", "--topic", "held", "--partition", "0", "--start-offset", "1"); out != "" {
			t.Fatalf("abort printed %q", out)
		}
		// The abort marker is offset 3; the transaction no longer holds
		// the last stable offset.
		if stable, end := lso(t, "held"); stable != 4 || end != 4 {
			t.Fatalf("after the abort: last stable offset %d, end %d; want 4, 4", stable, end)
		}
		rows := txnToolTable(t, txn(t, "describe-producers", "--topic", "held", "--partition", "0"), producerHeaders...)
		for _, r := range rows {
			if r["CurrentTransactionStartOffset"] != "None" {
				t.Fatalf("after the abort: %v", rows)
			}
		}
		if got := consumeIsolated(t, addr, "held", kgo.ReadCommitted(), 1, 200*time.Millisecond); len(got) != 1 || got[0] != "before" {
			t.Fatalf("read_committed after the abort: %v, want [before]", got)
		}
	})

	t.Run("abort by producer id", func(t *testing.T) {
		rows := txnToolTable(t, txn(t, "describe-producers", "--topic", "manual", "--partition", "0"), producerHeaders...)
		if len(rows) != 1 || rows[0]["CurrentTransactionStartOffset"] != "0" {
			t.Fatalf("manual: %v", rows)
		}
		p := rows[0]
		base := []string{"abort", "--topic", "manual", "--partition", "0", "--producer-id", p["ProducerId"]}
		txnToolRefused(t, "Missing required argument --producer-epoch", append([]string{"transactions", bs}, base...)...)
		txnToolRefused(t, "Failed to abort transaction on partition manual-5: UNKNOWN_TOPIC_OR_PARTITION", "transactions", bs, "abort", "--topic", "manual", "--partition", "5",
			"--producer-id", p["ProducerId"], "--producer-epoch", p["ProducerEpoch"], "--coordinator-epoch", "0")
		txnToolRefused(t, "Missing required argument --coordinator-epoch", append([]string{"transactions", bs}, append(base, "--producer-epoch", p["ProducerEpoch"])...)...)
		if stable, _ := lso(t, "manual"); stable != 0 {
			t.Fatalf("the refused aborts moved the last stable offset to %d", stable)
		}
		txn(t, append(base, "--producer-epoch", p["ProducerEpoch"], "--coordinator-epoch", p["LatestCoordinatorEpoch"])...)
		if stable, end := lso(t, "manual"); stable != 2 || end != 2 {
			t.Fatalf("after the abort: last stable offset %d, end %d; want 2, 2", stable, end)
		}
		// The producer's own abort still succeeds and it goes on.
		if err := manual.EndTransaction(ctx, kgo.TryAbort); err != nil {
			t.Fatalf("the producer's own abort: %v", err)
		}
		txnProduce(t, ctx, manual, "manual", []string{"next"}, true)
		if got := consumeIsolated(t, addr, "manual", kgo.ReadCommitted(), 1, 200*time.Millisecond); len(got) != 1 || got[0] != "next" {
			t.Fatalf("read_committed: %v, want [next]", got)
		}
	})

	t.Run("forceTerminateTransaction", func(t *testing.T) {
		before := describe(t, "txn-forced")
		if before.State != "Ongoing" {
			t.Fatalf("txn-forced is %s", before.State)
		}
		txnToolRefused(t, "argument --transactionalId is required", "transactions", bs, "forceTerminateTransaction")
		if out := txn(t, "forceTerminateTransaction", "--transactionalId", "txn-forced"); out != "" {
			t.Fatalf("printed %q", out)
		}
		after := describe(t, "txn-forced")
		if after.State == "Ongoing" || after.ProducerEpoch <= before.ProducerEpoch && after.ProducerID == before.ProducerID {
			t.Fatalf("after forceTerminateTransaction: %+v (before %+v)", after, before)
		}
		waitUntil(t, 10*time.Second, "the aborted transaction's marker is stable", func() bool {
			stable, end := lso(t, "forced")
			return stable == end && end == 2
		})
		// The fenced producer cannot commit what it wrote.
		if err := forced.EndTransaction(ctx, kgo.TryCommit); err == nil {
			t.Fatal("the fenced producer committed")
		}
		if got := consumeIsolated(t, addr, "forced", kgo.ReadCommitted(), 0, 300*time.Millisecond); len(got) != 0 {
			t.Fatalf("read_committed: %v, want nothing", got)
		}
	})

	t.Run("command line", func(t *testing.T) {
		txnToolRefused(t, "too few arguments", "transactions", bs)
		txnToolRefused(t, "argument COMMAND: invalid choice: 'abort-all'", "transactions", bs, "abort-all")
		txnToolRefused(t, "argument --bootstrap-server is required", "transactions", "list")
		txnToolRefused(t, "flag provided but not defined: -transactional-id", "transactions", bs, "list", "--transactional-id", "x")
		txnToolRefused(t, "unrecognized arguments: 'extra'", "transactions", bs, "list", "extra")
		txnToolRefused(t, "--producer-epoch 40000: an epoch is 0 to 32767", "transactions", bs, "abort", "--topic", "held", "--partition", "0",
			"--producer-id", "1", "--producer-epoch", "40000", "--coordinator-epoch", "0")
		if _, errOut, code := runKaas(t, "transactions", bs, "abort", "--help"); code != 0 || !strings.Contains(errOut, "--start-offset") {
			t.Fatalf("abort --help: exit %d, %q", code, errOut)
		}
	})
}

// TestToolsGetOffsetsAndDeleteRecords runs kaas get-offsets
// (kafka-get-offsets.sh) for each --time and partition filter against
// records with known timestamps, then kaas delete-records
// (kafka-delete-records.sh), whose new log start offsets kadm and
// get-offsets see; refused files change nothing.
func TestToolsGetOffsetsAndDeleteRecords(t *testing.T) {
	_, addr := testBroker(t)
	ctx := ctxT(t, time.Minute)
	adm := newAdmin(t, addr)
	bs := "--bootstrap-server=" + addr
	createTopic(t, addr, "offs", 3, nil)
	createTopic(t, addr, "other", 1, nil)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// offs-0: five records at t=1000..5000 (the newest at offset 3);
	// offs-1: two; offs-2: none; other-0: one.
	for i, ts := range []int64{1000, 2000, 3000, 5000, 4000} {
		r := &kgo.Record{Topic: "offs", Partition: 0, Value: []byte(strconv.Itoa(i)), Timestamp: time.UnixMilli(ts)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []*kgo.Record{{Topic: "offs", Partition: 1, Timestamp: time.UnixMilli(1500)}, {Topic: "offs", Partition: 1, Timestamp: time.UnixMilli(2500)},
		{Topic: "other", Partition: 0, Timestamp: time.UnixMilli(1000)}} {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	getOffsets := func(t *testing.T, args ...string) string {
		t.Helper()
		return mustTool(t, append([]string{"get-offsets", bs}, args...)...)
	}

	t.Run("get-offsets --time", func(t *testing.T) {
		cases := []struct {
			times []string
			want  string
		}{
			{[]string{"", "-1", "latest"}, "offs:0:5\noffs:1:2\noffs:2:0\n"},
			{[]string{"-2", "earliest", "-4", "earliest-local"}, "offs:0:0\noffs:1:0\noffs:2:0\n"},
			// The record with the highest timestamp; an empty partition has none.
			{[]string{"-3", "max-timestamp"}, "offs:0:3\noffs:1:1\n"},
			// Nothing is tiered on kaas.
			{[]string{"-5", "latest-tiered"}, ""},
			{[]string{"2500"}, "offs:0:2\noffs:1:1\n"},
			{[]string{"4500"}, "offs:0:3\n"},
			{[]string{"99999999999"}, ""},
		}
		for _, c := range cases {
			for _, tm := range c.times {
				args := []string{"--topic", "offs"}
				if tm != "" {
					args = append(args, "--time", tm)
				}
				if got := getOffsets(t, args...); got != c.want {
					t.Errorf("--time %q: %q, want %q", tm, got, c.want)
				}
			}
		}
	})

	t.Run("get-offsets partitions", func(t *testing.T) {
		cases := []struct {
			args []string
			want string
		}{
			{[]string{"--topic", "offs", "--partitions", "0,2"}, "offs:0:5\noffs:2:0\n"},
			{[]string{"--topic", "o.*", "--partitions", "0"}, "offs:0:5\nother:0:1\n"},
			{[]string{"--topic-partitions", "offs:1-,other"}, "offs:1:2\noffs:2:0\nother:0:1\n"},
			{[]string{"--topic-partitions", "offs:-2"}, "offs:0:5\noffs:1:2\n"},
			{[]string{"--topic-partitions", "offs:1-2"}, "offs:1:2\n"},
			{[]string{"--topic-partitions", "offs:2"}, "offs:2:0\n"},
			{[]string{"--topic-partitions", "oth.*"}, "other:0:1\n"},
			{[]string{"--topic-partitions", ":0", "--exclude-internal-topics"}, "offs:0:5\nother:0:1\n"},
		}
		for _, c := range cases {
			if got := getOffsets(t, c.args...); got != c.want {
				t.Errorf("%q: %q, want %q", c.args, got, c.want)
			}
		}
		// Every topic by default, internal ones too unless excluded.
		md, err := adm.Metadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, external := getOffsets(t), getOffsets(t, "--exclude-internal-topics")
		for _, td := range md.Topics {
			for p := range td.Partitions {
				line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(td.Topic+":"+strconv.Itoa(int(p))) + `:\d+$`)
				if !line.MatchString(all) {
					t.Errorf("%s-%d missing from %q", td.Topic, p, all)
				}
				if line.MatchString(external) == td.IsInternal {
					t.Errorf("--exclude-internal-topics: %s-%d (internal %v) in %q", td.Topic, p, td.IsInternal, external)
				}
			}
		}
	})

	t.Run("get-offsets refusals", func(t *testing.T) {
		txnToolRefused(t, "--topic-partitions cannot be used with --topic or --partitions", "get-offsets", bs, "--topic-partitions", "offs", "--topic", "offs")
		txnToolRefused(t, "Malformed time argument yesterday.", "get-offsets", bs, "--time", "yesterday")
		txnToolRefused(t, "--partitions expects a comma separated list of numeric partition ids, but received: 0,x", "get-offsets", bs, "--partitions", "0,x")
		txnToolRefused(t, "Invalid rule specification: offs:x", "get-offsets", bs, "--topic-partitions", "offs:x")
		txnToolRefused(t, "Could not match any topic-partitions with the specified filters", "get-offsets", bs, "--topic", "nosuch")
		txnToolRefused(t, "Could not match any topic-partitions with the specified filters", "get-offsets", bs, "--topic", "offs", "--partitions", "9")
		txnToolRefused(t, `Missing required argument "[bootstrap-server]"`, "get-offsets", "--topic", "offs")
	})

	startOffsets := func(t *testing.T) map[string]int64 {
		t.Helper()
		l, err := adm.ListStartOffsets(ctx, "offs", "other")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		l.Each(func(o kadm.ListedOffset) { out[o.Topic+"-"+strconv.Itoa(int(o.Partition))] = o.Offset })
		return out
	}
	writeJSON := func(t *testing.T, s string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "offsets.json")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	deleteRecords := func(t *testing.T, json string) (string, string, int) {
		t.Helper()
		return runKaas(t, "delete-records", bs, "--offset-json-file", writeJSON(t, json))
	}

	t.Run("delete-records refusals", func(t *testing.T) {
		before := startOffsets(t)
		for _, c := range []struct{ json, want string }{
			{`{"partitions":[{"topic":"offs","partition":0,"offset":1},{"topic":"offs","partition":0,"offset":2}],"version":1}`, "Offset json file contains duplicate topic partitions: offs-0"},
			{`{"partitions":[{"topic":"offs","partition":0,"offset":1}`, "The input string is not a valid JSON"},
			{`{"partitions":[{"topic":"offs","partition":0,"offset":1}],"version":2}`, "Not supported version field value 2"},
			{`{"version":1}`, "Missing partitions field"},
			{`{"partitions":[{"topic":"offs","partition":0}]}`, "No such field exists: `offset`"},
			{`{"partitions":[{"topic":"offs","partition":"zero","offset":1}]}`, `partition: "zero" is not a int`},
		} {
			out, errOut, code := deleteRecords(t, c.json)
			if code == 0 || !strings.Contains(errOut, c.want) || out != "" {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want a refusal saying %q", c.json, code, out, errOut, c.want)
			}
		}
		txnToolRefused(t, `Missing required argument "[offset-json-file]"`, "delete-records", bs)
		txnToolRefused(t, "--offset-json-file: open", "delete-records", bs, "--offset-json-file", filepath.Join(t.TempDir(), "missing.json"))
		if after := startOffsets(t); !maps.Equal(before, after) {
			t.Fatalf("refused commands moved log start offsets: %v -> %v", before, after)
		}
	})

	t.Run("delete-records", func(t *testing.T) {
		out, errOut, code := deleteRecords(t, `{"partitions": [{"topic": "offs", "partition": 0, "offset": 3}, {"topic": "offs", "partition": 1, "offset": -1}], "version": 1}`)
		want := "Executing records delete operation\nRecords delete operation completed:\npartition: offs-0\tlow_watermark: 3\npartition: offs-1\tlow_watermark: 2\n"
		if code != 0 || out != want {
			t.Fatalf("exit %d, stdout %q (want %q), stderr %q", code, out, want, errOut)
		}
		if got := startOffsets(t); got["offs-0"] != 3 || got["offs-1"] != 2 || got["offs-2"] != 0 || got["other-0"] != 0 {
			t.Fatalf("log start offsets %v", got)
		}
		if got := getOffsets(t, "--topic", "offs", "--time", "earliest"); got != "offs:0:3\noffs:1:2\noffs:2:0\n" {
			t.Fatalf("get-offsets --time earliest: %q", got)
		}
		// Per-partition failures: printed as Kafka does, and the exit
		// status says some failed; the others are deleted.
		out, errOut, code = deleteRecords(t, `{"partitions": [{"topic": "nosuch", "partition": 0, "offset": 1}, {"topic": "offs", "partition": 0, "offset": 99}, {"topic": "other", "partition": 0, "offset": 1}]}`)
		if code == 0 || !strings.Contains(errOut, "records were not deleted from 2 of 3 partition(s)") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		for _, line := range []string{"partition: nosuch-0\terror: UNKNOWN_TOPIC_OR_PARTITION", "partition: offs-0\terror: OFFSET_OUT_OF_RANGE", "partition: other-0\tlow_watermark: 1\n"} {
			if !strings.Contains(out, line) {
				t.Errorf("stdout %q lacks %q", out, line)
			}
		}
		if got := startOffsets(t); got["offs-0"] != 3 || got["other-0"] != 1 {
			t.Fatalf("log start offsets %v", got)
		}
	})
}
