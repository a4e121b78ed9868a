package supervisor

import (
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/assignment"
)

// heldLeader is the leadership a held partition's move started from.
type heldLeader struct {
	topicID string
	leader  int32
	epoch   int32
}

// trackHeld carries, for every partition next holds leaderless (a two-phase
// move waiting for its release), the leadership it was held from: prev's
// leader and epoch when prev named one for the same topic incarnation, else
// what before carried (a hold that spans several files). Partitions that
// next does not hold are dropped. Metadata answers a held partition with it
// (metadataTopic), as a broker one file behind would, so clients keep
// following the old leader's hints instead of seeing LEADER_NOT_AVAILABLE.
func trackHeld(prev, next *assignment.Assignment, before map[routing.TP]heldLeader) map[routing.TP]heldLeader {
	out := map[routing.TP]heldLeader{}
	if next == nil {
		return out
	}
	for name, t := range next.Topics {
		var pt []assignment.Partition
		if prev != nil {
			if p, ok := prev.Topics[name]; ok && p.ID == t.ID {
				pt = p.Partitions
			}
		}
		for i, p := range t.Partitions {
			if p.Leader != assignment.NoLeader {
				continue
			}
			tp := routing.TP{Topic: name, Partition: int32(i)}
			switch {
			case i < len(pt) && pt[i].Leader >= 0:
				out[tp] = heldLeader{topicID: t.ID, leader: pt[i].Leader, epoch: pt[i].LeaderEpoch}
			case i < len(pt):
				if h, ok := before[tp]; ok && h.topicID == t.ID {
					out[tp] = h
				}
			}
		}
	}
	return out
}
