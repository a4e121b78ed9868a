package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// Kafka's ConfigResource types and config sources (DescribeConfigs,
// AlterConfigs, IncrementalAlterConfigs).
const (
	resourceTopic  = 2
	resourceBroker = 4

	sourceDynamicTopic = 1
	sourceStaticBroker = 4
	sourceDefault      = 5
)

// alterResult is one resource's answer to AlterConfigs or
// IncrementalAlterConfigs.
type alterResult struct {
	code int16
	msg  string
}

// alterResources runs AlterConfigs or IncrementalAlterConfigs: for each of
// n resources, kind(i) names it and, for a topic that exists, topicConfig(i,
// current) gives the full config it asks for (or the answer that refuses
// it); the supervisor applies each as a full replacement. Broker configs are
// refused. The returned wait blocks until every reply is in results.
func alterResources(r *Request, n int, validateOnly bool, kind func(i int) (resourceType kmsg.ConfigResourceType, name string),
	topicConfig func(i int, current map[string]string) (map[string]string, alterResult)) (results []alterResult, wait func()) {
	results = make([]alterResult, n)
	wg := new(waitGroup)
	for i := range n {
		typ, name := kind(i)
		switch typ {
		case resourceTopic:
			if routing.IsInternal(name) {
				ref := internalRefusal(name, "alter the configs of")
				results[i] = alterResult{code: ref.ErrorCode, msg: ref.ErrorMessage}
				continue
			}
			t, ok := r.View.Topics[name]
			if !ok {
				results[i] = alterResult{code: kerr.UnknownTopicOrPartition.Code}
				continue
			}
			cfg, bad := topicConfig(i, t.Config)
			if bad.code != 0 {
				results[i] = bad
				continue
			}
			wg.Add(1)
			out := &results[i]
			r.Server.Supervisor().Send(&messages.AlterTopicConfig{Topic: name, Config: cfg, ValidateOnly: validateOnly,
				Reply: func(res messages.TopicResult) {
					out.code, out.msg = res.ErrorCode, res.ErrorMessage
					wg.Done()
				}})
		case resourceBroker:
			results[i] = brokerAlterRefused()
		default:
			results[i] = alterResult{code: kerr.InvalidRequest.Code, msg: "unsupported resource type"}
		}
	}
	return results, wg.Wait
}

// brokerAlterRefused is the answer to altering a broker's config.
func brokerAlterRefused() alterResult {
	return alterResult{code: kerr.InvalidRequest.Code, msg: "kaas broker configs are static (flags and KAAS_* variables); they cannot be altered at runtime"}
}
