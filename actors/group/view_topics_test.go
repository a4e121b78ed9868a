package group

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

// A KIP-848 subscription resolves against every topic of the routing view,
// internal ones included, as Kafka's coordinator matches regexes against its
// whole topic image.
func TestConsumerSubscriptionResolvesInternalTopics(t *testing.T) {
	orders := &routing.Topic{Name: "orders", ID: [16]byte{1}, Partitions: make([]routing.Partition, 2)}
	v := &routing.View{Self: 1, Role: "local",
		Topics: map[string]*routing.Topic{"orders": orders}, TopicIDs: map[[16]byte]*routing.Topic{orders.ID: orders}}
	topics := viewTopics{v}
	internal := routing.ConsumerOffsetsTopic
	cases := []struct {
		name  string
		regex string
		names []string
		want  map[string]int // topic -> partitions assigned
	}{
		{"franz-go's regex of an internal and a user topic", `.*(?:(?:__consumer_offsets)|(?:orders)).*`, nil,
			map[string]int{internal: 50, "orders": 2}},
		{"exact internal name", `__consumer_offsets`, nil, map[string]int{internal: 50}},
		{"match all", `.*`, nil, map[string]int{internal: 50, "orders": 2}},
		{"user topics only", `ord.*`, nil, map[string]int{"orders": 2}},
		{"internal topic by name", "", []string{internal, "missing"}, map[string]int{internal: 50}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := New("g", testConfig())
			var epoch int32
			owned := map[[16]byte][]int32{}
			for range 5 {
				r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				r.Version, r.Group, r.MemberID, r.MemberEpoch = 1, "g", "m", epoch
				r.RebalanceTimeoutMillis = 10_000
				if tc.regex != "" {
					r.SubscribedTopicRegex = &tc.regex
				} else {
					r.SubscribedTopicNames = tc.names
				}
				r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				for id, ps := range owned {
					rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
					rt.TopicID, rt.Partitions = id, ps
					r.Topics = append(r.Topics, rt)
				}
				resp := g.ConsumerHeartbeat(t0, client, r, topics)
				if resp.ErrorCode != 0 {
					t.Fatalf("heartbeat: %s", code(resp.ErrorCode))
				}
				epoch = resp.MemberEpoch
				if resp.Assignment != nil {
					owned = map[[16]byte][]int32{}
					for _, at := range resp.Assignment.Topics {
						owned[at.TopicID] = slices.Clone(at.Partitions)
					}
				}
			}
			got := map[string]int{}
			for id, ps := range owned {
				ti, ok := topics.ByID(id)
				if !ok {
					t.Fatalf("assigned topic id %x is unknown", id)
				}
				got[ti.Name] = len(ps)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("assigned %v, want %v", got, tc.want)
			}
			for n, want := range tc.want {
				if got[n] != want {
					t.Fatalf("assigned %v, want %v", got, tc.want)
				}
			}
			d := g.DescribeConsumerGroup(t0, topics)
			if d.ErrorCode != 0 || len(d.Members) != 1 || d.State != "Stable" {
				t.Fatalf("describe %+v", d)
			}
		})
	}
}
