package conn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/delegation"
)

// RenewDelegationToken (key 39): v1-2, by the token's owner, requester or
// a renewer; a negative period renews by delegation.token.expiry.time.ms.
func init() {
	serve(API{Key: kmsg.RenewDelegationToken.Int16(), MinVersion: 1, MaxVersion: 2, Handle: handleRenewDelegationToken})
}

func handleRenewDelegationToken(r *Request) Pending {
	req := r.Body.(*kmsg.RenewDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	return changeToken(r, &resp.ErrorCode, &resp.ExpiryTimestamp, resp, func(ts []delegation.Token, cfg delegation.Config, now time.Time) ([]delegation.Token, int64, error) {
		return delegation.Renew(cfg, ts, req.HMAC, r.Session.Principal, req.RenewTimeMillis, now)
	})
}

// changeToken runs a renewal or an expiry: the connection's checks, then
// change on the store, its expiry (or error) set in the response.
func changeToken(r *Request, code *int16, expiry *int64, resp kmsg.Response, change func([]delegation.Token, delegation.Config, time.Time) ([]delegation.Token, int64, error)) Pending {
	if !tokenRequestsAllowed(r.Session) {
		*code = kerr.DelegationTokenRequestNotAllowed.Code
		return Ready(resp)
	}
	cfg, store, now := r.Server.Delegation, r.Server.DelegationTokens, r.Server.Clock.Now()
	if !cfg.Enabled() {
		*code = kerr.DelegationTokenAuthDisabled.Code
		return Ready(resp)
	}
	return func() kmsg.Response {
		err := store.Update(now, func(ts []delegation.Token) ([]delegation.Token, error) {
			next, exp, err := change(ts, cfg, now)
			*expiry = exp
			return next, err
		})
		if err != nil {
			*code, *expiry = tokenCode(err), 0
		}
		return resp
	}
}
