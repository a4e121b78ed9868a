package main

// kafka-python (Debian's python3-kafka, 2.0.2) against a started `kaas`
// binary over loopback TCP: its producer with every compression codec, its
// own classic consumer-group coordinator, and its KafkaAdminClient. The
// scripts are in testdata/kafkapython; each prints one JSON object that the
// tests check, reading the records back with franz-go as well.
//
// kafka-python 2.0.2 predates Kafka 4: it sends ApiVersions v0, infers a
// broker version from the versions listed (2.5 when DescribeAcls v2 is
// listed, as on Kafka 2.5 and later) and then sends the request versions
// of that release, all of them within what Kafka 4 still serves (KIP-896).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaPython is Debian's interpreter, the one python3-kafka installs for
// (python3 on PATH may be another one without it).
const kafkaPython = "/usr/bin/python3"

// kafkaPythonAbortOn are kafka-python errors about the broker's answers that
// it may retry until the script's own timeout; "socket disconnected" is the
// broker closing a connection (kaas does on a request version it does not
// serve).
var kafkaPythonAbortOn = []string{"UnsupportedVersionError", "CorrelationIdError", "UnrecognizedBrokerVersion", "IncompatibleBrokerVersion", "KafkaProtocolError", "socket disconnected"}

// kafkaPythonDir is testdata/kafkapython; it fails the test when kafka-python
// or the compression libraries the scripts use are not installed.
func kafkaPythonDir(t *testing.T) string {
	t.Helper()
	return pythonScripts(t, "kafkapython", "import kafka, snappy, lz4.frame, zstandard; print(kafka.__version__)", "kafka-python and its codecs")
}

// pythonScripts is testdata/<dir>, the scripts of a Python client; it fails
// the test when Debian's python3 cannot run probe, which imports what
// (the client and what its scripts use).
func pythonScripts(t *testing.T, dir, probe, what string) string {
	t.Helper()
	out, err := exec.Command(kafkaPython, "-c", probe).CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import %s (%v: %s): %s", kafkaPython, what, err, strings.TrimSpace(string(out)), installHint)
	}
	abs, err := filepath.Abs(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// runKafkaPython runs a script of testdata/kafkapython and decodes its JSON
// output into out; its stderr (kafka-python's log) goes to the test log.
func runKafkaPython(t *testing.T, timeout time.Duration, script string, out any, args ...string) {
	t.Helper()
	runKafkaPythonAbortOn(t, timeout, kafkaPythonAbortOn, script, out, args...)
}

func runKafkaPythonAbortOn(t *testing.T, timeout time.Duration, abortOn []string, script string, out any, args ...string) {
	t.Helper()
	runPythonScript(t, kafkaPythonDir(t), timeout, abortOn, script, out, args...)
}

// runPythonScript runs script of dir (see pythonScripts), killing it when
// its stderr shows one of abortOn, and decodes its JSON output into out;
// its stderr (the client's log) goes to the test log.
func runPythonScript(t *testing.T, dir string, timeout time.Duration, abortOn []string, script string, out any, args ...string) {
	t.Helper()
	// -B: no __pycache__ written into the source tree.
	res := runToolAbortOn(t, timeout, dir, "", abortOn, kafkaPython, append([]string{"-B", script}, args...)...)
	if strings.TrimSpace(res.Stderr) != "" {
		t.Logf("%s stderr:\n%s", script, truncate(res.Stderr, 4000))
	}
	if err := json.Unmarshal([]byte(res.Stdout), out); err != nil {
		t.Fatalf("%s output: %v\n%s", script, err, truncate(res.Stdout, 4000))
	}
	t.Logf("%s took %v", script, res.Took.Round(time.Millisecond))
}

// kpyRecord is a record kafka-python's consumer returned.
type kpyRecord struct {
	Topic     string      `json:"topic"`
	Partition int32       `json:"partition"`
	Offset    int64       `json:"offset"`
	Key       string      `json:"key"`
	Value     string      `json:"value"`
	Headers   [][2]string `json:"headers"`
}

// kpyProduceConsume is produce-consume.py's output.
type kpyProduceConsume struct {
	Created     map[string]int16    `json:"created"`
	Assignments map[string][]string `json:"assignments"`
	Produced    []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
		Key       string `json:"key"`
		Value     string `json:"value"`
	} `json:"produced"`
	Members map[string]struct {
		Records   []kpyRecord      `json:"records"`
		Committed map[string]int64 `json:"committed"`
		Error     *string          `json:"error"`
		Alive     bool             `json:"alive"`
	} `json:"members"`
}

