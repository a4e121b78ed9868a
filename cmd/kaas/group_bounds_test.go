package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupConfigBoundsFromBrokerFlags: the bound flags (Kafka's
// group.*.min/max.* broker configs) decide which GROUP configs a broker
// takes: a lowered minimum lets a group's share.record.lock.duration.ms
// under Kafka's default bound, and its consumers get that lock; a raised
// one refuses what Kafka's default allows, naming the broker config. The
// bounds are reported as read-only broker configs, and a broker on Kafka's
// defaults refuses the lowered lock.
func TestGroupConfigBoundsFromBrokerFlags(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest", "--group-share-min-record-lock-duration", "1s",
		"--group-consumer-min-session-timeout", "50s", "--group-consumer-session-timeout", "50s")
	cl := newClient(t, addr)
	const topic, group = "bounds-topic", "sg-bounds"

	if code, msg := alterGroupConfigs(t, cl, group, "share.record.lock.duration.ms", "1500"); code != 0 {
		t.Fatalf("lock of 1.5 s under a 1 s minimum: error %d %s", code, msg)
	}
	code, msg := alterGroupConfigs(t, cl, group, "consumer.session.timeout.ms", "45000")
	if code != kerr.InvalidConfig.Code || !strings.Contains(msg, "outside [50000, 60000]") || !strings.Contains(msg, "group.consumer.min.session.timeout.ms") {
		t.Fatalf("45 s session under a 50 s minimum: error %d %q, want INVALID_CONFIG naming the bound", code, msg)
	}
	if got := describeGroupConfigs(t, cl, group)["share.record.lock.duration.ms"]; got.Value == nil || *got.Value != "1500" {
		t.Fatalf("described lock %v, want 1500", got.Value)
	}

	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, 3)
	consumer := shareConsumer(t, addr, group, topic)
	ctx := ctxT(t, 30*time.Second)
	var records []*kgo.Record
	for len(records) == 0 {
		fs := consumer.PollRecords(ctx, 10)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		records = fs.Records()
	}
	// The client takes its deadline as its receipt plus the lock the
	// broker answered: at most 1.5 s from now (30 s under the default).
	for _, r := range records {
		if left := time.Until(r.AcquisitionDeadline()); left > 1500*time.Millisecond {
			t.Fatalf("record %s acquired for %s more, want the group's 1.5 s lock", r.Key, left)
		}
	}

	adm := kadm.NewClient(cl)
	for name, want := range map[string]string{"group.share.min.record.lock.duration.ms": "1000", "group.share.max.record.lock.duration.ms": "60000",
		"group.consumer.min.session.timeout.ms": "50000", "group.consumer.session.timeout.ms": "50000", "group.streams.max.standby.replicas": "2"} {
		if cfg, ok := brokerConfig(t, ctx, cl, 0, "0", name); !ok || cfg.MaybeValue() != want {
			t.Errorf("%s: %q (found %v), want %s", name, cfg.MaybeValue(), ok, want)
		}
		v := "2000"
		res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: name, Value: &v}}, 0)
		if err != nil || !errors.Is(res[0].Err, kerr.InvalidRequest) || !strings.Contains(res[0].ErrMessage, "Cannot update these configs dynamically") {
			t.Errorf("alter %s: %v %+v, want INVALID_REQUEST, read-only", name, err, res)
		}
	}

	_, plain := testBroker(t)
	code, msg = alterGroupConfigs(t, newClient(t, plain), group, "share.record.lock.duration.ms", "1500")
	if code != kerr.InvalidConfig.Code || !strings.Contains(msg, "outside [15000, 60000] (group.share.min.record.lock.duration.ms, group.share.max.record.lock.duration.ms)") {
		t.Fatalf("1.5 s lock on a broker with Kafka's bounds: error %d %q, want INVALID_CONFIG naming the bounds", code, msg)
	}
}
