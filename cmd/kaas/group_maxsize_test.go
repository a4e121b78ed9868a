package main

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupMaxSizeFlags: --group-max-size bounds a classic group, whose
// third member's JoinGroup gets GROUP_MAX_SIZE_REACHED;
// --group-consumer-max-size bounds a KIP-848 consumer group, whose third
// member's ConsumerGroupHeartbeat gets it; DescribeConfigs of the broker
// reports the four limits under Kafka's names.
func TestGroupMaxSizeFlags(t *testing.T) {
	_, addr := testBroker(t, "--group-max-size=2", "--group-consumer-max-size=2", "--group-share-max-size=1000",
		"--group-streams-max-size=5", "--group-initial-rebalance-delay=0")
	ctx := ctxT(t, 30*time.Second)
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "maxsize-t"); err != nil {
		t.Fatal(err)
	}

	// Classic: each member on its own connection (a JoinGroup waits for
	// the rebalance).
	joinErr := func(cl *kgo.Client, member string) (*kmsg.JoinGroupResponse, error) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "maxsize-classic", member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 10000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", (&kmsg.ConsumerMemberMetadata{Topics: []string{"maxsize-t"}}).AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		return req.RequestWith(ctx, cl)
	}
	join := func(cl *kgo.Client, member string) *kmsg.JoinGroupResponse {
		t.Helper()
		resp, err := joinErr(cl, member)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// joinNew joins with the member id the coordinator asks for (KIP-394).
	joinNew := func(cl *kgo.Client) string {
		t.Helper()
		r := join(cl, "")
		if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
			t.Fatalf("first join: error %d member %q, want MEMBER_ID_REQUIRED", r.ErrorCode, r.MemberID)
		}
		return r.MemberID
	}
	a, b, c := newClient(t, addr), newClient(t, addr), newClient(t, addr)
	idA := joinNew(a)
	if r := join(a, idA); r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("a's join: error %d generation %d", r.ErrorCode, r.Generation)
	}
	// b's join starts a rebalance that waits for a to rejoin.
	idB := joinNew(b)
	type joined struct {
		r   *kmsg.JoinGroupResponse
		err error
	}
	bDone := make(chan joined, 1)
	go func() {
		r, err := joinErr(b, idB)
		bDone <- joined{r, err}
	}()
	waitFor(t, ctx, "b's join to start a rebalance", func() bool {
		d, err := adm.DescribeGroups(ctx, "maxsize-classic")
		return err == nil && d["maxsize-classic"].State == "PreparingRebalance"
	})
	if r := join(a, idA); r.ErrorCode != 0 || r.Generation != 2 {
		t.Fatalf("a's rejoin: error %d generation %d", r.ErrorCode, r.Generation)
	}
	if j := <-bDone; j.err != nil || j.r.ErrorCode != 0 || j.r.Generation != 2 {
		t.Fatalf("b's join: %v %+v", j.err, j.r)
	}
	if r := join(c, ""); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third classic member: error %d, want GROUP_MAX_SIZE_REACHED", r.ErrorCode)
	}

	// Consumer protocol.
	heartbeat := func(member string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "maxsize-consumer", member, 0, 10000
		req.SubscribedTopicNames, req.Topics = []string{"maxsize-t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(ctx, c)
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
		if cfg, ok := brokerConfig(t, ctx, c, 0, "0", name); !ok || cfg.MaybeValue() != want {
			t.Errorf("%s: %q (found %v), want %s", name, cfg.MaybeValue(), ok, want)
		}
	}
}
