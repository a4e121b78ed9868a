package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// DeleteTopics (key 20): v1-6, by name or topic id, through the supervisor.
// The partitions deleted count against the client's
// controller_mutation_rate (KIP-599; THROTTLING_QUOTA_EXCEEDED from v5).
func init() {
	serve(API{Key: kmsg.DeleteTopics.Int16(), MinVersion: 1, MaxVersion: 6, Handle: handleDeleteTopics, ErrorResponse: deleteTopicsError})
}

// handleDeleteTopics deletes topics by name (v1-5) or by name or id (v6).
// With deletion disabled (delete.topic.enable=false) every topic is
// refused, as Kafka's controller refuses the request: INVALID_REQUEST
// before v3, TOPIC_DELETION_DISABLED from v3.
func handleDeleteTopics(r *Request) Pending {
	req := r.Body.(*kmsg.DeleteTopicsRequest)
	if r.Server.DeleteTopicDisabled {
		code := kerr.TopicDeletionDisabled.Code
		if req.Version < 3 {
			code = kerr.InvalidRequest.Code
		}
		resp := deleteTopicsError(req, code).(*kmsg.DeleteTopicsResponse)
		for i := range resp.Topics {
			resp.Topics[i].ErrorMessage = kmsg.StringPtr("Topic deletion is disabled.")
		}
		return func() kmsg.Response { return resp }
	}
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	var names []string
	var ids [][16]byte
	if req.Version < 6 {
		names = req.TopicNames
	} else {
		for _, t := range req.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			} else if it, ok := r.View.InternalByID(t.TopicID); ok {
				name = it.Name
			}
			names = append(names, name)
			ids = append(ids, t.TopicID)
		}
	}
	// Internal topics are refused here; the rest go to the supervisor.
	sent := splitInternal(len(names), func(i int) string { return names[i] })
	mq := r.mutationQuota(5)
	msg := &messages.DeleteTopics{Quota: admitter(mq)}
	for _, i := range sent {
		msg.Names = append(msg.Names, names[i])
		if ids != nil {
			msg.IDs = append(msg.IDs, ids[i])
		}
	}
	results := make(chan []messages.TopicResult, 1)
	if len(sent) == 0 {
		results <- nil
	} else {
		msg.Reply = func(rs []messages.TopicResult) { results <- rs }
		r.Server.Supervisor().Send(msg)
	}
	return func() kmsg.Response {
		all := mergeInternal(len(names), sent, <-results, func(i int) messages.TopicResult {
			res := internalRefusal(names[i], "delete")
			if ids != nil {
				res.ID = ids[i]
			}
			return res
		})
		for _, res := range all {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			if res.Name != "" {
				name := res.Name
				rt.Topic = &name
			}
			rt.TopicID, rt.ErrorCode = res.ID, res.ErrorCode
			rt.ErrorMessage = optString(res.ErrorMessage)
			resp.Topics = append(resp.Topics, rt)
		}
		resp.ThrottleMillis = r.mutationThrottle(mq)
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
