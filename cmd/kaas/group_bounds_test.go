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
	records := pollSome(t, ctx, consumer, 10)
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

// TestShareRenewAcknowledgeEnable: a RENEW acknowledgement (KIP-1222)
// extends the lock in a group with share.renew.acknowledge.enable unset
// (true), and is refused with INVALID_RECORD_STATE in one that sets it
// false; the broker reports its in-flight bound,
// --group-share-partition-max-record-locks.
func TestShareRenewAcknowledgeEnable(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest", "--group-share-partition-max-record-locks", "150",
		"--group-share-min-partition-max-record-locks", "150")
	const topic = "renew-topic"
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, 3)
	if code, msg := alterGroupConfigs(t, newClient(t, addr), "sg-renew-off", "share.renew.acknowledge.enable", "false"); code != 0 {
		t.Fatalf("share.renew.acknowledge.enable=false: %d %s", code, msg)
	}
	ctx := ctxT(t, 30*time.Second)
	renew := func(group string) error {
		t.Helper()
		results := make(chan kgo.ShareAckResults, 16)
		cl := shareConsumer(t, addr, group, topic, kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) { results <- rs }))
		for _, r := range pollSome(t, ctx, cl, 10) {
			r.Ack(kgo.AckRenew)
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case rs := <-results:
			return rs.Error()
		case <-ctx.Done():
			t.Fatalf("%s: no acknowledgement result", group)
			return nil
		}
	}
	if err := renew("sg-renew-on"); err != nil {
		t.Fatalf("renew in a group that allows it: %v", err)
	}
	if err := renew("sg-renew-off"); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("renew in a group with share.renew.acknowledge.enable=false: %v, want INVALID_RECORD_STATE", err)
	}
	if cfg, ok := brokerConfig(t, ctx, newClient(t, addr), 0, "0", "group.share.partition.max.record.locks"); !ok || cfg.MaybeValue() != "150" {
		t.Fatalf("group.share.partition.max.record.locks: %q (found %v), want 150", cfg.MaybeValue(), ok)
	}
	if got := describeGroupConfigs(t, newClient(t, addr), "sg-renew-on")["share.partition.max.record.locks"]; got.Value == nil || *got.Value != "150" {
		t.Fatalf("group default of share.partition.max.record.locks: %v, want the broker's 150", got.Value)
	}
}

// TestConsumerAssignorsFlag: --group-consumer-assignors (Kafka's
// group.consumer.assignors) decides the server-side assignors a KIP-848
// group may run: the first for members that ask for none, the others on
// request, anything else UNSUPPORTED_ASSIGNOR; DescribeConfigs reports it.
func TestConsumerAssignorsFlag(t *testing.T) {
	_, addr := testBroker(t, "--group-consumer-assignors", "range")
	const topic = "assignors-topic"
	createTopic(t, addr, topic, 2, nil)
	cl := newClient(t, addr)
	ctx := ctxT(t, 30*time.Second)
	heartbeat := func(group, member string, assignor *string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, member, 0, 10000
		req.SubscribedTopicNames, req.Topics, req.ServerAssignor = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}, assignor
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := heartbeat("assignors-g", "member-1", nil); r.ErrorCode != 0 {
		t.Fatalf("join without an assignor: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := heartbeat("assignors-u", "member-2", kmsg.StringPtr("uniform")); r.ErrorCode != kerr.UnsupportedAssignor.Code {
		t.Fatalf("uniform when only range is configured: %v, want UNSUPPORTED_ASSIGNOR", kerr.ErrorForCode(r.ErrorCode))
	}
	groups, err := kadm.NewClient(cl).DescribeConsumerGroups(ctx, "assignors-g")
	if err != nil {
		t.Fatal(err)
	}
	if g := groups["assignors-g"]; g.AssignorName != "range" {
		t.Fatalf("group's assignor %q, want range, the first configured", g.AssignorName)
	}
	if cfg, ok := brokerConfig(t, ctx, cl, 0, "0", "group.consumer.assignors"); !ok || cfg.MaybeValue() != "range" {
		t.Fatalf("group.consumer.assignors: %q (found %v), want range", cfg.MaybeValue(), ok)
	}
}

// TestOffsetMetadataMaxBytesFlag: --offset-metadata-max-bytes (Kafka's
// offset.metadata.max.bytes) bounds the metadata an offset commit
// carries: a longer one is OFFSET_METADATA_TOO_LARGE for its partition,
// the others of the request commit.
func TestOffsetMetadataMaxBytesFlag(t *testing.T) {
	_, addr := testBroker(t, "--offset-metadata-max-bytes", "10")
	const topic = "metadata-topic"
	createTopic(t, addr, topic, 2, nil)
	cl := newClient(t, addr)
	ctx := ctxT(t, 30*time.Second)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1, Metadata: "0123456789"})
	offsets.Add(kadm.Offset{Topic: topic, Partition: 1, At: 1, LeaderEpoch: -1, Metadata: "0123456789a"})
	resp, err := kadm.NewClient(cl).CommitOffsets(ctx, "metadata-g", offsets)
	if err != nil {
		t.Fatal(err)
	}
	ok, tooLarge := resp[topic][0].Err, resp[topic][1].Err
	if ok != nil || !errors.Is(tooLarge, kerr.OffsetMetadataTooLarge) {
		t.Fatalf("commits with 10 and 11 bytes of metadata under a 10-byte bound: %v and %v, want nil and OFFSET_METADATA_TOO_LARGE", ok, tooLarge)
	}
	if cfg, ok := brokerConfig(t, ctx, cl, 0, "0", "offset.metadata.max.bytes"); !ok || cfg.MaybeValue() != "10" {
		t.Fatalf("offset.metadata.max.bytes: %q (found %v), want 10", cfg.MaybeValue(), ok)
	}
}
