package bench

import (
	"fmt"
	"io"
	"time"
)

// Latency is a summary of a Histogram in milliseconds.
type Latency struct {
	Count uint64  `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

// Summarize is h's summary; nil if h is empty.
func Summarize(h *Histogram) *Latency {
	if h.Count() == 0 {
		return nil
	}
	return &Latency{
		Count: h.Count(),
		Min:   millis(h.Min()),
		Mean:  millis(h.Mean()),
		P50:   millis(h.Quantile(0.50)),
		P95:   millis(h.Quantile(0.95)),
		P99:   millis(h.Quantile(0.99)),
		P999:  millis(h.Quantile(0.999)),
		Max:   millis(h.Max()),
	}
}

// Result is what a run measured; `kaas bench --json` prints it.
type Result struct {
	Mode        string  `json:"mode"`
	Topic       string  `json:"topic"`
	RecordSize  int     `json:"record_size"`
	Acks        string  `json:"acks,omitempty"`
	Idempotent  bool    `json:"idempotent"`
	Compression string  `json:"compression,omitempty"`
	TargetRate  float64 `json:"target_rate"`

	// Sent is records handed to the producer, Acked those the cluster
	// acknowledged, Failed those that ended with an error; Sent = Acked +
	// Failed once a run is over.
	Sent   int64 `json:"records_sent"`
	Acked  int64 `json:"records_acked"`
	Failed int64 `json:"records_failed"`
	// Consumed is records read (consume and e2e; e2e counts only this
	// run's records).
	Consumed int64 `json:"records_consumed"`

	// Records and Bytes are what the throughput counts: acknowledged
	// records (produce), read records (consume, e2e); bytes of values.
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"`
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`

	// Latency is the mode's latency in ms: acknowledgement (produce) or
	// end to end (e2e); none for consume. AckLatency is the producer's
	// acknowledgement latency of an e2e run.
	Latency    *Latency `json:"latency_ms,omitempty"`
	AckLatency *Latency `json:"ack_latency_ms,omitempty"`

	FirstError string `json:"first_error,omitempty"`

	// latency is the histogram Latency summarises, for plots.
	latency *Histogram
}

// LatencyCDF is the cumulative distribution of the mode's latency (what
// Latency summarises); nil for consume runs and results read from JSON.
func (r *Result) LatencyCDF() []CDFPoint {
	if r.latency == nil {
		return nil
	}
	return r.latency.CDF()
}

// finish fills the throughput fields from Records, Bytes and elapsed.
func (r *Result) finish(elapsed time.Duration) {
	r.Seconds = elapsed.Seconds()
	r.RecordsPerSec, r.MBPerSec = Throughput(r.Records, r.Bytes, elapsed)
}

// WriteText prints r for a person.
func (r *Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "mode %s, topic %s, %d-byte records", r.Mode, r.Topic, r.RecordSize)
	if r.Mode != ModeConsume {
		fmt.Fprintf(w, ", acks %s, idempotent %t, compression %s", r.Acks, r.Idempotent, r.Compression)
	}
	fmt.Fprintln(w)
	if r.Mode != ModeConsume {
		fmt.Fprintf(w, "records: %d sent, %d acknowledged, %d failed\n", r.Sent, r.Acked, r.Failed)
	}
	if r.Mode != ModeProduce {
		fmt.Fprintf(w, "records: %d consumed\n", r.Consumed)
	}
	fmt.Fprintf(w, "throughput: %.0f records/s, %.2f MB/s (%d records, %d bytes in %.2f s)\n",
		r.RecordsPerSec, r.MBPerSec, r.Records, r.Bytes, r.Seconds)
	writeLatency(w, "latency", r.Latency)
	writeLatency(w, "ack latency", r.AckLatency)
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error: %s\n", r.FirstError)
	}
}

func writeLatency(w io.Writer, name string, l *Latency) {
	if l == nil {
		return
	}
	fmt.Fprintf(w, "%s (ms): p50 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  (mean %.3f, %d samples)\n",
		name, l.P50, l.P95, l.P99, l.P999, l.Max, l.Mean, l.Count)
}
