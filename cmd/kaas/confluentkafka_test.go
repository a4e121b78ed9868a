package main

// confluent-kafka-python (Debian's python3-confluent-kafka 1.7.0, over
// Debian's librdkafka 2.0.2) against a started `kaas` binary over loopback
// TCP: librdkafka's transactional producer in a consume-transform-produce
// loop, its idempotent producer with every codec, its classic consumer
// group with manual commits, and its AdminClient, which kcat does not
// reach. The scripts are in testdata/confluentkafka; each prints one JSON
// object that the tests check, reading the records back with franz-go too.

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// cfkAbortOn are librdkafka complaints about the broker's answers, which
// it logs to stderr and may retry until the script's own timeout.
var cfkAbortOn = []string{"PROTOERR", "Protocol parse failure", "UNSUPPORTED"}

// confluentKafkaDir is testdata/confluentkafka; it fails the test when
// confluent-kafka-python is not installed for Debian's python3.
func confluentKafkaDir(t *testing.T) string {
	t.Helper()
	return pythonScripts(t, "confluentkafka", "import confluent_kafka; print(confluent_kafka.version(), confluent_kafka.libversion())", "confluent-kafka-python")
}

// runConfluentKafka runs a script of testdata/confluentkafka and decodes
// its JSON output into out; its stderr (librdkafka's log) goes to the test
// log.
func runConfluentKafka(t *testing.T, timeout time.Duration, script string, out any, args ...string) {
	t.Helper()
	runPythonScript(t, confluentKafkaDir(t), timeout, cfkAbortOn, script, out, args...)
}

// cfkError is an error a script caught, as common.error reports it.
type cfkError *struct {
	Name      string `json:"name"`
	Code      int    `json:"code"`
	Fatal     bool   `json:"fatal"`
	Retriable bool   `json:"retriable"`
	Abortable bool   `json:"abortable"`
}

