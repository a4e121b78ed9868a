package kafkacli

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func clusterAPIKey(key, lo, hi int16) kmsg.ApiVersionsResponseApiKey {
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = key, lo, hi
	return k
}

// TestAPIVersionsText: Kafka's NodeApiVersions.toString(true) lines for
// a range, a single version, a broker newer than the tool, an API the tool
// does not know; client APIs the broker does not list are UNSUPPORTED,
// controller-only ones are left out.
func TestClusterAPIVersionsText(t *testing.T) {
	produceMax := kmsg.RequestForKey(0).MaxVersion()
	got := apiVersionsText([]kmsg.ApiVersionsResponseApiKey{
		clusterAPIKey(999, 0, 2),
		clusterAPIKey(0, 3, produceMax+5),
		clusterAPIKey(29, 1, 3),
		clusterAPIKey(46, 0, 0),
		clusterAPIKey(18, produceMax+50, produceMax+60),
	})
	lines := strings.Split(got, "\n")
	if lines[0] != "(" || lines[len(lines)-1] != ")" {
		t.Fatalf("not wrapped in parentheses:\n%s", got)
	}
	want := []string{
		"\tProduce(0): 3 to " + clusterItoa(produceMax+5) + " [usable: " + clusterItoa(produceMax) + "],",
		"\tFetch(1): UNSUPPORTED,",
		"\tApiVersions(18): " + clusterItoa(produceMax+50) + " to " + clusterItoa(produceMax+60) + " [unusable: node too new],",
		"\tDescribeAcls(29): 1 to 3 [usable: 3],",
		"\tListPartitionReassignments(46): 0 [usable: 0],",
	}
	for _, w := range want {
		if !strings.Contains(got, w+"\n") {
			t.Errorf("missing line %q in\n%s", w, got)
		}
	}
	if !strings.HasSuffix(got, "\tUNKNOWN(999): 0 to 2\n)") {
		t.Errorf("the unknown API is not last, without annotation:\n%s", got)
	}
	for _, absent := range []string{"Vote(52)", "LeaderAndIsr(4)", "BrokerHeartbeat(63)"} {
		if strings.Contains(got, absent) {
			t.Errorf("controller-only %s reported:\n%s", absent, got)
		}
	}
	// Keys ascend.
	prev := -1
	for _, l := range lines[1 : len(lines)-1] {
		open, closing := strings.Index(l, "("), strings.Index(l, ")")
		k := clusterAtoi(t, l[open+1:closing])
		if k <= prev {
			t.Fatalf("key %d after %d", k, prev)
		}
		prev = k
	}
}

func clusterItoa(v int16) string { return strconv.Itoa(int(v)) }

func clusterAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMetadataVersions: names and releases map to Kafka 4.2's levels, as
// MetadataVersion.fromVersionString and fromFeatureLevel do.
func TestClusterMetadataVersions(t *testing.T) {
	for s, want := range map[string]int16{"4.2-IV1": 29, "4.2": 29, "4.2.0": 29, "4.0": 25, "4.0-IV0": 22, "3.3": 7, "3.3-IV3": 7, "3.9-IV0": 21} {
		if got, ok := parseMetadataVersion(s); !ok || got != want {
			t.Errorf("%s: level %d %v, want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"3.3-IV0", "3.2", "4.3", "5.0", "4", "", "4.2-IV9"} {
		if got, ok := parseMetadataVersion(s); ok {
			t.Errorf("%s: level %d, want unknown", s, got)
		}
	}
	for level, want := range map[int16]string{7: "3.3-IV3", 21: "3.9-IV0", 29: "4.2-IV1", 6: "UNKNOWN 6", 30: "UNKNOWN 30"} {
		if got := featureLevelText("metadata.version", level); got != want {
			t.Errorf("level %d: %q, want %q", level, got, want)
		}
	}
	if got := featureLevelText("group.version", 1); got != "1" {
		t.Errorf("group.version 1: %q", got)
	}
}

// TestFeaturesVersionMapping: Kafka's example (3.9-IV0 sets
// metadata.version=21 and kraft.version=1) and 4.2's defaults.
func TestClusterFeaturesVersionMapping(t *testing.T) {
	var b strings.Builder
	if err := featuresVersionMapping("3.9-IV0", &b); err != nil {
		t.Fatal(err)
	}
	want := "metadata.version=21 (3.9-IV0)\nkraft.version=1\ntransaction.version=0\ngroup.version=0\n" +
		"eligible.leader.replicas.version=0\nshare.version=0\nstreams.version=0\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := featuresVersionMapping("4.2", &b); err != nil {
		t.Fatal(err)
	}
	want = "metadata.version=29 (4.2)\nkraft.version=1\ntransaction.version=2\ngroup.version=1\n" +
		"eligible.leader.replicas.version=1\nshare.version=1\nstreams.version=1\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	if err := featuresVersionMapping("2.8", &b); err == nil || !strings.Contains(err.Error(), "--release-version: unknown release version '2.8'. Supported versions are: 3.3-IV3 to 4.2-IV1") {
		t.Fatalf("2.8: %v", err)
	}
}

