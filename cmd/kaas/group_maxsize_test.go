package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupMaxSizeFlags: with --group-max-size=2, two franz-go classic
// consumers share a topic and a third member's JoinGroup gets
// GROUP_MAX_SIZE_REACHED while the two keep consuming; with
// --group-consumer-max-size=2, a third KIP-848 member's
// ConsumerGroupHeartbeat gets it; DescribeConfigs of the broker reports
// the four limits under Kafka's names, and they are read-only.
func TestGroupMaxSizeFlags(t *testing.T) {
	_, addr := testBroker(t, "--group-max-size=2", "--group-consumer-max-size=2", "--group-share-max-size=1000",
		"--group-streams-max-size=5", "--group-initial-rebalance-delay=0")
	ctx := ctxT(t, 30*time.Second)
	adm := newAdmin(t, addr)
	const topic, group = "maxsize-t", "maxsize-classic"
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// Records go to both partitions, so each member has some to consume.
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produced := 0
	produce := func(n int) {
		t.Helper()
		var rs []*kgo.Record
		for range n {
			rs = append(rs, &kgo.Record{Value: fmt.Appendf(nil, "v-%05d", produced), Partition: int32(produced % 2)})
			produced++
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	led := newLedger()
	for _, name := range []string{"a", "b"} {
		m := startMember(t, ctx, name, led, append(groupClientOpts(addr, topic, group), kgo.Balancers(kgo.RangeBalancer())))
		defer m.leave()
	}
	stableWith := func(n int) func() bool {
		return func() bool {
			d, err := adm.DescribeGroups(ctx, group)
			return err == nil && d[group].State == "Stable" && len(d[group].Members) == n
		}
	}
	waitFor(t, ctx, "two stable classic members", stableWith(2))
	produce(20)
	waitFor(t, ctx, "the first records consumed", func() bool { return led.count.Load() == int64(produced) })

	// The third member's first JoinGroup is refused at once: the group
	// is full.
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType = group, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 10000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", (&kmsg.ConsumerMemberMetadata{Topics: []string{topic}}).AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	third := newClient(t, addr)
	resp, err := req.RequestWith(ctx, third)
	if err != nil || resp.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third classic member's JoinGroup: %v, error %v, want GROUP_MAX_SIZE_REACHED", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	// The two go on, each with its partition.
	produce(20)
	waitFor(t, ctx, "the later records consumed", func() bool { return led.count.Load() == int64(produced) })
	d, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if g := d[group]; g.State != "Stable" || len(g.Members) != 2 {
		t.Fatalf("after the refusal: %s with %d members, want Stable with 2", g.State, len(g.Members))
	}
	for _, m := range d[group].Members {
		if a, ok := m.Assigned.AsConsumer(); !ok || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 1 {
			t.Errorf("member %s (%s) assigned %+v", m.MemberID, m.ClientID, a)
		}
	}

	// Consumer protocol: raw heartbeats, each a new member.
	heartbeat := func(member string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "maxsize-consumer", member, 0, 10000
		req.SubscribedTopicNames, req.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(ctx, third)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, m := range []string{"member-1", "member-2"} {
		if r := heartbeat(m); r.ErrorCode != 0 || r.MemberEpoch <= 0 {
			t.Fatalf("%s: error %d epoch %d", m, r.ErrorCode, r.MemberEpoch)
		}
	}
	if r := heartbeat("member-3"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third consumer member: error %d, want GROUP_MAX_SIZE_REACHED", r.ErrorCode)
	}

	for name, want := range map[string]string{"group.max.size": "2", "group.consumer.max.size": "2",
		"group.share.max.size": "1000", "group.streams.max.size": "5"} {
		if cfg, ok := brokerConfig(t, ctx, third, 0, "0", name); !ok || cfg.MaybeValue() != want {
			t.Errorf("%s: %q (found %v), want %s", name, cfg.MaybeValue(), ok, want)
		}
		v := "3"
		res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: name, Value: &v}}, 0)
		if err != nil || !errors.Is(res[0].Err, kerr.InvalidRequest) || !strings.Contains(res[0].ErrMessage, "Cannot update these configs dynamically") {
			t.Errorf("alter %s: %v %+v, want INVALID_REQUEST, read-only", name, err, res)
		}
	}
}

