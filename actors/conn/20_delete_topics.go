package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// DeleteTopics (key 20): v0-6, by name or topic id, through the supervisor.
func init() {
	serve(API{Key: kmsg.DeleteTopics.Int16(), MinVersion: 0, MaxVersion: 6, Handle: handleDeleteTopics, ErrorResponse: deleteTopicsError})
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
			rt.ErrorMessage = optString(res.ErrorMessage)
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

// deleteTopicsError answers every topic of a DeleteTopics with code.
func deleteTopicsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	for _, n := range req.TopicNames {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr(n), code
		resp.Topics = append(resp.Topics, rt)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