// kpyCodecs are the codecs kafka-python's producer compresses with, and the
// codec number each leaves in the stored batches' attributes.
var kpyCodecs = []struct {
	name string
	attr int16
}{{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}

func TestExternalKafkaPython(t *testing.T) {
	kafkaPythonDir(t)
	k := startKaas(t)
	const n, prefix, group = 300, "kpy", "kpy-group"
	// highs are the high watermarks of every partition produced to, by
	// "topic/partition": the offsets the group must have committed.
	highs := map[string]int64{}
	t.Run("ProduceConsumeGroup", func(t *testing.T) {
		highs = testKafkaPythonProduceConsume(t, k.Addr, prefix, group, n)
	})
	t.Run("Admin", func(t *testing.T) {
		if len(highs) == 0 {
			t.Fatal("needs the group ProduceConsumeGroup commits to")
		}
		testKafkaPythonAdmin(t, k.Addr, "kpy-admin", group, highs)
	})
	t.Run("PinnedBefore011", func(t *testing.T) {
		testKafkaPythonPinned(t, k.Addr, "kpy-pinned")
	})
}

// testKafkaPythonPinned: kafka-python told the broker is 0.10.1
// (api_version=(0, 10, 1), set by users to skip its probe; anything below
// (0, 11, 0) alike) produces with Produce v2, which Kafka 4 lists in
// ApiVersions but does not serve: the broker closes the connection, as
// Kafka's socket server does, the send fails with KafkaConnectionError and
// nothing is appended.
func testKafkaPythonPinned(t *testing.T, addr, topic string) {
	createTopic(t, addr, topic, 1, nil)
	var out struct {
		Error    string          `json:"error"`
		Produced json.RawMessage `json:"produced"`
	}
	runKafkaPythonAbortOn(t, 30*time.Second, nil, "pinned.py", &out, addr, topic)
	if out.Error != "KafkaConnectionError" || out.Produced != nil {
		t.Errorf("send pinned to 0.10.1: error %q, produced %s; want KafkaConnectionError (the connection closed)", out.Error, out.Produced)
	}
	ends, err := kadm.NewClient(newClient(t, addr)).ListEndOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != 0 {
			t.Errorf("%s/%d: end offset %d (%v), want 0: nothing appended", o.Topic, o.Partition, o.Offset, o.Err)
		}
	})
}

// testKafkaPythonProduceConsume: an acks=all producer per codec sends keyed
// records with headers to a 3-partition topic while two consumers of one
// group, which split the 12 partitions before the first record, read them
// and commit. Every record is read once, in per-key order, by the member
// owning its partition; the committed offsets are the high watermarks; the
// stored batches carry the codec. Returns the high watermarks.
func testKafkaPythonProduceConsume(t *testing.T, addr, prefix, group string, n int) map[string]int64 {
	var out kpyProduceConsume
	runKafkaPython(t, 60*time.Second, "produce-consume.py", &out, addr, prefix, strconv.Itoa(n), group, strings.Join(kpyCodecNames(), ","))
	return checkPyProduceConsume(t, addr, prefix, group, n, out, false)
}

func kpyCodecNames() []string {
	codecs := make([]string, len(kpyCodecs))
	for i, c := range kpyCodecs {
		codecs[i] = c.name
	}
	return codecs
}