// classicJoin sends one JoinGroup of a consumer-protocol classic member.
func classicJoin(ctx context.Context, cl *kgo.Client, group, member, topic string) (*kmsg.JoinGroupResponse, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 10000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", (&kmsg.ConsumerMemberMetadata{Topics: []string{topic}}).AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("JoinGroup of %q: %w", member, err)
	}
	return resp, nil
}

// joinAll sends a JoinGroup of each member at once, each on its client (a
// JoinGroup waits for the rebalance), and returns the answers in order.
func joinAll(t *testing.T, ctx context.Context, cls []*kgo.Client, group string, ids []string) []*kmsg.JoinGroupResponse {
	t.Helper()
	out := make([]*kmsg.JoinGroupResponse, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() { out[i], errs[i] = classicJoin(ctx, cls[i], group, ids[i], "t") })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGroupMaxSizeLoweredAcrossRestart: a classic group of three members,
// saved by a broker with --group-max-size=3, is loaded by one restarted
// with --group-max-size=2: its members are told to rejoin, two of them
// make the next generation and the third is refused with
// GROUP_MAX_SIZE_REACHED and removed.
func TestGroupMaxSizeLoweredAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	_, addr, stop := startTestBroker(t, "--data-dir", dir, "--group-max-size=3")
	ctx := ctxT(t, 30*time.Second)
	const group = "maxsize-lowered"
	cls := []*kgo.Client{newClient(t, addr), newClient(t, addr), newClient(t, addr)}
	ids := make([]string, len(cls))
	for i, cl := range cls {
		r, err := classicJoin(ctx, cl, group, "", "t")
		if err != nil || r.ErrorCode != kerr.MemberIDRequired.Code {
			t.Fatalf("first join: %v %+v", err, r)
		}
		ids[i] = r.MemberID
	}
	joined := joinAll(t, ctx, cls, group, ids)
	leader := slices.Index(ids, joined[0].LeaderID)
	if leader < 0 {
		t.Fatalf("leader %q is none of %v", joined[0].LeaderID, ids)
	}
	syncMember := func(i int, assign bool) {
		t.Helper()
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = group, ids[i], joined[i].Generation
		if assign {
			for _, id := range ids {
				a := kmsg.NewSyncGroupRequestGroupAssignment()
				a.MemberID, a.MemberAssignment = id, (&kmsg.ConsumerMemberAssignment{}).AppendTo(nil)
				req.GroupAssignment = append(req.GroupAssignment, a)
			}
		}
		if r, err := req.RequestWith(ctx, cls[i]); err != nil || r.ErrorCode != 0 {
			t.Fatalf("sync of %s: %v %+v", ids[i], err, r)
		}
	}
	syncMember(leader, true) // answered once the membership is saved
	for i := range ids {
		if i != leader {
			syncMember(i, false)
		}
	}

	stop()
	startTestBroker(t, "--data-dir", dir, "--group-max-size=2", "--kafka-addr", addr)
	waitFor(t, ctx, "the restored group to call its members back", func() bool {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = group, ids[0], joined[0].Generation
		r, err := req.RequestWith(ctx, cls[0])
		return err == nil && r.ErrorCode == kerr.RebalanceInProgress.Code
	})
	var kept, refused int
	for i, r := range joinAll(t, ctx, cls, group, ids) {
		switch {
		case r.ErrorCode == 0 && r.Generation == joined[i].Generation+1:
			kept++
		case r.ErrorCode == kerr.GroupMaxSizeReached.Code:
			refused++
		default:
			t.Errorf("rejoin of %s: %v generation %d", ids[i], kerr.ErrorForCode(r.ErrorCode), r.Generation)
		}
	}
	if kept != 2 || refused != 1 {
		t.Fatalf("%d members kept, %d refused; want 2 and 1", kept, refused)
	}
	d, err := newAdmin(t, addr).DescribeGroups(ctx, group)
	if err != nil || len(d[group].Members) != 2 {
		t.Fatalf("after the rejoins: %v, %d members, want 2", err, len(d[group].Members))
	}
}
