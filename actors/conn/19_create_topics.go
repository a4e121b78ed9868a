package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// CreateTopics (key 19): v2-7, through the supervisor (the local registry,
// or KafkaTopic objects in cluster mode). A manual replica assignment pins
// each partition's first replica as its leader. While every alive broker is
// cordoned (KIP-1066) a topic without one is INVALID_REPLICATION_FACTOR.
// The partitions created count against the client's
// controller_mutation_rate (KIP-599; THROTTLING_QUOTA_EXCEEDED from v6).
func init() {
	serve(API{Key: kmsg.CreateTopics.Int16(), MinVersion: 2, MaxVersion: 7, Handle: handleCreateTopics, ErrorResponse: createTopicsError})
}

// handleCreateTopics validates and creates topics through the supervisor
// (the local registry, or KafkaTopic objects in cluster mode).
func handleCreateTopics(r *Request) Pending {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	// Internal topics exist already (they are views of kaas's own state):
	// answered here, the rest go to the supervisor.
	var specs []messages.TopicSpec
	var sent []int // request index of each spec
	refused := map[int]messages.TopicResult{}
	cordonedMsg, allCordoned := everyBrokerCordoned(r.Server, r.View)
	for i, t := range req.Topics {
		if routing.IsInternal(t.Topic) {
			refused[i] = messages.TopicResult{Name: t.Topic, ErrorCode: kerr.TopicAlreadyExists.Code,
				ErrorMessage: "Topic '" + t.Topic + "' already exists (an internal topic)."}
			continue
		}
		cfg := map[string]string{}
		for _, c := range t.Configs {
			if c.Value != nil {
				cfg[c.Name] = *c.Value
			}
		}
		spec := messages.TopicSpec{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor,
			Config: cfg, ManualAssignment: len(t.ReplicaAssignment) > 0}
		if spec.ManualAssignment {
			byPartition := make(map[int32][]int32, len(t.ReplicaAssignment))
			for _, a := range t.ReplicaAssignment {
				byPartition[a.Partition] = a.Replicas
			}
			for p := range int32(len(byPartition)) {
				rs, ok := byPartition[p]
				if !ok {
					spec.Assignment = nil
					break
				}
				spec.Assignment = append(spec.Assignment, rs)
			}
			if len(spec.Assignment) != len(t.ReplicaAssignment) {
				refused[i] = messages.TopicResult{Name: t.Topic, ErrorCode: kerr.InvalidReplicaAssignment.Code,
					ErrorMessage: "partitions should be a consecutive 0-based integer sequence"}
				continue
			}
		}
		if allCordoned && !spec.ManualAssignment {
			refused[i] = messages.TopicResult{Name: t.Topic, ErrorCode: kerr.InvalidReplicationFactor.Code, ErrorMessage: cordonedMsg}
			continue
		}
		specs = append(specs, spec)
		sent = append(sent, i)
	}
	results := make(chan []messages.TopicResult, 1)
	mq := r.mutationQuota(6)
	if len(specs) == 0 {
		results <- nil
	} else {
		r.Server.Supervisor().Send(&messages.CreateTopics{Topics: specs, ValidateOnly: req.ValidateOnly, Quota: admitter(mq),
			Reply: func(rs []messages.TopicResult) { results <- rs }})
	}
	return func() kmsg.Response {
		byIndex := make(map[int]messages.TopicResult, len(sent))
		for k, res := range <-results {
			if k < len(sent) {
				byIndex[sent[k]] = res
			}
		}
		for i := range req.Topics {
			res, ok := byIndex[i]
			if !ok {
				res = refused[i]
			}
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = res.Name, res.ID, res.ErrorCode
			rt.ErrorMessage = optString(res.ErrorMessage)
			if res.ErrorCode == 0 {
				rt.NumPartitions = res.Partitions
				rt.ReplicationFactor = 1
				if req.Topics[i].ReplicationFactor > 0 {
					rt.ReplicationFactor = req.Topics[i].ReplicationFactor
				}
				if ra := req.Topics[i].ReplicaAssignment; len(ra) > 0 {
					rt.ReplicationFactor = int16(len(ra[0].Replicas))
				}
				for _, name := range topicconfig.Names() {
					c := kmsg.NewCreateTopicsResponseTopicConfig()
					c.Name = name
					val := topicconfig.Value(res.Config, name)
					c.Value = &val
					c.Source = 5 // DEFAULT_CONFIG
					if _, ok := res.Config[name]; ok {
						c.Source = 1 // DYNAMIC_TOPIC_CONFIG
					}
					rt.Configs = append(rt.Configs, c)
				}
			} else {
				rt.NumPartitions, rt.ReplicationFactor = -1, -1
			}
			resp.Topics = append(resp.Topics, rt)
		}
		resp.ThrottleMillis = r.mutationThrottle(mq)
		return resp
	}
}

// createTopicsError answers every topic of a CreateTopics with code.
func createTopicsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