// TestExternalConfluentKafkaTransactions: librdkafka's transactional
// producer (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
// TxnOffsetCommit with the live consumer's generation and member id,
// EndTxn) reading an input topic with a read_committed group consumer that
// must skip an aborted transaction among its inputs; a committed
// transaction and an aborted one, read back by librdkafka and franz-go at
// both isolation levels, the group's offsets those of the commit; then a
// second producer with the same transactional.id fences the first.
func TestExternalConfluentKafkaTransactions(t *testing.T) {
	confluentKafkaDir(t)
	k := startKaas(t)
	const in, out, fence, group, txnID = "cfk-txn-in", "cfk-txn-out", "cfk-txn-fence", "cfk-txn-group", "cfk-txn"
	createTopic(t, k.Addr, in, 2, nil) // the script creates out and fence

	// The input, per partition: 3 records, an aborted transaction of 2, 3
	// more. The consumer must read the 6 and skip the 2.
	ctx := ctxT(t, 20*time.Second)
	manual := kgo.RecordPartitioner(kgo.ManualPartitioner())
	plain := newClient(t, k.Addr, manual)
	txn := newClient(t, k.Addr, manual, kgo.TransactionalID("cfk-txn-input"))
	produce := func(cl *kgo.Client, p int32, value string) int64 {
		t.Helper()
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: in, Partition: p, Key: []byte(fmt.Sprintf("key-%d", p)), Value: []byte(value)}).First()
		if err != nil {
			t.Fatalf("produce %s to %s/%d: %v", value, in, p, err)
		}
		return r.Offset
	}
	// consumed is what the group consumer must read, partition 0 then 1, as
	// "partition/offset/value"; committedOut and abortedOut the outputs of
	// each transaction alike; wantFirst and wantAll the input offsets each
	// transaction sends.
	var consumed, committedOut, abortedOut []string
	wantFirst, wantAll := map[string]int64{}, map[string]int64{}
	for p := int32(0); p < 2; p++ {
		tp := fmt.Sprintf("%s/%d", in, p)
		for i := 0; i < 3; i++ {
			v := fmt.Sprintf("in-a-%d-%d", p, i)
			o := produce(plain, p, v)
			consumed = append(consumed, fmt.Sprintf("%d/%d/%s", p, o, v))
			// The output topic is new: the outputs of the first half take
			// offsets 0-2, the commit marker 3, the second half 4-6.
			committedOut = append(committedOut, fmt.Sprintf("%d/%d/out-%s", p, i, v))
			wantFirst[tp] = o + 1
		}
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produce(txn, p, fmt.Sprintf("in-aborted-%d-0", p))
		produce(txn, p, fmt.Sprintf("in-aborted-%d-1", p))
		if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			v := fmt.Sprintf("in-b-%d-%d", p, i)
			o := produce(plain, p, v)
			consumed = append(consumed, fmt.Sprintf("%d/%d/%s", p, o, v))
			abortedOut = append(abortedOut, fmt.Sprintf("%d/%d/out-%s", p, 4+i, v))
			wantAll[tp] = o + 1
		}
	}

	var res struct {
		Consumed         []string         `json:"consumed"`
		Produced         []string         `json:"produced"`
		CommittedOffsets map[string]int64 `json:"committedOffsets"`
		AbortedOffsets   map[string]int64 `json:"abortedOffsets"`
		GroupCommitted   map[string]int64 `json:"groupCommitted"`
		ReadCommitted    []string         `json:"readCommitted"`
		ReadUncommitted  []string         `json:"readUncommitted"`
		FencedCommit     cfkError         `json:"fencedCommit"`
		FencerCommit     cfkError         `json:"fencerCommit"`
		FenceUncommitted []string         `json:"fenceUncommitted"`
	}
	runConfluentKafka(t, 60*time.Second, "transactions.py", &res, k.Addr, in, out, fence, group, txnID)
	if !slices.Equal(res.Consumed, consumed) {
		t.Errorf("read_committed group consumer read %v, want %v", res.Consumed, consumed)
	}
	// Delivery reports of several partitions come in any order.
	all := append(slices.Clone(committedOut), abortedOut...)
	slices.Sort(all)
	slices.Sort(res.Produced)
	if !slices.Equal(res.Produced, all) {
		t.Errorf("outputs acknowledged %v, want %v", res.Produced, all)
	}
	if !reflect.DeepEqual(res.CommittedOffsets, wantFirst) || !reflect.DeepEqual(res.AbortedOffsets, wantAll) {
		t.Errorf("offsets sent: %v committed, %v aborted; want %v and %v", res.CommittedOffsets, res.AbortedOffsets, wantFirst, wantAll)
	}

	// librdkafka's consumers, then franz-go's: read_committed sees the
	// committed outputs once, read_uncommitted the aborted ones too.
	slices.Sort(res.ReadCommitted)
	slices.Sort(res.ReadUncommitted)
	if !slices.Equal(res.ReadCommitted, committedOut) {
		t.Errorf("librdkafka read_committed read %v, want %v", res.ReadCommitted, committedOut)
	}
	if !slices.Equal(res.ReadUncommitted, all) {
		t.Errorf("librdkafka read_uncommitted read %v, want %v", res.ReadUncommitted, all)
	}
	checkIsolatedReads(t, k.Addr, out, committedOut, all)

	// The group's offsets: the committed transaction's, as the consumer
	// fetched them and as franz-go does.
	if !reflect.DeepEqual(res.GroupCommitted, wantFirst) {
		t.Errorf("consumer.committed(): %v, want %v", res.GroupCommitted, wantFirst)
	}
	if got := groupOffsets(t, k.Addr, group); !reflect.DeepEqual(got, wantFirst) {
		t.Errorf("group %s committed %v, want %v", group, got, wantFirst)
	}

	// Fenced: the first producer's AddPartitionsToTxn is refused
	// (INVALID_PRODUCER_EPOCH to its v0, which librdkafka makes the fatal
	// _FENCED), so its record is never written; the second commits.
	if f := res.FencedCommit; f == nil || f.Name != "_FENCED" || !f.Fatal {
		t.Errorf("fenced producer's commit_transaction: %+v, want the fatal _FENCED", f)
	}
	if res.FencerCommit != nil {
		t.Errorf("fencing producer's commit_transaction: %+v, want success", res.FencerCommit)
	}
	if want := []string{"0/0/fencer"}; !slices.Equal(res.FenceUncommitted, want) {
		t.Errorf("%s read_uncommitted: %v, want %v", fence, res.FenceUncommitted, want)
	}
}

