package kafkacli

import (
	"bytes"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestTxnTable: Kafka's prettyPrintTable layout, each cell padded to its
// column's widest and followed by a tab.
func TestTxnTable(t *testing.T) {
	var b bytes.Buffer
	txnTable(&b, []string{"Id", "State"}, [][]string{{"long-id", "Ongoing"}, {"x", "Empty"}})
	want := "Id     \tState  \t\nlong-id\tOngoing\t\nx      \tEmpty  \t\n"
	if b.String() != want {
		t.Fatalf("%q, want %q", b.String(), want)
	}
	b.Reset()
	txnTable(&b, []string{"Topic", "Partition"}, nil)
	if b.String() != "Topic\tPartition\t\n" {
		t.Fatalf("empty table %q", b.String())
	}
}

// TestTxnArgs: the command line's order (connection flags, command, its
// flags) and each command's checks, made before connecting.
func TestTxnArgs(t *testing.T) {
	ok := []struct {
		args    []string
		command string
		check   func(*txnOpts) bool
	}{
		{[]string{"--bootstrap-server", "b:9092", "list"}, "list", func(o *txnOpts) bool { return o.durationFilter == -1 && !o.set["transactional-id-pattern"] }},
		{[]string{"list", "--bootstrap-server", "b:9092", "--duration-filter", "5"}, "list", func(o *txnOpts) bool { return o.durationFilter == 5 && o.conn.Bootstrap == "b:9092" }},
		{[]string{"--bootstrap-server", "a:1", "--command-config", "c.properties", "describe", "--transactional-id", "t"}, "describe",
			func(o *txnOpts) bool {
				return o.transactionalID == "t" && o.conn.CommandConfig == "c.properties" && o.conn.Bootstrap == "a:1"
			}},
		{[]string{"--bootstrap-server", "a:1", "abort", "--topic", "t", "--partition", "2", "--producer-id", "7", "--producer-epoch", "3", "--coordinator-epoch", "-1"}, "abort",
			func(o *txnOpts) bool {
				return o.producerID == 7 && o.producerEpoch == 3 && o.coordinatorEpoch == -1 && o.partition == 2
			}},
		{[]string{"--bootstrap-server", "a:1", "find-hanging", "--broker-id", "0"}, "find-hanging", func(o *txnOpts) bool { return o.maxTransactionTimeout == 15 }},
	}
	for _, c := range ok {
		o, err := parseTxnArgs(c.args, io.Discard)
		if err != nil || o.command != c.command || !c.check(o) {
			t.Errorf("%q: %+v, %v", c.args, o, err)
		}
	}
	refused := []struct {
		args []string
		want string
	}{
		{[]string{"--bootstrap-server", "a:1"}, "too few arguments"},
		{[]string{"--bootstrap-server", "a:1", "commit"}, "invalid choice: 'commit'"},
		{[]string{"describe", "--transactional-id", "t"}, "argument --bootstrap-server is required"},
		{[]string{"--bootstrap-server", "a:1", "describe-producers", "--partition", "0"}, "argument --topic is required"},
		{[]string{"--bootstrap-server", "a:1", "describe-producers", "--topic", "t", "--partition", "-1"}, "--partition -1"},
		{[]string{"--bootstrap-server", "a:1", "abort", "--topic", "t", "--partition", "0"}, "must be identified either with --start-offset"},
		{[]string{"--bootstrap-server", "a:1", "abort", "--topic", "t", "--partition", "0", "--start-offset", "4", "--coordinator-epoch", "1"}, "--start-offset and --coordinator-epoch"},
		{[]string{"--bootstrap-server", "a:1", "abort", "--topic", "t", "--partition", "0", "--producer-id", "4", "--producer-epoch", "1"}, "Missing required argument --coordinator-epoch"},
		{[]string{"--bootstrap-server", "a:1", "find-hanging", "--topic", "t", "--max-transaction-timeout", "-1"}, "--max-transaction-timeout -1"},
		{[]string{"--bootstrap-server", "a:1", "find-hanging", "--partition", "1", "--broker-id", "0"}, "The --partition argument requires --topic"},
		{[]string{"--bootstrap-server", "a:1", "forceTerminateTransaction", "--transactional-id", "t"}, "flag provided but not defined: -transactional-id"},
		{[]string{"--bootstrap-server", "a:1", "list", "--duration-filter", "soon"}, `invalid value "soon" for flag -duration-filter`},
	}
	for _, c := range refused {
		if _, err := parseTxnArgs(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.args, err, c.want)
		}
	}
}

