package main

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// rawGroup speaks the classic group protocol with raw kmsg requests.
type rawGroup struct {
	t     *testing.T
	ctx   context.Context
	cl    *kgo.Client
	group string
}

func (g rawGroup) join(member string, instance *string, session int32) *kmsg.JoinGroupResponse {
	g.t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.InstanceID = g.group, member, instance
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = session, 2000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = (&kmsg.ConsumerMemberMetadata{Topics: []string{"fence"}}).AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(g.ctx, g.cl)
	if err != nil {
		g.t.Fatal(err)
	}
	return resp
}

func (g rawGroup) sync(member string, instance *string, gen int32, assign bool) *kmsg.SyncGroupResponse {
	g.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = g.group, member, instance, gen
	if assign {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = member
		a.MemberAssignment = (&kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "fence", Partitions: []int32{0, 1}}}}).AppendTo(nil)
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	resp, err := req.RequestWith(g.ctx, g.cl)
	if err != nil {
		g.t.Fatal(err)
	}
	return resp
}

func (g rawGroup) heartbeat(member string, instance *string, gen int32) int16 {
	g.t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = g.group, member, instance, gen
	resp, err := req.RequestWith(g.ctx, g.cl)
	if err != nil {
		g.t.Fatal(err)
	}
	return resp.ErrorCode
}

func (g rawGroup) commit(member string, gen int32, topic string, partition int32) int16 {
	g.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = g.group, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(g.ctx, g.cl)
	if err != nil {
		g.t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
	}
}