// TestExternalConfluentKafka: librdkafka's idempotent producer and classic
// consumer group (ProduceConsumeGroup), then its AdminClient (Admin), which
// describes the group the first left.
func TestExternalConfluentKafka(t *testing.T) {
	confluentKafkaDir(t)
	k := startKaas(t)
	const n, prefix, group = 300, "cfk", "cfk-group"
	t.Run("ProduceConsumeGroup", func(t *testing.T) {
		testConfluentKafkaProduceConsume(t, k.Addr, prefix, group, n)
	})
	t.Run("Admin", func(t *testing.T) {
		testConfluentKafkaAdmin(t, k.Addr, "cfk-admin", group)
	})
}

// testConfluentKafkaProduceConsume: an idempotent acks=all producer per
// codec (gzip, snappy, lz4, zstd) sends keyed records with headers to a
// 3-partition topic while two consumers of one group (range assignment,
// synchronous commits), which split the 12 partitions before the first
// record, read them. Every record is read once, in per-key order, by the
// member owning its partition; the committed offsets are the high
// watermarks; the stored batches carry the codec, one producer id per topic
// and sequences running with the offsets.
func testConfluentKafkaProduceConsume(t *testing.T, addr, prefix, group string, n int) {
	var out kpyProduceConsume
	runConfluentKafka(t, 60*time.Second, "produce-consume.py", &out, addr, prefix, strconv.Itoa(n), group, strings.Join(kpyCodecNames(), ","))
	checkPyProduceConsume(t, addr, prefix, group, n, out, true)
}

// cfkTopics is what admin.py's list_topics reports: the script's topics
// with their partitions, and every topic's name.
type cfkTopics struct {
	Ours map[string]struct {
		Error      cfkError `json:"error"`
		Partitions []struct {
			ID       int32   `json:"id"`
			Leader   int32   `json:"leader"`
			Replicas []int32 `json:"replicas"`
			Isrs     []int32 `json:"isrs"`
		} `json:"partitions"`
	} `json:"ours"`
	Names []string `json:"names"`
}

// cfkConfig is a config entry describe_configs returned.
type cfkConfig struct {
	Value     string `json:"value"`
	ReadOnly  bool   `json:"readOnly"`
	Default   bool   `json:"default"`
	Sensitive bool   `json:"sensitive"`
	Source    int    `json:"source"`
}

// librdkafka's config sources (rd_kafka_ConfigSource_t, Kafka's numbering).
const (
	cfkDynamicTopic  = 1
	cfkDynamicBroker = 2
	cfkStaticBroker  = 4
	cfkDefault       = 5
)

