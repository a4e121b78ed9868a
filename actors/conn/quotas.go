package conn

import (
	"math"
	"strings"
	"time"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/quota"
)

// quotaUser is the user a connection's quotas are looked up by: its
// principal's name (ANONYMOUS before authentication), as Kafka does.
func (r *Request) quotaUser() string {
	p := r.Session.Principal
	if _, name, ok := strings.Cut(p, ":"); ok {
		return name
	}
	return p
}

// recordQuota meters n bytes of kind against the connection's quota and
// returns the throttle time (0 within quota or without one). A throttle
// mutes the connection once its answer is written (KIP-219): the
// connection actor delays its next read by that much (connection.go).
func (r *Request) recordQuota(kind quota.Kind, n int) time.Duration {
	d := r.Server.Quotas.Record(kind, r.quotaUser(), r.Header.ClientIDString(), n, r.Server.Clock.Now())
	if d > 0 {
		r.throttle = max(r.throttle, d)
		metrics.QuotaThrottled(kind.String(), d)
	}
	return d
}

// unrecordQuota takes back n bytes recorded by recordQuota.
func (r *Request) unrecordQuota(kind quota.Kind, n int) {
	r.Server.Quotas.Unrecord(kind, r.quotaUser(), r.Header.ClientIDString(), n, r.Server.Clock.Now())
}

// throttleMillis is d as a response's throttle_time_ms.
func throttleMillis(d time.Duration) int32 {
	ms := d.Milliseconds()
	if d > 0 && ms == 0 {
		ms = 1
	}
	return int32(min(ms, math.MaxInt32))
}
