package bench

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHistogramQuantilesWithinPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		gen  func() time.Duration
		n    int
	}{
		{"one value", func() time.Duration { return 3 * time.Millisecond }, 1},
		{"tiny exact values", func() time.Duration { return time.Duration(rng.IntN(200)) }, 1000},
		{"uniform ms", func() time.Duration { return time.Duration(rng.Int64N(int64(50 * time.Millisecond))) }, 10000},
		{"exponential", func() time.Duration { return time.Duration(rng.ExpFloat64() * float64(2*time.Millisecond)) }, 20000},
		{"long tail", func() time.Duration {
			if rng.IntN(1000) == 0 {
				return time.Duration(rng.Int64N(int64(10 * time.Second)))
			}
			return time.Duration(rng.Int64N(int64(time.Millisecond)))
		}, 50000},
		{"huge", func() time.Duration { return time.Duration(1<<62 + rng.Int64N(1<<60)) }, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			vals := make([]time.Duration, tc.n)
			for i := range vals {
				vals[i] = tc.gen()
				h.Record(vals[i])
			}
			slices.Sort(vals)
			if h.Count() != uint64(tc.n) || h.Min() != vals[0] || h.Max() != vals[len(vals)-1] {
				t.Fatalf("count/min/max = %d/%s/%s, want %d/%s/%s", h.Count(), h.Min(), h.Max(), tc.n, vals[0], vals[len(vals)-1])
			}
			prev := time.Duration(0)
			for _, q := range []float64{0.001, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1} {
				got, want := h.Quantile(q), ExactQuantile(vals, q)
				// The bucket's upper end: never below the exact value, at most
				// 1/128 above it.
				if got < want || float64(got-want) > float64(want)/128 {
					t.Errorf("q%g = %d, exact %d (want within +0.8%%)", q, got, want)
				}
				if got < prev {
					t.Errorf("q%g = %s below a lower quantile's %s", q, got, prev)
				}
				prev = got
			}
			if h.Quantile(1) != h.Max() {
				t.Errorf("q1 = %s, max %s", h.Quantile(1), h.Max())
			}
		})
	}
}

func TestHistogramEmptyNegativeAndMerge(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Mean() != 0 || Summarize(&h) != nil {
		t.Fatal("empty histogram should answer zeros and no summary")
	}
	h.Record(-time.Second)
	if h.Min() != 0 || h.Quantile(0.5) != 0 {
		t.Fatalf("negative duration: min %s, p50 %s; want 0", h.Min(), h.Quantile(0.5))
	}
	var a, b Histogram
	for i := 1; i <= 100; i++ {
		a.Record(time.Duration(i) * time.Microsecond)
		b.Record(time.Duration(i+100) * time.Microsecond)
	}
	a.Merge(&b)
	if a.Count() != 200 || a.Min() != time.Microsecond || a.Max() != 200*time.Microsecond {
		t.Fatalf("merged count/min/max = %d/%s/%s", a.Count(), a.Min(), a.Max())
	}
	if got := a.Quantile(0.5); got < 100*time.Microsecond || got > 101*time.Microsecond {
		t.Fatalf("merged p50 = %s, want ~100µs", got)
	}
	if got := a.Mean(); got != 100500*time.Nanosecond {
		t.Fatalf("merged mean = %s, want 100.5µs", got)
	}
}

func TestBucketsAreContiguous(t *testing.T) {
	// Every value lands in a bucket whose upper end is at or above it, and
	// the previous bucket's upper end is below it.
	for _, v := range []int64{0, 1, 127, 128, 255, 256, 257, 511, 512, 1000, 1 << 20, 1<<20 + 12345, 1<<62 - 1, 1<<63 - 1} {
		i := bucketOf(v)
		if bucketHigh(i) < v || (i > 0 && bucketHigh(i-1) >= v) {
			t.Errorf("value %d: bucket %d spans (%d, %d]", v, i, bucketHigh(i-1), bucketHigh(i))
		}
		if i >= histBuckets {
			t.Errorf("value %d: bucket %d out of range %d", v, i, histBuckets)
		}
	}
}

func TestExactQuantileNearestRank(t *testing.T) {
	vals := []time.Duration{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0, 10}, {0.1, 10}, {0.11, 20}, {0.5, 50}, {0.95, 100}, {0.99, 100}, {1, 100}} {
		if got := ExactQuantile(vals, tc.q); got != tc.want {
			t.Errorf("q%g = %d, want %d", tc.q, got, tc.want)
		}
	}
	if ExactQuantile(nil, 0.5) != 0 {
		t.Error("empty: want 0")
	}
}

