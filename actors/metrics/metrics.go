// Package metrics owns kaas's Prometheus series: their names, types, labels
// and help text, in one place. The actors record into the process-wide
// collectors defined here; each broker's HTTP server serves a Registry that
// gathers them with its own scrape-time gauges (NewRegistry).
//
// Hot paths use pre-resolved children (API, Topic, PartitionPhase): the
// label lookup runs once per API key or topic, not once per request.
package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const namespace = "kaas"

var (
	requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "requests_total",
		Help: "Kafka requests answered, by API and the response's top-level error code (NONE when it has none or it is zero).",
	}, []string{"api", "error"})
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "request_duration_seconds",
		Help:    "Time from a request's frame read to its response written to the socket, by API.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"api"})
	partitionErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "partition_errors_total",
		Help: "Per-partition error codes in Produce and Fetch responses, by API and error.",
	}, []string{"api", "error"})
	producedBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "produced_bytes_total",
		Help: "Record batch bytes appended to the logs this broker leads, by topic.",
	}, []string{"topic"})
	producedRecords = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "produced_records_total",
		Help: "Records appended to the logs this broker leads (from the batch headers), by topic.",
	}, []string{"topic"})
	fetchedBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "fetched_bytes_total",
		Help: "Record batch bytes put in Fetch responses, by topic.",
	}, []string{"topic"})
	groupCommitDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "group_commit_duration_seconds",
		Help:    "Duration of one partition group commit (the log's sync to stable storage).",
		Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 15},
	})
	groupCommitBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "group_commit_batch_size",
		Help:    "acks=all produces acknowledged by one group commit.",
		Buckets: []float64{0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024},
	})
	partitions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "partitions",
		Help: "Partition actors in this process by phase: opening (log being opened and recovered), leading, closing.",
	}, []string{"state"})
	partitionsUnhealthy = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Name: "partitions_unhealthy",
		Help: "Partitions led by this process whose storage refuses writes now (KAFKA_STORAGE_ERROR): an append or fsync failed, or an fsync hangs.",
	})
	consumerGroups = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "consumer_groups",
		Help: "Consumer groups this process coordinates, by group state.",
	}, []string{"state"})
	rebalances = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "consumer_group_rebalances_total",
		Help: "Rebalances started by the consumer groups this process coordinates.",
	})
)

// shared are the series every broker's registry gathers.
var shared = []prometheus.Collector{requests, requestDuration, partitionErrors, producedBytes, producedRecords,
	fetchedBytes, groupCommitDuration, groupCommitBatch, partitions, partitionsUnhealthy, consumerGroups, rebalances}

// View is what a broker's scrape-time gauges read (its routing view and the
// disk log's flush count); each func is called once per scrape.
type View struct {
	PartitionsLed     func() int
	Topics            func() int
	ControllerEpoch   func() int64
	AssignmentVersion func() int64
	DiskFsyncs        func() int64
	// CommittedOffsets lists the committed offsets of the groups this
	// broker coordinates (nil: none).
	CommittedOffsets func() []CommittedOffset
	// Partitions gives the offsets and sizes of the partitions this
	// broker leads that answer in time (nil: none). It must return
	// promptly: it runs inside the scrape.
	Partitions func() map[TopicPartition]PartitionStats
	// Volume measures the file system of the data directory: its total
	// bytes and those available (nil: none exported, as in memory).
	Volume func() (capacity, available int64)
	// FetchSessions reports the incremental fetch sessions (KIP-227) open,
	// the partitions they hold and the sessions evicted so far (nil: none).
	FetchSessions func() (sessions, partitions int, evictions int64)
	// ShareSessions reports the share sessions (KIP-932) open and those
	// evicted so far because their client's connection closed (nil: none).
	ShareSessions func() (open, evicted int64)
	// ShareDeadLetters reports the records share groups gave up on that
	// were written to their dead-letter topic (KIP-1191) and those
	// archived without that write.
	ShareDeadLetters func() (written, failed int64)
	// GroupSlotsServed counts the group-coordinator slots this broker
	// serves (nil: none exported).
	GroupSlotsServed func() int
	// Brokers counts the registered brokers of the assignment applied:
	// alive, and fenced (draining or dead) (nil: none).
	Brokers func() (alive, fenced int)
	// Listeners are the broker's Kafka listeners, and Connections the
	// client connections open on one of them (nil: none exported).
	Listeners   []string
	Connections func(listener string) int
}

