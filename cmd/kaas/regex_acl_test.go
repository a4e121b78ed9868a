package main

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKIP848RegexResolvesDescribableTopics: with --authorizer=acl a KIP-848
// regex subscription resolves to the matching topics the member may
// DESCRIBE, as Kafka 4's coordinator resolves it: a franz-go consumer of
// `rxa-.*` is assigned the two topics it may read, not the third, until
// an ACL grants it that one too. A topic named outright that the member
// may not describe gets TOPIC_AUTHORIZATION_FAILED at the heartbeat, and
// ConsumerGroupDescribe of a group holding a topic the client may not
// describe answers TOPIC_AUTHORIZATION_FAILED for that group.
func TestKIP848RegexResolvesDescribableTopics(t *testing.T) {
	addr, _ := aclBroker(t, "--group-consumer-heartbeat-interval", "300ms", "--group-consumer-min-heartbeat-interval", "100ms")
	adm := newAdmin(t, addr)
	mustCreateACLs(t, adm, kadm.NewACLs().Clusters().Allow(anon).Operations(kadm.OpCreate))
	for _, n := range []string{"rxa-1", "rxa-2", "rxa-3"} {
		createTopic(t, addr, n, 1, nil)
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("rxa-1", "rxa-2").Groups("rxa-g", "rxa-lit").Allow(anon).Operations(kadm.OpRead))

	var mu sync.Mutex
	owned := map[string]bool{}
	track := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for topic := range ps {
				if add {
					owned[topic] = true
				} else {
					delete(owned, topic)
				}
			}
		}
	}
	ownedNow := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(maps.Keys(owned))
	}
	cl := newClient(t, addr, kgo.ServerSideBalancer(), kgo.ConsumerGroup("rxa-g"), kgo.ConsumeRegex(),
		kgo.ConsumeTopics("rxa-.*"), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.OnPartitionsAssigned(track(true)), kgo.OnPartitionsRevoked(track(false)), kgo.OnPartitionsLost(track(false)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	defer func() { cancel(); <-done }()

	// What the coordinator assigns, as the member's target (a describe
	// that fails names the error).
	target := func() string {
		d, err := adm.DescribeConsumerGroups(ctxT(t, 10*time.Second), "rxa-g")
		if err != nil {
			return err.Error()
		}
		g := d["rxa-g"]
		if g.Err != nil {
			return g.Err.Error()
		}
		if len(g.Members) != 1 {
			return "members: " + strconv.Itoa(len(g.Members))
		}
		return strings.Join(slices.Sorted(maps.Keys(g.Members[0].TargetAssignment)), ",")
	}
	waitUntil(t, 30*time.Second, "rxa-1 and rxa-2 assigned", func() bool {
		return slices.Equal(ownedNow(), []string{"rxa-1", "rxa-2"}) && target() == "rxa-1,rxa-2"
	})
	for range 5 { // heartbeats come every 300 ms
		if got := target(); got != "rxa-1,rxa-2" {
			t.Fatalf("target assignment %q: the regex resolved to a topic the member may not describe", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("rxa-3").Allow(anon).Operations(kadm.OpDescribe))
	waitUntil(t, 30*time.Second, "rxa-3 assigned once DESCRIBE is granted", func() bool {
		return slices.Equal(ownedNow(), []string{"rxa-1", "rxa-2", "rxa-3"}) && target() == "rxa-1,rxa-2,rxa-3"
	})

	// Named outright: TOPIC_AUTHORIZATION_FAILED when not describable.
	raw := newClient(t, addr)
	heartbeat := func(topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "rxa-lit", "rxa-lit-member", 0, 30_000
		req.SubscribedTopicNames, req.Topics = topics, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), raw)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := heartbeat("rxa-3"); r.ErrorCode != 0 || r.MemberEpoch <= 0 {
		t.Fatalf("join naming rxa-3 while describable: code %d epoch %d", r.ErrorCode, r.MemberEpoch)
	}
	if n := mustDeleteACLs(t, adm, kadm.NewACLs().Topics("rxa-3").Allow(anon).AllowHosts().Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)); n != 1 {
		t.Fatalf("deleted %d ACLs, want 1", n)
	}
	if r := heartbeat("rxa-3"); r.ErrorCode != kerr.TopicAuthorizationFailed.Code || r.ErrorMessage == nil {
		t.Fatalf("heartbeat naming rxa-3 without DESCRIBE: code %d, want TOPIC_AUTHORIZATION_FAILED with a message", r.ErrorCode)
	}
	describe := kmsg.NewPtrConsumerGroupDescribeRequest()
	describe.Groups = []string{"rxa-lit"}
	resp, err := describe.RequestWith(ctxT(t, 10*time.Second), raw)
	if err != nil {
		t.Fatal(err)
	}
	if g := resp.Groups[0]; g.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(g.Members) != 0 {
		t.Fatalf("describe of a group holding rxa-3: code %d, %d members; want TOPIC_AUTHORIZATION_FAILED alone", g.ErrorCode, len(g.Members))
	}
}
