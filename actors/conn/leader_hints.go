package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

// leaderHint is what a broker answering NOT_LEADER_OR_FOLLOWER tells the
// client about the partition (KIP-951's CurrentLeader), saving it a
// metadata round trip:
//   - the leader the view names, when that is another broker;
//   - this broker at the epoch the client already has, when the partition
//     is leaderless in a two-phase move (the view names no one, at the epoch
//     the move will grant: this broker's is the one before it) or when this
//     broker is named but cannot serve yet (fenced, opening). A client takes
//     a hint that is not newer than what it knows as "retry here after your
//     backoff", where a metadata refresh would tell it nothing new (Metadata
//     names the leader a held partition moves from, metadataTopic) and
//     franz-go rate-limits refreshes to one per MetadataMinAge, 5 s by
//     default. The move's next answer then names the new leader at the newer
//     epoch, and the client goes there at once.
//
// ok is false when there is nothing to tell (unknown partition, no epoch).
func leaderHint(v *routing.View, topic string, partition int32) (leader, epoch int32, ok bool) {
	t, found := v.Topics[topic]
	if !found || partition < 0 || int(partition) >= len(t.Partitions) {
		return 0, 0, false
	}
	p := t.Partitions[partition]
	switch {
	case p.Leader >= 0 && p.Leader != v.Self:
		if _, known := v.Broker(p.Leader); !known {
			return 0, 0, false
		}
		return p.Leader, p.LeaderEpoch, true
	case p.Leader < 0:
		return v.Self, p.LeaderEpoch - 1, p.LeaderEpoch >= 1
	default:
		return v.Self, p.LeaderEpoch, true
	}
}

// hintProduce fills KIP-951's CurrentLeader of every partition answered
// NOT_LEADER_OR_FOLLOWER and the endpoints of the brokers it names (Produce
// v10+), from the newest view: the partition actor may have refused the
// batch because a file newer than the request's view took it away.
func hintProduce(v *routing.View, resp *kmsg.ProduceResponse) (refused bool) {
	var named map[int32]bool // made on the first hint: most answers refuse nothing
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			refused = true
			if resp.Version < 10 {
				continue
			}
			if id, epoch, ok := leaderHint(v, rt.Topic, rp.Partition); ok {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = id, epoch
				named = nameBroker(named, id)
			}
		}
	}
	eachNamed(v, named, func(b routing.Broker) {
		rb := kmsg.NewProduceResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = b.ID, b.Host, b.Port, b.Rack
		resp.Brokers = append(resp.Brokers, rb)
	})
	return refused
}

// hintFetch is hintProduce for Fetch (v12+ CurrentLeader, v16+ endpoints):
// every partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
// gets the hint, so a consumer follows a move without a metadata refresh
// (franz-go moves a fetch cursor on a hint only when the response names the
// broker's endpoint).
func hintFetch(v *routing.View, resp *kmsg.FetchResponse) (refused bool) {
	var named map[int32]bool // made on the first hint: most answers refuse nothing
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		name := rt.Topic
		if t, ok := v.TopicIDs[rt.TopicID]; ok && resp.Version >= 13 {
			name = t.Name
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code && rp.ErrorCode != kerr.FencedLeaderEpoch.Code {
				continue
			}
			refused = refused || rp.ErrorCode == kerr.NotLeaderForPartition.Code
			if resp.Version < 12 {
				continue
			}
			if id, epoch, ok := leaderHint(v, name, rp.Partition); ok {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = id, epoch
				named = nameBroker(named, id)
			}
		}
	}
	if resp.Version >= 16 {
		eachNamed(v, named, func(b routing.Broker) {
			rb := kmsg.NewFetchResponseBroker()
			rb.NodeID, rb.Host, rb.Port, rb.Rack = b.ID, b.Host, b.Port, b.Rack
			resp.Brokers = append(resp.Brokers, rb)
		})
	}
	return refused
}

// nameBroker adds id to named, making it if need be.
func nameBroker(named map[int32]bool, id int32) map[int32]bool {
	if named == nil {
		named = map[int32]bool{}
	}
	named[id] = true
	return named
}

// eachNamed calls fn for every broker of v in named, in id order, once.
func eachNamed(v *routing.View, named map[int32]bool, fn func(routing.Broker)) {
	if len(named) == 0 {
		return
	}
	for _, b := range v.Brokers {
		if named[b.ID] {
			fn(b)
		}
	}
}
