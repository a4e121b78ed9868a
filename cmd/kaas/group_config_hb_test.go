package main

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupConfigsSetHeartbeatIntervals: consumer.heartbeat.interval.ms
// and share.heartbeat.interval.ms set through IncrementalAlterConfigs on
// the GROUP resource reach the members' next heartbeat over the wire (a
// KIP-848 consumer group and a share group, each with a member in it).
func TestGroupConfigsSetHeartbeatIntervals(t *testing.T) {
	_, addr, _ := startTestBroker(t)
	createTopic(t, addr, "hb-topic", 1, nil)
	cl := newClient(t, addr)
	ctx := ctxT(t, 30*time.Second)

	consumerBeat := func(epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "cg-hb", "member-cg-hb", epoch
		req.RebalanceTimeoutMillis = 10_000
		req.SubscribedTopicNames = []string{"hb-topic"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("consumer group heartbeat: %v %+v", err, resp)
		}
		return resp
	}
	// The group applies its new configs as soon as it has read them: the
	// members' heartbeats go on until one carries the interval.
	until := func(what string, want int32, beat func() int32) {
		t.Helper()
		for {
			got := beat()
			if got == want {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s heartbeat interval %d, want the group's %d", what, got, want)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	r := consumerBeat(0)
	if r.HeartbeatIntervalMillis == 6000 {
		t.Fatalf("consumer heartbeat interval %d before the group's config", r.HeartbeatIntervalMillis)
	}
	if code, msg := alterGroupConfigs(t, cl, "cg-hb", "consumer.heartbeat.interval.ms", "6000"); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	until("consumer", 6000, func() int32 { return consumerBeat(r.MemberEpoch).HeartbeatIntervalMillis })

	shareBeat := func(epoch int32) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = "sg-hb", "member-sg-hb", epoch
		req.SubscribedTopicNames = []string{"hb-topic"}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share group heartbeat: %v %+v", err, resp)
		}
		return resp
	}
	s := shareBeat(0)
	if s.HeartbeatIntervalMillis == 7000 {
		t.Fatalf("share heartbeat interval %d before the group's config", s.HeartbeatIntervalMillis)
	}
	if code, msg := alterGroupConfigs(t, cl, "sg-hb", "share.heartbeat.interval.ms", "7000"); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	until("share", 7000, func() int32 { return shareBeat(s.MemberEpoch).HeartbeatIntervalMillis })
}
