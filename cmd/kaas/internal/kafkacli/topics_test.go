package kafkacli

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTopicsParseReplicaAssignment(t *testing.T) {
	got, err := topicsParseReplicaAssignment("0:1, 1 :2,2:0")
	if want := [][]int32{{0, 1}, {1, 2}, {2, 0}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
	for in, want := range map[string]string{
		"0:1,1:1":   "Partition replica lists may not contain duplicate entries: 1",
		"0:1,2":     "Partition 1 has different replication factor: [2]",
		"0:1,x:2":   `partition 1: "x" is not a broker id`,
		"0:1,,1:2":  `partition 1: "" is not a broker id`,
		"0:1:0:1,2": "duplicate entries: 0,1",
	} {
		if _, err := topicsParseReplicaAssignment(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

func TestTopicsParseConfigs(t *testing.T) {
	got, err := topicsParseConfigs([]string{"retention.ms=1000", " cleanup.policy = compact "})
	if want := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"retention.ms", "retention.ms=", "a=b=c", "=1"} {
		_, err := topicsParseConfigs([]string{bad})
		if bad == "=1" {
			// Kafka's split gives ["", "1"]: two fields, an empty name the
			// broker refuses.
			if err != nil {
				t.Errorf("%q: %v", bad, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), `all configs to be added must be in the format "key=val"`) {
			t.Errorf("%q: got %v", bad, err)
		}
	}
}

func TestTopicsIncludeList(t *testing.T) {
	for _, c := range []struct {
		re      string
		match   []string
		noMatch []string
	}{
		{"orders", []string{"orders"}, []string{"orders-2", "my-orders"}},
		{"orders.*", []string{"orders", "orders-2"}, []string{"my-orders"}},
		{"a,b", []string{"a", "b"}, []string{"a,b", "ab"}},
		{` "a.b" `, []string{"a.b", "aXb"}, []string{"a.bc"}},
		{`a\.b`, []string{"a.b"}, []string{"aXb"}},
	} {
		re, err := topicsIncludeList(c.re)
		if err != nil {
			t.Fatalf("%q: %v", c.re, err)
		}
		for _, m := range c.match {
			if !re.MatchString(m) {
				t.Errorf("%q does not match %q", c.re, m)
			}
		}
		for _, m := range c.noMatch {
			if re.MatchString(m) {
				t.Errorf("%q matches %q", c.re, m)
			}
		}
	}
	if _, err := topicsIncludeList("a("); err == nil || !strings.Contains(err.Error(), "a( is an invalid regex.") {
		t.Fatalf("an invalid regex: %v", err)
	}
}

func TestTopicsTopicID(t *testing.T) {
	id := [16]byte{0xfb, 0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	s := topicsFormatID(id)
	if len(s) != 22 || strings.ContainsAny(s, "+/=") {
		t.Fatalf("%q is not Kafka's URL-safe unpadded form", s)
	}
	back, err := topicsParseID(s)
	if err != nil || back != id {
		t.Fatalf("round trip: %v %v", back, err)
	}
	for _, bad := range []string{"abc", s + "AA", "+/" + s[2:]} {
		if _, err := topicsParseID(bad); err == nil || !strings.Contains(err.Error(), "--topic-id") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestTopicsDescribeLines(t *testing.T) {
	live := map[int32]bool{0: true, 1: true, 2: true}
	val := func(s string) *string { return &s }
	configs := []kadm.Config{
		{Key: "retention.ms", Value: val("1000"), Source: kmsg.ConfigSourceDynamicTopicConfig},
		{Key: "min.insync.replicas", Value: val("2"), Source: kmsg.ConfigSourceDefaultConfig},
		{Key: "cleanup.policy", Value: val("delete"), Source: kmsg.ConfigSourceDefaultConfig},
		{Key: "compression.type", Value: val("zstd"), Source: kmsg.ConfigSourceStaticBrokerConfig},
	}
	ti := topicsTopic{name: "t", id: [16]byte{1}, partitions: []topicsPartition{
		{partition: 0, leader: 0, replicas: []int32{0, 1, 2}, isr: []int32{0, 1, 2}, elrKnown: true},
		{partition: 1, leader: 1, replicas: []int32{1, 2, 0}, isr: []int32{1, 2}, elrKnown: true, elr: []int32{0}, lastKnownELR: []int32{}},
		{partition: 2, leader: -1, replicas: []int32{2, 0, 1}, isr: []int32{}, elrKnown: true},
		{partition: 3, leader: 1, replicas: []int32{1}, isr: []int32{1},
			reassignment: &kadm.ListPartitionReassignmentsResponse{Replicas: []int32{1, 2}, AddingReplicas: []int32{2}}},
	}}
	id := topicsFormatID(ti.id)
	all := topicsReport{}.lines(ti, configs, live)
	want := []string{
		// Configs: every entry not from the defaults (a static broker
		// setting counts, as in Kafka), sorted by name.
		"Topic: t\tTopicId: " + id + "\tPartitionCount: 4\tReplicationFactor: 3\tConfigs: compression.type=zstd,retention.ms=1000",
		"\tTopic: t\tPartition: 0\tLeader: 0\tReplicas: 0,1,2\tIsr: 0,1,2\tElr: \tLastKnownElr: ",
		"\tTopic: t\tPartition: 1\tLeader: 1\tReplicas: 1,2,0\tIsr: 1,2\tElr: 0\tLastKnownElr: ",
		"\tTopic: t\tPartition: 2\tLeader: none\tReplicas: 2,0,1\tIsr: \tElr: \tLastKnownElr: ",
		"\tTopic: t\tPartition: 3\tLeader: 1\tReplicas: 1\tIsr: 1\tAdding Replicas: 2\tRemoving Replicas: \tElr: N/A\tLastKnownElr: N/A",
	}
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("got\n%q\nwant\n%q", all, want)
	}
	partitions := func(r topicsReport) []string {
		var ps []string
		for _, l := range r.lines(ti, configs, live) {
			if !strings.HasPrefix(l, "\t") {
				t.Fatalf("a partition filter printed the topic line %q", l)
			}
			ps = append(ps, strings.Split(l, "\t")[2])
		}
		return ps
	}
	// min.insync.replicas=2: partition 1 has 2 in sync, 2 has none and no
	// leader, 3 has 1 (its replication factor is 1 while replica 2 is
	// being added).
	for _, c := range []struct {
		r    topicsReport
		want []string
	}{
		{topicsReport{underReplicated: true}, []string{"Partition: 1", "Partition: 2"}},
		{topicsReport{underMinISR: true}, []string{"Partition: 2", "Partition: 3"}},
		{topicsReport{atMinISR: true}, []string{"Partition: 1"}},
		{topicsReport{unavailable: true}, []string{"Partition: 2"}},
		{topicsReport{unavailable: true, atMinISR: true}, []string{"Partition: 1", "Partition: 2"}},
	} {
		if got := partitions(c.r); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: got %q, want %q", c.r, got, c.want)
		}
	}
	if got := (topicsReport{withOverrides: true}).lines(ti, configs, live); len(got) != 1 || got[0] != want[0] {
		t.Errorf("--topics-with-overrides: %q", got)
	}
	if got := (topicsReport{withOverrides: true}).lines(ti, configs[1:2], live); len(got) != 0 {
		t.Errorf("--topics-with-overrides, no overrides: %q", got)
	}
}

// The argument checks refuse before connecting, with Kafka's messages.
func TestTopicsArgs(t *testing.T) {
	bs := "--bootstrap-server=localhost:1"
	for _, c := range []struct {
		args []string
		want string // "" accepted
	}{
		{nil, "give one of --list"},
		{[]string{bs}, "Command must include exactly one action"},
		{[]string{bs, "--list", "--describe"}, "Command must include exactly one action"},
		{[]string{"--list"}, "--bootstrap-server must be specified"},
		{[]string{bs, "--list", "--zookeeper", "zk:2181"}, "--zookeeper is not supported"},
		{[]string{bs, "--alter", "--topic", "t", "--partitions", "2", "--delete-config", "x"}, "--delete-config is no longer supported"},
		{[]string{bs, "--create", "--partitions", "1"}, `Missing required argument "[topic]"`},
		{[]string{bs, "--delete"}, `Missing required argument "[topic]"`},
		{[]string{bs, "--alter", "--topic", "t"}, `Missing required argument "[partitions]"`},
		{[]string{bs, "--alter", "--topic", "t", "--partitions", "2", "--config", "a=b"}, `Option combination "[bootstrap-server, config]" can't be used with option "[alter]" (To alter topic configurations, the kafka-configs tool can be used.)`},
		{[]string{bs, "--describe", "--if-exists"}, "--topic or --topic-id is required to describe a topic"},
		{[]string{bs, "--list", "--config", "a=b"}, `Option "[config]" can't be used with option "[list]"`},
		{[]string{bs, "--delete", "--topic", "t", "--partitions", "2"}, `Option "[partitions]" can't be used with option "[delete]"`},
		{[]string{bs, "--alter", "--topic", "t", "--partitions", "2", "--replication-factor", "1"}, `Option "[replication-factor]" can't be used with option "[alter]"`},
		{[]string{bs, "--create", "--topic", "t", "--replica-assignment", "0", "--partitions", "1"}, `Option "[replica-assignment]" can't be used with option "[partitions]"`},
		{[]string{bs, "--create", "--topic", "t", "--if-exists"}, `Option "[if-exists]" can't be used with option "[create]"`},
		{[]string{bs, "--delete", "--topic", "t", "--if-not-exists"}, `Option "[if-not-exists]" can't be used with option "[delete]"`},
		{[]string{bs, "--delete", "--topic", "t", "--exclude-internal"}, `Option "[exclude-internal]" can't be used with option "[delete]"`},
		{[]string{bs, "--list", "--under-replicated-partitions"}, `Option "[under-replicated-partitions]" can't be used with option "[list]"`},
		{[]string{bs, "--describe", "--at-min-isr-partitions", "--topics-with-overrides"}, `Option "[at-min-isr-partitions]" can't be used with option "[topics-with-overrides]"`},
		{[]string{bs, "--delete", "--topic", "t", "--topic-id", "AAAAAAAAAAAAAAAAAAAAAA"}, `Option "[topic-id]" can't be used with option "[delete]"`},
		{[]string{bs, "--create", "--topic", "t", "--replication-factor", "0"}, "The replication factor must be between 1 and 32767 inclusive"},
		{[]string{bs, "--create", "--topic", "t", "--partitions", "0"}, "The partitions must be greater than 0"},
		{[]string{bs, "--create", "--topic", "t", "--config", "retention.ms"}, `Invalid topic config`},
		{[]string{bs, "--create", "--topic", "t", "--replica-assignment", "0:0"}, "duplicate entries: 0"},
		{[]string{bs, "--describe", "--topic", "a("}, "is an invalid regex"},
		{[]string{bs, "--describe", "--topic-id", "nope"}, "--topic-id"},
		{[]string{bs, "--describe", "--partition-size-limit-per-response", "0"}, "--partition-size-limit-per-response 0"},
		{[]string{bs, "--list", "extra"}, `unexpected argument "extra"`},
		{[]string{bs, "--list", "--no-such-flag"}, "no-such-flag"},
		{[]string{bs, "--partitions", "x", "--create", "--topic", "t"}, "-partitions"},
		{[]string{bs, "--list"}, ""},
		{[]string{bs, "--create", "--topic", "a.b", "--replica-assignment", "0:1,1:2", "--config", "retention.ms=1", "--if-not-exists"}, ""},
		{[]string{bs, "--describe", "--topic", "a.*", "--if-exists", "--under-min-isr-partitions", "--exclude-internal", "--partition-size-limit-per-response", "5"}, ""},
		{[]string{bs, "--alter", "--topic", "a", "--partitions", "4", "--replica-assignment", "0,0,0,0", "--if-exists"}, ""},
	} {
		_, err := parseTopicsArgs(c.args, io.Discard, io.Discard)
		if c.want == "" && err != nil {
			t.Errorf("%q: %v", c.args, err)
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: got %v, want %q", c.args, err, c.want)
		}
	}
}
