package telemetry

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/clientmetrics"
)

var t0 = time.Unix(1_700_000_000, 0)

// payload is an OTLP MetricsData with one gauge and one cumulative
// monotonic sum, as a Java client pushes them.
func payload(t *testing.T, queueTime float64, sent int64) []byte {
	t.Helper()
	attr := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	data := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
			{Name: "org.apache.kafka.producer.record.queue.time.avg", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
				DataPoints: []*metricspb.NumberDataPoint{{Attributes: []*commonpb.KeyValue{attr("topic", "orders")},
					Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: queueTime}}}}}},
			{Name: "org.apache.kafka.producer.record.send.total", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
				IsMonotonic: true, AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
				DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsInt{AsInt: sent}}}}}},
		}}},
	}}}
	b, err := proto.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPushRules runs one client instance through Kafka's checks in
// virtual time: a push with its subscription id at its interval is
// taken and exposed; too soon, a stale id, an unknown instance, a codec
// not accepted, too large, a payload that does not decode and a push after
// the terminating one are refused with Kafka's codes.
func TestPushRules(t *testing.T) {
	sub, err := clientmetrics.Parse("producers", map[string]string{clientmetrics.Metrics: "org.apache.kafka.producer.",
		clientmetrics.IntervalMs: "10000", clientmetrics.Match: "client_id=app"})
	if err != nil {
		t.Fatal(err)
	}
	subs := []clientmetrics.Subscription{sub}
	sink := NewSink()
	s := New(1000, sink)
	c := clientmetrics.Client{ClientID: "app"}
	id, plan, code := s.Subscription(t0, c, subs)
	if code != 0 || id == ([16]byte{}) || plan.Interval != 10*time.Second || len(plan.Metrics) != 1 {
		t.Fatalf("subscription: %v %+v code %d", id, plan, code)
	}
	c.InstanceID = id
	push := func(at time.Time, subID int32, terminating bool, codec int8, b []byte) int16 {
		return s.Push(at, c, subs, subID, terminating, codec, b)
	}
	steps := []struct {
		name        string
		at          time.Duration
		subID       int32
		terminating bool
		codec       int8
		body        []byte
		want        int16
	}{
		{"the first push", 0, plan.SubscriptionID, false, 0, payload(t, 12.5, 42), 0},
		{"too soon", 5 * time.Second, plan.SubscriptionID, false, 0, payload(t, 1, 1), kerr.ThrottlingQuotaExceeded.Code},
		{"a stale subscription id", 10 * time.Second, plan.SubscriptionID + 1, false, 0, payload(t, 1, 1), kerr.UnknownSubscriptionID.Code},
		{"gzip at the interval", 10 * time.Second, plan.SubscriptionID, false, int8(batch.CodecGzip), gzipped(t, payload(t, 20, 50)), 0},
		{"a codec not accepted", 20 * time.Second, plan.SubscriptionID, false, 9, payload(t, 1, 1), kerr.UnsupportedCompressionType.Code},
		{"too large", 30 * time.Second, plan.SubscriptionID, false, 0, make([]byte, 1001), kerr.TelemetryTooLarge.Code},
		{"not OTLP", 40 * time.Second, plan.SubscriptionID, false, 0, []byte("not protobuf \xff\xff"), kerr.InvalidRecord.Code},
		{"the terminating push, early", 41 * time.Second, plan.SubscriptionID, true, 0, payload(t, 30, 60), 0},
		{"after the terminating push", 60 * time.Second, plan.SubscriptionID, false, 0, payload(t, 1, 1), kerr.InvalidRequest.Code},
	}
	for _, st := range steps {
		if got := push(t0.Add(st.at), st.subID, st.terminating, st.codec, st.body); got != st.want {
			t.Fatalf("%s: code %d (%v), want %d", st.name, got, kerr.ErrorForCode(got), st.want)
		}
		if st.name == "gzip at the interval" {
			want := `
# HELP kafka_client_org_apache_kafka_producer_record_queue_time_avg pushed by Kafka clients (KIP-714)
# TYPE kafka_client_org_apache_kafka_producer_record_queue_time_avg gauge
kafka_client_org_apache_kafka_producer_record_queue_time_avg{client_id="app",client_instance_id="` + clientmetrics.UUIDString(id) + `",topic="orders"} 20
# HELP kafka_client_org_apache_kafka_producer_record_send_total pushed by Kafka clients (KIP-714)
# TYPE kafka_client_org_apache_kafka_producer_record_send_total counter
kafka_client_org_apache_kafka_producer_record_send_total{client_id="app",client_instance_id="` + clientmetrics.UUIDString(id) + `"} 50
`
			if err := testutil.CollectAndCompare(sink, strings.NewReader(want)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, _, code := s.Subscription(t0.Add(61*time.Second), c, subs); code != 0 {
		t.Fatalf("asking again after the terminating push: code %d", code)
	}
	if got := push(t0.Add(62*time.Second), plan.SubscriptionID, false, 0, payload(t, 1, 1)); got != 0 {
		t.Fatalf("pushing after asking again: code %d", got)
	}
	// An instance another broker subscribed: its id follows from the
	// subscriptions, so this receiver takes its push, not another's id.
	elsewhere := clientmetrics.Client{InstanceID: [16]byte{7}, ClientID: "app"}
	if got := s.Push(t0.Add(63*time.Second), elsewhere, subs, plan.SubscriptionID, false, 0, nil); got != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("an instance never seen here, under another's id: code %d", got)
	}
	if got := s.Push(t0.Add(63*time.Second), elsewhere, subs, clientmetrics.Select(subs, elsewhere).SubscriptionID, false, 0, payload(t, 1, 1)); got != 0 {
		t.Fatalf("an instance another broker subscribed: code %d", got)
	}
	if got := s.Push(t0, clientmetrics.Client{}, subs, 0, false, 0, nil); got != kerr.InvalidRequest.Code {
		t.Fatalf("no instance id: code %d", got)
	}
	// Silent for three intervals, the instance and its series are gone.
	s.Subscription(t0.Add(time.Hour), clientmetrics.Client{ClientID: "other"}, subs)
	if n := testutil.CollectAndCount(sink); n != 0 {
		t.Fatalf("%d series of an expired instance", n)
	}
}

// TestSubscriptionRules: asking again within the interval is throttled,
// unless the subscriptions changed; a client no subscription matches is
// asked for nothing at the default interval.
func TestSubscriptionRules(t *testing.T) {
	s := New(0, NewSink())
	c := clientmetrics.Client{ClientID: "app"}
	id, plan, _ := s.Subscription(t0, c, nil)
	if len(plan.Metrics) != 0 || plan.Interval != clientmetrics.DefaultInterval || s.MaxBytes() != DefaultMaxBytes {
		t.Fatalf("unsubscribed: %+v", plan)
	}
	c.InstanceID = id
	if _, _, code := s.Subscription(t0.Add(time.Minute), c, nil); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("asking again at once: code %d", code)
	}
	sub, _ := clientmetrics.Parse("all", map[string]string{clientmetrics.Metrics: "*"})
	if _, p, code := s.Subscription(t0.Add(2*time.Minute), c, []clientmetrics.Subscription{sub}); code != 0 || len(p.Metrics) != 1 {
		t.Fatalf("after a subscription appeared: code %d, %+v", code, p)
	}
}

var _ prometheus.Collector = (*Sink)(nil)