// TestGetOffsetsRules: --topic-partitions patterns as Kafka's
// TOPIC_PARTITION_PATTERN reads them (ranges include the lower bound and
// exclude the upper), and --time's names and numbers.
func TestGetOffsetsRules(t *testing.T) {
	cases := []struct {
		spec     string
		allow    [][2]any
		disallow [][2]any
	}{
		{"orders", [][2]any{{"orders", 0}, {"orders", 99}}, [][2]any{{"orders-x", 0}, {"xorders", 0}}},
		{"orders:2", [][2]any{{"orders", 2}}, [][2]any{{"orders", 1}, {"orders", 3}}},
		{"orders:1-3", [][2]any{{"orders", 1}, {"orders", 2}}, [][2]any{{"orders", 0}, {"orders", 3}}},
		{"orders:3-", [][2]any{{"orders", 3}, {"orders", 1000}}, [][2]any{{"orders", 2}}},
		{"orders:-2", [][2]any{{"orders", 0}, {"orders", 1}}, [][2]any{{"orders", 2}}},
		{":0", [][2]any{{"a", 0}, {"b", 0}}, [][2]any{{"a", 1}}},
		{"ord.*:", [][2]any{{"orders", 7}}, [][2]any{{"x", 0}}},
	}
	for _, c := range cases {
		r, err := getOffsetsParseRule(c.spec)
		if err != nil {
			t.Fatalf("%q: %v", c.spec, err)
		}
		for _, a := range c.allow {
			if !r.allows(a[0].(string), int32(a[1].(int))) {
				t.Errorf("%q does not allow %v", c.spec, a)
			}
		}
		for _, a := range c.disallow {
			if r.allows(a[0].(string), int32(a[1].(int))) {
				t.Errorf("%q allows %v", c.spec, a)
			}
		}
	}
	for _, bad := range []string{"a:b", "a:1:2", "a:1-2-3", "a:99999999999"} {
		if _, err := getOffsetsParseRule(bad); err == nil || !strings.Contains(err.Error(), "Invalid rule specification: "+bad) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if r, _ := getOffsetsParseRule("a:5-"); r.to != math.MaxInt32 {
		t.Errorf("an open range ends at %d", r.to)
	}
	times := map[string]int64{"latest": -1, "-1": -1, "earliest": -2, "-2": -2, "max-timestamp": -3, "-3": -3, "earliest-local": -4, "-4": -4,
		"latest-tiered": -5, "-5": -5, "0": 0, "1700000000000": 1700000000000}
	for s, want := range times {
		if got, err := getOffsetsParseTime(s); err != nil || got != want {
			t.Errorf("--time %s: %d %v, want %d", s, got, err, want)
		}
	}
	for _, bad := range []string{"-6", "now", "1.5", ""} {
		if _, err := getOffsetsParseTime(bad); err == nil || !strings.Contains(err.Error(), "Malformed time argument "+bad+".") {
			t.Errorf("--time %q: %v", bad, err)
		}
	}
}

// TestDeleteRecordsParse: the offset JSON file as Kafka reads it, and its
// refusals.
func TestDeleteRecordsParse(t *testing.T) {
	got, err := deleteRecordsParse([]byte(`{"partitions": [{"topic": "a", "partition": 0, "offset": 10}, {"topic": "b", "partition": 3, "offset": -1}]}`))
	want := []deleteRecordsTarget{{"a", 0, 10}, {"b", 3, -1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v %v, want %+v", got, err, want)
	}
	for _, c := range []struct{ in, want string }{
		{`not json`, "The input string is not a valid JSON"},
		{`{"partitions": []} {}`, "The input string is not a valid JSON"},
		{`{"partitions": [], "version": 3}`, "Not supported version field value 3"},
		{`{"partitions": [], "version": "1"}`, `version: "1" is not an int`},
		{`{}`, "Missing partitions field"},
		{`{"partitions": {"topic": "a"}}`, "partitions: an array of"},
		{`{"partitions": [{"partition": 0, "offset": 1}]}`, "No such field exists: `topic`"},
		{`{"partitions": [{"topic": "a", "partition": 0, "offset": 1.5}]}`, "offset: 1.5 is not a long"},
		{`{"partitions": [{"topic": "b", "partition": 1, "offset": 1}, {"topic": "a", "partition": 0, "offset": 1}, {"topic": "b", "partition": 1, "offset": 2}, {"topic": "a", "partition": 0, "offset": 3}]}`,
			"Offset json file contains duplicate topic partitions: a-0,b-1"},
	} {
		if _, err := deleteRecordsParse([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
}
