package conn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/loggers"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/brokerconfig"
	"github.com/kaas-project/kaas/storage/clientmetrics"
	"github.com/kaas-project/kaas/storage/groupconfig"
)

// Kafka's ConfigResource types and config sources (DescribeConfigs,
// AlterConfigs, IncrementalAlterConfigs).
const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
	resourceClientMetric = 16
	resourceGroup        = 32

	sourceDynamicTopic         = 1
	sourceDynamicBroker        = 2
	sourceDynamicDefaultBroker = 3
	sourceStaticBroker         = 4
	sourceDefault              = 5
	sourceDynamicBrokerLogger  = 6
	sourceClientMetrics        = 7
	sourceGroup                = 8
)

// alterResult is one resource's answer to AlterConfigs or
// IncrementalAlterConfigs.
type alterResult struct {
	code int16
	msg  string
}

// refusedAlters checks an AlterConfigs or IncrementalAlterConfigs request
// as a whole, as Kafka's ConfigAdminManager.preprocess does before
// anything is applied: a resource named twice is refused each time, and
// so is one changing a config twice or setting one to no value
// (INVALID_REQUEST). The answer of a resource that passes is zero.
func refusedAlters(n int, kind func(i int) (kmsg.ConfigResourceType, string), names func(i int) (changed, unset []string)) []alterResult {
	type key struct {
		typ  kmsg.ConfigResourceType
		name string
	}
	results := make([]alterResult, n)
	first := map[key]int{}
	for i := range n {
		typ, name := kind(i)
		k := key{typ, name}
		if j, seen := first[k]; seen {
			for _, dup := range []int{i, j} {
				results[dup] = alterResult{code: kerr.InvalidRequest.Code, msg: "Each resource must appear at most once."}
			}
			continue
		}
		first[k] = i
	}
	for i := range n {
		if results[i].code != 0 {
			continue
		}
		changed, unset := names(i)
		seen := make(map[string]bool, len(changed))
		for _, c := range changed {
			if seen[c] {
				results[i] = alterResult{code: kerr.InvalidRequest.Code, msg: "Error due to duplicate config keys"}
				break
			}
			seen[c] = true
		}
		if results[i].code == 0 && len(unset) > 0 {
			results[i] = alterResult{code: kerr.InvalidRequest.Code, msg: "Null value not supported for : " + strings.Join(unset, ", ")}
		}
	}
	return results
}

// alterResources runs AlterConfigs or IncrementalAlterConfigs: for each of
// n resources, kind(i) names it, names(i) gives the names of the configs it
// changes and those of them it gives no value to set, and, for a topic
// that exists, a group, a broker or a client-metrics subscription,
// newConfig(i, type, current) gives the full config it asks for (or the
// answer that refuses it); the supervisor applies a topic's as a full
// replacement, the group, broker and client-metrics stores validate and
// keep the others' (off the connection actor); loggerOps(i) are a
// BROKER_LOGGER resource's changes (nil: the API has none). The returned
// wait blocks until every reply is in results.
func alterResources(r *Request, n int, validateOnly bool, kind func(i int) (resourceType kmsg.ConfigResourceType, name string),
	names func(i int) (changed, unset []string),
	newConfig func(i int, typ kmsg.ConfigResourceType, current map[string]string) (map[string]string, alterResult),
	loggerOps func(i int) []loggers.Op) (results []alterResult, wait func()) {
	results = refusedAlters(n, kind, names)
	wg := new(waitGroup)
	for i := range n {
		if results[i].code != 0 {
			continue
		}
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
			cfg, bad := newConfig(i, typ, t.Config)
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
			if bad := brokerResourceError(name, r.View); bad.code != 0 {
				results[i] = bad
				continue
			}
			wg.Add(1)
			go func(i int, out *alterResult) {
				defer wg.Done()
				*out = alterBrokerConfig(r.Server.BrokerDynamic, name, validateOnly, func(cur map[string]string) (map[string]string, alterResult) {
					return newConfig(i, resourceBroker, cur)
				})
			}(i, &results[i])
		case resourceGroup:
			if name == "" {
				results[i] = alterResult{code: kerr.InvalidRequest.Code, msg: "a group config resource needs a group name"}
				continue
			}
			wg.Add(1)
			go func(i int, out *alterResult) {
				defer wg.Done()
				*out = alterGroupConfig(r.Server.GroupConfigs, name, validateOnly, func(cur map[string]string) (map[string]string, alterResult) {
					return newConfig(i, resourceGroup, cur)
				})
			}(i, &results[i])
		case resourceClientMetric:
			wg.Add(1)
			go func(i int, out *alterResult) {
				defer wg.Done()
				*out = alterClientMetrics(r.Server.ClientMetrics, name, validateOnly, func(cur map[string]string) (map[string]string, alterResult) {
					return newConfig(i, resourceClientMetric, cur)
				})
			}(i, &results[i])
		case resourceBrokerLogger:
			switch bad := brokerLoggerResourceError(name, r.View.Self); {
			case loggerOps == nil:
				results[i] = alterResult{code: kerr.InvalidRequest.Code, msg: "AlterConfigs does not support the BROKER_LOGGER resource; use IncrementalAlterConfigs"}
			case bad.code != 0:
				results[i] = bad
			default:
				if err := r.Server.Loggers.Apply(loggerOps(i), validateOnly); err != nil {
					results[i] = alterResult{code: err.Code, msg: err.Message}
				} else if !validateOnly {
					r.Server.Log().Info().Interface("loggers", r.Server.Loggers.Describe()).Msg("logger levels changed")
				}
			}
		default:
			results[i] = alterResult{code: kerr.InvalidRequest.Code, msg: "unsupported resource type"}
		}
	}
	return results, wg.Wait
}

