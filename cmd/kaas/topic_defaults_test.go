package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTopicConfigDefaultsFlag: --topic-config-defaults sets topic config
// defaults as Kafka's server.properties does (STATIC_BROKER_CONFIG): a
// topic that does not set max.message.bytes or retention.ms takes them,
// a dynamic default of the same name wins over the flag, and removing it
// brings the flag's value back.
func TestTopicConfigDefaultsFlag(t *testing.T) {
	_, addr := testBroker(t, "--topic-config-defaults", "message.max.bytes=4000; log.retention.hours=2")
	cl := newClient(t, addr, kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 60*time.Second)
	createTopic(t, addr, "static-defaults", 1, nil)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "static-defaults", Value: incompressible(8000)}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("8000 bytes under the flag's message.max.bytes 4000: %v, want MESSAGE_TOO_LARGE", err)
	}
	topicConfig := func(name string) kadm.Config {
		t.Helper()
		tc, err := adm.DescribeTopicConfigs(ctx, "static-defaults")
		if err != nil || tc[0].Err != nil {
			t.Fatal(err, tc)
		}
		for _, c := range tc[0].Configs {
			if c.Key == name {
				return c
			}
		}
		t.Fatalf("topic config %s not described", name)
		return kadm.Config{}
	}
	if c := topicConfig("max.message.bytes"); c.MaybeValue() != "4000" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("topic max.message.bytes: %s from source %v, want 4000 from STATIC_BROKER_CONFIG", c.MaybeValue(), c.Source)
	}
	if c := topicConfig("retention.ms"); c.MaybeValue() != "7200000" {
		t.Errorf("topic retention.ms: %s, want log.retention.hours=2 as 7200000", c.MaybeValue())
	}
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "message.max.bytes"); c.MaybeValue() != "4000" || sources(c) != "4:4000,5:1048588" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("broker 0 message.max.bytes: %s %s", c.MaybeValue(), sources(c))
	}

	// A dynamic default of the same name wins; deleting it brings back
	// the flag's.
	if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "message.max.bytes", Value: sp("100000")}}); err != nil || res[0].Err != nil {
		t.Fatalf("alter the cluster default: %v %+v", err, res)
	}
	waitUntil(t, 20*time.Second, "the dynamic default takes an 8000-byte batch", func() bool {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "static-defaults", Value: incompressible(8000)}).FirstErr() == nil
	})
	if c, _ := brokerConfig(t, ctx, cl, 0, "0", "message.max.bytes"); sources(c) != "3:100000,4:4000,5:1048588" {
		t.Errorf("broker 0 message.max.bytes with a dynamic default: %s", sources(c))
	}
	if res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "message.max.bytes"}}); err != nil || res[0].Err != nil {
		t.Fatalf("delete the cluster default: %v %+v", err, res)
	}
	waitUntil(t, 20*time.Second, "the flag's 4000 again refuses 8000 bytes", func() bool {
		return errors.Is(cl.ProduceSync(ctx, &kgo.Record{Topic: "static-defaults", Value: incompressible(8000)}).FirstErr(), kerr.MessageTooLarge)
	})
}

func TestParseTopicConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    map[string]string
	}{
		{"", "", map[string]string{}},
		{"log.retention.ms=86400000;compression.type=zstd;", "", map[string]string{"log.retention.ms": "86400000", "compression.type": "zstd"}},
		{"log.cleanup.policy=compact,delete", "", map[string]string{"log.cleanup.policy": "compact,delete"}},
		{"retention.ms=1", "retention.ms is not the broker default of a topic config", nil},
		{"num.partitions=3", "num.partitions is not the broker default of a topic config", nil},
		{"log.retention.ms", `"log.retention.ms" is not NAME=VALUE`, nil},
		{"log.retention.ms=soon", "Invalid value soon for configuration log.retention.ms", nil},
		{"message.max.bytes=1;message.max.bytes=2", "message.max.bytes given twice", nil},
	} {
		got, err := parseTopicConfigDefaults(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q: %s=%q, want %q", tc.in, k, got[k], v)
			}
		}
	}
}
