package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// CreateTopics (key 19): v0-7, through the supervisor (the local registry,
// or KafkaTopic objects in cluster mode).
func init() {
	serve(API{Key: kmsg.CreateTopics.Int16(), MinVersion: 0, MaxVersion: 7, Handle: handleCreateTopics, ErrorResponse: createTopicsError})
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
	for i, t := range req.Topics {
		if routing.IsInternal(t.Topic) {
			continue
		}
		cfg := map[string]string{}
		for _, c := range t.Configs {
			if c.Value != nil {
				cfg[c.Name] = *c.Value
			}
		}
		specs = append(specs, messages.TopicSpec{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor,
			Config: cfg, ManualAssignment: len(t.ReplicaAssignment) > 0})
		sent = append(sent, i)
	}
	results := make(chan []messages.TopicResult, 1)
	if len(specs) == 0 {
		results <- nil
	} else {
		r.Server.Supervisor().Send(&messages.CreateTopics{Topics: specs, ValidateOnly: req.ValidateOnly,
			Reply: func(rs []messages.TopicResult) { results <- rs }})
	}
	return func() kmsg.Response {
		byIndex := make(map[int]messages.TopicResult, len(sent))
		for k, res := range <-results {
			if k < len(sent) {
				byIndex[sent[k]] = res
			}
		}
		for i, t := range req.Topics {
			res, ok := byIndex[i]
			if !ok {
				res = messages.TopicResult{Name: t.Topic, ErrorCode: kerr.TopicAlreadyExists.Code,
					ErrorMessage: "Topic '" + t.Topic + "' already exists (an internal topic)."}
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
