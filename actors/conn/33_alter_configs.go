package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterConfigs (key 33): v0-2, a full replacement of a topic's config
// (through the supervisor), a group's or a broker resource's dynamic
// configs.
func init() {
	serve(API{Key: kmsg.AlterConfigs.Int16(), MinVersion: 0, MaxVersion: 2, Handle: handleAlterConfigs, ErrorResponse: alterConfigsError})
}

// handleAlterConfigs replaces a resource's whole config (the legacy API).
func handleAlterConfigs(r *Request) Pending {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	results, wait := alterResources(r, len(req.Resources), req.ValidateOnly,
		func(i int) (kmsg.ConfigResourceType, string) {
			return req.Resources[i].ResourceType, req.Resources[i].ResourceName
		},
		func(i int) (changed, unset []string) {
			for _, c := range req.Resources[i].Configs {
				changed = append(changed, c.Name)
				if c.Value == nil {
					unset = append(unset, c.Name)
				}
			}
			return changed, unset
		},
		func(i int, _ kmsg.ConfigResourceType, _ map[string]string) (map[string]string, alterResult) {
			cfg := map[string]string{}
			for _, c := range req.Resources[i].Configs {
				cfg[c.Name] = *c.Value // refusedAlters refused a nil one
			}
			return cfg, alterResult{}
		}, nil)
	return func() kmsg.Response {
		wait()
		for i, res := range req.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, results[i].code
			rr.ErrorMessage = optString(results[i].msg)
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
