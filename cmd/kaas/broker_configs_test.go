package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/compaction"
)

// brokerConfig is one config of a broker resource as described by the
// broker it is sent to (resource "" is the cluster default).
func brokerConfig(t testing.TB, ctx context.Context, cl *kgo.Client, broker int32, resource, name string) (kadm.Config, bool) {
	t.Helper()
	c, ok, err := describeBrokerConfig(ctx, cl, broker, resource, name)
	if err != nil {
		t.Fatal(err)
	}
	return c, ok
}

func describeBrokerConfig(ctx context.Context, cl *kgo.Client, broker int32, resource, name string) (kadm.Config, bool, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeBroker, resource, []string{name}
	req.Resources, req.IncludeSynonyms = append(req.Resources, r), true
	resp, err := req.RequestWith(ctx, cl.Broker(int(broker)))
	if err != nil {
		return kadm.Config{}, false, fmt.Errorf("DescribeConfigs of broker resource %q on broker %d: %w", resource, broker, err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		return kadm.Config{}, false, fmt.Errorf("DescribeConfigs of broker resource %q on broker %d: %+v", resource, broker, resp.Resources)
	}
	for _, c := range resp.Resources[0].Configs {
		if c.Name == name {
			out := kadm.Config{Key: c.Name, Value: c.Value, Sensitive: c.IsSensitive, Source: c.Source}
			for _, s := range c.ConfigSynonyms {
				out.Synonyms = append(out.Synonyms, kadm.ConfigSynonym{Key: s.Name, Value: s.Value, Source: s.Source})
			}
			return out, true, nil
		}
	}
	return kadm.Config{}, false, nil
}

// sources lists a config's synonyms as source:value.
func sources(c kadm.Config) string {
	var out []string
	for _, s := range c.Synonyms {
		v := ""
		if s.Value != nil {
			v = *s.Value
		}
		out = append(out, strconv.Itoa(int(s.Source))+":"+v)
	}
	return strings.Join(out, ",")
}

// incompressible is n random bytes (kgo compresses batches).
func incompressible(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// TestDynamicBrokerConfigs: BROKER resources of IncrementalAlterConfigs
// and AlterConfigs (kadm) for the cluster default and for the broker
// itself, with Kafka's precedence, sources and synonyms in DescribeConfigs,
// validate_only, Kafka's refusals, message.max.bytes applied to produce as
// the default of max.message.bytes, and a restart keeping it all.
func TestDynamicBrokerConfigs(t *testing.T) {
	dir := t.TempDir()
	_, addr, stop := startTestBroker(t, "--data-dir", dir)
	cl := newClient(t, addr, kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 60*time.Second)
	createTopic(t, addr, "dyn", 1, nil)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dyn", Value: incompressible(8000)}).FirstErr(); err != nil {
		t.Fatalf("produce under Kafka's default limit: %v", err)
	}

	// The cluster default (no broker named: resource "").
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "message.max.bytes", Value: sp("4000")}, {Name: "log.retention.ms", Value: sp("3600000")}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter the cluster default: %v %+v", err, res)
	}
	waitUntil(t, 20*time.Second, "message.max.bytes 4000 refuses an 8000-byte batch", func() bool {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dyn", Value: incompressible(8000)}).FirstErr()
		return errors.Is(err, kerr.MessageTooLarge)
	})
	if c, _ := brokerConfig(t, ctx, cl, 0, "", "message.max.bytes"); c.MaybeValue() != "4000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("cluster default message.max.bytes: %+v", c)
	}
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "message.max.bytes"); c.MaybeValue() != "4000" || sources(c) != "3:4000,5:1048588" {
		t.Errorf("broker 0 message.max.bytes: %s %s", c.MaybeValue(), sources(c))
	}
	tc, err := adm.DescribeTopicConfigs(ctx, "dyn")
	if err != nil || tc[0].Err != nil {
		t.Fatal(err, tc)
	}
	for _, c := range tc[0].Configs {
		if c.Key == "max.message.bytes" && (c.MaybeValue() != "4000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig) {
			t.Errorf("topic max.message.bytes under the broker default: %+v", c)
		}
	}

	// This broker's own value wins over the cluster default.
	if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "message.max.bytes", Value: sp("100000")}}, 0); err != nil || res[0].Err != nil {
		t.Fatalf("alter broker 0: %v %+v", err, res)
	}
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "message.max.bytes"); c.MaybeValue() != "100000" || sources(c) != "2:100000,3:4000,5:1048588" {
		t.Errorf("broker 0 message.max.bytes: %s %s", c.MaybeValue(), sources(c))
	}
	waitUntil(t, 20*time.Second, "broker 0's message.max.bytes 100000 takes an 8000-byte batch", func() bool {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "dyn", Value: incompressible(8000)}).FirstErr() == nil
	})
	// A topic's own max.message.bytes wins over both.
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: sp("3000")}}, "dyn"); err != nil || r[0].Err != nil {
		t.Fatal(err, r)
	}
	waitUntil(t, 20*time.Second, "the topic's 3000 refuses 8000 bytes", func() bool {
		return errors.Is(cl.ProduceSync(ctx, &kgo.Record{Topic: "dyn", Value: incompressible(8000)}).FirstErr(), kerr.MessageTooLarge)
	})

	// validate_only changes nothing.
	if res, err := adm.ValidateAlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "message.max.bytes", Value: sp("5")}}, 0); err != nil || res[0].Err != nil {
		t.Fatalf("validate: %v %+v", err, res)
	}
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "message.max.bytes"); c.MaybeValue() != "100000" {
		t.Errorf("validate_only changed message.max.bytes to %s", c.MaybeValue())
	}

	// Kafka's refusals: a read-only config, a bad value, a per-listener
	// config as the default, another broker's resource. Nothing changes.
	for _, tc := range []struct {
		name, value string
		broker      []int32
		msg         string
	}{
		{"num.partitions", "3", []int32{0}, "Cannot update these configs dynamically: Set(num.partitions)"},
		{"log.retention.ms", "soon", nil, "Invalid value soon for configuration log.retention.ms"},
		{"ssl.keystore.location", "/k", []int32{0}, "only per-listener"},
		{"listener.name.plain.ssl.keystore.location", "/k", nil, "broker id must be specified"},
	} {
		res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: tc.name, Value: sp(tc.value)}}, tc.broker...)
		if err != nil || !errors.Is(res[0].Err, kerr.InvalidRequest) || !strings.Contains(res[0].ErrMessage, tc.msg) {
			t.Errorf("alter %s=%s: %v %+v, want INVALID_REQUEST %q", tc.name, tc.value, err, res, tc.msg)
		}
	}
	other := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "7"
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "log.retention.ms", sp("1")
	r.Configs = append(r.Configs, rc)
	other.Resources = append(other.Resources, r)
	oresp, err := other.RequestWith(ctx, cl.Broker(0))
	if err != nil || oresp.Resources[0].ErrorCode != kerr.InvalidRequest.Code || !strings.Contains(*oresp.Resources[0].ErrorMessage, "Unexpected broker id, expected 0, but received 7") {
		t.Errorf("broker 7's resource sent to broker 0: %v %+v", err, oresp)
	}

	// Legacy AlterConfigs replaces the whole default set.
	if res, err := adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: sp("60000")}}); err != nil || res[0].Err != nil {
		t.Fatalf("legacy alter of the default: %v %+v", err, res)
	}
	if _, set := brokerConfig(t, ctx, cl, 0, "", "message.max.bytes"); set {
		t.Error("legacy AlterConfigs kept message.max.bytes in the default")
	}

	// A restart reads them back from the volume.
	cl.Close()
	stop()
	testBroker(t, "--data-dir", dir, "--kafka-addr", addr, "--advertised-addr", addr)
	cl = newClient(t, addr)
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "log.retention.ms"); c.MaybeValue() != "60000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("after a restart, log.retention.ms: %+v", c)
	}
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "message.max.bytes"); c.MaybeValue() != "100000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("after a restart, message.max.bytes: %+v", c)
	}
}

