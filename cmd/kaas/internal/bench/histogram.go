package bench

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: each power of two is split into
// 2^(subBits-1) equal buckets, so a value is known to within 1/2^(subBits-1)
// of itself (0.8%), and values below 2^subBits are exact.
const subBits = 8

// histBuckets covers every non-negative int64: exponents 0..64-subBits.
const histBuckets = (64-subBits+1)<<(subBits-1) + 1<<(subBits-1)

// Histogram is an HDR-style log-linear histogram of durations (nanoseconds)
// with a fixed 0.8% relative precision and constant memory, so a run of
// any length can be summarised and queried for percentiles while it runs.
// Count, Min, Max and Mean are exact. The zero value is empty and ready.
// It is not safe for concurrent use.
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	min, max int64
	sum      float64
}

// bucketOf is the bucket index of v >= 0.
func bucketOf(v int64) int {
	e := bits.Len64(uint64(v)) - subBits
	if e <= 0 {
		return int(v)
	}
	m := v >> e // in [2^(subBits-1), 2^subBits)
	return e<<(subBits-1) + int(m)
}

// bucketHigh is the largest value that falls in bucket i.
func bucketHigh(i int) int64 {
	if i < 1<<subBits {
		return int64(i)
	}
	e := i>>(subBits-1) - 1
	m := int64(i - e<<(subBits-1))
	hi := (m+1)<<e - 1
	if hi < 0 { // the top bucket reaches past MaxInt64
		return math.MaxInt64
	}
	return hi
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of values recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest value recorded (0 if none).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Min is the smallest value recorded (0 if none).
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Mean is the average of the values recorded (0 if none).
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Quantile is the nearest-rank q-quantile (0 < q <= 1): the smallest
// recorded value with at least q of all values at or below it, to within
// the histogram's precision (it answers its bucket's upper end, clamped to
// the exact min and max). 0 if nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.AtRank(nearestRank(q, h.n))
}

// AtRank is the rank-th smallest recorded value (1-based; clamped to 1..
// Count), to within the histogram's precision as Quantile: for callers
// whose percentile picks its rank by another rule than nearest rank
// (Kafka's perf tools take index floor(q*n) of the sorted values). 0 if
// nothing was recorded.
func (h *Histogram) AtRank(rank uint64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := min(max(bucketHigh(i), h.min), h.max)
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}

// nearestRank is the 1-based rank of the q-quantile among n sorted values:
// ceil(q*n), at least 1 and at most n.
func nearestRank(q float64, n uint64) uint64 {
	r := uint64(math.Ceil(q * float64(n)))
	return min(max(r, 1), n)
}

// ExactQuantile is the nearest-rank q-quantile of sorted (ascending)
// values: the reference Histogram.Quantile approximates. 0 if empty.
func ExactQuantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[nearestRank(q, uint64(len(sorted)))-1]
}

// CDFPoint is one step of a cumulative distribution: Fraction of all
// values are at or below Value.
type CDFPoint struct {
	Value    time.Duration
	Fraction float64
}

// CDF is h's cumulative distribution, one point per non-empty bucket (its
// upper end, clamped to the exact min and max), ending at (Max, 1); nil
// if nothing was recorded.
func (h *Histogram) CDF() []CDFPoint {
	if h.n == 0 {
		return nil
	}
	var pts []CDFPoint
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		v := min(max(bucketHigh(i), h.min), h.max)
		pts = append(pts, CDFPoint{Value: time.Duration(v), Fraction: float64(seen) / float64(h.n)})
		if seen == h.n {
			break
		}
	}
	return pts
}
