package main

// librdkafka 2.11.1, the static build confluent-kafka-go v2.11.1 bundles,
// against kaas: its KIP-848 consumer (group.protocol=consumer, regex
// subscriptions), the AdminClient calls librdkafka 2.0.2 (kcat,
// confluent-kafka-python 1.7.0) does not have, transactions with a KIP-848
// consumer's group metadata and KIP-714 telemetry pushes. The program is
// testdata/confluentgo, a module of its own (cgo; the project's go.mod
// never requires confluent-kafka-go), built once per test process; each
// scenario prints one JSON object that the tests check, cross-checking with
// franz-go.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/storage/clientmetrics"
)

var (
	confluentGoOnce sync.Once
	confluentGoBin  string
	confluentGoErr  error
)

// confluentGoBinary builds testdata/confluentgo once per test process (the
// build cache makes later processes' builds take seconds; a cold machine
// fetches confluent-kafka-go from the module proxy, which `go tool task
// deps` does ahead). A failed build fails the test.
func confluentGoBinary(t *testing.T) string {
	t.Helper()
	confluentGoOnce.Do(func() {
		start := time.Now()
		src, err := filepath.Abs(filepath.Join("testdata", "confluentgo"))
		if err != nil {
			confluentGoErr = err
			return
		}
		dir, err := os.MkdirTemp("", binDirPrefix+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			confluentGoErr = err
			return
		}
		bin := filepath.Join(dir, "confluentgo")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", bin, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			confluentGoErr = fmt.Errorf("go build testdata/confluentgo (cgo, confluent-kafka-go; %s): %v\n%s", installHint, err, out)
			return
		}
		confluentGoBin = bin
		fmt.Fprintf(os.Stderr, "built %s in %v\n", bin, time.Since(start).Round(time.Millisecond))
	})
	if confluentGoErr != nil {
		t.Fatal(confluentGoErr)
	}
	return confluentGoBin
}