// TestDynamicBrokerConfigsIncrementalOps: DELETE falls back to the next
// level, APPEND and SUBTRACT change a list config and are refused on
// others (INVALID_CONFIG, as Kafka), and a custom config is stored and
// reported as Kafka does.
func TestDynamicBrokerConfigsIncrementalOps(t *testing.T) {
	_, addr := testBroker(t)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 30*time.Second)
	alter := func(cfgs ...kadm.AlterConfig) kadm.AlterConfigsResponse {
		t.Helper()
		res, err := adm.AlterBrokerConfigs(ctx, cfgs, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	if r := alter(kadm.AlterConfig{Name: "log.cleaner.backoff.ms", Value: sp("16000")}, kadm.AlterConfig{Name: "my.custom.setting", Value: sp("x")}); r.Err != nil {
		t.Fatalf("set: %+v", r)
	}
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "log.cleaner.backoff.ms"); c.MaybeValue() != "16000" || sources(c) != "2:16000,4:15000,5:15000" {
		t.Errorf("log.cleaner.backoff.ms: %s %s", c.MaybeValue(), sources(c))
	}
	if c, ok := brokerConfig(t, ctx, cl, 0, "0", "my.custom.setting"); !ok || c.MaybeValue() != "x" {
		t.Errorf("custom config: %+v %v", c, ok)
	}
	if r := alter(kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "log.cleaner.backoff.ms"}); r.Err != nil {
		t.Fatalf("delete: %+v", r)
	}
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "log.cleaner.backoff.ms"); c.MaybeValue() != "15000" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("log.cleaner.backoff.ms after delete: %+v", c)
	}
	// APPEND to a config the broker does not set starts from its default
	// (delete), as Kafka's: librdkafka's 0081 appends and subtracts compact
	// and expects the cluster's topics to delete again.
	for _, op := range []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "log.cleanup.policy", Value: sp("compact")},
		{Op: kadm.AppendConfig, Name: "log.cleanup.policy", Value: sp("delete")}} {
		if r := alter(op); r.Err != nil {
			t.Fatalf("append: %+v", r)
		}
	}
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "log.cleanup.policy"); c.MaybeValue() != "delete,compact" {
		t.Errorf("log.cleanup.policy after two appends: %+v", c)
	}
	if r := alter(kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "log.cleanup.policy", Value: sp("compact")}); r.Err != nil {
		t.Fatalf("subtract: %+v", r)
	}
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "log.cleanup.policy"); c.MaybeValue() != "delete" {
		t.Errorf("log.cleanup.policy after subtract: %+v", c)
	}
	if r := alter(kadm.AlterConfig{Op: kadm.AppendConfig, Name: "log.retention.ms", Value: sp("1")}); !errors.Is(r.Err, kerr.InvalidConfig) {
		t.Errorf("append to a long: %+v, want INVALID_CONFIG", r)
	}
}

