package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestWithGroupConfigs: a group's session and heartbeat configs override
// the broker's; the others leave them alone.
func TestWithGroupConfigs(t *testing.T) {
	base := Config{ConsumerSessionTimeout: 3 * time.Second, ConsumerHeartbeatInterval: time.Second}
	base.Defaults()
	base.Share.SessionTimeout, base.Share.HeartbeatInterval = 2*time.Second, 500*time.Millisecond
	cases := []struct {
		name                          string
		set                           map[string]string
		cSession, cBeat, sSess, sBeat time.Duration
	}{
		{"none", nil, 3 * time.Second, time.Second, 2 * time.Second, 500 * time.Millisecond},
		{"share only", map[string]string{"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "6000"},
			3 * time.Second, time.Second, 50 * time.Second, 6 * time.Second},
		{"consumer only", map[string]string{"consumer.session.timeout.ms": "60000", "consumer.heartbeat.interval.ms": "15000"},
			60 * time.Second, 15 * time.Second, 2 * time.Second, 500 * time.Millisecond},
		{"under Kafka's default bounds (a broker's lowered ones)", map[string]string{"consumer.session.timeout.ms": "1000", "share.heartbeat.interval.ms": "10"},
			time.Second, time.Second, 2 * time.Second, 10 * time.Millisecond},
		{"share-partition configs", map[string]string{"share.record.lock.duration.ms": "15000", "share.auto.offset.reset": "earliest"},
			3 * time.Second, time.Second, 2 * time.Second, 500 * time.Millisecond},
	}
	for _, c := range cases {
		got := WithGroupConfigs(base, c.set)
		if got.ConsumerSessionTimeout != c.cSession || got.ConsumerHeartbeatInterval != c.cBeat ||
			got.Share.SessionTimeout != c.sSess || got.Share.HeartbeatInterval != c.sBeat {
			t.Errorf("%s: consumer %s/%s share %s/%s, want %s/%s %s/%s", c.name,
				got.ConsumerSessionTimeout, got.ConsumerHeartbeatInterval, got.Share.SessionTimeout, got.Share.HeartbeatInterval,
				c.cSession, c.cBeat, c.sSess, c.sBeat)
		}
	}
}

// TestGroupConfigsReachHeartbeats: a group's configs set while members are
// in it go out with their next heartbeat (the interval) and set their
// session deadlines, for a KIP-848 consumer group and a share group.
func TestGroupConfigsReachHeartbeats(t *testing.T) {
	t0 := time.Unix(1000, 0)
	base := Config{ConsumerSessionTimeout: 3 * time.Second, ConsumerHeartbeatInterval: time.Second}
	base.Share.SessionTimeout, base.Share.HeartbeatInterval = 3*time.Second, time.Second

	g := New("g", base)
	m := newCGM(t, g, "m1")
	if r := m.beat(t0); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 1000 {
		t.Fatalf("consumer join: code %d interval %d", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	g.SetGroupConfigs(map[string]string{"consumer.heartbeat.interval.ms": "6000", "consumer.session.timeout.ms": "50000"})
	if r := m.beat(t0); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("consumer heartbeat after the configs: code %d interval %d, want 6000", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	g.Tick(t0.Add(10 * time.Second))
	if !g.HasMembers() {
		t.Fatal("consumer member expired after the broker's 3 s, not the group's 50 s")
	}
	g.Tick(t0.Add(51 * time.Second))
	if g.HasMembers() {
		t.Fatal("consumer member outlived the group's 50 s session timeout")
	}

	s := New("s", base)
	hb := func(now time.Time, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = "s", "m1", epoch, []string{"t"}
		return s.ShareHeartbeat(now, client, req, fakeTopics{"t": 2})
	}
	r := hb(t0, 0)
	if r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 1000 {
		t.Fatalf("share join: code %d interval %d", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	s.SetGroupConfigs(map[string]string{"share.heartbeat.interval.ms": "7000", "share.session.timeout.ms": "46000"})
	if r := hb(t0, r.MemberEpoch); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("share heartbeat after the configs: code %d interval %d, want 7000", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
	s.Tick(t0.Add(10 * time.Second))
	if !s.HasMembers() {
		t.Fatal("share member expired after the broker's 3 s, not the group's 46 s")
	}
	s.Tick(t0.Add(47 * time.Second))
	if s.HasMembers() {
		t.Fatal("share member outlived the group's 46 s session timeout")
	}
	// A share group created after the configs were read takes them too.
	late := New("late", base)
	late.SetGroupConfigs(map[string]string{"share.heartbeat.interval.ms": "8000"})
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = "late", "m1", 0, []string{"t"}
	if r := late.ShareHeartbeat(t0, client, req, fakeTopics{"t": 2}); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 8000 {
		t.Fatalf("share group created after the configs: code %d interval %d, want 8000", r.ErrorCode, r.HeartbeatIntervalMillis)
	}
}
