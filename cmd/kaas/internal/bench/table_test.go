package bench

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseRecordSizes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		minSize int
		want    []int
		err     string
	}{
		{"1024", 0, []int{1024}, ""},
		{"100,1024,16384", 0, []int{100, 1024, 16384}, ""},
		{" 100 , 1k, 16KiB,4K ", 0, []int{100, 1024, 16384, 4096}, ""},
		{"16384,100", 0, []int{16384, 100}, ""},
		{"0", 0, []int{0}, ""},
		{"", 0, nil, "empty entry"},
		{"100,,1024", 0, nil, "empty entry"},
		{"100,", 0, nil, "empty entry"},
		{"abc", 0, nil, "not a number"},
		{"1.5k", 0, nil, "not a number"},
		{"-5", 0, nil, "at least 0"},
		{"8,1024", 16, nil, "at least 16"},
		{"1024,1k", 0, nil, "given twice"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRecordSizes(tc.in, tc.minSize)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseRecordSizes(%q) = %v, %v; want an error naming %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseRecordSizes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int]string{0: "0 B", 100: "100 B", 1000: "1000 B", 1024: "1 KiB", 1536: "1536 B", 16384: "16 KiB", 1 << 20: "1024 KiB"} {
		if got := SizeLabel(n); got != want {
			t.Errorf("SizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

// compareRows is a comparison at two record sizes, given largest first,
// with kfake as the baseline of each.
func compareRows() []CompareRow {
	res := func(mbps, rps, bytes float64, lat *Latency) *Result {
		return &Result{MBPerSec: mbps, RecordsPerSec: rps, Bytes: int64(bytes), Latency: lat}
	}
	return []CompareRow{
		{Target: "kfake", RecordSize: 1024, CPUSeconds: 10, ConsumeCPUSeconds: 4,
			Result: res(100, 97656, 1e9, &Latency{P50: 4, P99: 10}), Consume: res(200, 0, 1e9, nil)},
		{Target: "kaas", RecordSize: 1024, CPUSeconds: 4, ConsumeCPUSeconds: 1,
			Result: res(400, 390625, 2e9, &Latency{P50: 1, P99: 5}), Consume: res(700, 0, 2e9, nil)},
		{Target: "kfake", RecordSize: 100, CPUSeconds: 8, Result: res(80, 800000, 1e9, nil)},
		{Target: "kaas", RecordSize: 100, CPUSeconds: 4, Result: res(120, 1200000, 1e9, nil), Consume: res(300, 0, 1e9, nil), ConsumeCPUSeconds: 2},
	}
}

func TestCompareTables(t *testing.T) {
	rows := compareRows()
	if got := rows[1].CPUSecondsPerGB(); got != 2 {
		t.Fatalf("CPU s per GB produced = %g, want 2", got)
	}
	if got := rows[1].ConsumeCPUSecondsPerGB(); got != 0.5 {
		t.Fatalf("CPU s per GB consumed = %g, want 0.5", got)
	}
	if got := rows[2].ConsumeCPUSecondsPerGB(); got != 0 {
		t.Fatalf("CPU s per GB consumed without a consume run = %g, want 0", got)
	}
	want := strings.Join([]string{
		"| 1 KiB records | produce MB/s | records/s | p50 / p99 ms | broker CPU-s per GB produced | consume MB/s | broker CPU-s per GB consumed |",
		"| --- | --- | --- | --- | --- | --- | --- |",
		"| kfake (baseline) | 100.0 (×1.00) | 97656 (×1.00) | 4.00 / 10.00 (×1.00 / ×1.00) | 10.00 (×1.00) | 200.0 (×1.00) | 4.00 (×1.00) |",
		"| kaas | 400.0 (×4.00) | 390625 (×4.00) | 1.00 / 5.00 (×0.25 / ×0.50) | 2.00 (×0.20) | 700.0 (×3.50) | 0.50 (×0.12) |",
		"",
		"| 100 B records | produce MB/s | records/s | p50 / p99 ms | broker CPU-s per GB produced | consume MB/s | broker CPU-s per GB consumed |",
		"| --- | --- | --- | --- | --- | --- | --- |",
		// No consume run on the baseline: no ratio; no latency: a dash.
		"| kfake (baseline) | 80.0 (×1.00) | 800000 (×1.00) | – | 8.00 (×1.00) | – | – |",
		"| kaas | 120.0 (×1.50) | 1200000 (×1.50) | – | 4.00 (×0.50) | 300.0 | 2.00 |",
		"",
	}, "\n")
	if got := CompareTables(rows); got != want {
		t.Fatalf("CompareTables:\n%s\nwant:\n%s", got, want)
	}
	if got := CompareTables(nil); got != "" {
		t.Fatalf("CompareTables(nil) = %q, want nothing", got)
	}
}

func TestHistogramCDF(t *testing.T) {
	var h Histogram
	if h.CDF() != nil {
		t.Fatal("empty histogram: want no CDF")
	}
	for _, v := range []time.Duration{5, 5, 100, 200, 200, 200, 5000, 5000, 5000, 5000} {
		h.Record(v)
	}
	cdf := h.CDF()
	// Values under 256 ns are exact buckets; 5000 is clamped to the max.
	want := []CDFPoint{{5, 0.2}, {100, 0.3}, {200, 0.6}, {5000, 1}}
	if !reflect.DeepEqual(cdf, want) {
		t.Fatalf("CDF = %v, want %v", cdf, want)
	}
}

func TestThroughputSeriesAscendingBySize(t *testing.T) {
	series := ThroughputSeriesOf(compareRows())
	type line struct {
		target  string
		consume bool
		xs, ys  []float64
	}
	var got []line
	for _, s := range series {
		l := line{target: s.Target, consume: s.Consume}
		for _, p := range s.Points {
			l.xs, l.ys = append(l.xs, p.X), append(l.ys, p.Y)
		}
		got = append(got, l)
	}
	want := []line{
		{"kfake", false, []float64{100, 1024}, []float64{80, 100}},
		{"kfake", true, []float64{1024}, []float64{200}}, // no consume run at 100 B
		{"kaas", false, []float64{100, 1024}, []float64{120, 400}},
		{"kaas", true, []float64{100, 1024}, []float64{300, 700}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("series = %+v\nwant %+v", got, want)
	}
}

// TestWriteReport writes the tables and plots of a comparison whose
// produce runs carry latency histograms, and checks every file: the
// tables as CompareTables prints them, the plots as PNGs of the plot size.
func TestWriteReport(t *testing.T) {
	rows := compareRows()
	for i := range rows {
		if rows[i].RecordSize != 1024 {
			continue
		}
		var h Histogram
		for v := 1; v <= 1000; v++ {
			h.Record(time.Duration(v*(i+1)) * time.Microsecond)
		}
		rows[i].Result.latency = &h
	}
	dir := filepath.Join(t.TempDir(), "out")
	files, err := WriteReport(dir, "mode produce, 1s per run", rows)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{ReportTables, ReportThroughput, "bench-latency-1KiB.png"}
	if len(files) != len(wantFiles) {
		t.Fatalf("wrote %v, want %v (no latency plot at 100 B: no latency there)", files, wantFiles)
	}
	for i, f := range files {
		if filepath.Base(f) != wantFiles[i] {
			t.Fatalf("wrote %v, want %v", files, wantFiles)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportTables))
	if err != nil {
		t.Fatal(err)
	}
	if want := "mode produce, 1s per run\n\n" + CompareTables(rows); string(md) != want {
		t.Fatalf("%s:\n%s\nwant:\n%s", ReportTables, md, want)
	}
	for _, name := range wantFiles[1:] {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b := img.Bounds()
		if b.Dx() < 500 || b.Dx() > 700 || b.Dy() < 300 || b.Dy() > 450 || len(raw) > 200<<10 {
			t.Errorf("%s: %dx%d pixels, %d bytes; want a small plot about 600x380", name, b.Dx(), b.Dy(), len(raw))
		}
	}
	if _, err := WriteReport(dir, "x", nil); err == nil {
		t.Error("a report of no rows: want an error")
	}
}

func TestLogTicks125(t *testing.T) {
	var labels []string
	minor := 0
	for _, tk := range logTicks125(0.3, 60) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		} else {
			minor++
		}
	}
	if want := []string{"0.5", "1", "2", "5", "10", "20", "50"}; !reflect.DeepEqual(labels, want) {
		t.Fatalf("labels %v, want %v", labels, want)
	}
	// 0.3, 0.4, 0.6-0.9, 3, 4, 6-9, 30, 40, 60.
	if minor != 2+4+2+4+3 {
		t.Fatalf("%d unlabelled ticks, want 15", minor)
	}
}