// TestDynamicBrokerConfigsCluster: on three brokers sharing the volume, a
// cluster default set through one broker reaches every broker (described
// by each, and applied to the partitions each leads), a per-broker value
// set through another broker reaches only its broker, and a restarted
// broker keeps its own.
func TestDynamicBrokerConfigsCluster(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	waitUntil(t, 60*time.Second, "a controller elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl != ""
	})
	cl := c.client(kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(3))
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, 3*time.Minute)
	if resp, err := adm.CreateTopic(ctx, 3, 1, nil, "dync"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	waitUntil(t, 60*time.Second, "one partition led by each broker", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == 1 && led["kaas-1"] == 1 && led["kaas-2"] == 1
	})
	if _, err := adm.ListBrokers(ctx); err != nil { // the client learns every broker
		t.Fatal(err)
	}
	seen := func(broker int32, name, value string, source kmsg.ConfigSource) func() bool {
		return func() bool {
			got, ok, err := describeBrokerConfig(ctx, cl, broker, strconv.Itoa(int(broker)), name)
			return err == nil && ok && got.MaybeValue() == value && got.Source == source
		}
	}

	if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "message.max.bytes", Value: sp("4000")}}); err != nil || res[0].Err != nil {
		t.Fatalf("alter the cluster default: %v %+v", err, res)
	}
	for id := int32(0); id < 3; id++ {
		waitUntil(t, 30*time.Second, fmt.Sprintf("broker %d describes the default", id), seen(id, "message.max.bytes", "4000", kmsg.ConfigSourceDynamicDefaultBrokerConfig))
	}
	for p := int32(0); p < 3; p++ {
		waitUntil(t, 30*time.Second, fmt.Sprintf("partition %d refuses 8000 bytes", p), func() bool {
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dync", Partition: p, Value: incompressible(8000)}).FirstErr()
			return errors.Is(err, kerr.MessageTooLarge)
		})
	}

	// Broker 1's own value, sent to broker 0 (kafkajs sends every
	// AlterConfigs to the controller); then a new default, which every
	// broker reads after broker 1's value was in the file: only broker 1
	// takes its own.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "log.retention.ms", sp("60000")
	r.Configs = append(r.Configs, rc)
	req.Resources = append(req.Resources, r)
	if resp, err := req.RequestWith(ctx, cl.Broker(0)); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter broker 1 through broker 0: %v %+v", err, resp)
	}
	if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "message.max.bytes", Value: sp("5000")}}); err != nil || res[0].Err != nil {
		t.Fatalf("alter the cluster default again: %v %+v", err, res)
	}
	for id := int32(0); id < 3; id++ {
		waitUntil(t, 30*time.Second, fmt.Sprintf("broker %d describes the new default", id), seen(id, "message.max.bytes", "5000", kmsg.ConfigSourceDynamicDefaultBrokerConfig))
		got, _ := brokerConfig(t, ctx, cl, id, strconv.Itoa(int(id)), "log.retention.ms")
		if own := got.Source == kmsg.ConfigSourceDynamicBrokerConfig && got.MaybeValue() == "60000"; own != (id == 1) {
			t.Errorf("broker %d log.retention.ms: %+v (%s)", id, got, sources(got))
		}
	}

	// A restart of broker 1 keeps its own value and the default.
	c.brokers["kaas-1"].kill()
	c.start("kaas-1")
	waitUntil(t, 60*time.Second, "broker 1 back with its own log.retention.ms", seen(1, "log.retention.ms", "60000", kmsg.ConfigSourceDynamicBrokerConfig))
	waitUntil(t, 30*time.Second, "broker 1 back with the default", seen(1, "message.max.bytes", "5000", kmsg.ConfigSourceDynamicDefaultBrokerConfig))
}