func TestGroupFencingErrors(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	// One client per simulated member: a client sends JoinGroup and
	// SyncGroup in order on one connection. OffsetCommit is capped at v9
	// to commit by topic name (v10 commits by topic id).
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	cl := newClient(t, addr, kgo.MaxVersions(v))
	clB := newClient(t, addr)
	ctx := ctxT(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "fence"); err != nil {
		t.Fatal(err)
	}
	g := rawGroup{t: t, ctx: ctx, cl: cl, group: "fenced"}
	gb := rawGroup{t: t, ctx: ctx, cl: clB, group: "fenced"}

	wantCode(t, "join with a session timeout below the minimum", g.join("", nil, 10).ErrorCode, kerr.InvalidSessionTimeout.Code)
	wantCode(t, "join with an unknown member id", g.join("ghost", nil, 5000).ErrorCode, kerr.UnknownMemberID.Code)

	// KIP-394 round trip, then a one-member group.
	first := g.join("", nil, 5000)
	wantCode(t, "first join", first.ErrorCode, kerr.MemberIDRequired.Code)
	a := first.MemberID
	j := g.join(a, nil, 5000)
	if j.ErrorCode != 0 || j.LeaderID != a || j.Generation != 1 {
		t.Fatalf("join: %+v", j)
	}
	if s := g.sync(a, nil, 1, true); s.ErrorCode != 0 || len(s.MemberAssignment) == 0 {
		t.Fatalf("sync: %+v", s)
	}
	wantCode(t, "heartbeat", g.heartbeat(a, nil, 1), 0)
	wantCode(t, "heartbeat, wrong generation", g.heartbeat(a, nil, 7), kerr.IllegalGeneration.Code)
	wantCode(t, "heartbeat, unknown member", g.heartbeat("ghost", nil, 1), kerr.UnknownMemberID.Code)
	wantCode(t, "sync, wrong generation", g.sync(a, nil, 3, false).ErrorCode, kerr.IllegalGeneration.Code)
	wantCode(t, "commit", g.commit(a, 1, "fence", 0), 0)
	wantCode(t, "commit, wrong generation", g.commit(a, 2, "fence", 0), kerr.IllegalGeneration.Code)
	wantCode(t, "commit, unknown member", g.commit("ghost", 1, "fence", 0), kerr.UnknownMemberID.Code)
	wantCode(t, "commit by a non-member to a group with members", g.commit("", -1, "fence", 0), kerr.UnknownMemberID.Code)
	wantCode(t, "commit to an unknown topic", g.commit(a, 1, "nope", 0), kerr.UnknownTopicOrPartition.Code)
	wantCode(t, "commit to an unknown partition", g.commit(a, 1, "fence", 5), kerr.UnknownTopicOrPartition.Code)
	// v10 names topics by id.
	byID := kmsg.NewPtrOffsetCommitRequest()
	byID.Group, byID.MemberID, byID.Generation = "fenced", a, 1
	topics, err := adm.ListTopics(ctx, "fence")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range [][16]byte{topics["fence"].ID, {1, 2, 3}} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 1, 3
		rt.Partitions = append(rt.Partitions, rp)
		byID.Topics = append(byID.Topics, rt)
	}
	if r, err := byID.RequestWith(ctx, clB); err != nil {
		t.Fatal(err)
	} else if r.Version != 10 {
		t.Errorf("OffsetCommit negotiated v%d, want v10", r.Version)
	} else {
		wantCode(t, "v10 commit by topic id", r.Topics[0].Partitions[0].ErrorCode, 0)
		wantCode(t, "v10 commit to an unknown topic id", r.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicID.Code)
	}

	// A second member (static) starts a rebalance: a's heartbeat says so.
	inst := "static-b"
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { joined <- gb.join("", &inst, 5000) }()
	waitFor(t, ctx, "a rebalance", func() bool {
		return g.heartbeat(a, nil, 1) == kerr.RebalanceInProgress.Code
	})
	wantCode(t, "sync during the rebalance", g.sync(a, nil, 1, false).ErrorCode, kerr.RebalanceInProgress.Code)
	ja := g.join(a, nil, 5000)
	jb := <-joined
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 || ja.Generation != 2 || jb.Generation != 2 {
		t.Fatalf("rebalance joins: %+v %+v", ja, jb)
	}
	wantCode(t, "commit while the group completes its rebalance", g.commit(a, 2, "fence", 0), kerr.RebalanceInProgress.Code)
	// The follower's SyncGroup waits for the leader's.
	followerSync := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { followerSync <- gb.sync(jb.MemberID, &inst, 2, false) }()
	time.Sleep(50 * time.Millisecond)
	wantCode(t, "leader sync", g.sync(a, nil, 2, true).ErrorCode, 0)
	wantCode(t, "follower sync", (<-followerSync).ErrorCode, 0)

	// Static membership fencing: the same instance id under another
	// member id.
	other := "someone-else"
	wantCode(t, "heartbeat from a fenced static instance", g.heartbeat(other, &inst, 2), kerr.FencedInstanceID.Code)
	wantCode(t, "heartbeat from the static member", g.heartbeat(jb.MemberID, &inst, 2), 0)
	unknown := "never-joined"
	wantCode(t, "heartbeat with an unknown instance id", g.heartbeat(jb.MemberID, &unknown, 2), kerr.UnknownMemberID.Code)

	// KIP-848 fencing.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "fenced-848", "m-1", 0
	hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 5000, []string{"fence"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	r, err := hb.RequestWith(ctx, cl)
	if err != nil || r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.Topics) != 1 {
		t.Fatalf("848 join: %+v %v", r, err)
	}
	cgd, err := adm.DescribeConsumerGroups(ctx, "fenced-848")
	if err != nil {
		t.Fatal(err)
	}
	if d := cgd["fenced-848"]; d.Err != nil || d.State != "Stable" || d.AssignorName != "uniform" || len(d.Members) != 1 ||
		d.Members[0].MemberID != "m-1" || d.Members[0].ClientHost != "/127.0.0.1" || len(d.Members[0].Assignment["fence"]) != 2 {
		t.Errorf("ConsumerGroupDescribe: %+v", d)
	}
	if d, err := adm.DescribeGroups(ctx, "fenced-848"); err != nil || d["fenced-848"].Err == nil {
		t.Errorf("DescribeGroups of a KIP-848 group (not a classic group): %+v %v", d, err)
	}
	hb.MemberEpoch = 9
	r, _ = hb.RequestWith(ctx, cl)
	wantCode(t, "848 heartbeat from a future epoch", r.ErrorCode, kerr.FencedMemberEpoch.Code)
	bad := "sticky"
	hb.MemberEpoch, hb.ServerAssignor = 0, &bad
	r, _ = hb.RequestWith(ctx, cl)
	wantCode(t, "848 unknown assignor", r.ErrorCode, kerr.UnsupportedAssignor.Code)
	hb.ServerAssignor, hb.MemberID, hb.MemberEpoch = nil, "ghost", 3
	r, _ = hb.RequestWith(ctx, cl)
	wantCode(t, "848 unknown member", r.ErrorCode, kerr.UnknownMemberID.Code)
	// A KIP-848 heartbeat to a classic group with members: only a join
	// (epoch 0), which moves the group to the consumer protocol.
	hb.Group, hb.MemberID, hb.MemberEpoch = "fenced", "m-848", 4
	r, _ = hb.RequestWith(ctx, cl)
	wantCode(t, "848 heartbeat (not a join) to a classic group", r.ErrorCode, kerr.GroupIDNotFound.Code)
	hb.MemberEpoch = 0
	r, _ = hb.RequestWith(ctx, cl)
	wantCode(t, "848 join of a classic group", r.ErrorCode, 0)
}