// testConfluentKafkaAdmin: every AdminClient call of confluent-kafka-python
// 1.7.0 (it has no ACL, consumer-group offset or describe-cluster calls),
// with the answers and errors checked; group is the consumer group
// testConfluentKafkaProduceConsume left.
func testConfluentKafkaAdmin(t *testing.T, addr, topic, group string) {
	var out struct {
		Create              map[string]cfkError `json:"create"`
		CreateValidateOnly  map[string]cfkError `json:"createValidateOnly"`
		CreateInvalidConfig map[string]cfkError `json:"createInvalidConfig"`
		CreateAgain         map[string]cfkError `json:"createAgain"`
		Cluster             struct {
			Brokers    []int32
			Controller int32
			ClusterID  string
		} `json:"cluster"`
		Topics                       cfkTopics                       `json:"topics"`
		DescribeConfigs              map[string]map[string]cfkConfig `json:"describeConfigs"`
		DescribeConfigsMissing       map[string]cfkError             `json:"describeConfigsMissing"`
		AlterConfigsInvalid          map[string]cfkError             `json:"alterConfigsInvalid"`
		AlterConfigs                 map[string]cfkError             `json:"alterConfigs"`
		AlterBrokerConfigs           map[string]cfkError             `json:"alterBrokerConfigs"`
		AlterBrokerReadOnly          map[string]cfkError             `json:"alterBrokerReadOnly"`
		DescribeConfigsAfter         map[string]map[string]cfkConfig `json:"describeConfigsAfter"`
		CreatePartitions             map[string]cfkError             `json:"createPartitions"`
		CreatePartitionsValidateOnly map[string]cfkError             `json:"createPartitionsValidateOnly"`
		CreatePartitionsFewer        map[string]cfkError             `json:"createPartitionsFewer"`
		TopicsAfter                  cfkTopics                       `json:"topicsAfter"`
		ListGroups                   []string                        `json:"listGroups"`
		DescribeGroup                []struct {
			ID           string   `json:"id"`
			Error        cfkError `json:"error"`
			State        string   `json:"state"`
			ProtocolType string   `json:"protocolType"`
			Members      int      `json:"members"`
			Broker       int32    `json:"broker"`
		} `json:"describeGroup"`
		DeleteTopics      map[string]cfkError `json:"deleteTopics"`
		DeleteTopicsAgain map[string]cfkError `json:"deleteTopicsAgain"`
		TopicsDeleted     cfkTopics           `json:"topicsDeleted"`
	}
	runConfluentKafka(t, 60*time.Second, "admin.py", &out, addr, topic, group)
	other := topic + "-b"

	// results checks a call's outcome per topic or resource: want names
	// the error librdkafka raised, "" for success.
	results := func(call string, got map[string]cfkError, want map[string]string) {
		t.Helper()
		names := map[string]string{}
		for k, e := range got {
			names[k] = ""
			if e != nil {
				names[k] = e.Name
			}
		}
		if !reflect.DeepEqual(names, want) {
			t.Errorf("%s: %v, want %v", call, names, want)
		}
	}
	results("create_topics", out.Create, map[string]string{topic: "", other: ""})
	results("create_topics validate_only", out.CreateValidateOnly, map[string]string{topic + "-validated": ""})
	results("create_topics cleanup.policy=bogus", out.CreateInvalidConfig, map[string]string{topic + "-invalid": "INVALID_CONFIG"})
	results("create_topics of an existing topic", out.CreateAgain, map[string]string{topic: "TOPIC_ALREADY_EXISTS"})

	broker := out.Cluster.Controller
	if !slices.Equal(out.Cluster.Brokers, []int32{broker}) || out.Cluster.ClusterID == "" {
		t.Errorf("list_topics cluster: %+v, want one broker, the controller, and a cluster id", out.Cluster)
	}
	// checkTopics: the script's topics are exactly want (name: partitions),
	// each partition led by the one broker, its one replica and ISR.
	checkTopics := func(call string, got cfkTopics, want map[string]int) {
		t.Helper()
		counts := map[string]int{}
		for name, tp := range got.Ours {
			counts[name] = len(tp.Partitions)
			if tp.Error != nil {
				t.Errorf("%s %s: error %+v", call, name, tp.Error)
			}
			for i, p := range tp.Partitions {
				if p.ID != int32(i) || p.Leader != broker || !slices.Equal(p.Replicas, []int32{broker}) || !slices.Equal(p.Isrs, []int32{broker}) {
					t.Errorf("%s %s partition %d: %+v, want led by broker %d, its one replica and ISR", call, name, i, p, broker)
				}
			}
		}
		if !reflect.DeepEqual(counts, want) {
			t.Errorf("%s: topics %v, want %v (partitions)", call, counts, want)
		}
	}
	// The validate-only and refused topics were not created.
	checkTopics("list_topics", out.Topics, map[string]int{topic: 2, other: 1})
	if !slices.Contains(out.Topics.Names, "__consumer_offsets") {
		t.Errorf("list_topics %v lacks __consumer_offsets", out.Topics.Names)
	}

	topicRes, brokerRes := "topic/"+topic, fmt.Sprintf("broker/%d", broker)
	config := func(call string, described map[string]map[string]cfkConfig, res, name string, want cfkConfig) {
		t.Helper()
		if got, ok := described[res][name]; !ok || got != want {
			t.Errorf("%s %s: %s = %+v (described %v), want %+v", call, res, name, got, ok, want)
		}
	}
	config("describe_configs", out.DescribeConfigs, topicRes, "retention.ms", cfkConfig{Value: "3600000", Source: cfkDynamicTopic})
	config("describe_configs", out.DescribeConfigs, topicRes, "cleanup.policy", cfkConfig{Value: "delete", Default: true, Source: cfkDefault})
	// kaas's flags are its static broker configs; num.partitions cannot
	// change at runtime.
	config("describe_configs", out.DescribeConfigs, brokerRes, "num.partitions", cfkConfig{Value: "1", ReadOnly: true, Source: cfkStaticBroker})
	config("describe_configs", out.DescribeConfigs, brokerRes, "log.cleaner.backoff.ms", cfkConfig{Value: "15000", Source: cfkStaticBroker})
	results("describe_configs of a missing topic", out.DescribeConfigsMissing, map[string]string{topicRes + "-missing": "UNKNOWN_TOPIC_OR_PART"})
	results("alter_configs of a topic", out.AlterConfigs, map[string]string{topicRes: ""})
	results("alter_configs cleanup.policy=bogus", out.AlterConfigsInvalid, map[string]string{"topic/" + other: "INVALID_CONFIG"})
	results("alter_configs of log.cleaner.backoff.ms", out.AlterBrokerConfigs, map[string]string{brokerRes: ""})
	// As Kafka: a broker config that is not dynamic is INVALID_REQUEST.
	results("alter_configs of num.partitions", out.AlterBrokerReadOnly, map[string]string{brokerRes: "INVALID_REQUEST"})
	config("describe_configs after alter_configs", out.DescribeConfigsAfter, topicRes, "retention.ms", cfkConfig{Value: "7200000", Source: cfkDynamicTopic})
	config("describe_configs after alter_configs", out.DescribeConfigsAfter, topicRes, "cleanup.policy", cfkConfig{Value: "compact", Source: cfkDynamicTopic})
	config("describe_configs after alter_configs", out.DescribeConfigsAfter, brokerRes, "log.cleaner.backoff.ms", cfkConfig{Value: "20000", Source: cfkDynamicBroker})
	config("describe_configs after alter_configs", out.DescribeConfigsAfter, brokerRes, "num.partitions", cfkConfig{Value: "1", ReadOnly: true, Source: cfkStaticBroker})

	results("create_partitions to 4", out.CreatePartitions, map[string]string{topic: ""})
	results("create_partitions validate_only", out.CreatePartitionsValidateOnly, map[string]string{other: ""})
	results("create_partitions to 3 of 4", out.CreatePartitionsFewer, map[string]string{topic: "INVALID_PARTITIONS"})
	checkTopics("list_topics after create_partitions", out.TopicsAfter, map[string]int{topic: 4, other: 1})

	// list_groups sends ListGroups, then DescribeGroups: the members left,
	// so the group is Empty.
	if !slices.Contains(out.ListGroups, group) {
		t.Errorf("list_groups %v lacks %s", out.ListGroups, group)
	}
	if len(out.DescribeGroup) != 1 {
		t.Fatalf("list_groups(%s): %+v, want the group", group, out.DescribeGroup)
	}
	if g := out.DescribeGroup[0]; g.ID != group || g.Error != nil || g.State != "Empty" || g.ProtocolType != "consumer" || g.Members != 0 || g.Broker != broker {
		t.Errorf("list_groups(%s): %+v, want an Empty consumer group without members, coordinated by broker %d", group, g, broker)
	}

	results("delete_topics", out.DeleteTopics, map[string]string{topic: "", other: ""})
	results("delete_topics of a deleted topic", out.DeleteTopicsAgain, map[string]string{topic: "UNKNOWN_TOPIC_OR_PART"})
	checkTopics("list_topics after delete_topics", out.TopicsDeleted, map[string]int{})
}
