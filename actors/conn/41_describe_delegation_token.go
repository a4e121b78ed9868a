package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeDelegationToken (key 41): v1-3, the live tokens of the owners
// asked for (none asked: every one) that the requester owns or renews, or
// may describe by ACL.
func init() {
	serve(API{Key: kmsg.DescribeDelegationToken.Int16(), MinVersion: 1, MaxVersion: 3, Handle: handleDescribeDelegationToken})
}

func handleDescribeDelegationToken(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	if !tokenRequestsAllowed(r.Session) {
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return Ready(resp)
	}
	cfg, store, now, authz, sess := r.Server.Delegation, r.Server.DelegationTokens, r.Server.Clock.Now(), r.Server.Authorizer, r.Session
	if !cfg.Enabled() {
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return Ready(resp)
	}
	var owners []string
	if req.Owners != nil {
		owners = []string{}
		for _, o := range req.Owners {
			owners = append(owners, o.PrincipalType+":"+o.PrincipalName)
		}
	}
	return func() kmsg.Response {
		tokens, err := store.Load(now)
		if err != nil {
			resp.ErrorCode = kerr.KafkaStorageError.Code
			return resp
		}
		for _, t := range tokens {
			if !describableToken(authz, sess, owners, t) {
				continue
			}
			d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
			d.PrincipalType, d.PrincipalName = splitPrincipal(t.Owner)
			d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = splitPrincipal(t.Requester)
			d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueMs, t.ExpiryMs, t.MaxMs
			d.TokenID, d.HMAC = t.ID, cfg.HMAC(t.ID)
			for _, rn := range t.Renewers {
				dr := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
				dr.PrincipalType, dr.PrincipalName = splitPrincipal(rn)
				d.Renewers = append(d.Renewers, dr)
			}
			resp.TokenDetails = append(resp.TokenDetails, d)
		}
		return resp
	}
}
