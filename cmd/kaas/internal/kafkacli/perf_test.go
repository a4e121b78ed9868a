package kafkacli

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kaas-project/kaas/cmd/kaas/internal/bench"
)

func TestPerfFixedRoundsAsJava(t *testing.T) {
	for _, c := range []struct {
		f    float64
		prec int
		want string
	}{
		{2.25, 1, "2.3"}, // Java rounds half up; Go's %.1f gives 2.2
		{2.125, 2, "2.13"},
		{0.05, 1, "0.1"},   // 0.05 is a little above 0.05 in binary
		{0.045, 2, "0.04"}, // and 0.045 a little below
		{1234.5678, 4, "1234.5678"},
		{0, 2, "0.00"},
		{-1.5, 0, "-2"},
		{-0.001, 1, "0.0"},
		{math.Inf(1), 1, "Infinity"},
		{math.NaN(), 4, "NaN"},
	} {
		if got := perfFixed(c.f, c.prec); got != c.want {
			t.Errorf("perfFixed(%v, %d) = %q, want %q", c.f, c.prec, got, c.want)
		}
	}
}

func TestPerfDoubleAsJava(t *testing.T) {
	for f, want := range map[float64]string{2: "2.0", 1.234567: "1.234567", 0.5: "0.5", 12345678: "1.2345678E7", 0.0001: "1.0E-4"} {
		if got := perfDouble(f); got != want {
			t.Errorf("perfDouble(%v) = %q, want %q", f, got, want)
		}
	}
}

// Kafka's percentile is the sorted value at index floor(q*n).
func TestPerfPercentileIndex(t *testing.T) {
	var h bench.Histogram
	for ms := int64(1); ms <= 200; ms++ {
		perfRecordMs(&h, ms)
	}
	for q, want := range map[float64]int64{0.5: 101, 0.95: 191, 0.99: 199, 0.999: 200} {
		if got := perfPercentile(&h, q); got != want {
			t.Errorf("percentile %v of 1..200 = %d, want %d", q, got, want)
		}
	}
}

func TestPerfDateFormat(t *testing.T) {
	tm := time.Date(2024, 3, 7, 15, 4, 5, 67e6, time.UTC)
	for pat, want := range map[string]string{
		"yyyy-MM-dd HH:mm:ss:SSS":     "2024-03-07 15:04:05:067",
		"yy/M/d h:mm a":               "24/3/7 3:04 PM",
		"EEE, d MMM yyyy 'at' HH''mm": "Thu, 7 Mar 2024 at 15'04",
		"yyyy-MM-dd'T'HH:mm:ssXXX":    "2024-03-07T15:04:05Z",
	} {
		f, err := parsePerfDateFormat(pat)
		if err != nil {
			t.Fatalf("%q: %v", pat, err)
		}
		if got := f(tm); got != want {
			t.Errorf("%q: got %q, want %q", pat, got, want)
		}
	}
	for _, bad := range []string{"yyyy-MM-dd 'unterminated", "yyyy-ww"} {
		if _, err := parsePerfDateFormat(bad); err == nil || !strings.Contains(err.Error(), "--date-format") {
			t.Errorf("%q: err %v, want a --date-format refusal", bad, err)
		}
	}
}

func TestPerfExpandNargs(t *testing.T) {
	got := perfExpandNargs([]string{"--topic", "t", "--producer-props", "a=1", "b=2", "--throughput", "-1", "--producer-props"}, "producer-props")
	want := []string{"--topic", "t", "--producer-props", "a=1", "--producer-props", "b=2", "--throughput", "-1", "--producer-props"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The window and total lines, formatted as Kafka's Stats prints them.
func TestProducerPerfStatsLines(t *testing.T) {
	var b strings.Builder
	t0 := time.Unix(1000, 0)
	s := &producerPerfStats{out: &b, start: t0, windowStart: t0, reportEvery: 5 * time.Second}
	s.record(2, 1024, t0.Add(time.Second))
	s.record(3, 1024, t0.Add(5*time.Second)) // closes the window: 2 records in 5 s
	s.record(7, 1024, t0.Add(6*time.Second))
	s.printTotal(t0.Add(8 * time.Second))
	want := "2 records sent, 0.4 records/sec (0.00 MB/sec), 2.5 ms avg latency, 3.0 ms max latency.\n" +
		"3 records sent, 0.4 records/sec (0.00 MB/sec), 4.00 ms avg latency, 7.00 ms max latency, 3 ms 50th, 7 ms 95th, 7 ms 99th, 7 ms 99.9th.\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