// checkPyProduceConsume checks the output of a Python client's
// produce-consume.py (kafkapython's or confluentkafka's, which print the
// same): n records per codec of kpyCodecs to topics prefix-<codec>, read by
// the two members of group. idempotent: each topic's stored batches carry
// one producer id and sequences that start at 0 and run with the offsets.
// Returns the high watermarks.
func checkPyProduceConsume(t *testing.T, addr, prefix, group string, n int, out kpyProduceConsume, idempotent bool) map[string]int64 {
	codecs := kpyCodecNames()
	allParts := map[string]bool{}
	for _, c := range codecs {
		topic := prefix + "-" + c
		if code, ok := out.Created[topic]; !ok || code != 0 {
			t.Errorf("create_topics %s: error code %d (answered %v)", topic, code, ok)
		}
		for p := 0; p < 3; p++ {
			allParts[fmt.Sprintf("%s/%d", topic, p)] = true
		}
	}

	// The two members split the partitions.
	owner := map[string]string{}
	for m, parts := range out.Assignments {
		if len(parts) == 0 {
			t.Errorf("member %s was assigned nothing", m)
		}
		for _, p := range parts {
			if o, dup := owner[p]; dup {
				t.Errorf("partition %s assigned to %s and %s", p, o, m)
			}
			owner[p] = m
		}
	}
	if len(out.Assignments) != 2 || len(owner) != len(allParts) {
		t.Errorf("assignments %v, want two members splitting %d partitions", out.Assignments, len(allParts))
	}

	// What the producer was told, per value.
	sent := map[string]consumed{}
	for _, p := range out.Produced {
		sent[p.Value] = consumed{Partition: p.Partition, Offset: p.Offset, Key: p.Key, Value: p.Value}
	}
	if len(out.Produced) != n*len(codecs) || len(sent) != len(out.Produced) {
		t.Errorf("producer acknowledged %d records (%d distinct), want %d", len(out.Produced), len(sent), n*len(codecs))
	}

	byTopic := map[string][]consumed{}
	perMember := map[string]int{}
	for name, m := range out.Members {
		if m.Error != nil || m.Alive {
			t.Errorf("member %s: error %v, still running %v", name, m.Error, m.Alive)
		}
		perMember[name] = len(m.Records)
		for _, r := range m.Records {
			tp := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			if owner[tp] != name {
				t.Errorf("member %s read %s offset %d, assigned to %q", name, tp, r.Offset, owner[tp])
			}
			c := consumed{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
			if s, ok := sent[r.Value]; ok && (s.Partition != c.Partition || s.Offset != c.Offset) {
				t.Errorf("%s: read at %s offset %d, acknowledged at partition %d offset %d", r.Value, tp, r.Offset, s.Partition, s.Offset)
			}
			checkKpyHeaders(t, r.Topic, r.Value, r.Headers)
			byTopic[r.Topic] = append(byTopic[r.Topic], c)
		}
	}
	for name, got := range perMember {
		if got == 0 {
			t.Errorf("member %s read no record", name)
		}
	}

	highs := map[string]int64{}
	ctx := ctxT(t, 20*time.Second)
	adm := kadm.NewClient(newClient(t, addr))
	for _, c := range kpyCodecs {
		topic := prefix + "-" + c.name
		want := keyedMessages(topic, n, 10, "")
		// kafka-python's consumer, then franz-go reading the log itself.
		checkConsumed(t, want, byTopic[topic], 3)
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatalf("ListEndOffsets %s: %v", topic, err)
		}
		parts := map[int32]int64{}
		ends.Each(func(o kadm.ListedOffset) {
			parts[o.Partition] = o.Offset
			highs[fmt.Sprintf("%s/%d", topic, o.Partition)] = o.Offset
		})
		records := franzReadRecords(t, addr, topic, parts)
		got := make([]consumed, len(records))
		for i, r := range records {
			got[i] = consumed{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)}
			hs := make([][2]string, len(r.Headers))
			for j, h := range r.Headers {
				hs[j] = [2]string{h.Key, string(h.Value)}
			}
			checkKpyHeaders(t, topic, string(r.Value), hs)
		}
		checkConsumed(t, want, got, 3)
		producers := map[int64]bool{}
		compressed := 0
		var plain []kpyPlainBatch
		for p := int32(0); p < 3; p++ {
			for _, b := range rawBatches(t, addr, topic, p) {
				// Both clients send a batch uncompressed when the codec
				// would not shrink it: librdkafka's are then of one small
				// record; kafka-python's framing (snappy's xerial header)
				// leaves batches of a few records so too, checked below
				// with its own encoders.
				switch codec := b.Attributes & 0x07; {
				case codec == c.attr:
					compressed++
				case codec != 0 || (idempotent && b.NumRecords > 1):
					t.Errorf("%s/%d batch at %d of %d records: codec attribute %d, want %d (%s)", topic, p, b.FirstOffset, b.NumRecords, codec, c.attr, c.name)
				case b.NumRecords > 1:
					plain = append(plain, kpyPlainBatch{fmt.Sprintf("%s/%d", topic, p), c.name, b})
				}
				producers[b.ProducerID] = true
				if idempotent && (b.ProducerID < 0 || int64(b.FirstSequence) != b.FirstOffset) {
					t.Errorf("%s/%d batch at %d: producer id %d, sequence %d; want an idempotent producer's, sequence = offset", topic, p, b.FirstOffset, b.ProducerID, b.FirstSequence)
				}
			}
		}
		if idempotent && len(producers) != 1 {
			t.Errorf("%s: batches of producer ids %v, want one", topic, producers)
		}
		if compressed == 0 {
			t.Errorf("%s: no batch in the log is %s-compressed", topic, c.name)
		}
		checkKpyPlainBatches(t, plain)
	}

	// Each member's committed offsets (OffsetFetch by kafka-python) and the
	// group's as franz-go fetches them: the high watermarks.
	for name, m := range out.Members {
		want := map[string]int64{}
		for _, p := range out.Assignments[name] {
			want[p] = highs[p]
		}
		if !reflect.DeepEqual(m.Committed, want) {
			t.Errorf("member %s committed %v, want %v", name, m.Committed, want)
		}
	}
	if committed := groupOffsets(t, addr, group); !reflect.DeepEqual(committed, highs) {
		t.Errorf("group %s committed %v, want the high watermarks %v", group, committed, highs)
	}
	return highs
}