func TestClusterParseFeatureLevel(t *testing.T) {
	if name, level, err := parseFeatureLevel(" group.version = 1 "); err != nil || name != "group.version" || level != 1 {
		t.Fatalf("got %q %d %v", name, level, err)
	}
	for in, want := range map[string]string{
		"group.version":         "--feature: can't parse feature=level string group.version: equals sign not found",
		"group.version=x":       "unable to parse x as a short",
		"group.version=40000":   "unable to parse 40000 as a short",
		"metadata.version=4.2-": "unable to parse 4.2- as a short",
	} {
		if _, _, err := parseFeatureLevel(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

func clusterReplica(id int32, leo, fetch, caughtUp int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	r.ReplicaID, r.LogEndOffset, r.LastFetchTimestamp, r.LastCaughtUpTimestamp = id, leo, fetch, caughtUp
	return r
}

// TestQuorumText: --status's lag is the leader's offset less the voter
// furthest behind, its time the gap between their caught-up times; voters
// show their endpoints (IPv6 in brackets) and directory ids; --replication
// lists the leader, followers and observers in Kafka's padded table.
func TestClusterQuorumText(t *testing.T) {
	q := &quorumInfo{nodes: map[int32][]kmsg.DescribeQuorumResponseNodeListener{
		1: {{Name: "CONTROLLER", Host: "c1", Port: 9093}},
		2: {{Name: "CONTROLLER", Host: "::1", Port: 9093}, {Name: "SSL", Host: "c2", Port: 9094}},
	}}
	q.LeaderID, q.LeaderEpoch, q.HighWatermark = 1, 7, 120
	q.CurrentVoters = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{clusterReplica(2, 100, 900, 800), clusterReplica(1, 130, 1000, 1000), clusterReplica(3, 100, 950, -1)}
	q.CurrentVoters[0].ReplicaDirectoryID = [16]byte{1}
	q.Observers = []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{clusterReplica(5, 125, -1, -1)}
	got, err := quorumStatusText("cid", q)
	if err != nil {
		t.Fatal(err)
	}
	want := "ClusterId:              cid\nLeaderId:               1\nLeaderEpoch:            7\nHighWatermark:          120\n" +
		"MaxFollowerLag:         30\nMaxFollowerLagTimeMs:   200\n" +
		`CurrentVoters:          [{"id": 2, "directoryId": "AQAAAAAAAAAAAAAAAAAAAA", "endpoints": ["CONTROLLER://[::1]:9093", "SSL://c2:9094"]}, ` +
		`{"id": 1, "directoryId": null, "endpoints": ["CONTROLLER://c1:9093"]}, {"id": 3, "directoryId": null}]` + "\n" +
		`CurrentObservers:       [{"id": 5, "directoryId": null}]` + "\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}

	table, err := quorumReplicationText(q, false, time.UnixMilli(2000))
	if err != nil {
		t.Fatal(err)
	}
	wantTable := "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n" +
		"1     \tAAAAAAAAAAAAAAAAAAAAAA\t130         \t0  \t1000              \t1000                 \tLeader  \t\n" +
		"2     \tAQAAAAAAAAAAAAAAAAAAAA\t100         \t30 \t900               \t800                  \tFollower\t\n" +
		"3     \tAAAAAAAAAAAAAAAAAAAAAA\t100         \t30 \t950               \t-1                   \tFollower\t\n" +
		"5     \tAAAAAAAAAAAAAAAAAAAAAA\t125         \t5  \t-1                \t-1                   \tObserver\t\n"
	if table != wantTable {
		t.Fatalf("got\n%q\nwant\n%q", table, wantTable)
	}
	human, err := quorumReplicationText(q, true, time.UnixMilli(2000))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(human, "\t1000 ms ago       \t1000 ms ago          \tLeader  \t") {
		t.Fatalf("human-readable:\n%s", human)
	}
	if _, err := quorumReplicationText(q, true, time.UnixMilli(950)); err == nil ||
		!strings.Contains(err.Error(), "possible drift in system clock.\nCurrent timestamp is 950, last fetch timestamp is 1000") {
		t.Fatalf("a fetch after now: %v", err)
	}

	// A leader furthest behind has no lag time; one not among the voters
	// is an error.
	q.CurrentVoters = q.CurrentVoters[1:2]
	if got, _ := quorumStatusText("cid", q); !strings.Contains(got, "MaxFollowerLag:         0\nMaxFollowerLagTimeMs:   0\n") {
		t.Fatalf("lone voter:\n%s", got)
	}
	q.LeaderID = 9
	if _, err := quorumStatusText("cid", q); err == nil || !strings.Contains(err.Error(), "leader 9 is not among the voters") {
		t.Fatalf("leader not a voter: %v", err)
	}
}

// TestClusterFeaturesDependencies: each Kafka 4.2 feature level's
// dependencies in Kafka's format, and Kafka's refusals.
func TestClusterFeaturesDependencies(t *testing.T) {
	cases := []struct {
		features []string
		want     string
		err      string
	}{
		{[]string{"metadata.version=29"}, "metadata.version=29 (4.2-IV1) has no dependencies.\n", ""},
		{[]string{"metadata.version=7"}, "metadata.version=7 (3.3-IV3) has no dependencies.\n", ""},
		{[]string{"kraft.version=1"}, "kraft.version=1 requires:\n    metadata.version=21 (3.9-IV0)\n", ""},
		{[]string{"kraft.version=0"}, "kraft.version=0 has no dependencies.\n", ""},
		{[]string{"eligible.leader.replicas.version=1"}, "eligible.leader.replicas.version=1 requires:\n    metadata.version=23 (4.0-IV1)\n", ""},
		{[]string{"share.version=1"}, "share.version=1 requires:\n    metadata.version=27 (4.1-IV1)\n", ""},
		{[]string{"transaction.version=2", " group.version = 1 ", "streams.version=1"},
			"transaction.version=2 has no dependencies.\ngroup.version=1 has no dependencies.\nstreams.version=1 has no dependencies.\n", ""},
		// The levels before the refused one are printed, as Kafka's tool does.
		{[]string{"group.version=1", "group.version=2"}, "group.version=1 has no dependencies.\n", "--feature: no feature:group.version with feature level 2"},
		{[]string{"transaction.version=-1"}, "", "--feature: no feature:transaction.version with feature level -1"},
		{[]string{"metadata.version=6"}, "", "--feature: unknown metadata.version 6"},
		{[]string{"metadata.version=30"}, "", "--feature: unknown metadata.version 30"},
		{[]string{"metadata.version=4.2-IV1"}, "", "--feature: can't parse feature=level string metadata.version=4.2-IV1: unable to parse 4.2-IV1 as a short"},
		{[]string{"test.feature.version=1"}, "", "--feature: unknown feature: test.feature.version"},
		{[]string{"group.version"}, "", "--feature: can't parse feature=level string group.version: equals sign not found"},
		{nil, "", "missing required argument --feature"},
	}
	for _, c := range cases {
		var b strings.Builder
		err := featuresDependencies(c.features, &b)
		if b.String() != c.want {
			t.Errorf("%q: got\n%s\nwant\n%s", c.features, b.String(), c.want)
		}
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%q: error %v, want %q", c.features, err, c.err)
		}
	}
}
