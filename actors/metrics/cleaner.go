package metrics

import (
	"sort"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// The log cleaner's series (cleanup.policy=compact), per partition this
// process leads.
var (
	cleanerDirtyRatio = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "cleaner_dirty_ratio",
		Help: "Dirty bytes over all sealed bytes of a compacted partition, as of its last cleaner check.",
	}, []string{"topic", "partition"})
	cleanerLastClean = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "cleaner_last_clean_timestamp_seconds",
		Help: "Unix time of a compacted partition's last completed cleaning pass.",
	}, []string{"topic", "partition"})
	cleanerCleanedBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "cleaner_cleaned_bytes_total",
		Help: "Bytes the log cleaner read from compacted partitions' segments, by topic.",
	}, []string{"topic"})
)

func init() { shared = append(shared, cleanerDirtyRatio, cleanerLastClean, cleanerCleanedBytes) }

// CleanerState is one compacted partition's cleaner state (/healthz).
type CleanerState struct {
	Topic           string  `json:"topic"`
	Partition       int32   `json:"partition"`
	DirtyRatio      float64 `json:"dirty_ratio"`
	LastCleanUnix   float64 `json:"last_clean_unix,omitempty"`
	CleanedTo       int64   `json:"cleaned_to"`
	LastError       string  `json:"last_error,omitempty"`
	CleanedBytesSum int64   `json:"cleaned_bytes"`
}

var (
	cleanersMu sync.Mutex
	cleaners   = map[[2]string]*CleanerState{}
)

// CleanerChecked records a cleaner check of a partition: its dirty ratio,
// and when a pass ran (cleanedAt > 0) what it read.
func CleanerChecked(topic string, partition int32, dirty float64, cleanedTo int64, cleanedAt float64, readBytes int64, err error) {
	p := strconv.Itoa(int(partition))
	cleanerDirtyRatio.WithLabelValues(topic, p).Set(dirty)
	cleanersMu.Lock()
	defer cleanersMu.Unlock()
	k := [2]string{topic, p}
	s := cleaners[k]
	if s == nil {
		s = &CleanerState{Topic: topic, Partition: partition}
		cleaners[k] = s
	}
	s.DirtyRatio, s.CleanedTo, s.LastError = dirty, cleanedTo, ""
	if err != nil {
		s.LastError = err.Error()
	}
	if readBytes > 0 {
		cleanerCleanedBytes.WithLabelValues(topic).Add(float64(readBytes))
		s.CleanedBytesSum += readBytes
	}
	if cleanedAt > 0 {
		cleanerLastClean.WithLabelValues(topic, p).Set(cleanedAt)
		s.LastCleanUnix = cleanedAt
	}
}

// CleanerForget drops a partition's cleaner series (it is no longer led here).
func CleanerForget(topic string, partition int32) {
	p := strconv.Itoa(int(partition))
	cleanerDirtyRatio.DeleteLabelValues(topic, p)
	cleanerLastClean.DeleteLabelValues(topic, p)
	cleanersMu.Lock()
	delete(cleaners, [2]string{topic, p})
	cleanersMu.Unlock()
}

// Cleaners returns every compacted partition's cleaner state, sorted.
func Cleaners() []CleanerState {
	cleanersMu.Lock()
	out := make([]CleanerState, 0, len(cleaners))
	for _, s := range cleaners {
		out = append(out, *s)
	}
	cleanersMu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}
