package kafkacli

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func reassignBrokersForTest(racks map[int32]string, ids ...int32) []reassignBroker {
	var out []reassignBroker
	for _, id := range ids {
		b := reassignBroker{id: id}
		if r, ok := racks[id]; ok {
			b.rack = &r
		}
		out = append(out, b)
	}
	return out
}

// Kafka's own expectations for AdminUtils.assignReplicasToBrokers
// (AdminRackAwareTest), with its fixed start index.
func TestReassignPlaceAsKafka(t *testing.T) {
	got, err := reassignPlace(reassignBrokersForTest(nil, 0, 1, 2, 3, 4), 10, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1}, {0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rack-unaware: %v, want %v", got, want)
	}

	racks := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	if got := reassignRackAlternated(racks); !reflect.DeepEqual(got, []int32{0, 3, 1, 5, 4, 2}) {
		t.Fatalf("rack-alternated list %v", got)
	}
	got, err = reassignPlace(reassignBrokersForTest(racks, 0, 1, 2, 3, 4, 5), 7, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want = [][]int32{{0, 3, 1}, {3, 1, 5}, {1, 5, 4}, {5, 4, 2}, {4, 2, 0}, {2, 0, 3}, {0, 4, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rack-aware: %v, want %v", got, want)
	}

	if _, err := reassignPlace(reassignBrokersForTest(nil, 0, 1), 3, 3, 0, 0); err == nil || err.Error() != "Replication factor: 3 larger than available brokers: 2." {
		t.Fatalf("rf above the brokers: %v", err)
	}
	if _, err := reassignPlace(nil, 3, 1, 0, 0); err == nil || !strings.Contains(err.Error(), "larger than available brokers: 0") {
		t.Fatalf("no brokers: %v", err)
	}
}

func TestReassignJSONFiles(t *testing.T) {
	dir := t.TempDir()
	file := func(body string) string {
		p := filepath.Join(dir, "f.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	targets, err := reassignReadAssignmentFile(file(`{"version":1,"partitions":[{"topic":"a","partition":1,"replicas":[2,0],"log_dirs":["any","any"]},{"topic":"b","partition":0,"replicas":[1]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []reassignTarget{{reassignTP{"a", 1}, []int32{2, 0}}, {reassignTP{"b", 0}, []int32{1}}}
	if !reflect.DeepEqual(targets, want) {
		t.Fatalf("targets %+v", targets)
	}
	// What the tool prints reads back as what it was made from.
	printed := reassignJSON(map[reassignTP][]int32{{"b", 0}: {1}, {"a", 1}: {2, 0}})
	if printed != `{"version":1,"partitions":[{"topic":"a","partition":1,"replicas":[2,0],"log_dirs":["any","any"]},{"topic":"b","partition":0,"replicas":[1],"log_dirs":["any"]}]}` {
		t.Fatalf("printed %s", printed)
	}
	if back, err := reassignReadAssignmentFile(file(printed)); err != nil || !reflect.DeepEqual(back, want) {
		t.Fatalf("read back %+v %v", back, err)
	}
	if got := reassignJSON(nil); got != `{"version":1,"partitions":[]}` {
		t.Fatalf("empty assignment %s", got)
	}

	for body, wantErr := range map[string]string{
		`{"version":2,"partitions":[]}`: "Not supported version field value 2",
		`{"partitions":[{"topic":"a","partition":0,"replicas":[0,1],"log_dirs":["any"]}]}`: "Size of replicas list [0, 1] is different from size of log dirs list [any] for partition a-0",
		`{"partitions":[{"topic":"a","partition":0,"replicas":[0],"log_dirs":["/data"]}]}`: `partition a-0 puts broker 0's replica in log directory "/data"`,
		`{"partitions":[{"topic":"a","replicas":[0]}]}`:                                    `partitions[0] has no "partition"`,
		`{"partitions":[`: "not a valid reassignment JSON file",
	} {
		if _, err := reassignReadAssignmentFile(file(body)); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: %v, want %q", body, err, wantErr)
		}
	}

	for body, wantErr := range map[string]string{
		`{"partitions":[]}`: "Partition reassignment list cannot be empty",
		`{"partitions":[{"topic":"a","partition":0,"replicas":[]}]}`:                                                   "Partition replica list cannot be empty",
		`{"partitions":[{"topic":"a","partition":0,"replicas":[0]},{"topic":"a","partition":0,"replicas":[1]}]}`:       "Partition reassignment contains duplicate topic partitions: a-0",
		`{"partitions":[{"topic":"a","partition":0,"replicas":[0,1,0]},{"topic":"b","partition":3,"replicas":[2,2]}]}`: "Partition replica lists may not contain duplicate entries: a-0 contains multiple entries for 0. b-3 contains multiple entries for 2",
	} {
		targets, err := reassignReadAssignmentFile(file(body))
		if err == nil {
			err = reassignCheckExecute(targets)
		}
		if err == nil || err.Error() != wantErr {
			t.Errorf("%s: %v, want %q", body, err, wantErr)
		}
	}

	topics, err := reassignReadTopicsFile(file(`{"topics":[{"topic":"foo"},{"topic":"foo1"}],"version":1}`))
	if err != nil || !reflect.DeepEqual(topics, []string{"foo", "foo1"}) {
		t.Fatalf("topics %v %v", topics, err)
	}
	if _, err := reassignReadTopicsFile(file(`{"topics":[{"topic":"foo"},{"topic":"foo"}]}`)); err == nil || err.Error() != "List of topics to reassign contains duplicate entries: [foo]" {
		t.Fatalf("duplicate topics: %v", err)
	}
	if ids, err := reassignParseBrokerList("2,0, 1"); err != nil || !reflect.DeepEqual(ids, []int32{2, 0, 1}) {
		t.Fatalf("broker list %v %v", ids, err)
	}
	if _, err := reassignParseBrokerList("0,1,0"); err == nil || err.Error() != "Broker list contains duplicate entries: [0]" {
		t.Fatalf("duplicate brokers: %v", err)
	}
	if _, err := reassignParseBrokerList("0,x"); err == nil || !strings.Contains(err.Error(), `"x" is not a broker id`) {
		t.Fatalf("bad broker: %v", err)
	}

	tps, err := electionReadJSON(file(`{"partitions":[{"topic":"foo","partition":1},{"topic":"foobar","partition":2}]}`))
	if err != nil || !reflect.DeepEqual(tps, []reassignTP{{"foo", 1}, {"foobar", 2}}) {
		t.Fatalf("election partitions %v %v", tps, err)
	}
	if _, err := electionReadJSON(file(`{"partitions":[{"topic":"foo","partition":1},{"topic":"foo","partition":1}]}`)); err == nil || err.Error() != "Replica election data contains duplicate partitions: [foo-1]" {
		t.Fatalf("duplicate election partitions: %v", err)
	}
	if _, err := electionReadJSON(file(`{}`)); err == nil || err.Error() != `Replica election data is missing "partitions" field` {
		t.Fatalf("no partitions field: %v", err)
	}
}
