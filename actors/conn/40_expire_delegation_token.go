package conn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/delegation"
)

// ExpireDelegationToken (key 40): v1-2, by the token's owner, requester or
// a renewer; a negative period expires (removes) the token at once.
func init() {
	serve(API{Key: kmsg.ExpireDelegationToken.Int16(), MinVersion: 1, MaxVersion: 2, Handle: handleExpireDelegationToken})
}

func handleExpireDelegationToken(r *Request) Pending {
	req := r.Body.(*kmsg.ExpireDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	return changeToken(r, &resp.ErrorCode, &resp.ExpiryTimestamp, resp, func(ts []delegation.Token, cfg delegation.Config, now time.Time) ([]delegation.Token, int64, error) {
		return delegation.Expire(cfg, ts, req.HMAC, r.Session.Principal, req.ExpiryPeriodMillis, now)
	})
}
