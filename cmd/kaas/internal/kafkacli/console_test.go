package kafkacli

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsoleLineReader: lines split into headers, key and value as
// Kafka's LineMessageReader splits them, with its errors.
func TestConsoleLineReader(t *testing.T) {
	type hdr struct {
		k    string
		v    string
		null bool
	}
	cases := []struct {
		name    string
		props   map[string]string
		line    string
		key     string
		keyNil  bool
		value   string
		valNil  bool
		headers []hdr
		err     string
	}{
		{name: "value only", line: "a\tb", keyNil: true, value: "a\tb"},
		{name: "empty line", line: "", keyNil: true, value: ""},
		{name: "key", props: map[string]string{"parse.key": "true"}, line: "k\tv\tw", key: "k", value: "v\tw"},
		{name: "key separator", props: map[string]string{"parse.key": "TRUE", "key.separator": "::"}, line: "k::v", key: "k", value: "v"},
		{name: "empty key", props: map[string]string{"parse.key": "true"}, line: "\tv", key: "", value: "v"},
		{name: "no key separator", props: map[string]string{"parse.key": "true"}, line: "v", err: "No key separator found on line number 7: 'v'"},
		{name: "no key separator ignored", props: map[string]string{"parse.key": "true", "ignore.error": "true"}, line: "v", keyNil: true, value: "v"},
		{name: "headers and key", props: map[string]string{"parse.key": "true", "parse.headers": "true"}, line: "h1:v1,h2:v:2\tk\tv",
			key: "k", value: "v", headers: []hdr{{k: "h1", v: "v1"}, {k: "h2", v: "v:2"}}},
		{name: "headers only", props: map[string]string{"parse.headers": "true"}, line: "h:1\tv", keyNil: true, value: "v", headers: []hdr{{k: "h", v: "1"}}},
		{name: "headers separator is a regex", props: map[string]string{"parse.headers": "true", "headers.separator": "[;|]"}, line: "a:1;b:2|c:3,4\tv",
			keyNil: true, value: "v", headers: []hdr{{k: "a", v: "1"}, {k: "b", v: "2"}, {k: "c", v: "3,4"}}},
		{name: "trailing header separators dropped", props: map[string]string{"parse.headers": "true"}, line: "a:1,,\tv", keyNil: true, value: "v", headers: []hdr{{k: "a", v: "1"}}},
		{name: "no headers delimiter", props: map[string]string{"parse.headers": "true"}, line: "v", err: "No headers delimiter found on line number 7: 'v'"},
		{name: "header without key separator", props: map[string]string{"parse.headers": "true"}, line: "a\tv", err: "No header key separator found in pair 'a' on line number 7"},
		{name: "header without key separator ignored", props: map[string]string{"parse.headers": "true", "ignore.error": "true"}, line: "a\tv",
			keyNil: true, value: "v", headers: []hdr{{k: "a", null: true}}},
		{name: "null marker", props: map[string]string{"parse.key": "true", "parse.headers": "true", "null.marker": "<N>"}, line: "h:<N>\t<N>\t<N>",
			keyNil: true, valNil: true, headers: []hdr{{k: "h", null: true}}},
		{name: "null headers", props: map[string]string{"parse.key": "true", "parse.headers": "true", "null.marker": "<N>"}, line: "<N>\tk\tv", key: "k", value: "v"},
		{name: "null header key", props: map[string]string{"parse.headers": "true", "null.marker": "N"}, line: "N:1\tv", err: "Header keys should not be equal to the null marker 'N' as they can't be null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := newConsoleLineReader(c.props)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := r.record("t", c.line, 7)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("got %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (rec.Key == nil) != c.keyNil || string(rec.Key) != c.key {
				t.Errorf("key %q (nil %v), want %q (nil %v)", rec.Key, rec.Key == nil, c.key, c.keyNil)
			}
			if (rec.Value == nil) != c.valNil || string(rec.Value) != c.value {
				t.Errorf("value %q (nil %v), want %q (nil %v)", rec.Value, rec.Value == nil, c.value, c.valNil)
			}
			if len(rec.Headers) != len(c.headers) {
				t.Fatalf("headers %v, want %v", rec.Headers, c.headers)
			}
			for i, h := range c.headers {
				got := rec.Headers[i]
				if got.Key != h.k || string(got.Value) != h.v || (got.Value == nil) != h.null {
					t.Errorf("header %d: %q=%q (nil %v), want %+v", i, got.Key, got.Value, got.Value == nil, h)
				}
			}
		})
	}
}

