package main

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestToolsTopics runs kaas topics (Kafka's kafka-topics.sh) against a
// broker over TCP: each action's output is parsed and the cluster's state
// checked with kadm; refusals exit non-zero with Kafka's message and change
// nothing.
func TestToolsTopics(t *testing.T) {
	_, addr := testBroker(t)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 2*time.Minute)
	bs := "--bootstrap-server=" + addr
	topics := func(t *testing.T, args ...string) string {
		t.Helper()
		return mustTool(t, append([]string{"topics", bs}, args...)...)
	}
	refused := func(t *testing.T, want string, args ...string) {
		t.Helper()
		out, errOut, code := runKaas(t, append([]string{"topics", bs}, args...)...)
		if code == 0 || !strings.Contains(errOut, want) {
			t.Fatalf("kaas topics %q: exit %d, stdout %q, stderr %q; want a refusal saying %q", args, code, out, errOut, want)
		}
	}
	// Topics as the broker shows them now (kadm's Metadata is cached).
	metadata := func(t *testing.T, names ...string) map[string]kmsg.MetadataResponseTopic {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		for _, n := range names {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]kmsg.MetadataResponseTopic{}
		for _, rt := range resp.Topics {
			if rt.ErrorCode == 0 {
				out[*rt.Topic] = rt
			}
		}
		return out
	}
	partitionCount := func(t *testing.T, name string) int {
		t.Helper()
		return len(metadata(t, name)[name].Partitions)
	}
	exists := func(t *testing.T, name string) bool {
		t.Helper()
		_, ok := metadata(t)[name]
		return ok
	}

	t.Run("create", func(t *testing.T) {
		out := topics(t, "--create", "--topic", "orders", "--partitions", "3",
			"--config", "retention.ms=86400000", "--config", "cleanup.policy = compact")
		if out != "Created topic orders.\n" {
			t.Fatalf("stdout %q", out)
		}
		if n := partitionCount(t, "orders"); n != 3 {
			t.Fatalf("orders has %d partitions, want 3", n)
		}
		rcs, err := adm.DescribeTopicConfigs(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, c := range rcs[0].Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				got[c.Key] = *c.Value
			}
		}
		if want := map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("orders's topic configs %v, want %v", got, want)
		}

		// A replica list per partition; a name with an underscore draws
		// Kafka's metric-name warning.
		out = topics(t, "--create", "--topic", "by_hand", "--replica-assignment", "0,0")
		if want := "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. To avoid issues it is best to use either, but not both.\nCreated topic by_hand.\n"; out != want {
			t.Fatalf("stdout %q, want %q", out, want)
		}
		for _, pd := range metadata(t, "by_hand")["by_hand"].Partitions {
			if pd.Leader != 0 || !reflect.DeepEqual(pd.Replicas, []int32{0}) {
				t.Fatalf("by_hand partition %d: leader %d replicas %v, want broker 0 alone", pd.Partition, pd.Leader, pd.Replicas)
			}
		}
		if n := partitionCount(t, "by_hand"); n != 2 {
			t.Fatalf("by_hand has %d partitions, want 2", n)
		}

		if out := topics(t, "--create", "--topic", "orders", "--partitions", "7", "--if-not-exists"); out != "" {
			t.Fatalf("--if-not-exists on an existing topic printed %q", out)
		}
		refused(t, "Error while executing topic command : Topic 'orders' already exists.", "--create", "--topic", "orders", "--partitions", "7")
		if n := partitionCount(t, "orders"); n != 3 {
			t.Fatalf("orders has %d partitions after the refused creates, want 3", n)
		}
		topics(t, "--create", "--topic", "strict", "--partitions", "2", "--config", "min.insync.replicas=2")
	})

	t.Run("list", func(t *testing.T) {
		all := metadata(t)
		var want []string
		for n := range all {
			want = append(want, n)
		}
		sort.Strings(want)
		if _, ok := all["__consumer_offsets"]; !ok {
			t.Fatalf("the broker lists no __consumer_offsets: %v", want)
		}
		if got := topics(t, "--list"); got != strings.Join(want, "\n")+"\n" {
			t.Fatalf("--list %q, want %q", got, want)
		}
		got := strings.Fields(topics(t, "--list", "--exclude-internal"))
		var external []string
		for _, n := range want {
			if !all[n].IsInternal {
				external = append(external, n)
			}
		}
		if !reflect.DeepEqual(got, external) || len(got) != len(want)-1 {
			t.Fatalf("--list --exclude-internal %q, want %q", got, external)
		}
		if got := topics(t, "--list", "--topic", "ord.*,strict"); got != "orders\nstrict\n" {
			t.Fatalf("--list --topic 'ord.*,strict': %q", got)
		}
	})

	t.Run("describe", func(t *testing.T) {
		td := metadata(t, "orders")["orders"]
		id := base64.RawURLEncoding.EncodeToString(td.TopicID[:])
		lines := strings.Split(strings.TrimSuffix(topics(t, "--describe", "--topic", "orders"), "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("want a topic line and 3 partition lines, got %q", lines)
		}
		if want := "Topic: orders\tTopicId: " + id + "\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: cleanup.policy=compact,retention.ms=86400000"; lines[0] != want {
			t.Fatalf("topic line\n%q\nwant\n%q", lines[0], want)
		}
		for p, line := range lines[1:] {
			pd := td.Partitions[p]
			want := fmt.Sprintf("\tTopic: orders\tPartition: %d\tLeader: %d\tReplicas: %d\tIsr: %d\tElr: \tLastKnownElr: ", p, pd.Leader, pd.Replicas[0], pd.ISR[0])
			if line != want {
				t.Fatalf("partition %d\n%q\nwant\n%q", p, line, want)
			}
		}
		// Pages of one partition describe the same.
		if paged := topics(t, "--describe", "--topic", "orders", "--partition-size-limit-per-response", "1"); paged != strings.Join(lines, "\n")+"\n" {
			t.Fatalf("paged describe %q", paged)
		}
		// By id, described from Metadata as Kafka's admin client does: no
		// eligible-leader-replica fields.
		byID := strings.Split(strings.TrimSuffix(topics(t, "--describe", "--topic-id", id), "\n"), "\n")
		if len(byID) != 4 || byID[0] != lines[0] {
			t.Fatalf("--topic-id %s: %q", id, byID)
		}
		for i, line := range byID[1:] {
			if want := strings.Replace(lines[i+1], "Elr: \tLastKnownElr: ", "Elr: N/A\tLastKnownElr: N/A", 1); line != want {
				t.Fatalf("--topic-id partition line %q, want %q", line, want)
			}
		}
		refused(t, "TopicId 'AAAAAAAAAAAAAAAAAAAAAQ' does not exist as expected", "--describe", "--topic-id", "AAAAAAAAAAAAAAAAAAAAAQ")

		// Every topic: by_hand has no overrides and is left out of
		// --topics-with-overrides.
		overrides := topics(t, "--describe", "--topics-with-overrides")
		if !strings.Contains(overrides, "Topic: orders\t") || !strings.Contains(overrides, "Topic: strict\t") ||
			strings.Contains(overrides, "by_hand") || strings.Contains(overrides, "Partition:") {
			t.Fatalf("--topics-with-overrides:\n%s", overrides)
		}
		all := topics(t, "--describe", "--exclude-internal")
		if strings.Contains(all, "__consumer_offsets") || strings.Count(all, "\tPartition: ") != 3+2+2 {
			t.Fatalf("--describe --exclude-internal:\n%s", all)
		}

		// The partition filters, computed from the ISR (the leader alone
		// here) and min.insync.replicas: strict (2) is under it, orders
		// (the default 1) at it.
		partitionsOf := func(out string) []string {
			var ps []string
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if l == "" {
					continue
				}
				if !strings.HasPrefix(l, "\tTopic: ") {
					t.Fatalf("a filter printed %q", l)
				}
				f := strings.Split(l, "\t")
				ps = append(ps, strings.TrimPrefix(f[1], "Topic: ")+"-"+strings.TrimPrefix(f[2], "Partition: "))
			}
			return ps
		}
		if got := partitionsOf(topics(t, "--describe", "--under-min-isr-partitions", "--exclude-internal")); !reflect.DeepEqual(got, []string{"strict-0", "strict-1"}) {
			t.Fatalf("--under-min-isr-partitions: %q", got)
		}
		if got := partitionsOf(topics(t, "--describe", "--at-min-isr-partitions", "--topic", "orders|strict")); !reflect.DeepEqual(got, []string{"orders-0", "orders-1", "orders-2"}) {
			t.Fatalf("--at-min-isr-partitions: %q", got)
		}
		for _, f := range []string{"--under-replicated-partitions", "--unavailable-partitions"} {
			if got := topics(t, "--describe", f); got != "" {
				t.Fatalf("%s on a broker whose every partition is led and in sync: %q", f, got)
			}
		}

		refused(t, "Error while executing topic command : Topic 'nope' does not exist as expected", "--describe", "--topic", "nope")
		if out := topics(t, "--describe", "--topic", "nope", "--if-exists"); out != "" {
			t.Fatalf("--if-exists on an unknown topic printed %q", out)
		}
	})

	t.Run("alter", func(t *testing.T) {
		if out := topics(t, "--alter", "--topic", "orders", "--partitions", "5"); out != "" {
			t.Fatalf("stdout %q", out)
		}
		if n := partitionCount(t, "orders"); n != 5 {
			t.Fatalf("orders has %d partitions, want 5", n)
		}
		refused(t, "The topic orders currently has 5 partition(s); 2 would not be an increase.", "--alter", "--topic", "orders", "--partitions", "2")
		refused(t, "Topic already has 5 partition(s).", "--alter", "--topic", "orders", "--partitions", "5")
		// Kafka's assignment lists every partition; the two existing ones
		// are skipped.
		topics(t, "--alter", "--topic", "by_hand", "--partitions", "3", "--replica-assignment", "0,0,0")
		if n := partitionCount(t, "by_hand"); n != 3 {
			t.Fatalf("by_hand has %d partitions, want 3", n)
		}
		refused(t, "Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified.", "--alter", "--topic", "by_hand", "--partitions", "4", "--replica-assignment", "0,0,0")
		refused(t, `Option combination "[bootstrap-server, config]" can't be used with option "[alter]"`, "--alter", "--topic", "orders", "--partitions", "6", "--config", "retention.ms=1")
		refused(t, "Topic 'nope' does not exist as expected", "--alter", "--topic", "nope", "--partitions", "6")
		topics(t, "--alter", "--topic", "nope", "--partitions", "6", "--if-exists")
		if a, b := partitionCount(t, "orders"), partitionCount(t, "by_hand"); a != 5 || b != 3 {
			t.Fatalf("after the refusals: orders %d, by_hand %d partitions; want 5, 3", a, b)
		}
	})

	t.Run("delete", func(t *testing.T) {
		for _, n := range []string{"del-a", "del-b", "delx"} {
			topics(t, "--create", "--topic", n)
		}
		if out := topics(t, "--delete", "--topic", "del-.*"); out != "" {
			t.Fatalf("stdout %q", out)
		}
		if exists(t, "del-a") || exists(t, "del-b") || !exists(t, "delx") {
			t.Fatalf("after deleting del-.*: del-a %v, del-b %v, delx %v; want only delx", exists(t, "del-a"), exists(t, "del-b"), exists(t, "delx"))
		}
		refused(t, "Topic 'del-.*' does not exist as expected", "--delete", "--topic", "del-.*")
		topics(t, "--delete", "--topic", "del-.*", "--if-exists")
		topics(t, "--delete", "--topic", "delx")
		if exists(t, "delx") {
			t.Fatal("delx still exists")
		}
	})

	t.Run("refusals", func(t *testing.T) {
		refused(t, "Command must include exactly one action: --list, --describe, --create, --alter or --delete", "--topic", "orders")
		refused(t, "Command must include exactly one action", "--list", "--delete", "--topic", "orders")
		refused(t, `Missing required argument "[topic]"`, "--create", "--partitions", "1")
		refused(t, "--zookeeper is not supported", "--list", "--zookeeper", "localhost:2181")
		// The broker's INVALID_CONFIG message, naming the config.
		refused(t, "retention.ms", "--create", "--topic", "bad-config", "--config", "retention.ms=abc")
		refused(t, "no.such.config", "--create", "--topic", "bad-config", "--config", "no.such.config=1")
		if exists(t, "bad-config") {
			t.Fatal("a refused create made bad-config")
		}
		// A broker that is not registered.
		refused(t, "broker 1", "--create", "--topic", "bad-assignment", "--replica-assignment", "0:1")
		if exists(t, "bad-assignment") {
			t.Fatal("a refused create made bad-assignment")
		}
		if !exists(t, "orders") {
			t.Fatal("orders is gone")
		}
	})
}
