package conn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

func hintView() *routing.View {
	return &routing.View{
		Self: 1,
		Brokers: []routing.Broker{
			{ID: 0, Host: "h0", Port: 9000}, {ID: 1, Host: "h1", Port: 9001}, {ID: 2, Host: "h2", Port: 9002},
		},
		Topics: map[string]*routing.Topic{"t": {Name: "t", Partitions: []routing.Partition{
			{Leader: 2, LeaderEpoch: 7},  // led elsewhere
			{Leader: -1, LeaderEpoch: 4}, // leaderless: a move to epoch 4 in progress
			{Leader: 1, LeaderEpoch: 3},  // named here, not serving yet
			{Leader: -1, LeaderEpoch: 0}, // leaderless with no earlier epoch
			{Leader: 5, LeaderEpoch: 2},  // a leader this view has no endpoint for
		}}},
	}
}

func TestLeaderHint(t *testing.T) {
	v := hintView()
	for _, tc := range []struct {
		topic         string
		partition     int32
		leader, epoch int32
		ok            bool
	}{
		{"t", 0, 2, 7, true},  // the leader the view names
		{"t", 1, 1, 3, true},  // this broker at the epoch before the move's: retry here
		{"t", 2, 1, 3, true},  // this broker at the epoch the client has: retry here
		{"t", 3, 0, 0, false}, // no earlier epoch to name
		{"t", 4, 0, 0, false}, // no endpoint to send the client to
		{"t", 5, 0, 0, false}, // no such partition
		{"u", 0, 0, 0, false}, // no such topic
	} {
		leader, epoch, ok := leaderHint(v, tc.topic, tc.partition)
		if ok != tc.ok || ok && (leader != tc.leader || epoch != tc.epoch) {
			t.Errorf("%s-%d: hint %d@%d %v, want %d@%d %v", tc.topic, tc.partition, leader, epoch, ok, tc.leader, tc.epoch, tc.ok)
		}
	}
}

func TestHintProduce(t *testing.T) {
	v := hintView()
	resp := func(version int16) *kmsg.ProduceResponse {
		r := kmsg.NewPtrProduceResponse()
		r.Version = version
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = "t"
		for p, code := range []int16{kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code, 0, kerr.NotLeaderForPartition.Code} {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = int32(p), code
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
		return r
	}
	r := resp(11)
	hintProduce(v, r)
	ps := r.Topics[0].Partitions
	if got := ps[0].CurrentLeader; got.LeaderID != 2 || got.LeaderEpoch != 7 {
		t.Errorf("partition led elsewhere: hint %+v, want 2@7", got)
	}
	if got := ps[1].CurrentLeader; got.LeaderID != 1 || got.LeaderEpoch != 3 {
		t.Errorf("leaderless partition: hint %+v, want 1@3", got)
	}
	if got := ps[2].CurrentLeader; got.LeaderID != -1 {
		t.Errorf("acknowledged partition: hint %+v, want none", got)
	}
	if got := ps[3].CurrentLeader; got.LeaderID != -1 {
		t.Errorf("leaderless partition without an earlier epoch: hint %+v, want none", got)
	}
	if len(r.Brokers) != 2 || r.Brokers[0].NodeID != 1 || r.Brokers[0].Host != "h1" || r.Brokers[0].Port != 9001 || r.Brokers[1].NodeID != 2 {
		t.Errorf("endpoints %+v, want brokers 1 and 2 once each", r.Brokers)
	}
	// The hints travel on the wire: a client decodes them.
	got := kmsg.NewPtrProduceResponse()
	got.Version = 11
	if err := got.ReadFrom(r.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if got.Topics[0].Partitions[0].CurrentLeader.LeaderID != 2 || len(got.Brokers) != 2 {
		t.Errorf("decoded response lost the hints: %+v", got)
	}
	old := resp(9)
	hintProduce(v, old)
	if old.Topics[0].Partitions[0].CurrentLeader.LeaderID != -1 || len(old.Brokers) != 0 {
		t.Error("Produce v9 has no CurrentLeader or NodeEndpoints, but got hints")
	}
}