// TestConsoleLineReaderRefusals: the separators Kafka refuses to have
// equal, and settings the reader does not have.
func TestConsoleLineReaderRefusals(t *testing.T) {
	for props, want := range map[string]string{
		"headers.delimiter=,":      "headers.delimiter and headers.separator may not be equal",
		"headers.key.separator=\t": "headers.delimiter and headers.key.separator may not be equal",
		"headers.separator=:":      "headers.separator and headers.key.separator may not be equal",
		"null.marker=\t":           "null.marker and key.separator may not be equal",
		"null.marker=,":            "null.marker and headers.separator may not be equal",
		"headers.separator=(":      "headers.separator=( is not a regular expression",
		"parse.value=true":         "--property parse.value: the line reader reads only",
	} {
		kv, err := consoleKeyValues("property", []string{props})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newConsoleLineReader(kv); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", props, err, want)
		}
	}
}

// TestConsoleFormatter: DefaultMessageFormatter's fields, order, labels,
// separators and deserializers.
func TestConsoleFormatter(t *testing.T) {
	rec := &kgo.Record{
		Topic: "t", Partition: 2, Offset: 17, LeaderEpoch: 3, Timestamp: time.UnixMilli(1700000000000),
		Key: []byte("k"), Value: []byte("v"),
		Headers: []kgo.RecordHeader{{Key: "h1", Value: []byte("a")}, {Key: "h2"}},
	}
	all := "print.timestamp=true,print.partition=true,print.offset=true,print.headers=true,print.key=true"
	cases := []struct {
		props string
		rec   *kgo.Record
		want  string
		err   string
	}{
		{"", rec, "v\n", ""},
		{all, rec, "CreateTime:1700000000000\tPartition:2\tOffset:17\th1:a,h2:null\tk\tv\n", ""},
		{all + ",print.value=false", rec, "CreateTime:1700000000000\tPartition:2\tOffset:17\th1:a,h2:null\tk\n", ""},
		{"print.value=false", rec, "", ""},
		{"print.timestamp=true,print.value=false", rec, "CreateTime:1700000000000\n", ""},
		{"print.epoch=true,print.delivery=true", rec, "Delivery:NOT_PRESENT\tEpoch:3\tv\n", ""},
		{"print.epoch=true", &kgo.Record{LeaderEpoch: -1, Value: []byte("v")}, "Epoch:NOT_PRESENT\tv\n", ""},
		{"print.key=true,print.headers=true,key.separator= | ,line.separator=;,headers.separator=&,null.literal=NIL",
			&kgo.Record{Headers: []kgo.RecordHeader{{Key: "a"}, {Key: "b", Value: []byte("2")}}}, "a:NIL&b:2 | NIL | NIL;", ""},
		{"print.headers=true", &kgo.Record{Value: []byte("v")}, "NO_HEADERS\tv\n", ""},
		{"print.key=true,key.deserializer=org.apache.kafka.common.serialization.IntegerDeserializer,value.deserializer=org.apache.kafka.common.serialization.LongDeserializer",
			&kgo.Record{Key: []byte{0xff, 0xff, 0xff, 0xfe}, Value: []byte{0, 0, 0, 1, 0, 0, 0, 0}}, "-2\t4294967296\n", ""},
		{"value.deserializer=org.apache.kafka.common.serialization.ShortDeserializer", &kgo.Record{Value: []byte{1, 0}}, "256\n", ""},
		{"value.deserializer=org.apache.kafka.common.serialization.IntegerDeserializer", &kgo.Record{Value: []byte{1}}, "", "Size of data received by IntegerDeserializer is not 4"},
		{"value.deserializer=org.apache.kafka.common.serialization.UUIDDeserializer", &kgo.Record{Value: []byte("0F8FAD5B-D9CB-469F-A165-70867728950E")}, "0f8fad5b-d9cb-469f-a165-70867728950e\n", ""},
		{"value.deserializer=org.apache.kafka.common.serialization.UUIDDeserializer", &kgo.Record{Value: []byte("nope")}, "", "Error parsing data into UUID"},
		{"value.deserializer=org.apache.kafka.common.serialization.StringDeserializer", &kgo.Record{Value: []byte("a\xffb")}, "a\uFFFDb\n", ""},
		{"value.deserializer=org.apache.kafka.common.serialization.ByteArrayDeserializer", &kgo.Record{Value: []byte("a\xffb")}, "a\xffb\n", ""},
	}
	for _, c := range cases {
		props := map[string]string{}
		if c.props != "" {
			for _, kv := range strings.Split(c.props, ",") {
				k, v, _ := strings.Cut(kv, "=")
				props[k] = v
			}
		}
		f, err := newConsoleFormatter(props)
		if err != nil {
			t.Fatalf("%s: %v", c.props, err)
		}
		got, err := f.format(nil, c.rec)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: got %v, want %q", c.props, err, c.err)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.props, got, err, c.want)
		}
	}
	for _, bad := range []string{"print.everything", "key.deserializer"} {
		props := map[string]string{bad: "x"}
		if _, err := newConsoleFormatter(props); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: got %v, want a refusal naming it", bad, err)
		}
	}
}