// NewRegistry returns a registry with the shared series, v's gauges and the
// Go runtime and process collectors. A registry per broker keeps the
// view-derived gauges apart when tests run several brokers in one process;
// the shared series are process-wide.
func NewRegistry(v View) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(shared...)
	r.MustRegister(clusterSeries...)
	r.MustRegister(lagCollector{committed: v.CommittedOffsets, partitions: v.Partitions})
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gauge := func(name, help string, f func() float64) {
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, f))
	}
	gauge("partitions_led", "Partitions this broker's routing view assigns to it.", func() float64 { return float64(v.PartitionsLed()) })
	if v.GroupSlotsServed != nil {
		gauge("group_slots_served", "Group-coordinator slots (partitions of __consumer_offsets) this broker serves.", func() float64 { return float64(v.GroupSlotsServed()) })
	}
	gauge("topics", "Topics in this broker's routing view.", func() float64 { return float64(v.Topics()) })
	gauge("controller_epoch", "Controller epoch of the assignment this broker applies.", func() float64 { return float64(v.ControllerEpoch()) })
	gauge("assignment_version", "Version of the assignment this broker applies.", func() float64 { return float64(v.AssignmentVersion()) })
	r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "disk_fsyncs_total",
		Help: "Device flushes (fdatasync or syncfs) issued by the disk log in this process."},
		func() float64 { return float64(v.DiskFsyncs()) }))
	if v.Brokers != nil {
		for _, state := range []string{"alive", "fenced"} {
			r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "brokers",
				Help: "Registered brokers of the assignment this broker applies, by state: alive, or fenced (draining or dead).", ConstLabels: prometheus.Labels{"state": state}},
				func() float64 {
					alive, fenced := v.Brokers()
					if state == "alive" {
						return float64(alive)
					}
					return float64(fenced)
				}))
		}
	}
	if v.Volume != nil {
		gauge("volume_capacity_bytes", "Total bytes of the file system holding the data directory (the shared volume).",
			func() float64 { c, _ := v.Volume(); return float64(c) })
		gauge("volume_available_bytes", "Bytes of the file system holding the data directory (the shared volume) that the broker can still write.",
			func() float64 { _, a := v.Volume(); return float64(a) })
	}
	if v.FetchSessions != nil {
		gauge("fetch_sessions", "Incremental fetch sessions (KIP-227) this broker keeps.", func() float64 { s, _, _ := v.FetchSessions(); return float64(s) })
		gauge("fetch_session_partitions", "Partitions held by this broker's fetch sessions.", func() float64 { _, p, _ := v.FetchSessions(); return float64(p) })
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "fetch_session_evictions_total",
			Help: "Fetch sessions evicted to make room for new ones."},
			func() float64 { _, _, e := v.FetchSessions(); return float64(e) }))
	}
	if v.Connections != nil {
		for _, l := range v.Listeners {
			r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "connections",
				Help:        "Client connections open, by listener (what max.connections and listener.name.<listener>.max.connections bound).",
				ConstLabels: prometheus.Labels{"listener": l}},
				func() float64 { return float64(v.Connections(l)) }))
		}
	}
	if v.ShareSessions != nil {
		gauge("share_sessions", "Share sessions (KIP-932) this broker keeps.", func() float64 { o, _ := v.ShareSessions(); return float64(o) })
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "share_session_evictions_total",
			Help: "Share sessions dropped because the connection that opened them closed."},
			func() float64 { _, e := v.ShareSessions(); return float64(e) }))
	}
	if v.ShareDeadLetters != nil {
		for _, result := range []string{"written", "failed"} {
			r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: "share_dead_letter_records_total",
				Help:        "Records share groups gave up on (rejected, or at the delivery count limit) with a dead-letter topic (KIP-1191), by result: written to it, or failed (archived without the write: the topic cannot take it, or the write failed after its retries).",
				ConstLabels: prometheus.Labels{"result": result}},
				func() float64 {
					w, f := v.ShareDeadLetters()
					if result == "written" {
						return float64(w)
					}
					return float64(f)
				}))
		}
	}
	return r
}

