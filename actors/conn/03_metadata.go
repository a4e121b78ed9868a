package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/topicname"
)

// Metadata (key 3): v0-13 (v13's top-level ErrorCode, KIP-1102, is
// always NONE: a kaas broker never asks a client to rebootstrap from its
// Metadata answer), answered from the routing view; a partition held
// by a two-phase move is shown at the leader it moves from (metadataTopic).
// The internal topics (routing.InternalTopics) are listed with IsInternal.
func init() {
	serve(API{Key: kmsg.Metadata.Int16(), MinVersion: 0, MaxVersion: 13, Handle: handleMetadata, ErrorResponse: metadataError})
}

// handleMetadata answers from the routing view. Unknown topics are created
// first when auto-creation is on and the client allows it; the answer then
// describes the new topic.
func handleMetadata(r *Request) Pending {
	req := r.Body.(*kmsg.MetadataRequest)
	v := r.View
	var missing []string
	if r.Server.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation) {
		for _, t := range req.Topics {
			if t.Topic == nil {
				continue
			}
			if _, ok := v.Topics[*t.Topic]; !ok && !routing.IsInternal(*t.Topic) && topicname.Validate(*t.Topic) == nil {
				missing = append(missing, *t.Topic)
			}
		}
	}
	if len(missing) == 0 {
		return Ready(metadataResponse(req, v))
	}
	specs := make([]messages.TopicSpec, len(missing))
	for i, n := range missing {
		specs[i] = messages.TopicSpec{Name: n, Partitions: -1, ReplicationFactor: -1}
	}
	done := make(chan struct{})
	r.Server.Supervisor().Send(&messages.CreateTopics{Topics: specs, Reply: func([]messages.TopicResult) { close(done) }})
	return func() kmsg.Response {
		<-done
		return metadataResponse(req, r.CurrentView())
	}
}

func metadataResponse(req *kmsg.MetadataRequest, v *routing.View) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, b := range v.Brokers {
		if !b.Alive {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port, mb.Rack = b.ID, b.Host, b.Port, b.Rack
		resp.Brokers = append(resp.Brokers, mb)
	}
	cid := v.ClusterID
	resp.ClusterID = &cid
	resp.ControllerID = v.ControllerID
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, name := range v.TopicNames() {
			if !routing.IsInternal(name) {
				resp.Topics = append(resp.Topics, metadataTopic(v, v.Topics[name]))
			}
		}
		for _, it := range routing.InternalTopics {
			t, _ := v.Internal(it.Name)
			resp.Topics = append(resp.Topics, metadataTopic(v, t))
		}
		return resp
	}
	for _, rt := range req.Topics {
		var t *routing.Topic
		var ok bool
		if rt.Topic != nil {
			t, ok = v.AnyTopic(*rt.Topic)
		} else {
			t, ok = v.AnyTopicByID(rt.TopicID)
		}
		if ok {
			resp.Topics = append(resp.Topics, metadataTopic(v, t))
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
		switch {
		case rt.Topic == nil:
			mt.ErrorCode = kerr.UnknownTopicID.Code
		case topicname.Validate(*rt.Topic) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
		default:
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

func metadataTopic(v *routing.View, t *routing.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic, mt.TopicID = &name, t.ID
	mt.IsInternal = routing.IsInternal(name)
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, len(t.Partitions))
	for i, p := range t.Partitions {
		if p.Leader < 0 && p.HeldFrom != nil {
			// A two-phase move holds it: answer as a broker one file
			// behind would, with the leader and epoch it is moving from
			// (while that broker is not dead). Clients keep producing
			// there and follow its NOT_LEADER hints (retry here, then the
			// new leader once granted); a LEADER_NOT_AVAILABLE would make
			// franz-go, at its defaults, wait 5 s (its metadata min age)
			// before looking again. Kafka's own controlled shutdown never
			// shows a partition leaderless either.
			if b, ok := v.Broker(p.HeldFrom.Leader); ok && b.Alive {
				p = *p.HeldFrom
			}
		}
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = int32(i), p.Leader, p.LeaderEpoch
		if b, ok := v.Broker(p.Leader); ok && b.Alive && p.Leader >= 0 {
			// One shared copy: the leader is the only replica and always in sync.
			mp.Replicas, mp.ISR = []int32{p.Leader}, []int32{p.Leader}
		} else {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			mp.Leader = -1
			mp.Replicas, mp.ISR = []int32{}, []int32{}
		}
		mp.OfflineReplicas = []int32{}
		mt.Partitions[i] = mp
	}
	return mt
}

// metadataError answers every topic of a Metadata request with code.
func metadataError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