func TestPacer(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tc := range []struct {
		name string
		rate float64
		n    int64
		now  time.Duration // after start
		want time.Duration
	}{
		{"unlimited", 0, 1e9, 0, 0},
		{"first record at once", 100, 0, 0, 0},
		{"second record waits a period", 100, 1, 0, 10 * time.Millisecond},
		{"partly waited", 100, 1, 4 * time.Millisecond, 6 * time.Millisecond},
		{"behind schedule: no wait", 100, 5, time.Second, 0},
		{"fractional rate", 0.5, 1, 0, 2 * time.Second},
		{"high rate", 1e6, 1000, 0, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Pacer{Start: start, Rate: tc.rate}
			if got := p.Wait(tc.n, start.Add(tc.now)); got != tc.want {
				t.Fatalf("Wait(%d) = %s, want %s", tc.n, got, tc.want)
			}
		})
	}
}

func TestThroughputAndProgressLine(t *testing.T) {
	rps, mbps := Throughput(5000, 5e6, 2*time.Second)
	if rps != 2500 || mbps != 2.5 {
		t.Fatalf("Throughput = %g records/s, %g MB/s; want 2500, 2.5", rps, mbps)
	}
	if rps, mbps := Throughput(10, 10, 0); rps != 0 || mbps != 0 {
		t.Fatalf("zero elapsed: %g, %g; want 0, 0", rps, mbps)
	}
	start := time.Unix(0, 0)
	prev := Counters{At: start.Add(time.Second), Records: 1000, Bytes: 1e6}
	cur := Counters{At: start.Add(2 * time.Second), Records: 3000, Bytes: 3e6}
	line := ProgressLine(start, prev, cur, 1500*time.Microsecond, true)
	for _, want := range []string{"2.0s", "2000 records/s", "2.00 MB/s", "p99 1.500 ms", "total 3000 records"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
	if line := ProgressLine(start, prev, cur, 0, false); strings.Contains(line, "p99") {
		t.Errorf("progress line without latency %q names a p99", line)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Brokers: []string{"b:9092"}, Topic: "t", Partitions: 1, Mode: ModeProduce, RecordSize: 100,
		Duration: time.Second, Acks: "all", Idempotent: true, Compression: "none"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no brokers", func(c *Config) { c.Brokers = nil }, "no brokers"},
		{"no topic", func(c *Config) { c.Topic = "" }, "no topic"},
		{"zero partitions", func(c *Config) { c.Partitions = 0 }, "partitions"},
		{"neither count nor duration", func(c *Config) { c.Duration = 0 }, "count, a duration"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate"},
		{"bad mode", func(c *Config) { c.Mode = "both" }, "mode"},
		{"e2e too small", func(c *Config) { c.Mode = ModeE2E; c.RecordSize = 8 }, "at least 16"},
		{"bad acks", func(c *Config) { c.Acks = "2" }, "acks"},
		{"idempotent acks 1", func(c *Config) { c.Acks = "1" }, "needs acks all"},
		{"bad compression", func(c *Config) { c.Compression = "brotli" }, "compression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		c := ok
		c.Compression = codec
		if err := c.Validate(); err != nil {
			t.Errorf("compression %s: %v", codec, err)
		}
	}
	c := ok
	c.Acks, c.Idempotent = "0", false
	if err := c.Validate(); err != nil {
		t.Errorf("acks 0 without idempotence: %v", err)
	}
}

func TestParseProcStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		err        bool
	}{
		{"plain", "1234 (kaas) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 100 0 0", 3250 * time.Millisecond, false},
		{"command with spaces and parens", "99 (a (b) c) R 1 1 1 0 -1 0 0 0 0 0 7 3 0 0", 100 * time.Millisecond, false},
		{"truncated", "99 (kaas) S 1 1", 0, true},
		{"no command", "garbage", 0, true},
		{"not a number", "1 (k) S 1 1 1 0 -1 0 0 0 0 0 x 3", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStatCPU(tc.stat)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("parseProcStatCPU = %s, %v; want %s, error %t", got, err, tc.want, tc.err)
			}
		})
	}
}
