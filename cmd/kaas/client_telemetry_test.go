package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/kaas-project/kaas/storage/clientmetrics"
)

// createClientMetrics creates the CLIENT_METRICS subscription name with
// configs through IncrementalAlterConfigs.
func createClientMetrics(ctx context.Context, t *testing.T, cl *kgo.Client, name string, configs map[string]string) {
	t.Helper()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
	for name, value := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, kmsg.StringPtr(value)
		res.Configs = append(res.Configs, c)
	}
	alter.Resources = append(alter.Resources, res)
	if resp, err := alter.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("create the subscription %s: %v %+v", name, err, resp)
	}
}

// TestClientTelemetry: with --client-telemetry and --data-dir, an operator
// creates a CLIENT_METRICS subscription (IncrementalAlterConfigs, as
// kafka-client-metrics.sh does), reads it back (DescribeConfigs,
// ListConfigResources v0 and v1); a client it matches is given the
// subscription's metrics and interval, pushes an OTLP payload, and the
// broker's /metrics shows the pushed values; the push rules refuse a push
// too soon and one under a stale subscription id; a client it does not
// match is asked for nothing. A restarted broker still has the
// subscription. Without the flag the APIs are not served.
func TestClientTelemetry(t *testing.T) {
	dir := t.TempDir()
	httpAddr := freeAddr(t)
	args := []string{"--data-dir", dir, "--client-telemetry", "--http-addr", httpAddr}
	_, addr, stop := startTestBroker(t, args...)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, addr)

	createClientMetrics(ctx, t, admin, "producers", map[string]string{clientmetrics.Metrics: "org.apache.kafka.producer.",
		clientmetrics.IntervalMs: "60000", clientmetrics.Match: "client_id=tel-.*"})
	bad := kmsg.NewPtrIncrementalAlterConfigsRequest()
	br := kmsg.NewIncrementalAlterConfigsRequestResource()
	br.ResourceType, br.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "producers"
	bc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	bc.Name, bc.Value = clientmetrics.IntervalMs, kmsg.StringPtr("10")
	br.Configs = append(br.Configs, bc)
	bad.Resources = append(bad.Resources, br)
	if resp, err := bad.RequestWith(ctx, admin); err != nil || resp.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("an interval under the bound: %v %+v, want INVALID_CONFIG", err, resp)
	}
	described := func(addr string) map[string]string {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "producers"
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, newClient(t, addr))
		if err != nil || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("describe: %v %+v", err, resp)
		}
		out := map[string]string{}
		for _, c := range resp.Resources[0].Configs {
			out[c.Name] = *c.Value
		}
		return out
	}
	if got := described(addr); got[clientmetrics.IntervalMs] != "60000" || got[clientmetrics.Match] != "client_id=tel-.*" || len(got) != 3 {
		t.Fatalf("described %v", got)
	}
	for _, v := range []int16{0, 1} {
		r := listConfigResources(t, admin, v, kmsg.ConfigResourceTypeClientMetrics)
		if r.ErrorCode != 0 || len(r.ConfigResources) != 1 || r.ConfigResources[0].Name != "producers" {
			t.Fatalf("ListConfigResources v%d: %+v", v, r)
		}
	}

	subscribe := func(cl *kgo.Client, id [16]byte) *kmsg.GetTelemetrySubscriptionsResponse {
		t.Helper()
		req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
		req.ClientInstanceID = id
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	tel := newClient(t, addr, kgo.ClientID("tel-1"))
	sub := subscribe(tel, [16]byte{})
	if sub.ErrorCode != 0 || sub.ClientInstanceID == ([16]byte{}) || sub.PushIntervalMillis != 60000 ||
		!slices.Equal(sub.RequestedMetrics, []string{"org.apache.kafka.producer."}) || sub.DeltaTemporality || len(sub.AcceptedCompressionTypes) == 0 {
		t.Fatalf("subscription of a matching client: %+v", sub)
	}
	if other := subscribe(newClient(t, addr, kgo.ClientID("billing")), [16]byte{}); other.ErrorCode != 0 || len(other.RequestedMetrics) != 0 || other.PushIntervalMillis != 300000 {
		t.Fatalf("subscription of a client no subscription matches: %+v", other)
	}

	push := func(subID int32, value float64) int16 {
		t.Helper()
		data := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{
			Name: "org.apache.kafka.producer.record.queue.time.avg",
			Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{
				Attributes: []*commonpb.KeyValue{{Key: "topic", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "orders"}}}},
				Value:      &metricspb.NumberDataPoint_AsDouble{AsDouble: value}}}}},
		}}}}}}}
		b, err := proto.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrPushTelemetryRequest()
		req.ClientInstanceID, req.SubscriptionID, req.Metrics = sub.ClientInstanceID, subID, b
		resp, err := req.RequestWith(ctx, tel)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := push(sub.SubscriptionID, 12.5); code != 0 {
		t.Fatalf("push: %v", kerr.ErrorForCode(code))
	}
	if code := push(sub.SubscriptionID, 13); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("a push before the interval: %v, want THROTTLING_QUOTA_EXCEEDED", kerr.ErrorForCode(code))
	}
	if code := push(sub.SubscriptionID+1, 13); code != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("a stale subscription id: %v, want UNKNOWN_SUBSCRIPTION_ID", kerr.ErrorForCode(code))
	}
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `kafka_client_org_apache_kafka_producer_record_queue_time_avg{client_id="tel-1",client_instance_id="` +
		clientmetrics.UUIDString(sub.ClientInstanceID) + `",topic="orders"} 12.5`
	if !strings.Contains(string(body), want) {
		t.Fatalf("/metrics lacks %s", want)
	}

	stop()
	_, addr2, _ := startTestBroker(t, "--data-dir", dir)
	if got := described(addr2); got[clientmetrics.Metrics] != "org.apache.kafka.producer." {
		t.Fatalf("after a restart: %v", got)
	}
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, newClient(t, addr2))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range versions.ApiKeys {
		if k.ApiKey == kmsg.GetTelemetrySubscriptions.Int16() || k.ApiKey == kmsg.PushTelemetry.Int16() {
			t.Fatalf("without --client-telemetry ApiVersions lists %s", kmsg.NameForKey(k.ApiKey))
		}
	}
}
