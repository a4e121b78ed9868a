package conn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/clientmetrics"
)

// GetTelemetrySubscriptions (key 71, KIP-714): v0, served (and listed in
// ApiVersions) only with --client-telemetry, as Kafka serves it only with a
// telemetry receiver. It gives the client its instance id, the metrics the
// CLIENT_METRICS subscriptions that match it ask for, and how often to push
// them, cumulative (the broker exposes each series' latest value).
// TelemetryAPIs lists it for Server.Register.
func handleGetTelemetrySubscriptions(r *Request) Pending {
	req := r.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := req.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	return withSubscriptions(r, &resp.ErrorCode, resp, func(subs []clientmetrics.Subscription) {
		id, plan, code := r.Server.Telemetry.Subscription(r.Server.Clock.Now(), telemetryClient(r, req.ClientInstanceID), subs)
		resp.ErrorCode, resp.ClientInstanceID = code, id
		resp.SubscriptionID = plan.SubscriptionID
		resp.AcceptedCompressionTypes = acceptedCompression()
		resp.PushIntervalMillis = int32(plan.Interval / time.Millisecond)
		resp.TelemetryMaxBytes = int32(r.Server.Telemetry.MaxBytes())
		resp.DeltaTemporality = false
		resp.RequestedMetrics = plan.Metrics
		if resp.RequestedMetrics == nil {
			resp.RequestedMetrics = []string{}
		}
	})
}

// withSubscriptions runs answer with the CLIENT_METRICS subscriptions,
// off the connection actor (the store reads the shared volume); one that
// cannot be read answers KAFKA_STORAGE_ERROR in *code.
func withSubscriptions(r *Request, code *int16, resp kmsg.Response, answer func([]clientmetrics.Subscription)) Pending {
	return func() kmsg.Response {
		subs, err := r.Server.ClientMetrics.Subscriptions()
		if err != nil {
			r.Server.Log().Error().Err(err).Msg("read client-metrics subscriptions")
			*code = kerr.KafkaStorageError.Code
			return resp
		}
		answer(subs)
		return resp
	}
}

// telemetryClient is what subscriptions match of the requesting client.
func telemetryClient(r *Request, id [16]byte) clientmetrics.Client {
	return clientmetrics.Client{InstanceID: id, ClientID: r.Header.ClientIDString(), SoftwareName: r.Session.SoftwareName,
		SoftwareVersion: r.Session.SoftwareVersion, SourceAddress: r.Session.ClientHost, SourcePort: r.Session.ClientPort}
}

func getTelemetrySubscriptionsError(body kmsg.Request, code int16) kmsg.Response {
	resp := body.(*kmsg.GetTelemetrySubscriptionsRequest).ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	resp.ErrorCode = code
	return resp
}

// TelemetryAPIs are the KIP-714 APIs, for Server.Register when the broker
// receives client telemetry (Server.Telemetry set).
func TelemetryAPIs() []API {
	return []API{
		{Key: kmsg.GetTelemetrySubscriptions.Int16(), MinVersion: 0, MaxVersion: 0, Handle: handleGetTelemetrySubscriptions, ErrorResponse: getTelemetrySubscriptionsError},
		{Key: kmsg.PushTelemetry.Int16(), MinVersion: 0, MaxVersion: 0, Handle: handlePushTelemetry, ErrorResponse: pushTelemetryError},
	}
}
