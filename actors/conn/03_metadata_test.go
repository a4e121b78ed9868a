package conn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/routing"
)

// TestMetadataOfHeldPartitions: a partition a two-phase move holds is
// answered with the leadership it is moving from while that broker is
// registered and not dead; otherwise (or unknown) LEADER_NOT_AVAILABLE.
func TestMetadataOfHeldPartitions(t *testing.T) {
	v := &routing.View{
		Self:    1,
		Brokers: []routing.Broker{{ID: 0, Alive: true, Fenced: true}, {ID: 1, Alive: true}, {ID: 2}},
	}
	held := func(leader, epoch int32) *routing.Partition {
		return &routing.Partition{Leader: leader, LeaderEpoch: epoch}
	}
	topic := &routing.Topic{Name: "t", Partitions: []routing.Partition{
		{Leader: 1, LeaderEpoch: 5},
		{Leader: -1, LeaderEpoch: 4, HeldFrom: held(0, 3)}, // moving away from a draining broker
		{Leader: -1, LeaderEpoch: 4, HeldFrom: held(1, 2)}, // moving away from this one
		{Leader: -1, LeaderEpoch: 4, HeldFrom: held(2, 3)}, // its old leader is dead
		{Leader: -1, LeaderEpoch: 4},                       // held since before this broker started
		{Leader: 2, LeaderEpoch: 6},                        // led by a dead broker
	}}
	want := []struct {
		leader, epoch int32
		code          int16
	}{
		{1, 5, 0},
		{0, 3, 0},
		{1, 2, 0},
		{-1, 4, kerr.LeaderNotAvailable.Code},
		{-1, 4, kerr.LeaderNotAvailable.Code},
		{-1, 6, kerr.LeaderNotAvailable.Code},
	}
	mt := metadataTopic(v, topic)
	for i, mp := range mt.Partitions {
		w := want[i]
		if mp.Leader != w.leader || mp.LeaderEpoch != w.epoch || mp.ErrorCode != w.code {
			t.Errorf("partition %d: leader %d epoch %d error %d, want %d %d %d", i, mp.Leader, mp.LeaderEpoch, mp.ErrorCode, w.leader, w.epoch, w.code)
		}
		if w.code == 0 && (len(mp.Replicas) != 1 || mp.Replicas[0] != w.leader || len(mp.ISR) != 1 || mp.ISR[0] != w.leader) {
			t.Errorf("partition %d: replicas %v isr %v, want [%d]", i, mp.Replicas, mp.ISR, w.leader)
		}
	}
}