// groupOffsets is group's committed offsets by "topic/partition", as
// franz-go's kadm fetches them.
func groupOffsets(t *testing.T, addr, group string) map[string]int64 {
	t.Helper()
	fetched, err := newAdmin(t, addr).FetchOffsets(ctxT(t, 10*time.Second), group)
	if err != nil {
		t.Fatalf("FetchOffsets %s: %v", group, err)
	}
	committed := map[string]int64{}
	fetched.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Errorf("FetchOffsets %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		committed[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.At
	})
	return committed
}

// checkKpyHeaders: produce-consume.py sends record i of topic <prefix>-<codec>
// with headers i=<i> and codec=<codec>, in that order.
func checkKpyHeaders(t *testing.T, topic, value string, headers [][2]string) {
	t.Helper()
	i, err := strconv.Atoi(value[strings.LastIndexByte(value, '-')+1:])
	codec := topic[strings.LastIndexByte(topic, '-')+1:]
	want := [][2]string{{"i", strconv.Itoa(i)}, {"codec", codec}}
	if err != nil || !reflect.DeepEqual(headers, want) {
		t.Errorf("%s: headers %v, want %v", value, headers, want)
	}
}

// kpyTopic is a topic as admin.py reports describe_topics.
type kpyTopic struct {
	Error      int16 `json:"error"`
	Internal   bool  `json:"internal"`
	Partitions []struct {
		Partition int32   `json:"partition"`
		Leader    int32   `json:"leader"`
		Replicas  []int32 `json:"replicas"`
		Error     int16   `json:"error"`
	} `json:"partitions"`
}

