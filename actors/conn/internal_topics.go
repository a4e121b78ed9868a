package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// internalRefusal is the answer to deleting, growing or reconfiguring an
// internal topic (routing.InternalTopics): INVALID_REQUEST with the reason.
// The topic is a view of state kaas keeps elsewhere, so there is nothing a
// client could change.
func internalRefusal(topic, what string) messages.TopicResult {
	return messages.TopicResult{Name: topic, ErrorCode: kerr.InvalidRequest.Code,
		ErrorMessage: "Cannot " + what + " internal topic " + topic}
}

// splitInternal returns the indexes of the n request entries that name no
// internal topic (name(i) is entry i's topic), in order: those go to the
// supervisor, the others are answered here.
func splitInternal(n int, name func(i int) string) (sent []int) {
	for i := range n {
		if !routing.IsInternal(name(i)) {
			sent = append(sent, i)
		}
	}
	return sent
}

// mergeInternal places the supervisor's results (one per sent index, in
// order) and, for every other entry, refuse(i).
func mergeInternal(n int, sent []int, results []messages.TopicResult, refuse func(i int) messages.TopicResult) []messages.TopicResult {
	out := make([]messages.TopicResult, n)
	done := make([]bool, n)
	for k, i := range sent {
		if k < len(results) {
			out[i], done[i] = results[k], true
		}
	}
	for i := range out {
		if !done[i] {
			out[i] = refuse(i)
		}
	}
	return out
}
