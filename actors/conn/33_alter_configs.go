package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterConfigs (key 33): v0-2, topics only (full replacement, through the
// supervisor); broker configs are static.
func init() {
	serve(API{Key: kmsg.AlterConfigs.Int16(), MinVersion: 0, MaxVersion: 2, Handle: handleAlterConfigs, ErrorResponse: alterConfigsError})
}

// handleAlterConfigs replaces a topic's whole config (the legacy API).
func handleAlterConfigs(r *Request) Pending {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	results := make([]alterResult, len(req.Resources))
	wg := new(waitGroup)
	for i, res := range req.Resources {
		switch res.ResourceType {
		case resourceTopic:
			if _, ok := r.View.Topics[res.ResourceName]; !ok {
				results[i] = alterResult{code: kerr.UnknownTopicOrPartition.Code}
				continue
			}
			cfg := map[string]string{}
			for _, c := range res.Configs {
				if c.Value != nil {
					cfg[c.Name] = *c.Value
				}
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
			rr := kmsg.NewAlterConfigsResponseResource()
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

// alterConfigsError answers every resource of an AlterConfigs with code.
func alterConfigsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		rs := kmsg.NewAlterConfigsResponseResource()
		rs.ResourceType, rs.ResourceName, rs.ErrorCode = rr.ResourceType, rr.ResourceName, code
		resp.Resources = append(resp.Resources, rs)
	}
	return resp
}
