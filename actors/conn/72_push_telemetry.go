package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/telemetry"
	"github.com/kaas-project/kaas/storage/clientmetrics"
)

// PushTelemetry (key 72, KIP-714): v0, with --client-telemetry. The
// receiver (actors/telemetry) checks the push as Kafka does and keeps the
// latest value of each series for /metrics.
func handlePushTelemetry(r *Request) Pending {
	req := r.Body.(*kmsg.PushTelemetryRequest)
	resp := req.ResponseKind().(*kmsg.PushTelemetryResponse)
	return withSubscriptions(r, &resp.ErrorCode, resp, func(subs []clientmetrics.Subscription) {
		resp.ErrorCode = r.Server.Telemetry.Push(r.Server.Clock.Now(), telemetryClient(r, req.ClientInstanceID), subs,
			req.SubscriptionID, req.Terminating, req.CompressionType, req.Metrics)
	})
}

func pushTelemetryError(body kmsg.Request, code int16) kmsg.Response {
	resp := body.(*kmsg.PushTelemetryRequest).ResponseKind().(*kmsg.PushTelemetryResponse)
	resp.ErrorCode = code
	return resp
}

// acceptedCompression are the codecs a push may use, best first.
func acceptedCompression() []int8 { return append([]int8(nil), telemetry.Accepted...) }
