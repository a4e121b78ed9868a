package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"

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

// alterTopic sends a full config replacement to the supervisor; the reply
// lands in out.
func alterTopic(r *Request, topic string, cfg map[string]string, validateOnly bool, out *alterResult, wg *waitGroup) {
	wg.Add(1)
	r.Server.Supervisor().Send(&messages.AlterTopicConfig{Topic: topic, Config: cfg, ValidateOnly: validateOnly,
		Reply: func(res messages.TopicResult) {
			out.code, out.msg = res.ErrorCode, res.ErrorMessage
			wg.Done()
		}})
}

// brokerAlterRefused is the answer to altering a broker's config.
func brokerAlterRefused() alterResult {
	return alterResult{code: kerr.InvalidRequest.Code, msg: "kaas broker configs are static (flags and KAAS_* variables); they cannot be altered at runtime"}
}
