package telemetry

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/kaas-project/kaas/storage/clientmetrics"
)

// MaxSeries bounds the series one client instance keeps: a push past it
// keeps its first MaxSeries points.
const MaxSeries = 10_000

// Prefix starts every client series' name, which keeps what clients name
// apart from the broker's own series.
const Prefix = "kafka_client_"

// Sink keeps the latest value of every series the clients pushed and
// exposes them as a Prometheus collector: a gauge (or a counter, for a
// monotonic sum) per metric, labeled with the client's instance id and
// client id and the data point's attributes. Histograms and summaries are
// not kept.
type Sink struct {
	mu     sync.Mutex
	series map[[16]byte]map[string]point // instance -> series key -> value
}

type point struct {
	name    string // Prometheus name
	counter bool
	labels  map[string]string
	value   float64
}

// NewSink returns an empty sink.
func NewSink() *Sink { return &Sink{series: map[[16]byte]map[string]point{}} }

// record replaces c's series with the numeric data points of data.
func (s *Sink) record(_ time.Time, c clientmetrics.Client, _ clientmetrics.Plan, data *metricspb.MetricsData) {
	pts := map[string]point{}
	base := map[string]string{"client_instance_id": clientmetrics.UUIDString(c.InstanceID), "client_id": c.ClientID}
	for _, rm := range data.GetResourceMetrics() {
		res := attributes(rm.GetResource().GetAttributes())
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				name := Prefix + sanitize(m.GetName())
				var dps []*metricspb.NumberDataPoint
				counter := false
				switch d := m.GetData().(type) {
				case *metricspb.Metric_Gauge:
					dps = d.Gauge.GetDataPoints()
				case *metricspb.Metric_Sum:
					dps = d.Sum.GetDataPoints()
					counter = d.Sum.GetIsMonotonic() && d.Sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
				default:
					continue
				}
				for _, dp := range dps {
					labels := map[string]string{}
					for k, v := range res {
						labels[k] = v
					}
					for k, v := range attributes(dp.GetAttributes()) {
						labels[k] = v
					}
					for k, v := range base {
						labels[k] = v
					}
					value := dp.GetAsDouble()
					if i, ok := dp.GetValue().(*metricspb.NumberDataPoint_AsInt); ok {
						value = float64(i.AsInt)
					}
					if len(pts) < MaxSeries {
						pts[seriesKey(name, labels)] = point{name: name, counter: counter, labels: labels, value: value}
					}
				}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.series[c.InstanceID] = pts
}

func (s *Sink) forget(id [16]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.series, id)
}

// attributes are OTLP attributes as labels (names sanitized, values as
// text).
func attributes(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		var s string
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			s = x.StringValue
		case *commonpb.AnyValue_IntValue:
			s = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_DoubleValue:
			s = fmt.Sprint(x.DoubleValue)
		case *commonpb.AnyValue_BoolValue:
			s = fmt.Sprint(x.BoolValue)
		default:
			continue
		}
		out[sanitize(kv.GetKey())] = s
	}
	return out
}

// sanitize makes s a Prometheus name: letters, digits and underscores,
// not starting with a digit.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= '0' && c <= '9' && i > 0) {
			b[i] = '_'
		}
	}
	return string(b)
}

func seriesKey(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(name)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + labels[k])
	}
	return b.String()
}

// Describe sends nothing: the series are whatever clients push (an
// unchecked collector).
func (s *Sink) Describe(chan<- *prometheus.Desc) {}

// Collect sends every kept series. A metric's series all carry the union
// of the label names seen on it (empty where a point lacks one), and one
// name is one type, the first seen: the registry refuses a family whose
// series disagree, and a client must not break the broker's /metrics.
func (s *Sink) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	var all []point
	for _, pts := range s.series {
		for _, p := range pts {
			all = append(all, p)
		}
	}
	s.mu.Unlock()
	names := map[string][]string{}
	counter := map[string]bool{}
	for _, p := range all {
		if _, ok := names[p.name]; !ok {
			counter[p.name] = p.counter
		}
		for k := range p.labels {
			if !slices.Contains(names[p.name], k) {
				names[p.name] = append(names[p.name], k)
			}
		}
	}
	descs := map[string]*prometheus.Desc{}
	for name, keys := range names {
		slices.Sort(keys)
		descs[name] = prometheus.NewDesc(name, "pushed by Kafka clients (KIP-714)", keys, nil)
	}
	seen := map[string]bool{}
	for _, p := range all {
		keys := names[p.name]
		values := make([]string, len(keys))
		for i, k := range keys {
			values[i] = p.labels[k]
		}
		if k := seriesKey(p.name, p.labels); seen[k] {
			continue
		} else {
			seen[k] = true
		}
		typ := prometheus.GaugeValue
		if counter[p.name] {
			typ = prometheus.CounterValue
		}
		if m, err := prometheus.NewConstMetric(descs[p.name], typ, p.value, values...); err == nil {
			ch <- m
		}
	}
}
