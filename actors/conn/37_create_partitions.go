package conn

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// CreatePartitions (key 37): v0-3, growing only, through the supervisor; a
// manual assignment pins each new partition's first replica as its leader.
// While every alive broker is cordoned (KIP-1066) a topic without one is
// INVALID_REPLICATION_FACTOR. The partitions added count against the
// client's controller_mutation_rate (KIP-599; THROTTLING_QUOTA_EXCEEDED
// from v3).
func init() {
	serve(API{Key: kmsg.CreatePartitions.Int16(), MinVersion: 0, MaxVersion: 3, Handle: handleCreatePartitions, ErrorResponse: createPartitionsError})
}

// handleCreatePartitions grows topics.
func handleCreatePartitions(r *Request) Pending {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	// Internal topics are refused here; the rest go to the supervisor.
	sent := splitInternal(len(req.Topics), func(i int) string { return req.Topics[i].Topic })
	cordonedMsg, allCordoned := everyBrokerCordoned(r.Server, r.View)
	if allCordoned {
		sent = slices.DeleteFunc(sent, func(i int) bool { return len(req.Topics[i].Assignment) == 0 })
	}
	mq := r.mutationQuota(3)
	msg := &messages.CreatePartitions{ValidateOnly: req.ValidateOnly, Quota: admitter(mq)}
	for _, i := range sent {
		t := req.Topics[i]
		pc := messages.PartitionCount{Topic: t.Topic, Count: t.Count, ManualAssignment: len(t.Assignment) > 0}
		for _, a := range t.Assignment {
			pc.Assignment = append(pc.Assignment, a.Replicas)
		}
		msg.Topics = append(msg.Topics, pc)
	}
	results := make(chan []messages.TopicResult, 1)
	if len(sent) == 0 {
		results <- nil
	} else {
		msg.Reply = func(rs []messages.TopicResult) { results <- rs }
		r.Server.Supervisor().Send(msg)
	}
	return func() kmsg.Response {
		all := mergeInternal(len(req.Topics), sent, <-results, func(i int) messages.TopicResult {
			if t := req.Topics[i].Topic; !routing.IsInternal(t) {
				return messages.TopicResult{Name: t, ErrorCode: kerr.InvalidReplicationFactor.Code, ErrorMessage: cordonedMsg}
			}
			return internalRefusal(req.Topics[i].Topic, "add partitions to")
		})
		for _, res := range all {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = res.Name, res.ErrorCode
			rt.ErrorMessage = optString(res.ErrorMessage)
			resp.Topics = append(resp.Topics, rt)
		}
		resp.ThrottleMillis = r.mutationThrottle(mq)
		return resp
	}
}

// createPartitionsError answers every topic of a CreatePartitions with code.
func createPartitionsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