// ErrorName is the name of a Kafka error code (a label value).
func ErrorName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok && ke.Code == code {
			return ke.Message
		}
	}
	return "CODE_" + strconv.Itoa(int(code))
}

// API is the pre-resolved series of one API key.
type API struct {
	name     string
	ok       prometheus.Counter
	duration prometheus.Observer
	mu       sync.Mutex
	errs     map[int16]prometheus.Counter
	partErrs map[int16]prometheus.Counter
}

// apiTable caches ForAPI by key: one atomic load per response.
var apiTable [128]atomic.Pointer[API]

var apis sync.Map // int16 → *API, for keys past apiTable

// ForAPI returns the series of API key key; the result is cached per key.
func ForAPI(key int16) *API {
	inTable := key >= 0 && int(key) < len(apiTable)
	if inTable {
		if a := apiTable[key].Load(); a != nil {
			return a
		}
	}
	if a, ok := apis.Load(key); ok {
		return a.(*API)
	}
	name := kmsg.NameForKey(key)
	if name == "Unknown" {
		name = "Unknown" + strconv.Itoa(int(key))
	}
	a := &API{name: name, ok: requests.WithLabelValues(name, "NONE"), duration: requestDuration.WithLabelValues(name),
		errs: map[int16]prometheus.Counter{}, partErrs: map[int16]prometheus.Counter{}}
	got, _ := apis.LoadOrStore(key, a)
	if inTable {
		apiTable[key].Store(got.(*API))
	}
	return got.(*API)
}

// Request counts one answered request with top-level error code code.
func (a *API) Request(code int16) {
	if code == 0 {
		a.ok.Inc()
		return
	}
	a.child(a.errs, requests, code).Inc()
}

// PartitionError counts one partition response carrying error code code.
func (a *API) PartitionError(code int16) {
	if code != 0 {
		a.child(a.partErrs, partitionErrors, code).Inc()
	}
}

func (a *API) child(m map[int16]prometheus.Counter, vec *prometheus.CounterVec, code int16) prometheus.Counter {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := m[code]
	if !ok {
		c = vec.WithLabelValues(a.name, ErrorName(code))
		m[code] = c
	}
	return c
}

// Duration observes one request's time from frame read to response written.
func (a *API) Duration(seconds float64) { a.duration.Observe(seconds) }

// Topic is the pre-resolved series of one topic.
type Topic struct {
	producedBytes, producedRecords, fetchedBytes prometheus.Counter
}

var topics sync.Map // string → *Topic

// ForTopic returns the series of topic name; the result is cached per topic.
func ForTopic(name string) *Topic {
	if t, ok := topics.Load(name); ok {
		return t.(*Topic)
	}
	t := &Topic{producedBytes: producedBytes.WithLabelValues(name), producedRecords: producedRecords.WithLabelValues(name),
		fetchedBytes: fetchedBytes.WithLabelValues(name)}
	got, _ := topics.LoadOrStore(name, t)
	return got.(*Topic)
}

// Produced counts one appended batch of records records and bytes bytes.
func (t *Topic) Produced(bytes, records int) {
	t.producedBytes.Add(float64(bytes))
	t.producedRecords.Add(float64(records))
}

// Fetched counts bytes of record batches put in a Fetch response.
func (t *Topic) Fetched(bytes int) { t.fetchedBytes.Add(float64(bytes)) }

// GroupCommitDuration observes one group commit's sync.
func GroupCommitDuration(seconds float64) { groupCommitDuration.Observe(seconds) }

// GroupCommitReleased observes the acks=all produces one group commit answered.
func GroupCommitReleased(produces int) { groupCommitBatch.Observe(float64(produces)) }

// PartitionPhase is the gauge of partitions in one phase ("opening",
// "leading", "closing"), resolved once by the caller.
func PartitionPhase(state string) prometheus.Gauge { return partitions.WithLabelValues(state) }

// PartitionsUnhealthy is the gauge of partitions whose storage refuses
// writes.
func PartitionsUnhealthy() prometheus.Gauge { return partitionsUnhealthy }

// GroupState is the gauge of consumer groups in one state.
func GroupState(state string) prometheus.Gauge { return consumerGroups.WithLabelValues(state) }

// Rebalance counts one rebalance started.
func Rebalance() { rebalances.Inc() }
