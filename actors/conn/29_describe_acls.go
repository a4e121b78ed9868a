package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
)

// DescribeAcls (key 29): v1-3, answered from this broker's ACL cache (the
// KafkaAcl objects it watches, or the local ACL store). Errors go in the
// top-level ErrorCode (no ErrorResponse). Without an authorizer
// (--authorizer unset) it answers SECURITY_DISABLED, as Kafka does.
func init() {
	serve(API{Key: kmsg.DescribeACLs.Int16(), MinVersion: 1, MaxVersion: 3, Handle: handleDescribeACLs})
}

const securityDisabledMessage = "no authorizer is configured on this broker (start it with --authorizer=acl)"

func handleDescribeACLs(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if r.Server.Authorizer == nil {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		resp.ErrorMessage = optString(securityDisabledMessage)
		return Ready(resp)
	}
	f := acl.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if err := f.Validate(); err != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = optString(err.Error())
		return Ready(resp)
	}
	// Matching returns bindings sorted by resource: one response resource
	// per run of equal (type, name, pattern).
	for _, b := range r.Server.Authorizer.Matching(f) {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != b.ResourceType || resp.Resources[n-1].ResourceName != b.ResourceName ||
			resp.Resources[n-1].ResourcePatternType != b.PatternType {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			resp.Resources = append(resp.Resources, res)
			n++
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, a)
	}
	return Ready(resp)
}
