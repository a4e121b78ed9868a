package bench

import (
	"fmt"
	"time"
)

// Pacer spreads records evenly at a target rate from a start time: record
// n (0-based) is due at start + n/rate. Pacing by the schedule, not by the
// gap since the last record, lets a run that fell behind catch up, so the
// long-run rate is the target whatever the sleep granularity.
type Pacer struct {
	Start time.Time
	Rate  float64 // records per second; <= 0 is unlimited
}

// Wait is how long record n must wait at now before it may be sent (0 if
// it is due or the rate is unlimited).
func (p Pacer) Wait(n int64, now time.Time) time.Duration {
	if p.Rate <= 0 {
		return 0
	}
	due := p.Start.Add(time.Duration(float64(n) / p.Rate * float64(time.Second)))
	if w := due.Sub(now); w > 0 {
		return w
	}
	return 0
}

// Throughput is records and bytes over elapsed as records/s and MB/s
// (10^6 bytes); zero rates for a non-positive elapsed.
func Throughput(records, bytes int64, elapsed time.Duration) (recordsPerSec, mbPerSec float64) {
	s := elapsed.Seconds()
	if s <= 0 {
		return 0, 0
	}
	return float64(records) / s, float64(bytes) / s / 1e6
}

// Counters are a run's running totals at one moment, for the progress line.
type Counters struct {
	At      time.Time
	Records int64
	Bytes   int64
}

// ProgressLine is the live line printed every interval: the rates between
// prev and cur, the p99 latency so far (omitted when hasLatency is false)
// and the running total.
func ProgressLine(start time.Time, prev, cur Counters, p99 time.Duration, hasLatency bool) string {
	rps, mbps := Throughput(cur.Records-prev.Records, cur.Bytes-prev.Bytes, cur.At.Sub(prev.At))
	line := fmt.Sprintf("%6.1fs %10.0f records/s %8.2f MB/s", cur.At.Sub(start).Seconds(), rps, mbps)
	if hasLatency {
		line += fmt.Sprintf("  p99 %s", fmtMillis(p99))
	}
	return line + fmt.Sprintf("  total %d records", cur.Records)
}

// fmtMillis prints d in milliseconds with three significant decimals.
func fmtMillis(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", millis(d))
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