// brokerLoggerResourceError checks a BROKER_LOGGER resource name: this
// broker's id, as Kafka requires (the admin clients send the request to
// the broker named).
func brokerLoggerResourceError(name string, self int32) alterResult {
	switch {
	case name == "":
		return alterResult{code: kerr.InvalidRequest.Code, msg: "Broker id must not be empty"}
	case name != strconv.Itoa(int(self)):
		return alterResult{code: kerr.InvalidRequest.Code, msg: "Unexpected broker id, expected " + strconv.Itoa(int(self)) + " but received " + name}
	}
	return alterResult{}
}

// brokerResourceError checks a BROKER resource name: the cluster default
// (""), or a broker of the cluster. Kafka takes a broker's own resource
// only from that broker (the admin clients send it there); the dynamic
// configs of kaas are one file every broker shares, so any broker of the
// cluster takes any broker's (kafkajs sends them to the controller). Other
// names get Kafka's INVALID_REQUEST and message.
func brokerResourceError(name string, v *routing.View) alterResult {
	if name == "" {
		return alterResult{}
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return alterResult{code: kerr.InvalidRequest.Code, msg: "Node id must be an integer, but it is: " + name}
	}
	if _, ok := v.Broker(int32(id)); !ok && int32(id) != v.Self {
		return alterResult{code: kerr.InvalidRequest.Code, msg: fmt.Sprintf("Unexpected broker id, expected %d, but received %s", v.Self, name)}
	}
	return alterResult{}
}

// alterBrokerConfig applies change to the dynamic configs of a broker
// resource in store: INVALID_REQUEST with Kafka's message for a set
// Kafka refuses, KAFKA_STORAGE_ERROR when the store cannot be read or
// written.
func alterBrokerConfig(store *brokerconfig.Store, resource string, validateOnly bool, change func(map[string]string) (map[string]string, alterResult)) alterResult {
	return alterStored(func(fn func(map[string]string) (map[string]string, error)) error {
		return store.Update(resource, validateOnly, fn)
	}, change, func(err error) (alterResult, bool) {
		var invalid *brokerconfig.InvalidError
		if errors.As(err, &invalid) {
			return alterResult{code: kerr.InvalidRequest.Code, msg: invalid.Error()}, true
		}
		return alterResult{}, false
	})
}

// alterGroupConfig applies change to group's config overrides in store:
// INVALID_CONFIG with the reason for a value the group configs refuse,
// KAFKA_STORAGE_ERROR when the store cannot be read or written.
func alterGroupConfig(store *groupconfig.Store, group string, validateOnly bool, change func(map[string]string) (map[string]string, alterResult)) alterResult {
	return alterStored(func(fn func(map[string]string) (map[string]string, error)) error {
		return store.Update(group, validateOnly, fn)
	}, change, func(err error) (alterResult, bool) {
		var invalid *groupconfig.InvalidError
		if errors.As(err, &invalid) {
			return alterResult{code: kerr.InvalidConfig.Code, msg: invalid.Error()}, true
		}
		return alterResult{}, false
	})
}

// alterStored runs change inside a store's update: change's own refusal
// is the answer, then the store's validation error as invalid maps it,
// else KAFKA_STORAGE_ERROR for a store that cannot be read or written.
func alterStored(update func(func(map[string]string) (map[string]string, error)) error, change func(map[string]string) (map[string]string, alterResult), invalid func(error) (alterResult, bool)) alterResult {
	var refused alterResult
	err := update(func(cur map[string]string) (map[string]string, error) {
		next, bad := change(cur)
		if bad.code != 0 {
			refused = bad
			return nil, errRefused
		}
		return next, nil
	})
	if err == nil {
		return alterResult{}
	}
	if errors.Is(err, errRefused) {
		return refused
	}
	if r, ok := invalid(err); ok {
		return r
	}
	return alterResult{code: kerr.KafkaStorageError.Code, msg: err.Error()}
}

var errRefused = errors.New("refused")

// alterClientMetrics applies a change to a CLIENT_METRICS subscription
// (off the connection actor: the store may read the shared volume).
func alterClientMetrics(store *clientmetrics.Store, name string, validateOnly bool,
	newConfig func(map[string]string) (map[string]string, alterResult)) alterResult {
	var refused alterResult
	err := store.Update(name, validateOnly, func(cur map[string]string) (map[string]string, error) {
		next, bad := newConfig(cur)
		if bad.code != 0 {
			refused = bad
			return nil, errors.New(bad.msg)
		}
		return next, nil
	})
	var invalid *clientmetrics.InvalidError
	switch {
	case refused.code != 0:
		return refused
	case errors.As(err, &invalid):
		return alterResult{code: kerr.InvalidConfig.Code, msg: invalid.Msg}
	case err != nil:
		return alterResult{code: kerr.KafkaStorageError.Code, msg: err.Error()}
	}
	return alterResult{}
}
