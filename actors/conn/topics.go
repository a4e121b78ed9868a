package conn

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// handleCreateTopics validates and creates topics through the supervisor
// (the local registry, or KafkaTopic objects in cluster mode).
func handleCreateTopics(r *Request) Pending {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	specs := make([]messages.TopicSpec, len(req.Topics))
	for i, t := range req.Topics {
		cfg := map[string]string{}
		for _, c := range t.Configs {
			if c.Value != nil {
				cfg[c.Name] = *c.Value
			}
		}
		specs[i] = messages.TopicSpec{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor,
			Config: cfg, ManualAssignment: len(t.ReplicaAssignment) > 0}
	}
	results := make(chan []messages.TopicResult, 1)
	r.Server.Supervisor().Send(&messages.CreateTopics{Topics: specs, ValidateOnly: req.ValidateOnly,
		Reply: func(rs []messages.TopicResult) { results <- rs }})
	return func() kmsg.Response {
		for i, res := range <-results {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = res.Name, res.ID, res.ErrorCode
			if res.ErrorMessage != "" {
				msg := res.ErrorMessage
				rt.ErrorMessage = &msg
			}
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

// handleDeleteTopics deletes topics by name (v0-5) or by name or id (v6).
func handleDeleteTopics(r *Request) Pending {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	msg := &messages.DeleteTopics{}
	if req.Version < 6 {
		msg.Names = append(msg.Names, req.TopicNames...)
	} else {
		for _, t := range req.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			msg.Names = append(msg.Names, name)
			msg.IDs = append(msg.IDs, t.TopicID)
		}
	}
	results := make(chan []messages.TopicResult, 1)
	msg.Reply = func(rs []messages.TopicResult) { results <- rs }
	r.Server.Supervisor().Send(msg)
	return func() kmsg.Response {
		for _, res := range <-results {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			if res.Name != "" {
				name := res.Name
				rt.Topic = &name
			}
			rt.TopicID, rt.ErrorCode = res.ID, res.ErrorCode
			if res.ErrorMessage != "" {
				m := res.ErrorMessage
				rt.ErrorMessage = &m
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

// handleCreatePartitions grows topics.
func handleCreatePartitions(r *Request) Pending {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	msg := &messages.CreatePartitions{ValidateOnly: req.ValidateOnly}
	for _, t := range req.Topics {
		msg.Topics = append(msg.Topics, messages.PartitionCount{Topic: t.Topic, Count: t.Count, ManualAssignment: len(t.Assignment) > 0})
	}
	results := make(chan []messages.TopicResult, 1)
	msg.Reply = func(rs []messages.TopicResult) { results <- rs }
	r.Server.Supervisor().Send(msg)
	return func() kmsg.Response {
		for _, res := range <-results {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = res.Name, res.ErrorCode
			if res.ErrorMessage != "" {
				m := res.ErrorMessage
				rt.ErrorMessage = &m
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

// handleDescribeCluster lists brokers; v2 can include fenced (draining or
// dead) brokers.
func handleDescribeCluster(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	v := r.View
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		m := "kaas brokers serve broker endpoints only"
		resp.ErrorMessage = &m
		return Ready(resp)
	}
	resp.EndpointType = 1
	resp.ClusterID = v.ClusterID
	resp.ControllerID = v.ControllerID
	for _, b := range v.Brokers {
		if b.Fenced && !req.IncludeFencedBrokers {
			continue
		}
		if !b.Alive && !b.Fenced {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack, rb.IsFenced = b.ID, b.Host, b.Port, b.Rack, b.Fenced
		resp.Brokers = append(resp.Brokers, rb)
	}
	sort.Slice(resp.Brokers, func(i, j int) bool { return resp.Brokers[i].NodeID < resp.Brokers[j].NodeID })
	return Ready(resp)
}