// runConfluentGo runs a scenario of testdata/confluentgo, failing the test
// at once when librdkafka logs a protocol complaint (cfkAbortOn), and
// decodes its JSON output into out; librdkafka's log goes to the test log.
// A scenario that reports an error fails the test.
func runConfluentGo(t *testing.T, timeout time.Duration, out any, scenario string, args ...string) {
	t.Helper()
	bin := confluentGoBinary(t)
	res := runToolAbortOn(t, timeout, "", "", cfkAbortOn, bin, append([]string{scenario}, args...)...)
	if strings.TrimSpace(res.Stderr) != "" {
		t.Logf("confluentgo %s stderr:\n%s", scenario, truncate(res.Stderr, 4000))
	}
	var head struct {
		Librdkafka string `json:"librdkafka"`
		Error      string `json:"error"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &head); err != nil {
		t.Fatalf("confluentgo %s output: %v\n%s", scenario, err, truncate(res.Stdout, 4000))
	}
	if err := json.Unmarshal([]byte(res.Stdout), out); err != nil {
		t.Fatalf("confluentgo %s output: %v\n%s", scenario, err, truncate(res.Stdout, 4000))
	}
	if head.Error != "" {
		t.Fatalf("confluentgo %s (librdkafka %s): %s\n%s", scenario, head.Librdkafka, head.Error, truncate(res.Stdout, 6000))
	}
	t.Logf("confluentgo %s (librdkafka %s) took %v", scenario, head.Librdkafka, res.Took.Round(time.Millisecond))
}

// lrkError is an error as confluentgo reports it (errJSON).
type lrkError *struct {
	Code      int    `json:"code"`
	Text      string `json:"text"`
	Fatal     bool   `json:"fatal"`
	Retriable bool   `json:"retriable"`
}

// lrkGroup is a group as confluentgo reports DescribeConsumerGroups.
type lrkGroup struct {
	GroupID     string   `json:"groupId"`
	Error       lrkError `json:"error"`
	Simple      bool     `json:"simple"`
	Assignor    string   `json:"assignor"`
	State       string   `json:"state"`
	Type        string   `json:"type"`
	Coordinator int      `json:"coordinator"`
	Members     []struct {
		ClientID         string   `json:"clientId"`
		ConsumerID       string   `json:"consumerId"`
		Host             string   `json:"host"`
		Assignment       []string `json:"assignment"`
		TargetAssignment []string `json:"targetAssignment"`
	} `json:"members"`
	Operations []string `json:"operations"`
}

// lrkPhase is what the group's members had read, owned and hit at a point.
type lrkPhase struct {
	Records     map[string][]string `json:"records"`
	Assignments map[string][]string `json:"assignments"`
	Errors      map[string][]string `json:"errors"`
}

// TestExternalLibrdkafkaKIP848: three librdkafka consumers with
// group.protocol=consumer (ConsumerGroupHeartbeat v1, the server-side
// uniform assignor) share a 6-partition topic; two idempotent acks=all
// producers (lz4, zstd) send 240 records, half before the third consumer
// leaves and half after, its partitions moving to the other two. Every
// record is processed once, each commit synchronous; the committed offsets
// are the high watermarks (librdkafka's and kadm's view); the AdminClient
// describes the group (ConsumerGroupDescribe) with its two members and
// their assignments. Meanwhile a consumer subscribed to a regex
// (librdkafka joins a subscription's regexes into one SubscribedTopicRegex,
// here `(^lrk848re-.*)`; members subscribed by name send an empty regex) is
// given the matching topics only, and a matching topic created later.
func TestExternalLibrdkafkaKIP848(t *testing.T) {
	confluentGoBinary(t)
	// Members learn a new assignment at their next heartbeat.
	k := startKaas(t, "--group-consumer-heartbeat-interval", "500ms", "--group-consumer-min-heartbeat-interval", "100ms")
	const topic, group, n = "lrk848", "lrk848-group", 240
	const rePrefix, reGroup, late = "lrk848re-", "lrk848re-group", "lrk848re-late"
	createTopic(t, k.Addr, topic, 6, nil)
	createTopic(t, k.Addr, rePrefix+"a", 2, nil)
	createTopic(t, k.Addr, rePrefix+"b", 1, nil)
	createTopic(t, k.Addr, "lrk848other", 1, nil)
	cl := newClient(t, k.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxT(t, 60*time.Second)
	var preRegex []string
	for _, r := range []*kgo.Record{{Topic: rePrefix + "a", Partition: 0}, {Topic: rePrefix + "a", Partition: 1},
		{Topic: rePrefix + "b", Partition: 0}, {Topic: "lrk848other", Partition: 0}} {
		r.Value = []byte("re-" + r.Topic)
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if r.Topic != "lrk848other" {
			preRegex = append(preRegex, fmt.Sprintf("%s/%d/0//%s", r.Topic, r.Partition, r.Value))
		}
	}

	// Both groups start with offset 0 committed for their first
	// partitions, so the members start fetching at committed offsets. With
	// none, librdkafka 2.11 looks up auto.offset.reset's earliest with
	// ListOffsets, and a partition whose lookup is still pending when a
	// KIP-848 reconciliation pauses and resumes it was seen rewound to 0
	// later, after its records were read and committed (a client-side race,
	// about once in a hundred runs on a loaded machine; no error from the
	// broker, the resumed partition reset to auto.offset.reset).
	commitZero := func(group string, partitions map[string]int32) {
		t.Helper()
		zero := kadm.Offsets{}
		for tp, n := range partitions {
			for p := int32(0); p < n; p++ {
				zero.Add(kadm.Offset{Topic: tp, Partition: p, At: 0, LeaderEpoch: -1})
			}
		}
		if err := newAdmin(t, k.Addr).CommitAllOffsets(ctx, group, zero); err != nil {
			t.Fatal(err)
		}
	}
	commitZero(group, map[string]int32{topic: 6})
	commitZero(reGroup, map[string]int32{rePrefix + "a": 2, rePrefix + "b": 1})

	var out struct {
		Regex                 string              `json:"regex"`
		Partitions            int                 `json:"partitions"`
		Phase1                lrkPhase            `json:"phase1"`
		AfterLeaveAssignments map[string][]string `json:"afterLeaveAssignments"`
		Final                 lrkPhase            `json:"final"`
		Produced              []string            `json:"produced"`
		Described             []lrkGroup          `json:"described"`
		Committed             map[string]int64    `json:"committed"`
		RegexFirstAssignment  []string            `json:"regexFirstAssignment"`
		RegexGroup            lrkPhase            `json:"regexGroup"`
	}
	runConfluentGo(t, 60*time.Second, &out, "consumer848", k.Addr, topic, group, strconv.Itoa(n), rePrefix, reGroup, late)

	all := make([]string, 6)
	for p := range all {
		all[p] = fmt.Sprintf("%s/%d", topic, p)
	}
	// Phase 1: three members, each with partitions, none shared.
	var phase1 []string
	for _, m := range []string{"c-1", "c-2", "c-3"} {
		a := out.Phase1.Assignments[m]
		if len(a) == 0 {
			t.Errorf("%s owned nothing in phase 1: %v", m, out.Phase1.Assignments)
		}
		phase1 = append(phase1, a...)
	}
	slices.Sort(phase1)
	if !slices.Equal(phase1, all) {
		t.Errorf("phase 1 assignments %v, want each of %v once", out.Phase1.Assignments, all)
	}
	// After c-3 left: c-1 and c-2 own everything, c-3's partitions included.
	after := append(slices.Clone(out.AfterLeaveAssignments["c-1"]), out.AfterLeaveAssignments["c-2"]...)
	slices.Sort(after)
	if !slices.Equal(after, all) || len(out.AfterLeaveAssignments["c-1"]) == 0 || len(out.AfterLeaveAssignments["c-2"]) == 0 {
		t.Errorf("after c-3 left: %v, want c-1 and c-2 to share %v", out.AfterLeaveAssignments, all)
	}
	moved := out.Phase1.Assignments["c-3"]

	// Every record produced read once, in offset order per partition, by
	// its partition's owner; c-3's partitions read on by the others.
	if len(out.Produced) != n {
		t.Fatalf("%d records acknowledged, want %d", len(out.Produced), n)
	}
	readBy := map[string]string{}
	var movedReads int
	for m, recs := range out.Final.Records {
		last := map[string]int64{}
		for _, r := range recs {
			if prev, ok := readBy[r]; ok {
				t.Errorf("%s read by %s and %s", r, prev, m)
			}
			readBy[r] = m
			parts := strings.SplitN(r, "/", 4)
			tp := parts[0] + "/" + parts[1]
			off, _ := strconv.ParseInt(parts[2], 10, 64)
			if prev, ok := last[tp]; ok && off <= prev {
				t.Errorf("%s read %s after offset %d", m, r, prev)
			}
			last[tp] = off
			if m != "c-3" && slices.Contains(moved, tp) {
				movedReads++
			}
		}
		if len(out.Final.Errors[m]) > 0 {
			t.Errorf("%s hit errors: %v", m, out.Final.Errors[m])
		}
	}
	for _, r := range out.Produced {
		if _, ok := readBy[r]; !ok {
			t.Errorf("%s produced, never read", r)
		}
	}
	if len(readBy) != n {
		t.Errorf("%d distinct records read, want %d", len(readBy), n)
	}
	if movedReads == 0 {
		t.Errorf("no record of c-3's partitions %v read by c-1 or c-2 after it left", moved)
	}

	// Committed offsets: the high watermarks, as librdkafka and kadm see them.
	ends := endOffsets(t, k.Addr, topic)
	want := map[string]int64{}
	for p, o := range ends {
		want[fmt.Sprintf("%s/%d", topic, p)] = o
	}
	if !reflect.DeepEqual(out.Committed, want) {
		t.Errorf("librdkafka committed %v, want the high watermarks %v", out.Committed, want)
	}
	if got := groupOffsets(t, k.Addr, group); !reflect.DeepEqual(got, want) {
		t.Errorf("kadm: group %s committed %v, want %v", group, got, want)
	}
	// Each producer's batches carry its codec (lz4 3, zstd 4), one producer
	// id per codec; librdkafka sends a batch that compression would not
	// shrink (a lone record) uncompressed.
	codecs := map[int16]map[int64]bool{}
	for p := int32(0); p < 6; p++ {
		for _, b := range rawBatches(t, k.Addr, topic, p) {
			c := b.Attributes & 7
			if codecs[c] == nil {
				codecs[c] = map[int64]bool{}
			}
			codecs[c][b.ProducerID] = true
			if b.ProducerID < 0 {
				t.Errorf("%s/%d batch at %d not idempotent", topic, p, b.FirstOffset)
			}
		}
	}
	if len(codecs[3]) != 1 || len(codecs[4]) != 1 || reflect.DeepEqual(codecs[3], codecs[4]) || len(codecs) > 3 {
		t.Errorf("stored batches by codec and producer id: %v, want lz4 (3) and zstd (4), a producer each", codecs)
	}
	for id := range codecs[0] {
		if !codecs[3][id] && !codecs[4][id] {
			t.Errorf("uncompressed batches of producer %d, neither lz4's nor zstd's", id)
		}
	}

	// DescribeConsumerGroups while c-1 and c-2 were in the group.
	if len(out.Described) != 1 {
		t.Fatalf("described %+v", out.Described)
	}
	d := out.Described[0]
	if d.Error != nil || d.Type != "Consumer" || d.State != "Stable" || d.Assignor != "uniform" || d.Coordinator != 0 || len(d.Members) != 2 {
		t.Errorf("described %+v, want a Stable Consumer group with the uniform assignor and two members", d)
	} else {
		for _, m := range d.Members {
			if !slices.Equal(m.Assignment, out.AfterLeaveAssignments[m.ClientID]) || !slices.Equal(m.TargetAssignment, m.Assignment) ||
				m.ConsumerID == "" || m.Host != "/127.0.0.1" {
				t.Errorf("member %+v, want assignment and target %v", m, out.AfterLeaveAssignments[m.ClientID])
			}
		}
	}
	if want := []string{"DELETE", "DESCRIBE", "READ"}; !slices.Equal(d.Operations, want) {
		t.Errorf("authorized operations %v, want %v (a group's, without an authorizer)", d.Operations, want)
	}
	// kadm after the program: every member left, the group empty.
	described, err := newAdmin(t, k.Addr).DescribeConsumerGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if g := described[group]; g.Err != nil || g.State != "Empty" || len(g.Members) != 0 || g.Epoch < 3 || g.AssignorName != "uniform" {
		t.Errorf("kadm describes %+v, want an Empty group at epoch 3 or later", g)
	}

	// The regex member: the matching topics only, then the late one.
	wantFirst := []string{rePrefix + "a/0", rePrefix + "a/1", rePrefix + "b/0"}
	if out.Regex != "^"+rePrefix+".*" || !slices.Equal(out.RegexFirstAssignment, wantFirst) {
		t.Errorf("regex %q assigned %v first, want %v", out.Regex, out.RegexFirstAssignment, wantFirst)
	}
	reRecs := slices.Clone(out.RegexGroup.Records["re-1"])
	slices.Sort(reRecs)
	wantRe := append(slices.Clone(preRegex), fmt.Sprintf("%s/0/0/key-0/late-0", late))
	slices.Sort(wantRe)
	if !slices.Equal(reRecs, wantRe) {
		t.Errorf("regex member read %v, want %v", reRecs, wantRe)
	}
	if a := out.RegexGroup.Assignments["re-1"]; !slices.Contains(a, late+"/0") {
		t.Errorf("regex member's last assignment %v lacks %s/0", a, late)
	}
}

// TestExternalLibrdkafkaTransactions: a KIP-848 consumer
// (read_committed) reads 6 records of a 2-partition topic; a transactional
// producer writes an output per input, one transaction per input
// partition, with SendOffsetsToTransaction from the consumer's group
// metadata (its member id and epoch: TxnOffsetCommit to a KIP-848 group):
// partition 0's committed, partition 1's aborted. librdkafka and franz-go
// read the committed outputs only at read_committed and all at
// read_uncommitted; the group's offsets are the committed transaction's.
func TestExternalLibrdkafkaTransactions(t *testing.T) {
	confluentGoBinary(t)
	k := startKaas(t)
	const in, outTopic, group, txnID = "lrk-txn-in", "lrk-txn-out", "lrk-txn-group", "lrk-txn"
	createTopic(t, k.Addr, in, 2, nil)
	createTopic(t, k.Addr, outTopic, 2, nil)
	cl := newClient(t, k.Addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := ctxT(t, 60*time.Second)
	var consumed, committedOut, all []string
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 3; i++ {
			v := fmt.Sprintf("in-%d-%d", p, i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: in, Partition: p, Key: []byte("k"), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			consumed = append(consumed, fmt.Sprintf("%d/%d/%s", p, i, v))
			// Outputs of the first transaction take offsets 0-2 of their
			// partition (its commit marker 3); the aborted ones 0-2 of theirs.
			o := fmt.Sprintf("%d/%d/out-%s", p, i, v)
			all = append(all, o)
			if p == 0 {
				committedOut = append(committedOut, o)
			}
		}
	}
	var out struct {
		Consumed        []string                    `json:"consumed"`
		Sent            map[string]map[string]int64 `json:"sent"`
		GroupCommitted  map[string]int64            `json:"groupCommitted"`
		ReadCommitted   []string                    `json:"read_committed"`
		ReadUncommitted []string                    `json:"read_uncommitted"`
	}
	runConfluentGo(t, 60*time.Second, &out, "txn", k.Addr, in, outTopic, group, txnID, "6")
	if !slices.Equal(out.Consumed, consumed) {
		t.Errorf("consumed %v, want %v", out.Consumed, consumed)
	}
	wantSent := map[string]map[string]int64{"committed": {in + "/0": 3}, "aborted": {in + "/1": 3}}
	if !reflect.DeepEqual(out.Sent, wantSent) {
		t.Errorf("offsets sent %v, want %v", out.Sent, wantSent)
	}
	if want := map[string]int64{in + "/0": 3, in + "/1": -1001}; !reflect.DeepEqual(out.GroupCommitted, want) {
		t.Errorf("librdkafka committed() %v, want %v (-1001: none)", out.GroupCommitted, want)
	}
	if got, want := groupOffsets(t, k.Addr, group), map[string]int64{in + "/0": 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("kadm: group %s committed %v, want %v", group, got, want)
	}
	if !slices.Equal(out.ReadCommitted, committedOut) {
		t.Errorf("librdkafka read_committed read %v, want %v", out.ReadCommitted, committedOut)
	}
	if !slices.Equal(out.ReadUncommitted, all) {
		t.Errorf("librdkafka read_uncommitted read %v, want %v", out.ReadUncommitted, all)
	}
	checkIsolatedReads(t, k.Addr, outTopic, committedOut, all)
}

// TestExternalLibrdkafkaTelemetry: with --client-telemetry and a
// CLIENT_METRICS subscription for producer metrics every 500 ms, a
// librdkafka producer (enable.metrics.push is on by default) asks for its
// subscription (GetTelemetrySubscriptions) and pushes (PushTelemetry);
// /metrics then shows its kafka_client_ series under its client id.
func TestExternalLibrdkafkaTelemetry(t *testing.T) {
	confluentGoBinary(t)
	k := startKaas(t, "--client-telemetry")
	const topic, clientID = "lrk-tel", "lrk-tel-1"
	createTopic(t, k.Addr, topic, 1, nil)
	ctx := ctxT(t, 30*time.Second)
	createClientMetrics(ctx, t, newClient(t, k.Addr), "lrk", map[string]string{clientmetrics.Metrics: "org.apache.kafka.producer.",
		clientmetrics.IntervalMs: "500", clientmetrics.Match: "client_software_name=confluent-kafka-go"})
	var out struct {
		Produced int `json:"produced"`
	}
	runConfluentGo(t, 30*time.Second, &out, "telemetry", k.Addr, topic, clientID, "2.5")
	if out.Produced < 10 {
		t.Errorf("produced %d records, want at least 10", out.Produced)
	}
	resp, err := http.Get("http://" + k.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var series []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "kafka_client_") && strings.Contains(line, `client_id="`+clientID+`"`) {
			series = append(series, line)
		}
	}
	t.Logf("%d series of %s:\n%s", len(series), clientID, strings.Join(series, "\n"))
	if len(series) == 0 {
		t.Fatalf("/metrics has no kafka_client_ series of %s", clientID)
	}
	names := map[string]bool{}
	for _, s := range series {
		if !strings.HasPrefix(s, "kafka_client_org_apache_kafka_producer_") {
			t.Errorf("series %s is not a producer metric the subscription asked for", s)
		}
		names[s[:strings.IndexByte(s, '{')]] = true
	}
	// librdkafka's producer metrics (KIP-714's required ones it has).
	for _, m := range []string{"connection_creation_total", "connection_creation_rate", "node_request_latency_avg",
		"node_request_latency_max", "produce_throttle_time_avg", "record_queue_time_avg", "record_queue_time_max"} {
		if !names["kafka_client_org_apache_kafka_producer_"+m] {
			t.Errorf("/metrics lacks kafka_client_org_apache_kafka_producer_%s of %s", m, clientID)
		}
	}
}

// TestExternalLibrdkafkaAdmin: the AdminClient calls of librdkafka 2.11
// that 1.7.0 lacks, on an in-process broker with the ACL authorizer (the
// PLAINTEXT principal ANONYMOUS a super user) and a SASL_PLAINTEXT listener
// with SCRAM: DescribeCluster (Metadata v10, for the cluster's authorized
// operations), DescribeTopics (Metadata v13 with the topics' authorized
// operations; librdkafka 2.11 does not send DescribeTopicPartitions),
// ListOffsets (earliest, latest, max timestamp, by timestamp),
// DeleteRecords, IncrementalAlterConfigs (SET and APPEND), ListConsumerGroups
// (ListGroups v5) with state and type filters over a live classic group and
// a live KIP-848 group, DescribeConsumerGroups of both (ConsumerGroupDescribe,
// then DescribeGroups for the classic one), ListConsumerGroupOffsets,
// AlterConsumerGroupOffsets, DeleteConsumerGroups, Create/Describe/DeleteACLs,
// Describe/AlterUserScramCredentials (then the new user produces over
// SCRAM-SHA-512, and a wrong password is refused) and ElectLeaders. The
// answers are checked, and cross-checked with franz-go. confluent-kafka-go
// has no DeleteConsumerGroupOffsets (librdkafka's OffsetDelete).
func TestExternalLibrdkafkaAdmin(t *testing.T) {
	confluentGoBinary(t)
	e := newSecureEnv(t, "--authorizer", "acl", "--super-users", anon)
	const prefix = "lrkadm"
	topic, classic, consumer := prefix+"-t", prefix+"-classic", prefix+"-848"
	type offsetAnswer struct {
		Offset    int64    `json:"offset"`
		Timestamp int64    `json:"timestamp"`
		Error     lrkError `json:"error"`
	}
	type groupList struct {
		Groups []struct {
			Group  string `json:"group"`
			State  string `json:"state"`
			Type   string `json:"type"`
			Simple bool   `json:"simple"`
		} `json:"groups"`
		Errors int `json:"errors"`
	}
	type scramUser struct {
		Credentials []string `json:"credentials"`
		Error       lrkError `json:"error"`
	}
	var out struct {
		DescribeCluster struct {
			ClusterID  string `json:"clusterId"`
			Controller int    `json:"controller"`
			Nodes      []struct {
				ID   int    `json:"id"`
				Host string `json:"host"`
				Port int    `json:"port"`
			} `json:"nodes"`
			Operations []string `json:"operations"`
		} `json:"describeCluster"`
		DescribeTopics []struct {
			Name       string   `json:"name"`
			TopicID    string   `json:"topicId"`
			Error      lrkError `json:"error"`
			Internal   bool     `json:"internal"`
			Partitions []struct {
				Partition int   `json:"partition"`
				Leader    *int  `json:"leader"`
				Replicas  []int `json:"replicas"`
				Isr       []int `json:"isr"`
			} `json:"partitions"`
			Operations []string `json:"operations"`
		} `json:"describeTopics"`
		BaseTimestamp int64                   `json:"baseTimestamp"`
		ListOffsets   map[string]offsetAnswer `json:"listOffsets"`
		DeleteRecords struct {
			Error         lrkError     `json:"error"`
			LowWatermark  int64        `json:"lowWatermark"`
			EarliestAfter offsetAnswer `json:"earliestAfter"`
		} `json:"deleteRecords"`
		IncrementalAlterConfigs struct {
			Error     lrkError `json:"error"`
			Described map[string]struct {
				Value  string `json:"value"`
				Source string `json:"source"`
			} `json:"described"`
		} `json:"incrementalAlterConfigs"`
		ListGroupsLive        map[string]groupList `json:"listGroupsLive"`
		DescribeGroups        []lrkGroup           `json:"describeGroups"`
		ListGroupsEmpty       groupList            `json:"listGroupsEmpty"`
		GroupOffsets          map[string]int64     `json:"groupOffsets"`
		AlterGroupOffsets     lrkError             `json:"alterGroupOffsets"`
		GroupOffsetsAltered   map[string]int64     `json:"groupOffsetsAltered"`
		DeleteGroups          lrkError             `json:"deleteGroups"`
		ListGroupsAfterDelete groupList            `json:"listGroupsAfterDelete"`
		CreateAcls            []lrkError           `json:"createAcls"`
		DescribeAcls          struct {
			Error lrkError `json:"error"`
			ACLs  []string `json:"acls"`
		} `json:"describeAcls"`
		DeleteAcls struct {
			Error lrkError `json:"error"`
			ACLs  []string `json:"acls"`
		} `json:"deleteAcls"`
		DescribeAclsAfter struct {
			Error lrkError `json:"error"`
			ACLs  []string `json:"acls"`
		} `json:"describeAclsAfter"`
		DescribeScram      map[string]scramUser `json:"describeScram"`
		AlterScram         lrkError             `json:"alterScram"`
		DescribeScramAfter map[string]scramUser `json:"describeScramAfter"`
		ScramProduce       string               `json:"scramProduce"`
		ScramWrongPassword string               `json:"scramWrongPassword"`
		ElectLeaders       map[string]any       `json:"electLeaders"`
	}
	runConfluentGo(t, 60*time.Second, &out, "admin", e.plain, prefix, e.saslPlaintext)
	adm := newAdmin(t, e.plain)
	ctx := ctxT(t, 20*time.Second)

	// DescribeCluster: kaas's one broker, its controller, the cluster's
	// authorized operations for a super user.
	dc := out.DescribeCluster
	host, port, _ := strings.Cut(e.plain, ":")
	if meta, err := adm.BrokerMetadata(ctx); err != nil || dc.ClusterID != meta.Cluster || dc.Controller != 0 || len(dc.Nodes) != 1 ||
		dc.Nodes[0].ID != 0 || dc.Nodes[0].Host != host || strconv.Itoa(dc.Nodes[0].Port) != port || !slices.Contains(dc.Operations, "ALTER_CONFIGS") {
		t.Errorf("DescribeCluster %+v; franz-go: %+v %v", dc, meta, err)
	}

	// DescribeTopics: the topic with its id and partitions, a missing one.
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.DescribeTopics) != 2 {
		t.Fatalf("DescribeTopics %+v", out.DescribeTopics)
	}
	dt, missing := out.DescribeTopics[0], out.DescribeTopics[1]
	// librdkafka prints a topic id in standard base64 without padding.
	tid := td[topic].ID
	if id := base64.RawStdEncoding.EncodeToString(tid[:]); dt.Name != topic || dt.TopicID != id || dt.Error != nil || dt.Internal ||
		len(dt.Partitions) != 3 || !slices.Contains(dt.Operations, "WRITE") {
		t.Errorf("DescribeTopics %s: %+v", topic, dt)
	}
	for i, p := range dt.Partitions {
		if p.Partition != i || p.Leader == nil || *p.Leader != 0 || !slices.Equal(p.Replicas, []int{0}) || !slices.Equal(p.Isr, []int{0}) {
			t.Errorf("DescribeTopics %s partition %d: %+v", topic, i, p)
		}
	}
	if missing.Error == nil || missing.Error.Code != int(kerr.UnknownTopicOrPartition.Code) {
		t.Errorf("DescribeTopics of a missing topic: %+v, want UNKNOWN_TOPIC_OR_PARTITION", missing)
	}

	// ListOffsets on partition 0 (five records, the third the latest in
	// time), then DeleteRecords below offset 2.
	base := out.BaseTimestamp
	for name, want := range map[string]offsetAnswer{"earliest": {Offset: 0, Timestamp: -1}, "latest": {Offset: 5, Timestamp: -1},
		"maxTimestamp": {Offset: 2, Timestamp: base + 30000}, "byTimestamp": {Offset: 2, Timestamp: base + 30000}} {
		if got := out.ListOffsets[name]; !reflect.DeepEqual(got, want) {
			t.Errorf("ListOffsets %s: %+v, want %+v", name, got, want)
		}
	}
	if d := out.DeleteRecords; d.Error != nil || d.LowWatermark != 2 || d.EarliestAfter.Offset != 2 {
		t.Errorf("DeleteRecords: %+v, want the log start at 2", d)
	}
	if starts, err := adm.ListStartOffsets(ctx, topic); err != nil || starts[topic][0].Offset != 2 {
		t.Errorf("franz-go start offset of %s/0: %+v %v", topic, starts[topic][0], err)
	}

	// IncrementalAlterConfigs: SET and APPEND (cleanup.policy from its default).
	iac := out.IncrementalAlterConfigs
	if iac.Error != nil || iac.Described["retention.ms"].Value != "3600000" || iac.Described["retention.ms"].Source != "DYNAMIC_TOPIC_CONFIG" ||
		iac.Described["cleanup.policy"].Value != "delete,compact" || iac.Described["segment.bytes"].Source == "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("IncrementalAlterConfigs: %+v", iac)
	}
	if rc, err := adm.DescribeTopicConfigs(ctx, topic); err != nil {
		t.Error(err)
	} else if v, _ := rc.On(topic, nil); v.Err != nil {
		t.Error(v.Err)
	} else {
		for _, c := range v.Configs {
			if c.Key == "cleanup.policy" && (c.Value == nil || *c.Value != "delete,compact") {
				t.Errorf("franz-go: cleanup.policy %v", c.Value)
			}
		}
	}

	// ListConsumerGroups and its filters, both groups live.
	type g = struct {
		Group  string `json:"group"`
		State  string `json:"state"`
		Type   string `json:"type"`
		Simple bool   `json:"simple"`
	}
	cg := g{Group: consumer, State: "Stable", Type: "Consumer"}
	kg := g{Group: classic, State: "Stable", Type: "Classic"}
	for name, want := range map[string][]g{"all": {cg, kg}, "stable": {cg, kg}, "empty": nil, "classic": {kg}, "consumer": {cg}} {
		if got := out.ListGroupsLive[name]; got.Errors != 0 || !reflect.DeepEqual(got.Groups, want) {
			t.Errorf("ListConsumerGroups %s: %+v, want %+v", name, got, want)
		}
	}
	if len(out.DescribeGroups) != 2 {
		t.Fatalf("DescribeConsumerGroups: %+v", out.DescribeGroups)
	}
	for _, d := range out.DescribeGroups {
		wantType, wantAssignor := "Classic", "range"
		if d.GroupID == consumer {
			wantType, wantAssignor = "Consumer", "uniform"
		}
		if d.Error != nil || d.Type != wantType || d.State != "Stable" || d.Assignor != wantAssignor || len(d.Members) != 1 ||
			len(d.Members[0].Assignment) != 3 || d.Members[0].Host != "/127.0.0.1" || len(d.Operations) == 0 {
			t.Errorf("DescribeConsumerGroups %s: %+v, want a Stable %s group (%s) with one member owning 3 partitions", d.GroupID, d, wantType, wantAssignor)
		}
	}
	if want := []g{{Group: consumer, State: "Empty", Type: "Consumer"}, {Group: classic, State: "Empty", Type: "Classic"}}; !reflect.DeepEqual(out.ListGroupsEmpty.Groups, want) {
		t.Errorf("ListConsumerGroups Empty after both left: %+v, want %+v", out.ListGroupsEmpty, want)
	}

	// Group offsets: the classic group's commits (the high watermarks), one
	// altered; the KIP-848 group deleted.
	ends := map[string]int64{topic + "/0": 5, topic + "/1": 3, topic + "/2": 3}
	if !reflect.DeepEqual(out.GroupOffsets, ends) {
		t.Errorf("ListConsumerGroupOffsets: %v, want %v", out.GroupOffsets, ends)
	}
	altered := maps.Clone(ends)
	altered[topic+"/0"] = 3
	if out.AlterGroupOffsets != nil || !reflect.DeepEqual(out.GroupOffsetsAltered, altered) {
		t.Errorf("AlterConsumerGroupOffsets: %+v, then %v; want %v", out.AlterGroupOffsets, out.GroupOffsetsAltered, altered)
	}
	if got := groupOffsets(t, e.plain, classic); !reflect.DeepEqual(got, altered) {
		t.Errorf("kadm: %s committed %v, want %v", classic, got, altered)
	}
	if out.DeleteGroups != nil || !reflect.DeepEqual(out.ListGroupsAfterDelete.Groups, []g{{Group: classic, State: "Empty", Type: "Classic"}}) {
		t.Errorf("DeleteConsumerGroups %s: %+v, then listed %+v", consumer, out.DeleteGroups, out.ListGroupsAfterDelete)
	}

	// ACLs: three created, bob's two deleted, carol's left.
	carol := fmt.Sprintf("TOPIC:LITERAL:%s User:carol * ALL ALLOW", topic)
	bobs := []string{fmt.Sprintf("GROUP:LITERAL:%s User:bob * READ ALLOW", classic), fmt.Sprintf("TOPIC:PREFIXED:%s- User:bob * READ ALLOW", prefix)}
	if !slices.Equal(out.CreateAcls, []lrkError{nil, nil, nil}) || out.DescribeAcls.Error != nil ||
		!slices.Equal(out.DescribeAcls.ACLs, []string{bobs[0], carol, bobs[1]}) {
		t.Errorf("CreateACLs %v, DescribeACLs %+v", out.CreateAcls, out.DescribeAcls)
	}
	if out.DeleteAcls.Error != nil || !slices.Equal(out.DeleteAcls.ACLs, bobs) || !slices.Equal(out.DescribeAclsAfter.ACLs, []string{carol}) {
		t.Errorf("DeleteACLs %+v, then %+v", out.DeleteAcls, out.DescribeAclsAfter)
	}
	if acls, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)); err != nil || len(acls) != 1 || len(acls[0].Described) != 1 {
		t.Errorf("franz-go DescribeACLs: %+v %v", acls, err)
	}

	// SCRAM: alice's two credentials, an unknown user, carol added; she
	// produces over SCRAM-SHA-512 (her topic ACL), a wrong password fails.
	if a, n := out.DescribeScram["alice"], out.DescribeScram["nobody"]; a.Error != nil || !slices.Equal(a.Credentials, []string{"SCRAM-SHA-256/4096", "SCRAM-SHA-512/4096"}) ||
		n.Error == nil || n.Error.Code != int(kerr.ResourceNotFound.Code) {
		t.Errorf("DescribeUserScramCredentials: %+v", out.DescribeScram)
	}
	if c := out.DescribeScramAfter["carol"]; out.AlterScram != nil || c.Error != nil || !slices.Equal(c.Credentials, []string{"SCRAM-SHA-512/8192"}) || len(out.DescribeScramAfter) != 3 {
		t.Errorf("AlterUserScramCredentials %+v, then %+v", out.AlterScram, out.DescribeScramAfter)
	}
	if out.ScramProduce != topic+"/2/3" {
		t.Errorf("carol's produce over SCRAM-SHA-512: %q, want %s/2/3", out.ScramProduce, topic)
	}
	if out.ScramWrongPassword != "Local: Authentication failure" {
		t.Errorf("a wrong password: %q, want librdkafka's authentication failure", out.ScramWrongPassword)
	}

	// ElectLeaders: one copy per partition, nothing to elect.
	for p := 0; p < 3; p++ {
		got, _ := json.Marshal(out.ElectLeaders[fmt.Sprintf("%s/%d", topic, p)])
		if !strings.Contains(string(got), fmt.Sprintf(`"code":%d`, kerr.ElectionNotNeeded.Code)) {
			t.Errorf("ElectLeaders %s/%d: %s, want ELECTION_NOT_NEEDED", topic, p, got)
		}
	}
}
