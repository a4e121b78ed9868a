// Package telemetry receives the metrics Kafka clients push (KIP-714):
// which client instances asked for their subscription, when each may push
// next, and the latest value of every series they pushed, which the
// broker's /metrics endpoint exposes as Prometheus series.
//
// Its rules are Kafka's ClientMetricsManager: a push must carry the
// subscription id the current subscriptions give the client, which any
// broker computes alike (UNKNOWN_SUBSCRIPTION_ID otherwise, and the client
// asks again), come no sooner than its interval
// (THROTTLING_QUOTA_EXCEEDED) unless it is the client's last one
// (terminating), fit in MaxBytes (TELEMETRY_TOO_LARGE) and use a codec the
// broker accepts (UNSUPPORTED_COMPRESSION_TYPE). Time comes from the
// caller, so the rules are tested in virtual time.
package telemetry

import (
	"crypto/rand"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/clientmetrics"
)

// DefaultMaxBytes is telemetry.max.bytes's default: the largest push.
const DefaultMaxBytes = 1 << 20

// Accepted are the codecs a push may use, best first (GetTelemetrySubscriptions
// lists them; none is always accepted).
var Accepted = []int8{int8(batch.CodecZstd), int8(batch.CodecLz4), int8(batch.CodecSnappy), int8(batch.CodecGzip)}

// Service is one broker's telemetry receiver.
type Service struct {
	maxBytes int
	mu       sync.Mutex
	clients  map[[16]byte]*instance
	sink     *Sink
	swept    time.Time // the last expire pass
}

// instance is one client instance's state.
type instance struct {
	plan        clientmetrics.Plan
	lastGet     time.Time
	lastPush    time.Time
	lastCode    int16
	terminating bool
}

// New returns a receiver that takes pushes of at most maxBytes (0: the
// default) into sink.
func New(maxBytes int, sink *Sink) *Service {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return &Service{maxBytes: maxBytes, clients: map[[16]byte]*instance{}, sink: sink}
}

// MaxBytes is the largest push taken.
func (s *Service) MaxBytes() int { return s.maxBytes }

// Subscription answers GetTelemetrySubscriptions for c under subs: c's
// instance id (a new one when c has none), its plan, and an error code.
// Asking again sooner than the plan's interval is throttled, unless the
// last answer to the instance was one that makes a client ask again.
func (s *Service) Subscription(now time.Time, c clientmetrics.Client, subs []clientmetrics.Subscription) ([16]byte, clientmetrics.Plan, int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	if c.InstanceID == ([16]byte{}) {
		_, _ = rand.Read(c.InstanceID[:])
	}
	in := s.clients[c.InstanceID]
	if in == nil {
		in = &instance{}
		s.clients[c.InstanceID] = in
	}
	plan := clientmetrics.Select(subs, c)
	asksAgain := in.lastCode == kerr.UnknownSubscriptionID.Code || in.lastCode == kerr.UnsupportedCompressionType.Code
	if !in.lastGet.IsZero() && now.Sub(in.lastGet) < in.plan.Interval && !asksAgain && plan.SubscriptionID == in.plan.SubscriptionID {
		in.lastCode = kerr.ThrottlingQuotaExceeded.Code
		return c.InstanceID, plan, in.lastCode
	}
	in.plan, in.lastGet, in.lastCode, in.terminating = plan, now, 0, false
	return c.InstanceID, plan, 0
}

// Push is one PushTelemetry: its checks in Kafka's order, then the
// metrics (an OTLP MetricsData, compressed with codec) go to the sink.
func (s *Service) Push(now time.Time, c clientmetrics.Client, subs []clientmetrics.Subscription, subscriptionID int32, terminating bool, codec int8, metrics []byte) int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	if c.InstanceID == ([16]byte{}) {
		return kerr.InvalidRequest.Code
	}
	plan := clientmetrics.Select(subs, c)
	in := s.clients[c.InstanceID]
	if in == nil {
		// Subscribed through another broker (clients send each request to
		// the least loaded one), or before a restart: the subscription id
		// follows from the subscriptions and the instance, so this broker
		// knows it too.
		in = &instance{plan: plan}
		s.clients[c.InstanceID] = in
	}
	code := s.check(now, in, plan, subscriptionID, terminating, codec, metrics)
	in.lastCode = code
	if code != 0 {
		return code
	}
	if len(metrics) == 0 || len(in.plan.Metrics) == 0 {
		return 0
	}
	raw := metrics
	if codec != int8(batch.CodecNone) {
		var err error
		if raw, err = batch.Decompress(int16(codec), metrics, 16*s.maxBytes); err != nil {
			in.lastCode = kerr.InvalidRecord.Code
			return in.lastCode
		}
	}
	var data metricspb.MetricsData
	if err := proto.Unmarshal(raw, &data); err != nil {
		in.lastCode = kerr.InvalidRecord.Code
		return in.lastCode
	}
	s.sink.record(now, c, in.plan, &data)
	return 0
}

func (s *Service) check(now time.Time, in *instance, plan clientmetrics.Plan, subscriptionID int32, terminating bool, codec int8, metrics []byte) int16 {
	switch {
	case in.terminating:
		return kerr.InvalidRequest.Code
	case subscriptionID != plan.SubscriptionID:
		return kerr.UnknownSubscriptionID.Code
	case !terminating && !in.lastPush.IsZero() && now.Sub(in.lastPush) < in.plan.Interval:
		return kerr.ThrottlingQuotaExceeded.Code
	}
	in.plan, in.lastPush, in.terminating = plan, now, terminating
	switch {
	case len(metrics) > s.maxBytes:
		return kerr.TelemetryTooLarge.Code
	case codec != int8(batch.CodecNone) && !accepted(codec):
		return kerr.UnsupportedCompressionType.Code
	}
	return 0
}

func accepted(codec int8) bool {
	for _, c := range Accepted {
		if c == codec {
			return true
		}
	}
	return false
}

// expire forgets the instances silent for three intervals (Kafka's
// client instance cache does the same), and their series; at most once a
// second, so many clients do not each pay for all.
func (s *Service) expire(now time.Time) {
	if now.Sub(s.swept) < time.Second {
		return
	}
	s.swept = now
	for id, in := range s.clients {
		last := in.lastPush
		if in.lastGet.After(last) {
			last = in.lastGet
		}
		if now.Sub(last) > 3*in.plan.Interval {
			delete(s.clients, id)
			s.sink.forget(id)
		}
	}
}
