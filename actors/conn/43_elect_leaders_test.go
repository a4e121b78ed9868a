package conn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/routing"
)

func TestElectionOutcome(t *testing.T) {
	v := &routing.View{
		Brokers: []routing.Broker{{ID: 1, Alive: true}, {ID: 2, Fenced: true}},
		Topics: map[string]*routing.Topic{"t": {Name: "t", Partitions: []routing.Partition{
			{Leader: 1}, {Leader: -1}, {Leader: 2}, {Leader: 3},
		}}},
	}
	for p, want := range []int16{
		kerr.ElectionNotNeeded.Code,           // live leader
		kerr.EligibleLeadersNotAvailable.Code, // held by a move
		kerr.EligibleLeadersNotAvailable.Code, // leader dead
		kerr.EligibleLeadersNotAvailable.Code, // leader unknown
		kerr.UnknownTopicOrPartition.Code,
	} {
		if got := electionOutcome(v, "t", int32(p)); got != want {
			t.Errorf("partition %d: %d, want %d", p, got, want)
		}
	}
	if got := electionOutcome(v, "nope", 0); got != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: %d", got)
	}
}
