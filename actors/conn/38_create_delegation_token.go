package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
	"github.com/kaas-project/kaas/storage/delegation"
)

// CreateDelegationToken (key 38): v1-3. The owner is the requester, or
// (v3, KIP-373) the principal named, which needs CREATE_TOKENS on that
// user; renewers must be users.
func init() {
	serve(API{Key: kmsg.CreateDelegationToken.Int16(), MinVersion: 1, MaxVersion: 3, Handle: handleCreateDelegationToken})
}

func handleCreateDelegationToken(r *Request) Pending {
	req := r.Body.(*kmsg.CreateDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	requester := r.Session.Principal
	owner := requester
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		typ := "User"
		if req.OwnerPrincipalType != nil {
			typ = *req.OwnerPrincipalType
		}
		owner = typ + ":" + *req.OwnerPrincipalName
	}
	resp.PrincipalType, resp.PrincipalName = splitPrincipal(owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = splitPrincipal(requester)
	var renewers []string
	for _, rn := range req.Renewers {
		if rn.PrincipalType != "User" {
			resp.ErrorCode = kerr.InvalidPrincipalType.Code
			return Ready(resp)
		}
		renewers = append(renewers, rn.PrincipalType+":"+rn.PrincipalName)
	}
	if !tokenRequestsAllowed(r.Session) {
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return Ready(resp)
	}
	if owner != requester && !r.Server.Authorizer.Authorize(acl.Action{Principal: requester, Host: r.Session.ClientHost,
		Operation: kmsg.ACLOperationCreateTokens, ResourceType: kmsg.ACLResourceTypeUser, ResourceName: owner}) {
		resp.ErrorCode = kerr.DelegationTokenAuthorizationFailed.Code
		return Ready(resp)
	}
	cfg, store, now := r.Server.Delegation, r.Server.DelegationTokens, r.Server.Clock.Now()
	if !cfg.Enabled() {
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return Ready(resp)
	}
	return func() kmsg.Response { // the store is a file on the shared volume
		var tok delegation.Token
		err := store.Update(now, func(ts []delegation.Token) ([]delegation.Token, error) {
			t, err := delegation.Create(cfg, now, owner, requester, renewers, req.MaxLifetimeMillis)
			tok = t
			return append(ts, t), err
		})
		if err != nil {
			resp.ErrorCode = tokenCode(err)
			r.Server.Log().Warn().Err(err).Str("owner", owner).Msg("create delegation token")
			return resp
		}
		resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = tok.IssueMs, tok.ExpiryMs, tok.MaxMs
		resp.TokenID, resp.HMAC = tok.ID, cfg.HMAC(tok.ID)
		r.Server.Log().Info().Str("owner", owner).Str("requester", requester).Str("token_id", tok.ID).Msg("delegation token created")
		return resp
	}
}
