package conn

import (
	"math"
	"strings"
	"time"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/quota"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// mutationQuota is the request's controller_mutation_rate quota (KIP-599)
// for the supervisor to apply topic by topic, nil when none applies. From
// version strictFrom the request may be answered THROTTLING_QUOTA_EXCEEDED
// (a strict quota); older versions are only throttled.
func (r *Request) mutationQuota(strictFrom int16) *quota.MutationQuota {
	return r.Server.Quotas.Mutations(r.quotaUser(), r.Header.ClientIDString(), r.Header.Version >= strictFrom, r.Server.Clock.Now)
}

// admitter is q as the supervisor's admission function.
func admitter(q *quota.MutationQuota) messages.MutationQuota {
	if q == nil {
		return nil
	}
	return q.Admit
}

// mutationThrottle is the request's throttle time once the supervisor has
// applied q, as a response's throttle_time_ms; the connection is muted for
// it after the answer, as for the other quotas.
func (r *Request) mutationThrottle(q *quota.MutationQuota) int32 {
	d := q.Throttle()
	if d > 0 {
		r.throttle = max(r.throttle, d)
		metrics.QuotaThrottled(quota.Mutation.String(), d)
	}
	return throttleMillis(d)
}

// requestTime meters the time since start, spent by this connection's
// actor on one request of hdr (decoding and handling it, or encoding its
// answer), against the client's request_percentage (KIP-124) and returns
// the throttle time. The actor is where a request's own work is done; what
// partition actors do for it, and time spent waiting on them, is not
// counted. Inter-broker requests are exempt, as Kafka exempts cluster
// actions.
func (a *connActor) requestTime(hdr wire.RequestHeader, start time.Time) time.Duration {
	if start.IsZero() || hdr.Key == kmsg.WriteTxnMarkers.Int16() {
		return 0
	}
	now := a.srv.Clock.Now()
	user := a.session.Principal
	if _, name, ok := strings.Cut(user, ":"); ok {
		user = name
	}
	d := a.srv.Quotas.RecordRequestTime(user, hdr.ClientIDString(), now.Sub(start), now)
	if d > 0 {
		metrics.QuotaThrottled(quota.Request.String(), d)
	}
	return d
}

// requestStart is when the actor's work on a request starts, for
// requestTime; zero (nothing measured) while no entity sets
// request_percentage, so a broker without request quotas reads no clock
// per request.
func (a *connActor) requestStart() time.Time {
	if !a.srv.Quotas.Timed() {
		return time.Time{}
	}
	return a.srv.Clock.Now()
}

// throttleAtLeast raises resp's throttle_time_ms to d: a response throttled
// by several quotas carries the longest throttle, as Kafka answers.
func throttleAtLeast(resp kmsg.Response, d time.Duration) {
	tr, ok := resp.(interface {
		kmsg.ThrottleResponse
		kmsg.SetThrottleResponse
	})
	if !ok {
		return
	}
	if ms, _ := tr.Throttle(); ms < throttleMillis(d) {
		tr.SetThrottle(throttleMillis(d))
	}
}
