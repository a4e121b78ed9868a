package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// reassignJSONDoc is Kafka's reassignment JSON, as the tests read it back.
type reassignJSONDoc struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string   `json:"topic"`
		Partition int32    `json:"partition"`
		Replicas  []int32  `json:"replicas"`
		LogDirs   []string `json:"log_dirs"`
	} `json:"partitions"`
}

func reassignParseDoc(t *testing.T, s string) reassignJSONDoc {
	t.Helper()
	var d reassignJSONDoc
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatalf("not Kafka's reassignment JSON: %v\n%s", err, s)
	}
	if d.Version != 1 {
		t.Fatalf("version %d: %s", d.Version, s)
	}
	return d
}

// reassignWriteFile writes a JSON file for a tool to read.
func reassignWriteFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestToolsReassign runs kaas reassign-partitions, kaas leader-election and
// kaas log-dirs (Kafka's kafka-reassign-partitions.sh,
// kafka-leader-election.sh, kafka-log-dirs.sh) against a local-mode broker
// over TCP: each output is parsed and checked against the broker's state
// (its pins, kadm's ListPartitionReassignments and DescribeLogDirs);
// refusals exit non-zero with a message and change nothing.
func TestToolsReassign(t *testing.T) {
	dataDir := t.TempDir()
	b, addr := testBroker(t, "--data-dir", dataDir)
	self := b.views.Load().Self
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 2*time.Minute)
	bs := "--bootstrap-server=" + addr
	tool := func(t *testing.T, name string, args ...string) string {
		t.Helper()
		return mustTool(t, append([]string{name, bs}, args...)...)
	}
	refused := func(t *testing.T, want, name string, args ...string) string {
		t.Helper()
		out, errOut, code := runKaas(t, append([]string{name, bs}, args...)...)
		if code == 0 || !strings.Contains(errOut, want) {
			t.Fatalf("kaas %s %q: exit %d, stdout %q, stderr %q; want a refusal saying %q", name, args, code, out, errOut, want)
		}
		return out
	}
	for _, topic := range []string{"moves", "still"} {
		if _, err := adm.CreateTopic(ctx, 3, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 20; i++ {
			r := &kgo.Record{Topic: "moves", Partition: p, Value: []byte(fmt.Sprintf("record %d of partition %d", i, p))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var proposal string // --generate's proposed JSON, executed next

	t.Run("generate", func(t *testing.T) {
		topicsFile := reassignWriteFile(t, "topics.json", `{"topics":[{"topic":"moves"}],"version":1}`)
		out := tool(t, "reassign-partitions", "--generate", "--topics-to-move-json-file", topicsFile, "--broker-list", fmt.Sprint(self))
		lines := strings.Split(out, "\n")
		if len(lines) != 6 || lines[0] != "Current partition replica assignment" || lines[2] != "" ||
			lines[3] != "Proposed partition reassignment configuration" || lines[5] != "" {
			t.Fatalf("output %q", out)
		}
		current, proposed := reassignParseDoc(t, lines[1]), reassignParseDoc(t, lines[4])
		td, err := adm.ListTopics(ctx, "moves")
		if err != nil {
			t.Fatal(err)
		}
		if len(current.Partitions) != 3 || len(proposed.Partitions) != 3 {
			t.Fatalf("current %+v proposed %+v", current, proposed)
		}
		for i, p := range current.Partitions {
			if p.Topic != "moves" || p.Partition != int32(i) || !reflect.DeepEqual(p.Replicas, td["moves"].Partitions[p.Partition].Replicas) ||
				!reflect.DeepEqual(p.LogDirs, []string{"any"}) {
				t.Fatalf("current partition %d: %+v, metadata %+v", i, p, td["moves"].Partitions[p.Partition])
			}
			if q := proposed.Partitions[i]; q.Topic != "moves" || q.Partition != int32(i) || !reflect.DeepEqual(q.Replicas, []int32{self}) {
				t.Fatalf("proposed partition %d: %+v, want broker %d", i, q, self)
			}
		}
		proposal = lines[4]

		refused(t, "Topic nope not found.", "reassign-partitions", "--generate", "--topics-to-move-json-file",
			reassignWriteFile(t, "nope.json", `{"topics":[{"topic":"nope"}]}`), "--broker-list", fmt.Sprint(self))
		// Brokers not in the cluster are left out: none left for one replica.
		refused(t, "Replication factor: 1 larger than available brokers: 0.", "reassign-partitions", "--generate",
			"--topics-to-move-json-file", topicsFile, "--broker-list", fmt.Sprint(self+5))
		refused(t, "Broker list contains duplicate entries: [1]", "reassign-partitions", "--generate",
			"--topics-to-move-json-file", topicsFile, "--broker-list", "1,1")
		refused(t, `Missing required argument "[broker-list]"`, "reassign-partitions", "--generate", "--topics-to-move-json-file", topicsFile)
		refused(t, `Option "[additional]" can't be used with action "[generate]"`, "reassign-partitions", "--generate",
			"--topics-to-move-json-file", topicsFile, "--broker-list", "0", "--additional")
	})

	t.Run("execute, verify, list, cancel", func(t *testing.T) {
		file := reassignWriteFile(t, "reassign.json", proposal)
		before, err := adm.ListTopics(ctx, "moves")
		if err != nil {
			t.Fatal(err)
		}
		out := tool(t, "reassign-partitions", "--execute", "--reassignment-json-file", file, "--throttle", "50000000")
		lines := strings.Split(out, "\n")
		if len(lines) != 8 || lines[0] != "Current partition replica assignment" || lines[1] != "" || lines[3] != "" ||
			lines[4] != "Save this to use as the --reassignment-json-file option during rollback" ||
			!strings.HasPrefix(lines[5], "No throttle was set: kaas moves a partition's leadership") ||
			lines[6] != "Successfully started partition reassignments for moves-0,moves-1,moves-2" {
			t.Fatalf("output %q", out)
		}
		rollback := reassignParseDoc(t, lines[2])
		for i, p := range rollback.Partitions {
			if p.Partition != int32(i) || !reflect.DeepEqual(p.Replicas, before["moves"].Partitions[p.Partition].Replicas) {
				t.Fatalf("rollback partition %d: %+v, metadata %+v", i, p, before["moves"].Partitions[p.Partition])
			}
		}
		// Local mode: the pins name the one broker, which leads already, so
		// no reassignment is in progress (TestToolsReassignOnCluster moves
		// one).
		ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moves": {0: {}, 1: {}, 2: {}}})
		if err != nil || len(ls) != 0 {
			t.Fatalf("kadm lists reassignments %v %v", ls, err)
		}
		out = tool(t, "reassign-partitions", "--verify", "--reassignment-json-file", file)
		if want := "Status of partition reassignment:\nReassignment of partition moves-0 is completed.\nReassignment of partition moves-1 is completed.\nReassignment of partition moves-2 is completed.\n\n"; out != want {
			t.Fatalf("--verify %q, want %q", out, want)
		}
		// A replica the broker does not keep is reported as Kafka reports a
		// replica set that differs from the target.
		twoReplicas := reassignWriteFile(t, "two.json", `{"partitions":[{"topic":"moves","partition":0,"replicas":[`+fmt.Sprint(self)+`,7]}]}`)
		out = tool(t, "reassign-partitions", "--verify", "--reassignment-json-file", twoReplicas, "--preserve-throttles")
		if want := fmt.Sprintf("Status of partition reassignment:\nThere is no active reassignment of partition moves-0, but replica set is %d rather than %d,7.\n\n", self, self); out != want {
			t.Fatalf("--verify %q, want %q", out, want)
		}
		if out := tool(t, "reassign-partitions", "--list"); out != "No partition reassignments found.\n" {
			t.Fatalf("--list %q", out)
		}
		// Kafka cancels only reassignments in progress.
		out = tool(t, "reassign-partitions", "--cancel", "--reassignment-json-file", file)
		if out != "None of the specified partition reassignments are active.\nNone of the specified partition moves are active.\n" {
			t.Fatalf("--cancel %q", out)
		}
		td, err := adm.ListTopics(ctx, "moves")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range td["moves"].Partitions {
			if p.Leader != self {
				t.Fatalf("moves-%d led by %d", p.Partition, p.Leader)
			}
		}
	})

	t.Run("execute refusals", func(t *testing.T) {
		file := func(body string) string { return reassignWriteFile(t, "r.json", body) }
		entry := func(topic string, partition int, replicas string) string {
			return fmt.Sprintf(`{"topic":%q,"partition":%d,"replicas":[%s]}`, topic, partition, replicas)
		}
		still := entry("still", 0, fmt.Sprint(self))
		out := refused(t, fmt.Sprintf("Unknown broker id %d", self+1), "reassign-partitions", "--execute", "--reassignment-json-file",
			file(`{"partitions":[`+still+`,`+entry("still", 1, fmt.Sprint(self+1))+`]}`))
		if out != "" {
			t.Fatalf("a refused --execute printed %q", out)
		}
		refused(t, "Unable to find partition: still-9", "reassign-partitions", "--execute", "--reassignment-json-file",
			file(`{"partitions":[`+still+`,`+entry("still", 9, fmt.Sprint(self))+`]}`))
		refused(t, "Topic nope not found.", "reassign-partitions", "--execute", "--reassignment-json-file",
			file(`{"partitions":[`+entry("nope", 0, fmt.Sprint(self))+`]}`))
		refused(t, `kaas moves no replica between log directories`, "reassign-partitions", "--execute", "--reassignment-json-file",
			file(fmt.Sprintf(`{"partitions":[{"topic":"still","partition":0,"replicas":[%d],"log_dirs":[%q]}]}`, self, dataDir)))
		refused(t, "Partition replica lists may not contain duplicate entries: still-0 contains multiple entries for "+fmt.Sprint(self),
			"reassign-partitions", "--execute", "--reassignment-json-file", file(`{"partitions":[`+entry("still", 0, fmt.Sprintf("%d,%d", self, self))+`]}`))
		refused(t, "Partition reassignment list cannot be empty", "reassign-partitions", "--execute", "--reassignment-json-file", file(`{"version":1,"partitions":[]}`))
		// The broker's refusal of one partition: Kafka's per-partition error
		// lines.
		out = refused(t, "Error reassigning partition(s):\n__consumer_offsets-0: ", "reassign-partitions", "--execute", "--reassignment-json-file",
			file(`{"partitions":[`+entry("__consumer_offsets", 0, fmt.Sprint(self))+`,`+still+`]}`))
		if !strings.Contains(out, "Save this to use as the --reassignment-json-file option during rollback") {
			t.Fatalf("stdout %q", out)
		}

		refused(t, "Command must include exactly one action: --generate, --execute, --verify, --cancel, --list", "reassign-partitions", "--execute", "--list")
		refused(t, "Command must include exactly one action", "reassign-partitions", "--reassignment-json-file", "x.json")
		refused(t, `Missing required argument "[reassignment-json-file]"`, "reassign-partitions", "--verify")
		refused(t, `Option "[throttle]" can't be used with action "[verify]"`, "reassign-partitions", "--verify", "--reassignment-json-file", "x.json", "--throttle", "1")
		refused(t, `Option "[timeout]" can't be used with action "[list]"`, "reassign-partitions", "--list", "--timeout", "5")
		refused(t, "--bootstrap-controller is not supported", "reassign-partitions", "--list", "--bootstrap-controller", addr)
		refused(t, "--zookeeper is not supported", "reassign-partitions", "--list", "--zookeeper", "zk:2181")
		refused(t, "no such file or directory", "reassign-partitions", "--verify", "--reassignment-json-file", filepath.Join(t.TempDir(), "absent.json"))
		if _, errOut, code := runKaas(t, "reassign-partitions", "--list"); code == 0 || !strings.Contains(errOut, "Please specify either --bootstrap-server or --bootstrap-controller") {
			t.Fatalf("no --bootstrap-server: exit %d, %q", code, errOut)
		}
	})

	t.Run("leader-election", func(t *testing.T) {
		out := tool(t, "leader-election", "--election-type", "preferred", "--topic", "moves", "--partition", "1")
		if out != "Valid replica already elected for partitions moves-1\n" {
			t.Fatalf("--topic --partition %q", out)
		}
		// Every partition is led, so none needs an election: Kafka prints
		// nothing.
		if out := tool(t, "leader-election", "--election-type", "UNCLEAN", "--all-topic-partitions"); out != "" {
			t.Fatalf("--all-topic-partitions %q", out)
		}
		jsonFile := reassignWriteFile(t, "elect.json", `{"partitions":[{"topic":"moves","partition":2},{"topic":"moves","partition":0},{"topic":"moves","partition":9}]}`)
		props := writeProperties(t, "security.protocol=PLAINTEXT")
		out = refused(t, "1 replica(s) could not be elected", "leader-election", "--election-type", "unclean", "--path-to-json-file", jsonFile, "--admin.config", props)
		if want := "Valid replica already elected for partitions moves-0, moves-2\nError completing leader election (UNCLEAN) for partition: moves-9: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition.\n"; out != want {
			t.Fatalf("--path-to-json-file %q, want %q", out, want)
		}
		td, err := adm.ListTopics(ctx, "moves")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range td["moves"].Partitions {
			if p.Leader != self {
				t.Fatalf("moves-%d led by %d after the elections", p.Partition, p.Leader)
			}
		}

		refused(t, "Missing required option(s): election-type", "leader-election", "--all-topic-partitions")
		refused(t, `--election-type "sometimes": want preferred or unclean`, "leader-election", "--election-type", "sometimes", "--all-topic-partitions")
		refused(t, "One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file",
			"leader-election", "--election-type", "preferred", "--all-topic-partitions", "--topic", "moves", "--partition", "0")
		refused(t, "One and only one of the following options is required", "leader-election", "--election-type", "preferred")
		refused(t, "Missing required option(s): partition", "leader-election", "--election-type", "preferred", "--topic", "moves")
		refused(t, "Option partition is only allowed if topic is used", "leader-election", "--election-type", "preferred", "--all-topic-partitions", "--partition", "0")
		refused(t, "--admin.config and --command-config name the same file", "leader-election", "--election-type", "preferred",
			"--all-topic-partitions", "--admin.config", props, "--command-config", props)
		if _, errOut, code := runKaas(t, "leader-election", "--election-type", "preferred", "--all-topic-partitions"); code == 0 ||
			!strings.Contains(errOut, "Missing required option(s): bootstrap-server") {
			t.Fatalf("no --bootstrap-server: exit %d, %q", code, errOut)
		}
	})

	t.Run("log-dirs", func(t *testing.T) {
		out := tool(t, "log-dirs", "--describe", "--topic-list", "moves,still")
		lines := strings.Split(out, "\n")
		if len(lines) != 4 || lines[0] != "Querying brokers for log directories information" ||
			lines[1] != fmt.Sprintf("Received log directory information from brokers %d", self) || lines[3] != "" {
			t.Fatalf("output %q", out)
		}
		// Kafka's keys, in the order Kafka prints them.
		if !strings.HasPrefix(lines[2], fmt.Sprintf(`{"brokers":[{"broker":%d,"logDirs":[{"partitions":[{"partition":"moves-0","size":`, self)) ||
			!strings.HasSuffix(lines[2], `"offsetLag":0,"isFuture":false}],"error":null,"logDir":`+fmt.Sprintf("%q", dataDir)+`}]}],"version":1}`) {
			t.Fatalf("JSON %s", lines[2])
		}
		var doc struct {
			Brokers []struct {
				Broker  int32 `json:"broker"`
				LogDirs []struct {
					LogDir     string  `json:"logDir"`
					Error      *string `json:"error"`
					Partitions []struct {
						Partition string `json:"partition"`
						Size      int64  `json:"size"`
						OffsetLag int64  `json:"offsetLag"`
						IsFuture  bool   `json:"isFuture"`
					} `json:"partitions"`
				} `json:"logDirs"`
			} `json:"brokers"`
			Version int `json:"version"`
		}
		if err := json.Unmarshal([]byte(lines[2]), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Version != 1 || len(doc.Brokers) != 1 || doc.Brokers[0].Broker != self || len(doc.Brokers[0].LogDirs) != 1 {
			t.Fatalf("doc %+v", doc)
		}
		dir := doc.Brokers[0].LogDirs[0]
		if dir.LogDir != dataDir || dir.Error != nil {
			t.Fatalf("log dir %+v, want %s", dir, dataDir)
		}
		described, err := adm.DescribeAllLogDirs(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, p := range dir.Partitions {
			got[p.Partition] = p.Size
		}
		want := map[string]int64{}
		described.Each(func(d kadm.DescribedLogDir) {
			for _, p := range d.Topics.Sorted() {
				if p.Topic == "moves" || p.Topic == "still" {
					want[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = p.Size
				}
			}
		})
		if len(got) != 6 || !reflect.DeepEqual(got, want) {
			t.Fatalf("partition sizes %v, kadm's %v", got, want)
		}
		for p := 0; p < 3; p++ {
			if got[fmt.Sprintf("moves-%d", p)] <= 0 || got[fmt.Sprintf("still-%d", p)] != 0 {
				t.Fatalf("sizes %v: want the produced partitions of moves above 0, still's at 0", got)
			}
		}

		// Without a topic list, every partition the broker leads.
		out = tool(t, "log-dirs", "--describe", "--broker-list", fmt.Sprint(self))
		if !strings.Contains(out, `"partition":"moves-2"`) || !strings.Contains(out, `"partition":"__consumer_offsets-0"`) {
			t.Fatalf("all topics: %s", out)
		}
		refused(t, fmt.Sprintf("ERROR: The given brokers do not exist from --broker-list: 7. Current existent brokers: %d", self),
			"log-dirs", "--describe", "--broker-list", fmt.Sprintf("%d,7", self))
		refused(t, `Missing required argument "[describe]"`, "log-dirs", "--topic-list", "moves")
		refused(t, `--broker-list "x": "x" is not a broker id`, "log-dirs", "--describe", "--broker-list", "x")
	})
}

// TestToolsReassignOnCluster: kaas reassign-partitions on two brokers in
// cluster mode, where a reassignment moves a leader: --execute pins the
// partition (the KafkaTopic's spec.pins) and it moves; with its pinned
// broker dead the reassignment is in progress again, which --list and
// --verify show as kadm lists it, --execute refuses to start another
// without --additional, and --cancel drops the pin.
func TestToolsReassignOnCluster(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	c.startAll("kaas-0", "kaas-1")
	cl := c.client()
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, 2*time.Minute)
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, "placed"); err != nil {
		t.Fatal(err)
	}
	leaderOf := func() int32 {
		td, err := adm.ListTopics(ctx, "placed")
		if err != nil || len(td["placed"].Partitions) != 2 {
			return -1
		}
		return td["placed"].Partitions[0].Leader
	}
	var from int32
	waitUntil(t, 30*time.Second, "placed-0 led", func() bool { from = leaderOf(); return from >= 0 })
	to := 1 - from
	toName, fromName := fmt.Sprintf("kaas-%d", to), fmt.Sprintf("kaas-%d", from)
	pins := func() string {
		return strings.TrimSpace(api.kubectlMaybe("-n", c.ns, "get", "kafkatopics", "placed", "-o", `jsonpath={range .spec.pins[*]}{.partition}:{.broker} {end}`))
	}
	run := func(t *testing.T, args ...string) (string, string, int) {
		t.Helper()
		// The broker the partition moves from stays up throughout.
		return runKaas(t, append([]string{"reassign-partitions", "--bootstrap-server=" + c.brokers[fromName].kafka}, args...)...)
	}
	file := reassignWriteFile(t, "move.json", fmt.Sprintf(`{"version":1,"partitions":[{"topic":"placed","partition":0,"replicas":[%d],"log_dirs":["any"]}]}`, to))

	out, errOut, code := run(t, "--execute", "--reassignment-json-file", file)
	want := fmt.Sprintf("Current partition replica assignment\n\n"+
		`{"version":1,"partitions":[{"topic":"placed","partition":0,"replicas":[%d],"log_dirs":["any"]}]}`+
		"\n\nSave this to use as the --reassignment-json-file option during rollback\nSuccessfully started partition reassignment for placed-0\n", from)
	if code != 0 || out != want {
		t.Fatalf("--execute: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	if got := pins(); got != fmt.Sprintf("0:%d", to) {
		t.Fatalf("KafkaTopic spec.pins %q after --execute", got)
	}
	waitUntil(t, 30*time.Second, "placed-0 moved to its pinned broker", func() bool { return leaderOf() == to })
	waitUntil(t, 10*time.Second, "--verify reporting the move completed", func() bool {
		out, _, code := run(t, "--verify", "--reassignment-json-file", file)
		return code == 0 && out == "Status of partition reassignment:\nReassignment of partition placed-0 is completed.\n\n"
	})

	// The pinned broker dies: the partition is led elsewhere, and the
	// reassignment is in progress until that broker is back.
	c.brokers[toName].kill()
	waitUntil(t, 30*time.Second, "placed-0 led by the surviving broker", func() bool { return leaderOf() == from })
	waitUntil(t, 10*time.Second, "kadm listing placed-0's reassignment", func() bool {
		ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"placed": {0: {}, 1: {}}})
		if err != nil || len(ls) != 1 {
			return false
		}
		r := ls["placed"][0]
		return reflect.DeepEqual(r.Replicas, []int32{to, from}) && reflect.DeepEqual(r.AddingReplicas, []int32{to}) && reflect.DeepEqual(r.RemovingReplicas, []int32{from})
	})
	out, _, code = run(t, "--list")
	if want := fmt.Sprintf("Current partition reassignments:\nplaced-0: replicas: %d,%d. adding: %d. removing: %d.\n", to, from, to, from); code != 0 || out != want {
		t.Fatalf("--list: exit %d, %q, want %q", code, out, want)
	}
	out, _, code = run(t, "--verify", "--reassignment-json-file", file)
	if want := "Status of partition reassignment:\nReassignment of partition placed-0 is still in progress.\n\n"; code != 0 || out != want {
		t.Fatalf("--verify: exit %d, %q, want %q", code, out, want)
	}
	other := reassignWriteFile(t, "other.json", fmt.Sprintf(`{"partitions":[{"topic":"placed","partition":1,"replicas":[%d]}]}`, from))
	if out, errOut, code := run(t, "--execute", "--reassignment-json-file", other); code == 0 || out != "" ||
		!strings.Contains(errOut, "Cannot execute because there is an existing partition assignment.  Use --additional to override this") {
		t.Fatalf("--execute during a reassignment: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := pins(); got != fmt.Sprintf("0:%d", to) {
		t.Fatalf("KafkaTopic spec.pins %q after the refused --execute", got)
	}

	out, _, code = run(t, "--cancel", "--reassignment-json-file", file)
	if want := "Successfully cancelled partition reassignment for: placed-0\nNone of the specified partition moves are active.\n"; code != 0 || out != want {
		t.Fatalf("--cancel: exit %d, %q, want %q", code, out, want)
	}
	if got := pins(); got != "" {
		t.Fatalf("KafkaTopic spec.pins %q after --cancel", got)
	}
	if ls, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"placed": {0: {}, 1: {}}}); err != nil || len(ls) != 0 {
		t.Fatalf("kadm lists %v %v after --cancel", ls, err)
	}
	if out, _, code := run(t, "--list"); code != 0 || out != "No partition reassignments found.\n" {
		t.Fatalf("--list after --cancel: exit %d, %q", code, out)
	}
}
