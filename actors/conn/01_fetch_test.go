package conn

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// idlePartition answers every Fetch with no records and never wakes a
// long poll: a led partition nobody writes to.
type idlePartition struct{}

func (idlePartition) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*messages.Fetch); ok {
		m.Reply(messages.FetchResult{HighWatermark: 5, LastStableOffset: 5, LogStartOffset: 0})
	}
}

// TestFetchOfAMovedPartition: a fetch naming a partition this broker does
// not lead (moved, or moving) beside one it leads with nothing new is
// answered at once, not after the long poll of the other (as Kafka answers
// a fetch with a partition in error), and the refused partition carries
// KIP-951's CurrentLeader with the broker's endpoint, so a consumer follows
// the move without a metadata refresh.
func TestFetchOfAMovedPartition(t *testing.T) {
	system := actorsys.NewSystem()
	defer system.Shutdown()
	ref, err := system.Spawn("idle", func() actor.Actor { return idlePartition{} })
	if err != nil {
		t.Fatal(err)
	}
	v := &routing.View{
		Self:    1,
		Brokers: []routing.Broker{{ID: 1, Host: "h1", Port: 9001, Alive: true}, {ID: 2, Host: "h2", Port: 9002, Alive: true}},
		Topics: map[string]*routing.Topic{"t": {Name: "t", ID: [16]byte{7}, Partitions: []routing.Partition{
			{Leader: 1, LeaderEpoch: 3}, // led here, idle
			{Leader: 2, LeaderEpoch: 7}, // moved to broker 2
			{Leader: -1, LeaderEpoch: 5, HeldFrom: &routing.Partition{Leader: 1, LeaderEpoch: 4}}, // moving away from here
		}}},
		Local: map[routing.TP]actorsys.Ref{{Topic: "t", Partition: 0}: ref},
	}
	v.TopicIDs = map[[16]byte]*routing.Topic{{7}: v.Topics["t"]}
	store := &routing.Store{}
	store.Publish(v)
	srv := NewServer(Config{}, system, store, actorsys.Ref{})
	for _, version := range []int16{12, 16} {
		req := kmsg.NewPtrFetchRequest()
		req.Version = version
		req.MaxWaitMillis = 60_000 // far longer than the test's patience
		req.MinBytes = 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "t", [16]byte{7}
		for p := int32(0); p < 3; p++ {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = p, 5, -1, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		pending := handleFetch(&Request{Body: req, View: v, Server: srv})
		got := make(chan kmsg.Response, 1)
		go func() { got <- pending() }()
		var resp *kmsg.FetchResponse
		select {
		case r := <-got:
			resp = r.(*fetchResponse).FetchResponse
		case <-time.After(10 * time.Second):
			t.Fatalf("v%d: a fetch with a moved partition waited for the long poll", version)
		}
		ps := resp.Topics[0].Partitions
		if ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.NotLeaderForPartition.Code || ps[2].ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("v%d: errors %d %d %d", version, ps[0].ErrorCode, ps[1].ErrorCode, ps[2].ErrorCode)
		}
		if l := ps[1].CurrentLeader; l.LeaderID != 2 || l.LeaderEpoch != 7 {
			t.Errorf("v%d: moved partition's hint %d@%d, want 2@7", version, l.LeaderID, l.LeaderEpoch)
		}
		if l := ps[2].CurrentLeader; l.LeaderID != 1 || l.LeaderEpoch != 4 {
			t.Errorf("v%d: moving partition's hint %d@%d, want this broker at the epoch before the move, 1@4", version, l.LeaderID, l.LeaderEpoch)
		}
		wantBrokers := 0
		if version >= 16 {
			wantBrokers = 2
		}
		if len(resp.Brokers) != wantBrokers {
			t.Errorf("v%d: %d broker endpoints, want %d: %+v", version, len(resp.Brokers), wantBrokers, resp.Brokers)
		}
		if d, ok := srv.SinceRefusal(); !ok || d > 10*time.Second {
			t.Errorf("v%d: refusal not recorded (%v %v)", version, d, ok)
		}
	}
}
