package main

import (
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterToolRefused runs a tool that must fail with exit status 2 and a
// message containing want; it returns the standard output.
func clusterToolRefused(t *testing.T, want string, args ...string) string {
	t.Helper()
	out, errOut, code := runKaas(t, args...)
	if code != 2 || !strings.Contains(errOut, want) {
		t.Fatalf("kaas %s: exit %d, stderr %q; want exit 2 and %q (stdout %q)", strings.Join(args, " "), code, errOut, want, out)
	}
	return out
}

// clusterToolAPIVersions is what the broker answers ApiVersions, read
// with franz-go rather than the tool under test.
func clusterToolAPIVersions(t *testing.T, cl *kgo.Client) *kmsg.ApiVersionsResponse {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctxT(t, 10*time.Second), cl.Broker(0))
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %v %+v", err, resp)
	}
	return resp
}

// TestClusterTools: `kaas broker-api-versions`, `kaas features`, `kaas
// metadata-quorum` and `kaas cluster` print what Kafka's tools print for
// what the broker answers (cross-checked with franz-go's requests), the
// feature levels kaas runs can be asked for and no other, and refused
// commands say why and change nothing.
func TestClusterTools(t *testing.T) {
	_, addr := testBroker(t, "--cluster-id", "cluster-tools-test", "--rack", "zone-a")
	_, port, _ := net.SplitHostPort(addr)
	cl := newClient(t, addr)
	bs := []string{"--bootstrap-server", addr}
	tool := func(name string, args ...string) []string { return append(append([]string{name}, bs...), args...) }

	t.Run("broker-api-versions", func(t *testing.T) {
		out := mustTool(t, tool("broker-api-versions")...)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		head := regexp.MustCompile(`^(\S+):(\d+) \(id: 0 rack: zone-a isFenced: false\) -> \($`)
		if m := head.FindStringSubmatch(lines[0]); m == nil || m[2] != port || lines[len(lines)-1] != ")" {
			t.Fatalf("not one broker 0 at port %s in zone-a:\n%s", port, out)
		}
		resp := clusterToolAPIVersions(t, cl)
		served := map[int16]kmsg.ApiVersionsResponseApiKey{}
		for _, k := range resp.ApiKeys {
			served[k.ApiKey] = k
		}
		line := regexp.MustCompile(`^\t(\w+)\((\d+)\): (?:UNSUPPORTED|(\d+)(?: to (\d+))? \[usable: (\d+)\])(,?)$`)
		listed := map[int16]bool{}
		body := lines[1 : len(lines)-1]
		for i, l := range body {
			m := line.FindStringSubmatch(l)
			if m == nil || (m[6] == ",") != (i < len(body)-1) {
				t.Fatalf("line %q not in Kafka's format", l)
			}
			key64, _ := strconv.ParseInt(m[2], 10, 16)
			key := int16(key64)
			k, ok := served[key]
			if m[3] == "" { // UNSUPPORTED
				if ok {
					t.Errorf("%s: the broker serves %d to %d", l, k.MinVersion, k.MaxVersion)
				}
				continue
			}
			listed[key] = true
			lo, _ := strconv.Atoi(m[3])
			hi := lo
			if m[4] != "" {
				hi, _ = strconv.Atoi(m[4])
			}
			usable, _ := strconv.Atoi(m[5])
			want := min(k.MaxVersion, kmsg.RequestForKey(key).MaxVersion())
			if !ok || int16(lo) != k.MinVersion || int16(hi) != k.MaxVersion || int16(usable) != want {
				t.Errorf("%s: the broker serves %d to %d (%v), usable %d", l, k.MinVersion, k.MaxVersion, ok, want)
			}
		}
		if len(listed) != len(served) {
			t.Errorf("%d APIs listed with versions, the broker serves %d", len(listed), len(served))
		}
		for _, w := range []string{"\tProduce(0): ", "\tApiVersions(18): ", "\tDescribeAcls(29): ", "\tInitProducerId(22): ", "\tAlterPartitionReassignments(45): "} {
			if !strings.Contains(out, w) {
				t.Errorf("no %q (Kafka's API names)", w)
			}
		}
		clusterToolRefused(t, "missing required argument --bootstrap-server", "broker-api-versions")
		clusterToolRefused(t, "flag provided but not defined: -zookeeper", "broker-api-versions", "--zookeeper", "localhost:2181")
	})

	t.Run("features describe", func(t *testing.T) {
		out := mustTool(t, tool("features", "describe")...)
		resp := clusterToolAPIVersions(t, cl)
		finalized := map[string]int16{}
		for _, f := range resp.FinalizedFeatures {
			finalized[f.Name] = f.MaxVersionLevel
		}
		var want []string
		for _, f := range resp.SupportedFeatures {
			level := func(l int16) string { return strconv.Itoa(int(l)) }
			if f.Name == "metadata.version" {
				if f.MaxVersion != 29 || finalized[f.Name] != 29 {
					t.Fatalf("metadata.version %d finalized %d: this test names level 29 4.2-IV1", f.MaxVersion, finalized[f.Name])
				}
				level = func(int16) string { return "4.2-IV1" }
			}
			want = append(want, "Feature: "+f.Name+"\tSupportedMinVersion: "+level(f.MinVersion)+"\tSupportedMaxVersion: "+level(f.MaxVersion)+
				"\tFinalizedVersionLevel: "+level(finalized[f.Name])+"\tEpoch: "+strconv.FormatInt(resp.FinalizedFeaturesEpoch, 10))
		}
		sort.Strings(want)
		if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("got\n%s\nwant\n%s", out, strings.Join(want, "\n"))
		}
		// Flags after the command work too, as does --command-config.
		if again := mustTool(t, "features", "describe", "--bootstrap-server", addr, "--command-config", writeProperties(t, "security.protocol=PLAINTEXT")); again != out {
			t.Fatalf("describe with flags after it:\n%s", again)
		}
	})

	t.Run("features upgrade to the finalized levels", func(t *testing.T) {
		before := clusterToolAPIVersions(t, cl)
		var args []string
		var want []string
		for _, f := range before.FinalizedFeatures {
			args = append(args, "--feature", f.Name+"="+strconv.Itoa(int(f.MaxVersionLevel)))
			want = append(want, f.Name+" was upgraded to "+strconv.Itoa(int(f.MaxVersionLevel))+".")
		}
		sort.Strings(want)
		if out := mustTool(t, tool("features", append([]string{"upgrade"}, args...)...)...); out != strings.Join(want, "\n")+"\n" {
			t.Fatalf("upgrade:\n%s\nwant\n%s", out, strings.Join(want, "\n"))
		}
		if out := mustTool(t, tool("features", "upgrade", "--dry-run", "--feature", "group.version=1")...); out != "group.version can be upgraded to 1.\n" {
			t.Fatalf("dry run: %q", out)
		}
		if out := mustTool(t, tool("features", "upgrade", "--metadata", "4.2")...); out != " `metadata` flag is deprecated and may be removed in a future release.\nmetadata.version was upgraded to 29.\n" {
			t.Fatalf("--metadata 4.2: %q", out)
		}
		if out := mustTool(t, tool("features", "downgrade", "--unsafe", "--feature", "transaction.version=2")...); out != "transaction.version was downgraded to 2.\n" {
			t.Fatalf("downgrade to the finalized level: %q", out)
		}
		// A feature kaas does not run is at level 0, so disabling it changes nothing.
		if out := mustTool(t, tool("features", "disable", "--feature", "kraft.version")...); out != "kraft.version was disabled.\n" {
			t.Fatalf("disable kraft.version: %q", out)
		}
		after := clusterToolAPIVersions(t, cl)
		if len(after.FinalizedFeatures) != len(before.FinalizedFeatures) || after.FinalizedFeaturesEpoch != before.FinalizedFeaturesEpoch {
			t.Fatalf("finalized features changed: %+v, then %+v", before.FinalizedFeatures, after.FinalizedFeatures)
		}
	})

	t.Run("features refused", func(t *testing.T) {
		out := clusterToolRefused(t, "1 out of 1 operation(s) failed.", tool("features", "upgrade", "--feature", "group.version=2")...)
		if out != "Could not upgrade group.version to 2. Invalid update version 2 for feature group.version. kaas runs group.version at level 1 only; its feature levels are fixed by the build.\n" {
			t.Fatalf("upgrade to another level: %q", out)
		}
		out = clusterToolRefused(t, "1 out of 1 operation(s) failed.", tool("features", "upgrade", "--dry-run", "--metadata", "4.0-IV3")...)
		if !strings.HasSuffix(out, "Can not upgrade metadata.version to 25. Invalid update version 25 for feature metadata.version. kaas runs metadata.version at level 29 only; its feature levels are fixed by the build.\n") {
			t.Fatalf("dry-run of another metadata.version: %q", out)
		}
		out = clusterToolRefused(t, "1 out of 1 operation(s) failed.", tool("features", "disable", "--feature", "group.version")...)
		if !strings.HasPrefix(out, "Could not disable group.version. Invalid update version 0 for feature group.version.") {
			t.Fatalf("disable: %q", out)
		}
		// A release version asks for every feature of Kafka 4.2, and kaas
		// runs kraft.version and eligible.leader.replicas.version at 0 and
		// share.version at 2: the request is refused whole.
		out = clusterToolRefused(t, "7 out of 7 operation(s) failed.", tool("features", "upgrade", "--release-version", "4.2-IV1")...)
		if n := strings.Count(out, "Could not upgrade "); n != 7 || !strings.Contains(out, "Could not upgrade metadata.version to 29. ") {
			t.Fatalf("release version: %q", out)
		}

		for _, c := range []struct {
			want string
			args []string
		}{
			{"--feature: can't parse feature=level string group.version: equals sign not found", []string{"upgrade", "--feature", "group.version"}},
			{"unable to parse one as a short", []string{"upgrade", "--feature", "group.version=one"}},
			{"feature group.version was specified more than once", []string{"upgrade", "--feature", "group.version=1", "--feature", "group.version=1"}},
			{"feature metadata.version was specified more than once", []string{"upgrade", "--metadata", "4.2-IV1", "--feature", "metadata.version=29"}},
			{"--release-version can not be specified with --metadata or --feature", []string{"upgrade", "--release-version", "4.2", "--feature", "group.version=1"}},
			{"--release-version: unknown metadata.version 9.9. Supported metadata.version are 3.3-IV3, 3.4-IV0,", []string{"upgrade", "--release-version", "9.9"}},
			{"--metadata: unknown metadata.version 3.2-IV0", []string{"downgrade", "--metadata", "3.2-IV0"}},
			{"You must specify at least one feature to upgrade", []string{"upgrade", "--dry-run"}},
			{"You must specify at least one feature to disable", []string{"disable"}},
			{"flag provided but not defined: -unsafe", []string{"upgrade", "--unsafe", "--feature", "group.version=1"}},
			{"missing required argument --feature", []string{"feature-dependencies"}},
			{"--feature: unknown feature: test.feature.version", []string{"feature-dependencies", "--feature", "test.feature.version=1"}},
			{"--feature: no feature:share.version with feature level 2", []string{"feature-dependencies", "--feature", "share.version=2"}},
			{"--feature: unknown metadata.version 30", []string{"feature-dependencies", "--feature", "metadata.version=30"}},
			{"--feature: can't parse feature=level string metadata.version=4.2-IV1: unable to parse 4.2-IV1 as a short", []string{"feature-dependencies", "--feature", "metadata.version=4.2-IV1"}},
			{"flag provided but not defined: -release-version", []string{"feature-dependencies", "--release-version", "4.2"}},
			{`argument COMMAND: invalid choice: 'list'`, []string{"list"}},
			{"too few arguments: give a command, one of describe, upgrade, downgrade, disable, version-mapping, feature-dependencies", nil},
		} {
			clusterToolRefused(t, c.want, tool("features", c.args...)...)
		}
		clusterToolRefused(t, "missing required argument --bootstrap-server", "features", "describe")
		clusterToolRefused(t, "--bootstrap-controller is not supported", "features", "--bootstrap-controller", addr, "describe")

		if out := mustTool(t, tool("features", "version-mapping", "--release-version", "4.0")...); out !=
			"metadata.version=25 (4.0)\nkraft.version=1\ntransaction.version=2\ngroup.version=1\neligible.leader.replicas.version=0\nshare.version=0\nstreams.version=0\n" {
			t.Fatalf("version-mapping 4.0: %q", out)
		}
		if out := mustTool(t, tool("features", "version-mapping")...); !strings.HasPrefix(out, "metadata.version=29 (4.2-IV1)\n") {
			t.Fatalf("version-mapping: %q", out)
		}

		// feature-dependencies reads Kafka 4.2's table, not the broker: it
		// answers with nothing listening at the bootstrap address.
		nobody, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closedAddr := nobody.Addr().String()
		nobody.Close()
		if out := mustTool(t, "features", "--bootstrap-server", closedAddr, "feature-dependencies",
			"--feature", "share.version=1", "--feature", "metadata.version=29", "--feature", "group.version=1", "--feature", "kraft.version=1"); out !=
			"share.version=1 requires:\n    metadata.version=27 (4.1-IV1)\nmetadata.version=29 (4.2-IV1) has no dependencies.\n"+
				"group.version=1 has no dependencies.\nkraft.version=1 requires:\n    metadata.version=21 (3.9-IV0)\n" {
			t.Fatalf("feature-dependencies: %q", out)
		}
		// The levels before an unknown one are printed, then the refusal.
		if out := clusterToolRefused(t, "--feature: no feature:group.version with feature level 2", tool("features", "feature-dependencies", "--feature", "group.version=1", "--feature", "group.version=2")...); out != "group.version=1 has no dependencies.\n" {
			t.Fatalf("feature-dependencies before the refusal: %q", out)
		}
	})

	t.Run("metadata-quorum", func(t *testing.T) {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("DescribeQuorum: %v %+v", err, resp)
		}
		p := resp.Topics[0].Partitions[0]

		out := mustTool(t, tool("metadata-quorum", "describe", "--status")...)
		want := "ClusterId:              cluster-tools-test\n" +
			"LeaderId:               " + strconv.Itoa(int(p.LeaderID)) + "\n" +
			"LeaderEpoch:            " + strconv.Itoa(int(p.LeaderEpoch)) + "\n" +
			"HighWatermark:          " + strconv.FormatInt(p.HighWatermark, 10) + "\n" +
			"MaxFollowerLag:         0\nMaxFollowerLagTimeMs:   0\n" +
			`CurrentVoters:          [{"id": 0, "directoryId": null, "endpoints": ["PLAINTEXT://localhost:` + port + `"]}]` + "\n" +
			"CurrentObservers:       []\n"
		if p.LeaderID != 0 || out != want {
			t.Fatalf("--status:\n%s\nwant\n%s", out, want)
		}

		out = mustTool(t, tool("metadata-quorum", "describe", "--replication")...)
		row := regexp.MustCompile(`^0 +\tAAAAAAAAAAAAAAAAAAAAAA\t(\d+) *\t0 *\t(\d+) *\t(\d+) *\tLeader\t$`)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus\t") {
			t.Fatalf("--replication:\n%s", out)
		}
		m := row.FindStringSubmatch(lines[1])
		if m == nil || m[1] != strconv.FormatInt(p.CurrentVoters[0].LogEndOffset, 10) {
			t.Fatalf("--replication row %q, the leader at offset %d", lines[1], p.CurrentVoters[0].LogEndOffset)
		}
		if fetched, _ := strconv.ParseInt(m[2], 10, 64); time.Since(time.UnixMilli(fetched)) > time.Minute || fetched < p.CurrentVoters[0].LastFetchTimestamp {
			t.Fatalf("last fetch %d, want now and no earlier than %d", fetched, p.CurrentVoters[0].LastFetchTimestamp)
		}
		out = mustTool(t, "metadata-quorum", "describe", "--replication", "--human-readable", "--bootstrap-server", addr)
		if !regexp.MustCompile(`\n0 +\tAAAAAAAAAAAAAAAAAAAAAA\t\d+ *\t0 *\t\d+ ms ago *\t\d+ ms ago *\tLeader\t\n$`).MatchString(out) {
			t.Fatalf("--human-readable:\n%s", out)
		}

		for _, c := range []struct {
			want string
			args []string
		}{
			{"Only one of --status or --replication should be specified with describe sub-command", []string{"describe", "--status", "--replication"}},
			{"One of --status or --replication must be specified with describe sub-command", []string{"describe"}},
			{"The option --human-readable is only supported along with --replication", []string{"describe", "--status", "--human-readable"}},
			{"add-controller is not supported: kaas has no KRaft controller quorum", []string{"add-controller", "--dry-run"}},
			{"remove-controller is not supported: kaas has no KRaft controller quorum", []string{"remove-controller", "--controller-id", "1", "--controller-directory-id", "AAAAAAAAAAAAAAAAAAAAAA"}},
		} {
			clusterToolRefused(t, c.want, tool("metadata-quorum", c.args...)...)
		}
		clusterToolRefused(t, "--bootstrap-controller is not supported", "metadata-quorum", "--bootstrap-controller", addr, "describe", "--status")
		clusterToolRefused(t, "missing required argument --bootstrap-server", "metadata-quorum", "describe", "--status")
	})

	t.Run("cluster", func(t *testing.T) {
		if out := mustTool(t, "cluster", "cluster-id", "--bootstrap-server", addr); out != "Cluster ID: cluster-tools-test\n" {
			t.Fatalf("cluster-id: %q", out)
		}
		if out := mustTool(t, "cluster", "-b", addr, "cluster-id"); out != "Cluster ID: cluster-tools-test\n" {
			t.Fatalf("cluster-id with -b first: %q", out)
		}
		brokers, err := newAdmin(t, addr).ListBrokers(ctxT(t, 10*time.Second))
		if err != nil || len(brokers) != 1 {
			t.Fatalf("ListBrokers: %v %+v", err, brokers)
		}
		b := brokers[0]
		out := mustTool(t, "cluster", "list-endpoints", "--bootstrap-server", addr, "--include-fenced-brokers")
		hostCol := "%-" + strconv.Itoa(len(b.Host)) + "s"
		want := fmt.Sprintf("%-10s "+hostCol+" %-10s %-6s %-10s %-15s\n", "ID", "HOST", "PORT", "RACK", "STATE", "ENDPOINT_TYPE") +
			fmt.Sprintf("%-10s "+hostCol+" %-10s %-6s %-10s %-15s\n", "0", b.Host, strconv.Itoa(int(b.Port)), "zone-a", "unfenced", "broker")
		if out != want {
			t.Fatalf("list-endpoints:\n%q\nwant\n%q", out, want)
		}

		// Broker 0 is alive: the broker's refusal is shown, and it stays.
		clusterToolRefused(t, "unregister broker 0: INVALID_REQUEST: broker 0 is alive: only a dead broker can be unregistered",
			"cluster", "unregister", "--bootstrap-server", addr, "--id", "0")
		clusterToolRefused(t, "unregister broker 42: BROKER_ID_NOT_REGISTERED: broker 42 is not registered",
			"cluster", "unregister", "-b", addr, "-i", "42")
		if after, err := newAdmin(t, addr).ListBrokers(ctxT(t, 10*time.Second)); err != nil || len(after) != 1 || after[0].NodeID != 0 {
			t.Fatalf("brokers after the refusals: %v %+v", err, after)
		}

		clusterToolRefused(t, "missing required argument --id", "cluster", "unregister", "--bootstrap-server", addr)
		clusterToolRefused(t, "invalid value \"x\" for flag -id", "cluster", "unregister", "--bootstrap-server", addr, "--id", "x")
		clusterToolRefused(t, "--bootstrap-controller is not supported", "cluster", "cluster-id", "-C", addr)
		clusterToolRefused(t, "missing required argument --bootstrap-server", "cluster", "list-endpoints")
		clusterToolRefused(t, "flag provided but not defined: -include-fenced-brokers", "cluster", "cluster-id", "--bootstrap-server", addr, "--include-fenced-brokers")
		clusterToolRefused(t, "too few arguments: give a command, one of cluster-id, unregister, list-endpoints", "cluster", "--bootstrap-server", addr)
	})

	t.Run("help", func(t *testing.T) {
		for _, name := range []string{"broker-api-versions", "features", "metadata-quorum", "cluster"} {
			_, errOut, code := runKaas(t, name, "--help")
			if code != 0 || !strings.Contains(errOut, "--bootstrap-server") {
				t.Errorf("%s --help: exit %d\n%s", name, code, errOut)
			}
		}
		if _, errOut, code := runKaas(t, "metadata-quorum", "describe", "--help"); code != 0 || !strings.Contains(errOut, "--human-readable") {
			t.Errorf("metadata-quorum describe --help: exit %d\n%s", code, errOut)
		}
	})
}
