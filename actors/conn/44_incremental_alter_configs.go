package conn

import (
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/topicconfig"
)

// IncrementalAlterConfigs (key 44): v0-1, SET / DELETE / APPEND / SUBTRACT
// on topics, sent to the supervisor as a full replacement.
func init() {
	serve(API{Key: kmsg.IncrementalAlterConfigs.Int16(), MinVersion: 0, MaxVersion: 1, Handle: handleIncrementalAlterConfigs, ErrorResponse: incrementalAlterConfigsError})
}

// handleIncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT to
// the current topic config and sends the result as a full replacement.
func handleIncrementalAlterConfigs(r *Request) Pending {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	results := make([]alterResult, len(req.Resources))
	wg := new(waitGroup)
	for i, res := range req.Resources {
		switch res.ResourceType {
		case resourceTopic:
			t, ok := r.View.Topics[res.ResourceName]
			if !ok {
				results[i] = alterResult{code: kerr.UnknownTopicOrPartition.Code}
				continue
			}
			cfg := maps.Clone(t.Config)
			if cfg == nil {
				cfg = map[string]string{}
			}
			if bad := applyIncremental(cfg, res.Configs); bad.code != 0 {
				results[i] = bad
				continue
			}
			alterTopic(r, res.ResourceName, cfg, req.ValidateOnly, &results[i], wg)
		case resourceBroker:
			results[i] = brokerAlterRefused()
		default:
			results[i] = alterResult{code: kerr.InvalidRequest.Code, msg: "unsupported resource type"}
		}
	}
	return func() kmsg.Response {
		wg.Wait()
		for i, res := range req.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, results[i].code
			if results[i].msg != "" {
				m := results[i].msg
				rr.ErrorMessage = &m
			}
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
}

func applyIncremental(cfg map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) alterResult {
	for _, op := range ops {
		k, known := topicconfig.Keys[op.Name]
		if !known {
			return alterResult{code: kerr.InvalidConfig.Code, msg: "unknown topic config " + op.Name}
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
			if k.Type != topicconfig.TypeList {
				return alterResult{code: kerr.InvalidConfig.Code, msg: op.Name + " is not a list config"}
			}
			cur := topicconfig.Value(cfg, op.Name)
			var items []string
			if cur != "" {
				items = strings.Split(cur, ",")
			}
			if op.Op == 2 {
				if !slices.Contains(items, val) {
					items = append(items, val)
				}
			} else {
				items = slices.DeleteFunc(items, func(s string) bool { return s == val })
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