// kpyConfigs is a described resource, by "type/name".
type kpyConfigs map[string]struct {
	Error    int16             `json:"error"`
	Configs  map[string]string `json:"configs"`
	ReadOnly []string          `json:"readOnly"`
}

// kpyRefused is the error an admin call raised.
type kpyRefused *struct {
	Error string `json:"error"`
	Errno int16  `json:"errno"`
}

// testKafkaPythonAdmin: every KafkaAdminClient call of kafka-python 2.0.2
// that kaas serves, with the answers checked; group is the consumer group
// testKafkaPythonProduceConsume left, committed at highs.
func testKafkaPythonAdmin(t *testing.T, addr, topic, group string, highs map[string]int64) {
	var out struct {
		APIVersion  []int            `json:"apiVersion"`
		Create      map[string]int16 `json:"create"`
		CreateAgain kpyRefused       `json:"createAgain"`
		AutoCreated struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
		} `json:"autoCreated"`
		ListTopics     []string            `json:"listTopics"`
		DescribeTopics map[string]kpyTopic `json:"describeTopics"`
		Cluster        struct {
			Brokers    []int32
			Controller int32
		} `json:"cluster"`
		DescribeConfigs       kpyConfigs          `json:"describeConfigs"`
		AlterConfigs          map[string]int16    `json:"alterConfigs"`
		DescribeConfigsAfter  kpyConfigs          `json:"describeConfigsAfter"`
		CreatePartitions      map[string]int16    `json:"createPartitions"`
		CreatePartitionsFewer kpyRefused          `json:"createPartitionsFewer"`
		DescribeTopicsAfter   map[string]kpyTopic `json:"describeTopicsAfter"`
		ListGroups            [][2]string         `json:"listGroups"`
		DescribeGroups        []struct {
			Group        string `json:"group"`
			Error        int16  `json:"error"`
			State        string `json:"state"`
			ProtocolType string `json:"protocolType"`
			Members      int    `json:"members"`
		} `json:"describeGroups"`
		GroupOffsets    map[string]int64 `json:"groupOffsets"`
		DeleteGroups    map[string]int16 `json:"deleteGroups"`
		ListGroupsAfter [][2]string      `json:"listGroupsAfter"`
		DeleteTopics    map[string]int16 `json:"deleteTopics"`
		ListTopicsAfter []string         `json:"listTopicsAfter"`
	}
	runKafkaPython(t, 60*time.Second, "admin.py", &out, addr, topic, group)
	other, auto, missing := topic+"-b", topic+"-auto", topic+"-missing"

	// The broker version kafka-python infers from ApiVersions, and so the
	// request versions it sends.
	if !reflect.DeepEqual(out.APIVersion, []int{2, 5, 0}) {
		t.Errorf("kafka-python inferred broker version %v, want 2.5.0", out.APIVersion)
	}
	if want := map[string]int16{topic: 0, other: 0}; !reflect.DeepEqual(out.Create, want) {
		t.Errorf("create_topics: %v, want %v", out.Create, want)
	}
	if out.CreateAgain == nil || out.CreateAgain.Errno != 36 || out.CreateAgain.Error != "TopicAlreadyExistsError" {
		t.Errorf("create_topics of an existing topic: %+v, want TopicAlreadyExistsError (36)", out.CreateAgain)
	}
	listed := map[string]bool{}
	for _, name := range out.ListTopics {
		listed[name] = true
	}
	for _, name := range []string{topic, other, auto, "__consumer_offsets"} {
		if !listed[name] {
			t.Errorf("list_topics %v lacks %s", out.ListTopics, name)
		}
	}
	if listed[missing] {
		t.Errorf("list_topics %v has %s, which describe_topics (Metadata v5, no auto-creation) named", out.ListTopics, missing)
	}
	if a := out.AutoCreated; a.Topic != auto || a.Partition != 0 || a.Offset != 0 {
		t.Errorf("send to a new topic: %+v, want %s partition 0 offset 0 (auto-created)", a, auto)
	}
	checkTopic := func(call, name string, desc map[string]kpyTopic, partitions int) {
		d, ok := desc[name]
		if !ok || d.Error != 0 || d.Internal || len(d.Partitions) != partitions {
			t.Errorf("%s %s: %+v, want %d partitions", call, name, d, partitions)
			return
		}
		for i, p := range d.Partitions {
			if p.Partition != int32(i) || p.Error != 0 || p.Leader != out.Cluster.Controller || len(p.Replicas) != 1 || p.Replicas[0] != p.Leader {
				t.Errorf("%s %s partition %d: %+v, want led by broker %d, its one replica", call, name, i, p, out.Cluster.Controller)
			}
		}
	}
	checkTopic("describe_topics", topic, out.DescribeTopics, 2)
	checkTopic("describe_topics", other, out.DescribeTopics, 1)
	checkTopic("describe_topics", auto, out.DescribeTopics, 1) // num.partitions
	if d, ok := out.DescribeTopics[missing]; !ok || d.Error != 3 || len(d.Partitions) != 0 {
		t.Errorf("describe_topics %s: %+v (answered %v), want UNKNOWN_TOPIC_OR_PARTITION (3)", missing, d, ok)
	}
	if len(out.Cluster.Brokers) != 1 || out.Cluster.Brokers[0] != out.Cluster.Controller {
		t.Errorf("describe_cluster: %+v, want one broker, the controller", out.Cluster)
	}

	topicRes, brokerRes := "2/"+topic, fmt.Sprintf("4/%d", out.Cluster.Controller)
	if c := out.DescribeConfigs[topicRes]; c.Error != 0 || c.Configs["retention.ms"] != "3600000" || c.Configs["cleanup.policy"] != "delete" || len(c.ReadOnly) != 0 {
		t.Errorf("describe_configs %s: %+v, want retention.ms 3600000 as created, cleanup.policy delete, nothing read-only", topicRes, c)
	}
	// Broker configs named in the request: only those, with the one Kafka
	// cannot change at runtime read-only.
	if c := out.DescribeConfigs[brokerRes]; c.Error != 0 || !reflect.DeepEqual(c.Configs, map[string]string{"num.partitions": "1", "log.cleaner.backoff.ms": "15000"}) || !reflect.DeepEqual(c.ReadOnly, []string{"num.partitions"}) {
		t.Errorf("describe_configs %s: %+v, want num.partitions 1 (read-only) and log.cleaner.backoff.ms 15000", brokerRes, c)
	}
	if want := map[string]int16{topicRes: 0}; !reflect.DeepEqual(out.AlterConfigs, want) {
		t.Errorf("alter_configs: %v, want %v", out.AlterConfigs, want)
	}
	if c := out.DescribeConfigsAfter[topicRes]; c.Error != 0 || c.Configs["retention.ms"] != "7200000" || c.Configs["cleanup.policy"] != "compact" {
		t.Errorf("describe_configs %s after alter_configs: retention.ms %q cleanup.policy %q, want 7200000 and compact", topicRes, c.Configs["retention.ms"], c.Configs["cleanup.policy"])
	}

	if want := map[string]int16{topic: 0}; !reflect.DeepEqual(out.CreatePartitions, want) {
		t.Errorf("create_partitions to 4: %v, want %v", out.CreatePartitions, want)
	}
	if out.CreatePartitionsFewer == nil || out.CreatePartitionsFewer.Errno != 37 {
		t.Errorf("create_partitions to 3 of 4: %+v, want InvalidPartitionsError (37)", out.CreatePartitionsFewer)
	}
	checkTopic("describe_topics after create_partitions", topic, out.DescribeTopicsAfter, 4)

	hasGroup := func(groups [][2]string) bool {
		for _, g := range groups {
			if g == [2]string{group, "consumer"} {
				return true
			}
		}
		return false
	}
	if !hasGroup(out.ListGroups) {
		t.Errorf("list_consumer_groups %v lacks (%s, consumer)", out.ListGroups, group)
	}
	// The members left: the group is Empty. An unknown group is Dead, with
	// no error (DescribeGroups before v6), as Kafka answers.
	if len(out.DescribeGroups) != 2 {
		t.Fatalf("describe_consumer_groups: %+v, want two groups", out.DescribeGroups)
	}
	if g := out.DescribeGroups[0]; g.Group != group || g.Error != 0 || g.State != "Empty" || g.ProtocolType != "consumer" || g.Members != 0 {
		t.Errorf("describe_consumer_groups %s: %+v, want Empty consumer group without members", group, g)
	}
	if g := out.DescribeGroups[1]; g.Group != "kpy-no-such-group" || g.Error != 0 || g.State != "Dead" || g.Members != 0 {
		t.Errorf("describe_consumer_groups of an unknown group: %+v, want Dead", g)
	}
	if !reflect.DeepEqual(out.GroupOffsets, highs) {
		t.Errorf("list_consumer_group_offsets %s: %v, want %v", group, out.GroupOffsets, highs)
	}
	if want := map[string]int16{group: 0}; !reflect.DeepEqual(out.DeleteGroups, want) {
		t.Errorf("delete_consumer_groups: %v, want %v", out.DeleteGroups, want)
	}
	if hasGroup(out.ListGroupsAfter) {
		t.Errorf("list_consumer_groups after delete_consumer_groups: %v still has %s", out.ListGroupsAfter, group)
	}
	if want := map[string]int16{topic: 0, other: 0, auto: 0}; !reflect.DeepEqual(out.DeleteTopics, want) {
		t.Errorf("delete_topics: %v, want %v", out.DeleteTopics, want)
	}
	after := append([]string(nil), out.ListTopicsAfter...)
	sort.Strings(after)
	for _, name := range after {
		if name == topic || name == other || name == auto {
			t.Errorf("list_topics after delete_topics still has %s: %v", name, after)
		}
	}
	if len(after) == 0 {
		t.Errorf("list_topics after delete_topics is empty, want the other topics")
	}
}

