package conn

import (
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/loggers"
	"github.com/kaas-project/kaas/storage/brokerconfig"
	"github.com/kaas-project/kaas/storage/clientmetrics"
	"github.com/kaas-project/kaas/storage/groupconfig"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// IncrementalAlterConfigs (key 44): v0-1, SET / DELETE / APPEND / SUBTRACT
// on topics (sent to the supervisor as a full replacement), groups (kept
// in the group config store), brokers (the dynamic broker config store) and
// client-metrics subscriptions (CLIENT_METRICS, KIP-714); SET and DELETE on
// this broker's loggers (BROKER_LOGGER).
func init() {
	serve(API{Key: kmsg.IncrementalAlterConfigs.Int16(), MinVersion: 0, MaxVersion: 1, Handle: handleIncrementalAlterConfigs, ErrorResponse: incrementalAlterConfigsError})
}

// handleIncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT to
// the current topic config and sends the result as a full replacement.
func handleIncrementalAlterConfigs(r *Request) Pending {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	results, wait := alterResources(r, len(req.Resources), req.ValidateOnly,
		func(i int) (kmsg.ConfigResourceType, string) {
			return req.Resources[i].ResourceType, req.Resources[i].ResourceName
		},
		func(i int) (changed, unset []string) {
			for _, c := range req.Resources[i].Configs {
				changed = append(changed, c.Name)
				if c.Value == nil && c.Op != 1 { // only DELETE takes no value
					unset = append(unset, c.Name)
				}
			}
			return changed, unset
		},
		func(i int, typ kmsg.ConfigResourceType, current map[string]string) (map[string]string, alterResult) {
			cfg := maps.Clone(current)
			if cfg == nil {
				cfg = map[string]string{}
			}
			switch typ {
			case resourceGroup:
				return cfg, applyIncremental(cfg, req.Resources[i].Configs, "group", groupConfigType)
			case resourceBroker:
				return cfg, applyIncremental(cfg, req.Resources[i].Configs, "broker", brokerConfigType)
			case resourceClientMetric:
				return cfg, applyIncremental(cfg, req.Resources[i].Configs, "client metrics", clientMetricsConfigType)
			}
			return cfg, applyIncremental(cfg, req.Resources[i].Configs, "topic", topicConfigType)
		},
		func(i int) []loggers.Op {
			var ops []loggers.Op
			for _, c := range req.Resources[i].Configs {
				ops = append(ops, loggers.Op{Name: c.Name, Op: c.Op, Value: c.Value})
			}
			return ops
		})
	return func() kmsg.Response {
		wait()
		for i, res := range req.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, results[i].code
			rr.ErrorMessage = optString(results[i].msg)
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
}

// topicConfigType, like each config type function, gives a config's type
// and the default an APPEND or SUBTRACT starts from when the resource does
// not set it (Kafka's ConfigAdminManager starts from the config's default,
// so APPEND compact to an unset cleanup.policy gives delete,compact).
func topicConfigType(name string) (topicconfig.Type, string, bool) {
	k, ok := topicconfig.Keys[name]
	return k.Type, k.Default, ok
}

// brokerConfigType is a dynamic broker config's type; a name Kafka does
// not know is a custom config, a string (Kafka stores custom broker
// configs).
func brokerConfigType(name string) (topicconfig.Type, string, bool) {
	if k, ok := brokerconfig.Lookup(name); ok {
		return k.Type, k.Default, true
	}
	return topicconfig.TypeString, "", true
}

// clientMetricsConfigType is a CLIENT_METRICS config's type (KIP-714).
func clientMetricsConfigType(name string) (topicconfig.Type, string, bool) {
	switch name {
	case clientmetrics.Metrics, clientmetrics.Match:
		return topicconfig.TypeList, "", true
	case clientmetrics.IntervalMs:
		return topicconfig.TypeInt, "", true
	}
	return 0, "", false
}

func groupConfigType(name string) (topicconfig.Type, string, bool) {
	k, ok := groupconfig.Keys[name]
	return k.Type, k.Default, ok
}

// applyIncremental applies ops to cfg, each name looked up by keyType
// (kind names the resource in the refusal of an unknown name).
func applyIncremental(cfg map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, kind string, keyType func(string) (topicconfig.Type, string, bool)) alterResult {
	for _, op := range ops {
		typ, def, known := keyType(op.Name)
		if !known {
			return alterResult{code: kerr.InvalidConfig.Code, msg: "unknown " + kind + " config " + op.Name}
		}
		val := ""
		if op.Value != nil {
			val = *op.Value
		}
		switch op.Op {
		case 0: // SET
			cfg[op.Name] = val
		case 1: // DELETE
			delete(cfg, op.Name)
		case 2, 3: // APPEND, SUBTRACT (list types only)
			if typ != topicconfig.TypeList {
				return alterResult{code: kerr.InvalidConfig.Code, msg: op.Name + " is not a list config"}
			}
			cur, set := cfg[op.Name]
			if !set {
				cur = def
			}
			var items []string
			if cur != "" {
				items = strings.Split(cur, ",")
			}
			// The value is itself a list (Kafka splits it on commas).
			vals := strings.Split(val, ",")
			if op.Op == 2 {
				for _, v := range vals {
					if !slices.Contains(items, v) {
						items = append(items, v)
					}
				}
			} else {
				items = slices.DeleteFunc(items, func(s string) bool { return slices.Contains(vals, s) })
			}
			cfg[op.Name] = strings.Join(items, ",")
		default:
			return alterResult{code: kerr.InvalidRequest.Code, msg: "unknown incremental alter op"}
		}
	}
	return alterResult{}
}

// incrementalAlterConfigsError answers every resource of an
// IncrementalAlterConfigs with code.
func incrementalAlterConfigsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		rs := kmsg.NewIncrementalAlterConfigsResponseResource()
		rs.ResourceType, rs.ResourceName, rs.ErrorCode = rr.ResourceType, rr.ResourceName, code
		resp.Resources = append(resp.Resources, rs)
	}
	return resp
}