// TestConsoleProperties: key=value arguments and Java's escapes in a
// properties file.
func TestConsoleProperties(t *testing.T) {
	kv, err := consoleKeyValues("property", []string{"a=b=c", "flag", "e="})
	if err != nil || kv["a"] != "b=c" || kv["flag"] != "" || kv["e"] != "" {
		t.Fatalf("got %v, %v", kv, err)
	}
	if _, err := consoleKeyValues("property", []string{"=x"}); err == nil || !strings.Contains(err.Error(), "--property") {
		t.Fatalf("=x: got %v", err)
	}
	for in, want := range map[string]string{`\t`: "\t", `a\nb`: "a\nb", `\u0041\\`: `A\`, `\:`: ":", `plain`: "plain"} {
		if got := consoleUnescape(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
	args := consoleJoinOptional([]string{"--compression-codec", "zstd", "--sync", "--compression-codec", "--topic", "t"}, "compression-codec")
	if strings.Join(args, " ") != "--compression-codec=zstd --sync --compression-codec --topic t" {
		t.Fatalf("got %q", args)
	}
}

// TestConsumeOpts: the consumer properties every consuming tool maps
// alike: max.poll.records returned, the fetch settings checked, and a
// fetch.max.wait.ms below franz-go's 10 ms floor (Kafka's 0) accepted.
func TestConsumeOpts(t *testing.T) {
	for _, c := range []struct {
		props   map[string]string
		pollMax int
		err     string
	}{
		{map[string]string{}, 500, ""},
		{map[string]string{"max.poll.records": "7", "isolation.level": "read_committed", "fetch.max.wait.ms": "0",
			"fetch.min.bytes": "1", "fetch.max.bytes": "1048576", "max.partition.fetch.bytes": "65536", "client.rack": "r1"}, 7, ""},
		{map[string]string{"max.poll.records": "0"}, 0, "Invalid value 0 for configuration max.poll.records: Value must be at least 1"},
		{map[string]string{"isolation.level": "serializable"}, 0, "Invalid value serializable for configuration isolation.level"},
		{map[string]string{"fetch.max.bytes": "0"}, 0, "fetch.max.bytes 0: kaas's client takes 1 to 1073741824"},
		{map[string]string{"fetch.max.wait.ms": "soon"}, 0, "Invalid value soon for configuration fetch.max.wait.ms: Not a number"},
	} {
		p := &consoleClientProps{props: c.props, given: map[string]bool{}}
		opts, pollMax, err := p.consumeOpts()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.props, err, c.err)
			}
			continue
		}
		if err != nil || pollMax != c.pollMax {
			t.Errorf("%v: max.poll.records %d, error %v; want %d", c.props, pollMax, err, c.pollMax)
			continue
		}
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:1"), kgo.ConsumeTopics("t"))...)
		if err != nil {
			t.Errorf("%v: the options make no client: %v", c.props, err)
			continue
		}
		cl.Close()
	}
}
