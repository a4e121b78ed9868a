package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBrokerLoggers: an operator reads the broker's loggers and sets one
// to DEBUG at run time with DescribeConfigs and IncrementalAlterConfigs
// on the BROKER_LOGGER resource, as kafka-configs.sh --entity-type
// broker-loggers does: the partition logger's debug lines ("partition
// opened") appear while it is at DEBUG and stop when it is reset, and
// Kafka's refusals come back for bad requests.
func TestBrokerLoggers(t *testing.T) {
	addr := freeAddr(t)
	cfg, err := parseServe([]string{"--kafka-addr", addr, "--http-addr", "", "--log-level", "info", "--log-format", "json"},
		func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	b, err := startBroker(ctx, cfg, &logs)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); b.shutdown() })
	cl := newClient(t, addr)

	describe := func(names ...string) map[string]string {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeBrokerLogger, "0", names
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("describe broker loggers: %v %+v", err, resp)
		}
		out := map[string]string{}
		for _, c := range resp.Resources[0].Configs {
			if c.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig || c.ReadOnly || c.Value == nil {
				t.Fatalf("logger %s: %+v", c.Name, c)
			}
			out[c.Name] = *c.Value
		}
		return out
	}
	alter := func(broker string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.Configs = kmsg.ConfigResourceTypeBrokerLogger, broker, ops
		req.Resources = append(req.Resources, res)
		// Straight to broker 0: a client routes a broker resource to the
		// broker it names, and the refusals below name others.
		r, err := cl.Broker(0).Request(ctxT(t, 10*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.IncrementalAlterConfigsResponse)
		msg := ""
		if m := resp.Resources[0].ErrorMessage; m != nil {
			msg = *m
		}
		return resp.Resources[0].ErrorCode, msg
	}
	op := func(name string, o kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = name, o
		if value != "" {
			c.Value = &value
		}
		return c
	}
	opened := func(topic string) bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"message":"partition opened"`) && strings.Contains(l, `"topic":"`+topic+`"`) {
				return true
			}
		}
		return false
	}
	// Topic creation answers once the partitions are open (their line,
	// if written, is in the log by then).
	create := func(topic string) {
		t.Helper()
		createTopic(t, addr, topic, 1, nil)
		if err := cl.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	all := describe()
	for _, name := range []string{"root", "kaas.conn", "kaas.partition", "kaas.supervisor", "kaas.groups", "kaas.transactions"} {
		if all[name] != "INFO" {
			t.Fatalf("logger %s at %q, want INFO (from --log-level); all: %v", name, all[name], all)
		}
	}
	create("bl-before")
	if code, msg := alter("0", op("kaas.partition", kmsg.IncrementalAlterConfigOpSet, "DEBUG")); code != 0 {
		t.Fatalf("set kaas.partition=DEBUG: %s %s", kerr.ErrorForCode(code), msg)
	}
	if got := describe("kaas.partition", "root"); got["kaas.partition"] != "DEBUG" || got["root"] != "INFO" || len(got) != 2 {
		t.Fatalf("after the change: %v", got)
	}
	create("bl-debug")
	if code, msg := alter("0", op("kaas.partition", kmsg.IncrementalAlterConfigOpDelete, "")); code != 0 {
		t.Fatalf("reset kaas.partition: %s %s", kerr.ErrorForCode(code), msg)
	}
	if got := describe("kaas.partition"); got["kaas.partition"] != "INFO" {
		t.Fatalf("after the reset: %v", got)
	}
	create("bl-after")
	if opened("bl-before") || !opened("bl-debug") || opened("bl-after") {
		t.Fatalf("partition opened lines: before %v, at DEBUG %v, after the reset %v", opened("bl-before"), opened("bl-debug"), opened("bl-after"))
	}

	for _, c := range []struct {
		broker string
		op     kmsg.IncrementalAlterConfigsRequestResourceConfig
		code   int16
		msg    string
	}{
		{"0", op("kaas.nope", kmsg.IncrementalAlterConfigOpSet, "DEBUG"), kerr.InvalidConfig.Code, "Logger kaas.nope does not exist!"},
		{"0", op("root", kmsg.IncrementalAlterConfigOpSet, "VERBOSE"), kerr.InvalidConfig.Code, "not a supported log level"},
		{"0", op("root", kmsg.IncrementalAlterConfigOpDelete, ""), kerr.InvalidRequest.Code, "Removing the log level of the root logger is not allowed"},
		{"0", op("root", kmsg.IncrementalAlterConfigOpAppend, "DEBUG"), kerr.InvalidRequest.Code, "APPEND operation is not allowed"},
		{"7", op("root", kmsg.IncrementalAlterConfigOpSet, "DEBUG"), kerr.InvalidRequest.Code, "Unexpected broker id, expected 0 but received 7"},
		{"", op("root", kmsg.IncrementalAlterConfigOpSet, "DEBUG"), kerr.InvalidRequest.Code, "Broker id must not be empty"},
	} {
		if code, msg := alter(c.broker, c.op); code != c.code || !strings.Contains(msg, c.msg) {
			t.Errorf("%q %+v: %s %q, want %s %q", c.broker, c.op, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(c.code), c.msg)
		}
	}
	if got := describe("root"); got["root"] != "INFO" {
		t.Fatalf("refused changes changed root to %s", got["root"])
	}

	// The legacy AlterConfigs does not take broker loggers.
	legacy := kmsg.NewPtrAlterConfigsRequest()
	lr := kmsg.NewAlterConfigsRequestResource()
	lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, "0"
	lc := kmsg.NewAlterConfigsRequestResourceConfig()
	lc.Name, lc.Value = "root", kmsg.StringPtr("DEBUG")
	lr.Configs = append(lr.Configs, lc)
	legacy.Resources = append(legacy.Resources, lr)
	if resp, err := legacy.RequestWith(ctxT(t, 10*time.Second), cl); err != nil || resp.Resources[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("AlterConfigs on BROKER_LOGGER: %v %+v, want INVALID_REQUEST", err, resp)
	}
}
