package group

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/actors/streams"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// StreamsGroupHeartbeat (key 88): v0, the KIP-1071 streams group's
// heartbeat, to the group's actor.
func init() {
	serve(groupAPI{key: kmsg.StreamsGroupHeartbeat.Int16(), min: 0, max: 0, handle: (*Coordinator).handleStreamsGroupHeartbeat})
}

// handleStreamsGroupHeartbeat refuses what Kafka's broker refuses before its
// coordinator sees the heartbeat (an empty group id; a topology naming an
// internal topic or an invalid topic name), else dispatches to the group
// actor. The internal topics the group's topology lacks (changelog and
// repartition topics) are then created on the member's behalf, as Kafka's
// broker creates them, without waiting: the member is told
// MISSING_INTERNAL_TOPICS until they exist.
// The heartbeat itself: streams.go, (*Group).StreamsHeartbeat.
func (c *Coordinator) handleStreamsGroupHeartbeat(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.StreamsGroupHeartbeatRequest)
	if req.Group == "" {
		return conn.Ready(streamsHeartbeatError(kerr.InvalidRequest.Code, "GroupId can't be empty."))
	}
	if req.Topology != nil {
		var internal, invalid []string
		for _, t := range streams.TopologyTopics(req.Topology) {
			switch {
			case routing.IsInternal(t):
				internal = append(internal, t)
			case topicconfig.ValidTopicName(t) != nil:
				invalid = append(invalid, t)
			}
		}
		switch {
		case len(internal) > 0:
			return conn.Ready(streamsHeartbeatError(kerr.StreamsInvalidTopology.Code,
				"Use of Kafka internal topics "+strings.Join(internal, ",")+" in a Kafka Streams topology is prohibited."))
		case len(invalid) > 0:
			return conn.Ready(streamsHeartbeatError(kerr.StreamsInvalidTopology.Code,
				"Topic names "+strings.Join(invalid, ",")+" are not valid topic names."))
		}
	}
	wait := c.call(r, req.Group, req)
	return func() kmsg.Response {
		rep := wait().(StreamsReply)
		if len(rep.Create) > 0 && rep.Response.ErrorCode == 0 {
			createInternalTopics(r, rep.Response, rep.Create)
		}
		return rep.Response
	}
}

// createInternalTopics asks the supervisor to create topics when the
// request's principal may create every one (CREATE on the cluster or on
// each topic); otherwise none is created and the MISSING_INTERNAL_TOPICS
// status says which it may not create, as Kafka answers.
func createInternalTopics(r *conn.Request, resp *kmsg.StreamsGroupHeartbeatResponse, topics []streams.InternalTopic) {
	var refused []string
	specs := make([]messages.TopicSpec, 0, len(topics))
	for _, t := range topics {
		if !r.MayCreateTopic(t.Name) {
			refused = append(refused, t.Name)
			continue
		}
		rf := t.ReplicationFactor
		if rf <= 0 {
			rf = -1
		}
		specs = append(specs, messages.TopicSpec{Name: t.Name, Partitions: t.Partitions, ReplicationFactor: rf, Config: t.Configs})
	}
	if len(refused) == 0 {
		r.Server.Supervisor().Send(&messages.CreateTopics{Topics: specs, Reply: func([]messages.TopicResult) {}})
		return
	}
	detail := "Unauthorized to CREATE on topics " + strings.Join(refused, ", ") + "."
	for i := range resp.Status {
		if s := &resp.Status[i]; s.StatusCode == streams.StatusMissingInternalTopics {
			s.StatusDetail += "; " + detail
			return
		}
	}
	s := kmsg.NewStreamsGroupHeartbeatResponseStatus()
	s.StatusCode, s.StatusDetail = streams.StatusMissingInternalTopics, detail
	resp.Status = append(resp.Status, s)
}
