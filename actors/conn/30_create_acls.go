package conn

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
)

// CreateAcls (key 30): v1-3. Each creation is validated (INVALID_REQUEST
// with the reason) and written to the ACL store: a KafkaAcl object in
// cluster mode, the local ACL store otherwise. Without an authorizer it
// answers SECURITY_DISABLED.
func init() {
	serve(API{Key: kmsg.CreateACLs.Int16(), MinVersion: 1, MaxVersion: 3, Handle: handleCreateACLs, ErrorResponse: createACLsError})
}

// aclStoreTimeout bounds one CreateAcls or DeleteAcls write to the store.
const aclStoreTimeout = 30 * time.Second

func handleCreateACLs(r *Request) Pending {
	req := r.Body.(*kmsg.CreateACLsRequest)
	if r.Server.Authorizer == nil || r.Server.ACLs == nil {
		resp := createACLsError(req, kerr.SecurityDisabled.Code).(*kmsg.CreateACLsResponse)
		for i := range resp.Results {
			resp.Results[i].ErrorMessage = optString(securityDisabledMessage)
		}
		return Ready(resp)
	}
	resp := createACLsError(req, 0).(*kmsg.CreateACLsResponse)
	var valid []acl.Binding
	var slots []int
	for i, c := range req.Creations {
		b := acl.Binding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
		if err := b.Validate(); err != nil {
			resp.Results[i].ErrorCode = kerr.InvalidRequest.Code
			resp.Results[i].ErrorMessage = optString(err.Error())
			continue
		}
		valid = append(valid, b)
		slots = append(slots, i)
	}
	if len(valid) == 0 {
		return Ready(resp)
	}
	store, log := r.Server.ACLs, r.Server.Log()
	return func() kmsg.Response {
		ctx, cancel := context.WithTimeout(context.Background(), aclStoreTimeout)
		defer cancel()
		for j, err := range store.Create(ctx, valid) {
			if err != nil {
				log.Warn().Err(err).Str("acl", valid[j].String()).Msg("CreateAcls")
				resp.Results[slots[j]].ErrorCode = kerr.UnknownServerError.Code
				resp.Results[slots[j]].ErrorMessage = optString(err.Error())
			}
		}
		return resp
	}
}

// createACLsError answers every creation with code.
func createACLsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode = code
		resp.Results = append(resp.Results, res)
	}
	return resp
}