// kpyPlainBatch is a stored batch of several records that kafka-python
// sent uncompressed although its producer had codec set.
type kpyPlainBatch struct {
	partition string
	codec     string
	batch     kmsg.RecordBatch
}

// checkKpyPlainBatches fails the test for every batch that kafka-python's
// own encoder of its codec (kafka.codec, which its producer calls) would
// have shrunk: the producer sends a batch uncompressed only then.
func checkKpyPlainBatches(t *testing.T, plain []kpyPlainBatch) {
	t.Helper()
	if len(plain) == 0 {
		return
	}
	in := make([][2]string, len(plain))
	for i, p := range plain {
		in[i] = [2]string{p.codec, base64.StdEncoding.EncodeToString(p.batch.Records)}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const encode = `import base64, json, sys
from kafka.codec import gzip_encode, snappy_encode, lz4_encode, zstd_encode
enc = {"gzip": gzip_encode, "snappy": snappy_encode, "lz4": lz4_encode, "zstd": zstd_encode}
print(json.dumps([len(enc[c](base64.b64decode(d))) for c, d in json.load(sys.stdin)]))`
	cmd := exec.Command(kafkaPython, "-B", "-c", encode)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kafka-python's encoders: %v", err)
	}
	var sizes []int
	if err := json.Unmarshal(out, &sizes); err != nil || len(sizes) != len(plain) {
		t.Fatalf("kafka-python's encoders answered %q (%v)", out, err)
	}
	for i, p := range plain {
		if sizes[i] < len(p.batch.Records) {
			t.Errorf("%s batch at %d of %d records: uncompressed, but %s encodes its %d bytes of records in %d", p.partition, p.batch.FirstOffset, p.batch.NumRecords, p.codec, len(p.batch.Records), sizes[i])
		}
	}
}
