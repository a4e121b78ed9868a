package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configsTool runs `kaas configs --bootstrap-server addr args...`, which
// must succeed.
func configsTool(t *testing.T, addr string, args ...string) string {
	t.Helper()
	return mustTool(t, append([]string{"configs", "--bootstrap-server", addr}, args...)...)
}

// configsRefused runs a kaas configs command that must fail with a message
// containing want.
func configsRefused(t *testing.T, want string, args ...string) {
	t.Helper()
	out, errOut, code := runKaas(t, append([]string{"configs"}, args...)...)
	if code != 2 || !strings.Contains(errOut, want) {
		t.Fatalf("kaas configs %s: exit %d, stdout %q, stderr %q; want exit 2 naming %q", strings.Join(args, " "), code, out, errOut, want)
	}
}

// configsResource describes one config resource with kmsg (for the types
// kadm has no call for) and returns name -> value and name -> source.
func configsResource(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, name string) (map[string]string, map[string]kmsg.ConfigSource) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctxT(t, 5*time.Second), cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe %v %q: %v %+v", typ, name, err, resp)
	}
	values, sources := map[string]string{}, map[string]kmsg.ConfigSource{}
	for _, c := range resp.Resources[0].Configs {
		if c.Value != nil {
			values[c.Name] = *c.Value
		}
		sources[c.Name] = c.Source
	}
	return values, sources
}

// configsTopic is kadm's view of a topic's config: its value and source.
func configsTopic(t *testing.T, adm *kadm.Client, topic, key string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxT(t, 5*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe topic %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue(), c.Source
		}
	}
	t.Fatalf("topic %s has no config %s", topic, key)
	return "", 0
}

