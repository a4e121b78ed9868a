package conn

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
)

// DeleteAcls (key 31): v1-3. Each filter selects bindings from this
// broker's ACL cache; every selected binding is removed from the ACL store
// (its KafkaAcl objects in cluster mode) and listed in the filter's result.
// Without an authorizer it answers SECURITY_DISABLED.
func init() {
	serve(API{Key: kmsg.DeleteACLs.Int16(), MinVersion: 1, MaxVersion: 3, Handle: handleDeleteACLs, ErrorResponse: deleteACLsError})
}

func handleDeleteACLs(r *Request) Pending {
	req := r.Body.(*kmsg.DeleteACLsRequest)
	if r.Server.Authorizer == nil || r.Server.ACLs == nil {
		resp := deleteACLsError(req, kerr.SecurityDisabled.Code).(*kmsg.DeleteACLsResponse)
		for i := range resp.Results {
			resp.Results[i].ErrorMessage = optString(securityDisabledMessage)
		}
		return Ready(resp)
	}
	resp := deleteACLsError(req, 0).(*kmsg.DeleteACLsResponse)
	matched := make([][]acl.Binding, len(req.Filters))
	seen := map[acl.Binding]bool{}
	var all []acl.Binding
	for i, kf := range req.Filters {
		f := acl.Filter{ResourceType: kf.ResourceType, ResourceName: kf.ResourceName, PatternType: kf.ResourcePatternType,
			Principal: kf.Principal, Host: kf.Host, Operation: kf.Operation, Permission: kf.PermissionType}
		if err := f.Validate(); err != nil {
			resp.Results[i].ErrorCode = kerr.InvalidRequest.Code
			resp.Results[i].ErrorMessage = optString(err.Error())
			continue
		}
		matched[i] = r.Server.Authorizer.Matching(f)
		for _, b := range matched[i] {
			if !seen[b] {
				seen[b] = true
				all = append(all, b)
			}
		}
	}
	store, log := r.Server.ACLs, r.Server.Log()
	return func() kmsg.Response {
		failed := map[acl.Binding]error{}
		if len(all) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), aclStoreTimeout)
			defer cancel()
			for j, err := range store.Delete(ctx, all) {
				if err != nil {
					log.Warn().Err(err).Str("acl", all[j].String()).Msg("DeleteAcls")
					failed[all[j]] = err
				}
			}
		}
		for i, bs := range matched {
			for _, b := range bs {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
				m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
				if err := failed[b]; err != nil {
					m.ErrorCode = kerr.UnknownServerError.Code
					m.ErrorMessage = optString(err.Error())
				}
				resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			}
		}
		return resp
	}
}

// deleteACLsError answers every filter with code.
func deleteACLsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode = code
		resp.Results = append(resp.Results, res)
	}
	return resp
}
