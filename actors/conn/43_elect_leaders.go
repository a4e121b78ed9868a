package conn

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

// ElectLeaders (key 43): v0-2, from the routing view. Each partition has one
// copy and the controller alone places leaders, so no election ever runs:
//
//   - a partition led by a live broker: ELECTION_NOT_NEEDED, as Kafka answers
//     when the preferred replica already leads;
//   - a partition without a live leader (held leaderless by a move, or its
//     broker dead and not yet replaced): ELIGIBLE_LEADERS_NOT_AVAILABLE,
//     retriable; the controller assigns it;
//   - an unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.
//
// Nil topics ask for every partition; as in Kafka, that answer leaves out
// the partitions whose election is not needed.
func init() {
	serve(API{Key: kmsg.ElectLeaders.Int16(), MinVersion: 0, MaxVersion: 2, Handle: handleElectLeaders, ErrorResponse: electLeadersError})
}

func handleElectLeaders(r *Request) Pending {
	req := r.Body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.Version >= 1 && req.ElectionType != 0 && req.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return Ready(resp)
	}
	v := r.View
	add := func(topic string, partition int32, code int16) {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != topic {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition, rp.ErrorCode = partition, code
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	if req.Topics == nil {
		names := make([]string, 0, len(v.Topics))
		for name := range v.Topics {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			for p := range v.Topics[name].Partitions {
				if code := electionOutcome(v, name, int32(p)); code != kerr.ElectionNotNeeded.Code {
					add(name, int32(p), code)
				}
			}
		}
		return Ready(resp)
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			add(t.Topic, p, electionOutcome(v, t.Topic, p))
		}
	}
	return Ready(resp)
}

// electionOutcome is the error code an election of the partition answers.
func electionOutcome(v *routing.View, topic string, partition int32) int16 {
	t, ok := v.Topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition.Code
	}
	leader := t.Partitions[partition].Leader
	i := sort.Search(len(v.Brokers), func(i int) bool { return v.Brokers[i].ID >= leader })
	if leader < 0 || i == len(v.Brokers) || v.Brokers[i].ID != leader || !v.Brokers[i].Alive {
		return kerr.EligibleLeadersNotAvailable.Code
	}
	return kerr.ElectionNotNeeded.Code
}

// electLeadersError answers every partition of an ElectLeaders with code.
func electLeadersError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