// configsQuotas is kadm's view of every client quota: entity -> values.
func configsQuotas(t *testing.T, adm *kadm.Client) map[string]string {
	t.Helper()
	qs, err := adm.DescribeClientQuotas(ctxT(t, 5*time.Second), false, []kadm.DescribeClientQuotaComponent{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, q := range qs {
		var vals []string
		for _, v := range q.Values {
			vals = append(vals, fmt.Sprintf("%s=%g", v.Key, v.Value))
		}
		sort.Strings(vals)
		entity := append(kadm.ClientQuotaEntity{}, q.Entity...)
		sort.Slice(entity, func(i, j int) bool { return entity[i].Type > entity[j].Type }) // user, then client-id
		out[entity.String()] = strings.Join(vals, ",")
	}
	return out
}

// TestConfigsTool runs kaas configs against a broker as kafka-configs.sh is
// run: topic, broker, broker-logger, group and client-metrics configs, client
// quotas, and the refusals, each cross-checked with the admin API.
func TestConfigsTool(t *testing.T) {
	_, addr := testBroker(t)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 10*time.Second)
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "orders", "payments"); err != nil {
		t.Fatal(err)
	}

	t.Run("topic", func(t *testing.T) {
		out := configsTool(t, addr, "--alter", "--topic", "orders", "--add-config", "retention.ms=3600000,cleanup.policy=[compact,delete]")
		if out != "Completed updating config for topic orders.\n" {
			t.Fatalf("alter: %q", out)
		}
		if v, src := configsTopic(t, adm, "orders", "cleanup.policy"); v != "compact,delete" || src != kmsg.ConfigSourceDynamicTopicConfig {
			t.Fatalf("cleanup.policy after alter: %q %v", v, src)
		}
		out = configsTool(t, addr, "--describe", "--entity-type", "topics", "--entity-name", "orders")
		want := "Dynamic configs for topic orders are:\n" +
			"  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n" +
			"  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000, DEFAULT_CONFIG:log.retention.ms=604800000}\n"
		if out != want {
			t.Fatalf("describe:\n%s\nwant:\n%s", out, want)
		}
		out = configsTool(t, addr, "--describe", "--topic", "orders", "--all")
		if !strings.HasPrefix(out, "All configs for topic orders are:\n") ||
			!strings.Contains(out, "\n  segment.bytes=1073741824 sensitive=false synonyms={DEFAULT_CONFIG:log.segment.bytes=1073741824}\n") ||
			!strings.Contains(out, "\n  retention.ms=3600000 sensitive=false") {
			t.Fatalf("describe --all:\n%s", out)
		}
		// Without a name: every topic.
		out = configsTool(t, addr, "--describe", "--entity-type", "topics")
		if !strings.Contains(out, "Dynamic configs for topic orders are:\n") || !strings.Contains(out, "Dynamic configs for topic payments are:\n") {
			t.Fatalf("describe every topic:\n%s", out)
		}

		configsTool(t, addr, "--alter", "--topic", "orders", "--delete-config", "retention.ms,cleanup.policy")
		if v, src := configsTopic(t, adm, "orders", "retention.ms"); v != "604800000" || src != kmsg.ConfigSourceDefaultConfig {
			t.Fatalf("retention.ms after delete: %q %v", v, src)
		}
		if out := configsTool(t, addr, "--describe", "--topic", "orders"); out != "Dynamic configs for topic orders are:\n" {
			t.Fatalf("describe after delete: %q", out)
		}

		file := filepath.Join(t.TempDir(), "orders.properties")
		if err := os.WriteFile(file, []byte("# topic configs\nmax.message.bytes=2097152\nmin.cleanable.dirty.ratio = 0.2\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		configsTool(t, addr, "--alter", "--topic", "orders", "--add-config-file", file)
		if v, _ := configsTopic(t, adm, "orders", "max.message.bytes"); v != "2097152" {
			t.Fatalf("max.message.bytes from the file: %q", v)
		}
		if v, _ := configsTopic(t, adm, "orders", "min.cleanable.dirty.ratio"); v != "0.2" {
			t.Fatalf("min.cleanable.dirty.ratio from the file: %q", v)
		}

		// The broker's INVALID_CONFIG surfaces; nothing changes.
		configsRefused(t, "INVALID_CONFIG", "--bootstrap-server", addr, "--alter", "--topic", "orders", "--add-config", "retention.ms=soon,max.message.bytes=1000")
		configsRefused(t, "INVALID_CONFIG", "--bootstrap-server", addr, "--alter", "--topic", "orders", "--add-config", "no.such.config=1")
		if v, _ := configsTopic(t, adm, "orders", "max.message.bytes"); v != "2097152" {
			t.Fatalf("max.message.bytes after a refused alter: %q", v)
		}
		configsRefused(t, "Invalid config(s): retention.ms", "--bootstrap-server", addr, "--alter", "--topic", "orders", "--delete-config", "retention.ms,max.message.bytes")
		if v, _ := configsTopic(t, adm, "orders", "max.message.bytes"); v != "2097152" {
			t.Fatalf("max.message.bytes after a refused delete: %q", v)
		}
		configsRefused(t, "UNKNOWN_TOPIC_OR_PARTITION", "--bootstrap-server", addr, "--describe", "--topic", "nope")
		configsRefused(t, "UNKNOWN_TOPIC_OR_PARTITION", "--bootstrap-server", addr, "--alter", "--topic", "nope", "--add-config", "retention.ms=1")
	})

	t.Run("brokers", func(t *testing.T) {
		out := configsTool(t, addr, "--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "log.retention.ms=7200000")
		if out != "Completed updating default config for brokers in the cluster.\n" {
			t.Fatalf("alter default: %q", out)
		}
		if out := configsTool(t, addr, "--alter", "--broker", "0", "--add-config", "log.retention.ms=5400000"); out != "Completed updating config for broker 0.\n" {
			t.Fatalf("alter broker 0: %q", out)
		}
		rcs, err := adm.DescribeBrokerConfigs(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, c := range rcs[0].Configs {
			if c.Key == "log.retention.ms" {
				found = c.MaybeValue() == "5400000" && c.Source == kmsg.ConfigSourceDynamicBrokerConfig
			}
		}
		if !found {
			t.Fatalf("kadm does not see broker 0's log.retention.ms=5400000: %+v", rcs)
		}
		// In force for a topic that does not set it.
		if v, src := configsTopic(t, adm, "payments", "retention.ms"); v != "5400000" || src != kmsg.ConfigSourceDynamicBrokerConfig {
			t.Fatalf("payments' retention.ms: %q %v", v, src)
		}
		out = configsTool(t, addr, "--describe", "--entity-type", "brokers")
		want := "Dynamic configs for broker 0 are:\n" +
			"  log.retention.ms=5400000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=5400000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000, DEFAULT_CONFIG:log.retention.ms=604800000}\n" +
			"Default configs for brokers in the cluster are:\n" +
			"  log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000, DEFAULT_CONFIG:log.retention.ms=604800000}\n"
		if out != want {
			t.Fatalf("describe brokers:\n%s\nwant:\n%s", out, want)
		}
		if out := configsTool(t, addr, "--describe", "--broker-defaults"); !strings.HasPrefix(out, "Default configs for brokers in the cluster are:\n  log.retention.ms=7200000 ") {
			t.Fatalf("describe --broker-defaults:\n%s", out)
		}
		if out := configsTool(t, addr, "--describe", "--broker", "0", "--all"); !strings.HasPrefix(out, "All configs for broker 0 are:\n") || !strings.Contains(out, "\n  num.partitions=") {
			t.Fatalf("describe --broker 0 --all:\n%s", out)
		}
		// A config Kafka does not change at runtime: the broker's refusal.
		configsRefused(t, "Cannot update these configs dynamically", "--bootstrap-server", addr, "--alter", "--broker", "0", "--add-config", "num.partitions=3")
		configsTool(t, addr, "--alter", "--broker", "0", "--delete-config", "log.retention.ms")
		configsTool(t, addr, "--alter", "--broker-defaults", "--delete-config", "log.retention.ms")
		if v, src := configsTopic(t, adm, "payments", "retention.ms"); v != "604800000" || src != kmsg.ConfigSourceDefaultConfig {
			t.Fatalf("payments' retention.ms after the deletes: %q %v", v, src)
		}
		configsRefused(t, "Invalid config(s): log.retention.ms", "--bootstrap-server", addr, "--alter", "--broker", "0", "--delete-config", "log.retention.ms")
	})

	t.Run("broker-loggers", func(t *testing.T) {
		out := configsTool(t, addr, "--alter", "--broker-logger", "0", "--add-config", "kaas.partition=DEBUG")
		if out != "Completed updating config for broker-logger 0.\n" {
			t.Fatalf("alter: %q", out)
		}
		if levels, _ := configsResource(t, cl, kmsg.ConfigResourceTypeBrokerLogger, "0"); levels["kaas.partition"] != "DEBUG" {
			t.Fatalf("kaas.partition after alter: %q", levels["kaas.partition"])
		}
		out = configsTool(t, addr, "--describe", "--entity-type", "broker-loggers", "--entity-name", "0")
		if !strings.HasPrefix(out, "Dynamic configs for broker-logger 0 are:\n") || !strings.Contains(out, "\n  kaas.partition=DEBUG sensitive=false synonyms={}\n") {
			t.Fatalf("describe:\n%s", out)
		}
		configsRefused(t, "Invalid broker logger(s): kaas.nope", "--bootstrap-server", addr, "--alter", "--broker-logger", "0", "--add-config", "kaas.nope=DEBUG")
		configsRefused(t, "INVALID_CONFIG", "--bootstrap-server", addr, "--alter", "--broker-logger", "0", "--add-config", "kaas.conn=LOUD")
		configsTool(t, addr, "--alter", "--broker-logger", "0", "--delete-config", "kaas.partition")
		if levels, _ := configsResource(t, cl, kmsg.ConfigResourceTypeBrokerLogger, "0"); levels["kaas.partition"] != levels["root"] {
			t.Fatalf("kaas.partition after delete: %q, root %q", levels["kaas.partition"], levels["root"])
		}
	})

	t.Run("groups and client-metrics", func(t *testing.T) {
		if out := configsTool(t, addr, "--alter", "--group", "billing", "--add-config", "consumer.session.timeout.ms=50000"); out != "Completed updating config for group billing.\n" {
			t.Fatalf("alter group: %q", out)
		}
		if vals, srcs := configsResource(t, cl, kmsg.ConfigResourceTypeGroupConfig, "billing"); vals["consumer.session.timeout.ms"] != "50000" || srcs["consumer.session.timeout.ms"] != kmsg.ConfigSourceGroupConfig {
			t.Fatalf("group config: %q", vals["consumer.session.timeout.ms"])
		}
		out := configsTool(t, addr, "--describe", "--entity-type", "groups", "--entity-name", "billing")
		if !strings.HasPrefix(out, "Dynamic configs for group billing are:\n  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, ") {
			t.Fatalf("describe group:\n%s", out)
		}
		configsRefused(t, "INVALID_CONFIG", "--bootstrap-server", addr, "--alter", "--group", "billing", "--add-config", "consumer.session.timeout.ms=1000")
		configsTool(t, addr, "--alter", "--group", "billing", "--delete-config", "consumer.session.timeout.ms")
		if vals, srcs := configsResource(t, cl, kmsg.ConfigResourceTypeGroupConfig, "billing"); srcs["consumer.session.timeout.ms"] == kmsg.ConfigSourceGroupConfig {
			t.Fatalf("group config after delete: %q", vals["consumer.session.timeout.ms"])
		}

		if out := configsTool(t, addr, "--alter", "--client-metrics", "producers", "--add-config", "metrics=[org.apache.kafka.producer.,org.apache.kafka.consumer.],interval.ms=60000"); out != "Completed updating config for client-metric producers.\n" {
			t.Fatalf("alter client-metrics: %q", out)
		}
		if vals, _ := configsResource(t, cl, kmsg.ConfigResourceTypeClientMetrics, "producers"); vals["metrics"] != "org.apache.kafka.producer.,org.apache.kafka.consumer." || vals["interval.ms"] != "60000" {
			t.Fatalf("client-metrics configs: %q", vals)
		}
		out = configsTool(t, addr, "--describe", "--entity-type", "client-metrics")
		want := "Dynamic configs for client-metric producers are:\n" +
			"  interval.ms=60000 sensitive=false synonyms={}\n" +
			"  metrics=org.apache.kafka.producer.,org.apache.kafka.consumer. sensitive=false synonyms={}\n"
		if out != want {
			t.Fatalf("describe client-metrics:\n%s\nwant:\n%s", out, want)
		}
	})

	t.Run("client quotas", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			out  string
		}{
			{[]string{"--user", "alice", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=20971520"}, "Completed updating config for user alice.\n"},
			{[]string{"--entity-type", "clients", "--entity-name", "app", "--add-config", "request_percentage=50"}, "Completed updating config for client app.\n"},
			{[]string{"--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app", "--add-config", "producer_byte_rate=512"}, "Completed updating config for user alice.\n"},
			{[]string{"--user-defaults", "--add-config", "producer_byte_rate=1000000"}, "Completed updating default config for users in the cluster.\n"},
			{[]string{"--ip", "127.0.0.1", "--add-config", "connection_creation_rate=20"}, "Completed updating config for ip 127.0.0.1.\n"},
		} {
			if out := configsTool(t, addr, append([]string{"--alter"}, c.args...)...); out != c.out {
				t.Fatalf("%v: %q, want %q", c.args, out, c.out)
			}
		}
		want := map[string]string{
			"{user=alice}":                "consumer_byte_rate=2.097152e+07,producer_byte_rate=1024",
			"{client-id=app}":             "request_percentage=50",
			"{user=alice, client-id=app}": "producer_byte_rate=512",
			"{user=<default>}":            "producer_byte_rate=1e+06",
			"{ip=127.0.0.1}":              "connection_creation_rate=20",
		}
		got := configsQuotas(t, adm)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("kadm sees %s: %q, want %q (all: %v)", k, got[k], v, got)
			}
		}
		// Kafka prints each value as Java's Double; lines in the broker's order.
		lines := func(out string) []string {
			l := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			sort.Strings(l)
			return l
		}
		out := configsTool(t, addr, "--describe", "--entity-type", "users")
		wantLines := []string{
			"Quota configs for the default user-principal are producer_byte_rate=1000000.0",
			"Quota configs for user-principal 'alice' are ",
		}
		gotLines := lines(out)
		if len(gotLines) != 2 || gotLines[0] != wantLines[0] || !strings.HasPrefix(gotLines[1], wantLines[1]) ||
			!strings.Contains(gotLines[1], "consumer_byte_rate=2.097152E7") || !strings.Contains(gotLines[1], "producer_byte_rate=1024.0") {
			t.Fatalf("describe users:\n%s", out)
		}
		if out := configsTool(t, addr, "--describe", "--user", "alice", "--client", "app"); out != "Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=512.0\n" {
			t.Fatalf("describe user and client: %q", out)
		}
		if out := configsTool(t, addr, "--describe", "--entity-type", "clients"); out != "Quota configs for client-id 'app' are request_percentage=50.0\n" {
			t.Fatalf("describe clients: %q", out)
		}
		if out := configsTool(t, addr, "--describe", "--entity-type", "ips", "--entity-name", "127.0.0.1"); out != "Quota configs for ip '127.0.0.1' are connection_creation_rate=20.0\n" {
			t.Fatalf("describe ip: %q", out)
		}

		configsRefused(t, "Cannot parse quota configuration value for producer_byte_rate: fast", "--bootstrap-server", addr, "--alter", "--user", "alice", "--add-config", "producer_byte_rate=fast")
		configsRefused(t, "Only quota and SCRAM credential configs can be added for 'users' using --bootstrap-server. Unexpected config names: retention.ms", "--bootstrap-server", addr, "--alter", "--user", "alice", "--add-config", "retention.ms=1")
		configsRefused(t, "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected config names: SCRAM-SHA-256", "--bootstrap-server", addr, "--alter", "--client", "app", "--add-config", "SCRAM-SHA-256=[password=x]")
		configsRefused(t, "Only connection quota configs can be added for 'ips' using --bootstrap-server. Unexpected config names: producer_byte_rate", "--bootstrap-server", addr, "--alter", "--ip", "127.0.0.1", "--add-config", "producer_byte_rate=1")
		configsRefused(t, "Invalid config(s): request_percentage", "--bootstrap-server", addr, "--alter", "--user", "alice", "--delete-config", "request_percentage")
		configsRefused(t, "INVALID_REQUEST", "--bootstrap-server", addr, "--alter", "--user", "alice", "--add-config", "producer_byte_rate=-5")

		configsTool(t, addr, "--alter", "--user", "alice", "--delete-config", "consumer_byte_rate")
		configsTool(t, addr, "--alter", "--entity-type", "users", "--entity-default", "--delete-config", "producer_byte_rate")
		got = configsQuotas(t, adm)
		if got["{user=alice}"] != "producer_byte_rate=1024" || got["{user=<default>}"] != "" {
			t.Fatalf("kadm after the deletes: %v", got)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct {
			want string
			args []string
		}{
			{"exactly one action: --describe, --alter", []string{"--topic", "orders"}},
			{"exactly one action: --describe, --alter", []string{"--describe", "--alter", "--topic", "orders"}},
			{"At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter", []string{"--alter", "--topic", "orders"}},
			{"Invalid entity type widgets, the entity type must be one of topics, clients, users, brokers, ips, broker-loggers, client-metrics, groups", []string{"--describe", "--entity-type", "widgets"}},
			{"At least one entity type must be specified", []string{"--describe"}},
			{"An entity name must be specified with --alter of topics", []string{"--alter", "--entity-type", "topics", "--add-config", "retention.ms=1"}},
			{"An entity-name or default entity must be specified with --alter of users, clients, brokers or ips", []string{"--alter", "--entity-type", "brokers", "--add-config", "log.retention.ms=1"}},
			{"An entity name must be specified for every entity type", []string{"--alter", "--entity-type", "users", "--entity-type", "clients", "--entity-name", "alice", "--add-config", "producer_byte_rate=1"}},
			{"An entity name must be specified with --describe of broker-loggers", []string{"--describe", "--entity-type", "broker-loggers"}},
			{"--entity-default must not be specified with --describe of topics", []string{"--describe", "--entity-type", "topics", "--entity-default"}},
			{"Only 'users' and 'clients' entity types may be specified together", []string{"--describe", "--entity-type", "users", "--entity-type", "topics"}},
			{"Duplicate entity type(s) specified: topics", []string{"--describe", "--entity-type", "topics", "--entity-type", "topics"}},
			{"--entity-{type,name,default} should not be used in conjunction with specific entity flags", []string{"--describe", "--entity-name", "orders", "--topic", "orders"}},
			{"The entity name for brokers must be a valid integer broker id, but it is: one", []string{"--describe", "--broker", "one"}},
			{"Only one of --add-config or --add-config-file must be specified", []string{"--alter", "--topic", "orders", "--add-config", "a=1", "--add-config-file", "/dev/null"}},
			{`all configs to be added must be in the format "key=val"`, []string{"--alter", "--topic", "orders", "--add-config", "retention.ms"}},
			{"Invalid character found for config key: retention ms", []string{"--alter", "--topic", "orders", "--add-config", "retention ms=1"}},
			{`Option "[describe]" can't be used with option "[add-config]"`, []string{"--describe", "--topic", "orders", "--add-config", "retention.ms=1"}},
			{"--zookeeper", []string{"--zookeeper", "localhost:2181", "--describe", "--topic", "orders"}},
			{"--add-config-file", []string{"--alter", "--topic", "orders", "--add-config-file", "/does/not/exist"}},
			{"found multiple arguments for option --topic", []string{"--describe", "--topic", "a", "--topic", "b"}},
		} {
			configsRefused(t, c.want, append([]string{"--bootstrap-server", addr}, c.args...)...)
		}
		configsRefused(t, "--bootstrap-server", "--describe", "--topic", "orders")
		if _, _, code := runKaas(t, "configs", "--help"); code != 0 {
			t.Fatalf("--help: exit %d", code)
		}
		// None of the refused alters changed the topic.
		if out := configsTool(t, addr, "--describe", "--topic", "orders"); strings.Contains(out, "retention.ms") {
			t.Fatalf("a refused alter changed the topic:\n%s", out)
		}
	})
}

// TestConfigsToolSCRAM adds, describes and deletes SCRAM credentials with
// kaas configs, and logs in with them (through the tool's own
// --command-config) on the broker's SASL listener.
func TestConfigsToolSCRAM(t *testing.T) {
	e := newSecureEnv(t)
	adm := kadm.NewClient(secureClient(t, e.plain))
	login := func(mech, user, pass string) (string, string, int) {
		props := writeProperties(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism="+mech,
			fmt.Sprintf(`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, pass))
		return runKaas(t, "configs", "--bootstrap-server", e.saslPlaintext, "--command-config", props, "--describe", "--user", user)
	}

	out := configsTool(t, e.plain, "--alter", "--entity-type", "users", "--entity-name", "carol",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=carol-secret],SCRAM-SHA-512=[password=carol-512]")
	if out != "Completed updating config for user carol.\n" {
		t.Fatalf("alter: %q", out)
	}
	described, err := adm.DescribeUserSCRAMs(ctxT(t, 5*time.Second), "carol")
	if err != nil || described["carol"].Err != nil {
		t.Fatalf("kadm describe carol: %v %+v", err, described)
	}
	infos := fmt.Sprint(described["carol"].CredInfos)
	if !strings.Contains(infos, "SCRAM-SHA-256=iterations=8192") || !strings.Contains(infos, "SCRAM-SHA-512=iterations=4096") {
		t.Fatalf("kadm sees carol's credentials as %s", infos)
	}
	out = configsTool(t, e.plain, "--describe", "--user", "carol")
	if out != "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n" &&
		out != "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=4096, SCRAM-SHA-256=iterations=8192\n" {
		t.Fatalf("describe carol: %q", out)
	}
	if b, err := os.ReadFile(e.credsFile); err != nil || !strings.Contains(string(b), `"carol"`) || strings.Contains(string(b), "carol-secret") {
		t.Fatalf("credentials file: %v\n%s", err, b)
	}

	// The new credentials log in; a wrong password does not.
	for _, c := range []struct{ mech, pass string }{{"SCRAM-SHA-256", "carol-secret"}, {"SCRAM-SHA-512", "carol-512"}} {
		if out, errOut, code := login(c.mech, "carol", c.pass); code != 0 || !strings.Contains(out, "SCRAM credential configs for user-principal 'carol'") {
			t.Fatalf("%s login as carol: exit %d %s %s", c.mech, code, out, errOut)
		}
	}
	if _, errOut, code := login("SCRAM-SHA-256", "carol", "carol-512"); code != 2 || !strings.Contains(errOut, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: exit %d %s", code, errOut)
	}

	// Every user: the file's alice and bob too.
	out = configsTool(t, e.plain, "--describe", "--entity-type", "users")
	for _, u := range []string{"alice", "bob", "carol"} {
		if !strings.Contains(out, "SCRAM credential configs for user-principal '"+u+"' are ") {
			t.Fatalf("describe every user lacks %s:\n%s", u, out)
		}
	}

	// Refusals: nothing changes.
	for _, c := range []struct {
		want string
		args []string
	}{
		{"Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256", []string{"--user", "carol", "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]"}},
		{"Invalid credential property SCRAM-SHA-256=pw=x", []string{"--user", "carol", "--add-config", "SCRAM-SHA-256=[pw=x]"}},
		{"The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials", []string{"--user-defaults", "--add-config", "SCRAM-SHA-256=[password=x]"}},
		{"Cannot alter both quota and SCRAM credential configs simultaneously for 'users'", []string{"--user", "carol", "--add-config", "SCRAM-SHA-256=[password=x],producer_byte_rate=1"}},
		{"UNACCEPTABLE_CREDENTIAL", []string{"--user", "carol", "--add-config", "SCRAM-SHA-512=[iterations=20000,password=x]"}},
		{"RESOURCE_NOT_FOUND", []string{"--user", "dave", "--delete-config", "SCRAM-SHA-256"}},
	} {
		configsRefused(t, c.want, append([]string{"--bootstrap-server", e.plain, "--alter"}, c.args...)...)
	}
	if _, _, code := login("SCRAM-SHA-256", "carol", "carol-secret"); code != 0 {
		t.Fatal("a refused alter changed carol's SCRAM-SHA-256 credential")
	}

	if out := configsTool(t, e.plain, "--alter", "--user", "carol", "--delete-config", "SCRAM-SHA-256"); out != "Completed updating config for user carol.\n" {
		t.Fatalf("delete: %q", out)
	}
	if out := configsTool(t, e.plain, "--describe", "--user", "carol"); out != "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=4096\n" {
		t.Fatalf("describe after delete: %q", out)
	}
	if _, errOut, code := login("SCRAM-SHA-256", "carol", "carol-secret"); code != 2 || !strings.Contains(errOut, "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("login with the deleted credential: exit %d %s", code, errOut)
	}
	described, err = adm.DescribeUserSCRAMs(ctxT(t, 5*time.Second), "carol")
	if err != nil || len(described["carol"].CredInfos) != 1 || described["carol"].CredInfos[0].Mechanism != kadm.ScramSha512 {
		t.Fatalf("kadm after delete: %v %+v", err, described)
	}
	// A user with no credential left is not listed, as Kafka's Admin leaves it out.
	configsTool(t, e.plain, "--alter", "--user", "carol", "--delete-config", "SCRAM-SHA-512")
	if out := configsTool(t, e.plain, "--describe", "--user", "carol"); out != "" {
		t.Fatalf("describe a user without credentials: %q", out)
	}
	if _, err := adm.DescribeUserSCRAMs(ctxT(t, 5*time.Second), "carol"); err != nil && !errors.Is(err, kerr.ResourceNotFound) {
		t.Fatal(err)
	}
}