// TestDynamicConfigsFollower: the broker's follower applies the cleaner's
// I/O rate in force (its own value over the default, the flag once
// deleted) to the throttle every compaction pass waits on, keeps the
// cleaner's wait and key map and the producers' expiration in force for
// the partitions, and tells the supervisor when its topic defaults change,
// not when another broker's do.
func TestDynamicConfigsFollower(t *testing.T) {
	var slept time.Duration
	now := time.Unix(1_700_000_000, 0)
	throttle := compaction.NewThrottle(0, func() time.Time { return now }, func(d time.Duration) { slept += d })
	cfg := &serveConfig{BrokerID: 2, throttle: throttle, CleanerInterval: 15 * time.Second, CleanerBufferSize: 128 << 20,
		ProducerIDExpiration: 24 * time.Hour}
	d := newDynamicConfigs(cfg, nil, zerolog.Nop())
	told := 0
	d.onTopicDefaults = func() { told++ }
	set := func(resource, name string, value *string) {
		t.Helper()
		if err := d.store.Update(resource, false, func(cur map[string]string) (map[string]string, error) {
			if value == nil {
				delete(cur, name)
			} else {
				cur[name] = *value
			}
			return cur, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	paced := func() time.Duration { // what 2000 bytes wait at the rate in force
		slept = 0
		throttle.Wait(1000)
		throttle.Wait(1000)
		now = now.Add(time.Hour) // the next pass starts afresh
		return slept
	}
	if got := paced(); got != 0 {
		t.Fatalf("unthrottled flag: slept %v", got)
	}
	set("", "log.cleaner.io.max.bytes.per.second", sp("500"))
	set("2", "log.cleaner.io.max.bytes.per.second", sp("1000"))
	if got := paced(); got != time.Second {
		t.Errorf("broker 2's own 1000 B/s: the second 1000 bytes waited %v, want 1s", got)
	}
	set("2", "log.cleaner.io.max.bytes.per.second", nil)
	if got := paced(); got != 2*time.Second {
		t.Errorf("the default's 500 B/s: waited %v, want 2s", got)
	}
	set("", "log.cleaner.io.max.bytes.per.second", nil)
	if got := paced(); got != 0 {
		t.Errorf("back to the flag: waited %v", got)
	}
	// The cleaner's wait and key map, and the producers' expiration, which
	// the partitions read at each use.
	if d.CleanerInterval() != 15*time.Second || d.CleanerMapBytes() != 128<<20 || d.ProducerExpiration() != 24*time.Hour {
		t.Fatalf("the flags: %v, %d, %v", d.CleanerInterval(), d.CleanerMapBytes(), d.ProducerExpiration())
	}
	set("", "log.cleaner.backoff.ms", sp("2000"))
	set("2", "log.cleaner.dedupe.buffer.size", sp("2097152"))
	set("", "producer.id.expiration.ms", sp("60000"))
	if d.CleanerInterval() != 2*time.Second || d.CleanerMapBytes() != 2<<20 || d.ProducerExpiration() != time.Minute {
		t.Errorf("dynamic: %v, %d, %v; want 2s, 2 MiB, 1m", d.CleanerInterval(), d.CleanerMapBytes(), d.ProducerExpiration())
	}
	set("", "log.cleaner.backoff.ms", nil)
	set("2", "log.cleaner.dedupe.buffer.size", nil)
	set("", "producer.id.expiration.ms", nil)
	if d.CleanerInterval() != 15*time.Second || d.CleanerMapBytes() != 128<<20 || d.ProducerExpiration() != 24*time.Hour {
		t.Errorf("back to the flags: %v, %d, %v", d.CleanerInterval(), d.CleanerMapBytes(), d.ProducerExpiration())
	}
	set("1", "log.retention.ms", sp("5"))
	if told != 0 || len(d.TopicDefaults()) != 0 {
		t.Errorf("broker 1's value reached broker 2: told %d, defaults %v", told, d.TopicDefaults())
	}
	set("", "log.retention.ms", sp("7"))
	if told != 1 || d.TopicDefaults()["retention.ms"] != "7" {
		t.Errorf("the default: told %d, defaults %v", told, d.TopicDefaults())
	}
}
