package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseRecordSizes reads a comma-separated list of record sizes in bytes
// ("100,1024,16384"; a size may end in k or KiB for ×1024: "1k", "16KiB"),
// each at least minSize, none twice, in the order given.
func ParseRecordSizes(s string, minSize int) ([]int, error) {
	var sizes []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("record sizes %q: empty entry", s)
		}
		num, mult := f, 1
		for _, suffix := range []string{"KiB", "k", "K"} {
			if rest, ok := strings.CutSuffix(f, suffix); ok {
				num, mult = strings.TrimSpace(rest), 1024
				break
			}
		}
		n, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("record size %q: not a number of bytes", f)
		}
		n *= mult
		if n < minSize {
			return nil, fmt.Errorf("record size %q: want at least %d bytes", f, minSize)
		}
		if seen[n] {
			return nil, fmt.Errorf("record size %q: given twice", f)
		}
		seen[n] = true
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// SizeLabel names a record size for tables and plots: "100 B", "1 KiB",
// "1000 B" (KiB only when exact).
func SizeLabel(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d B", n)
}

// CompareTables is rows as markdown: one table per record size, in the
// order of the rows, each with one line per target and every figure also
// as a ratio against the first target of that size (the baseline):
// throughput ratios above 1 and CPU or latency ratios below 1 favour the
// target. Latency is the produce run's (acknowledgement, or end to end in
// e2e mode).
func CompareTables(rows []CompareRow) string {
	var b strings.Builder
	for i, group := range bySize(rows) {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "| %s records | produce MB/s | records/s | p50 / p99 ms | broker CPU-s per GB produced | consume MB/s | broker CPU-s per GB consumed |\n",
			SizeLabel(group[0].RecordSize))
		b.WriteString("| --- | --- | --- | --- | --- | --- | --- |\n")
		base := group[0]
		for j, r := range group {
			name := r.Target
			if j == 0 {
				name += " (baseline)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", name,
				withRatio("%.1f", r.Result.MBPerSec, base.Result.MBPerSec),
				withRatio("%.0f", r.Result.RecordsPerSec, base.Result.RecordsPerSec),
				latencyCell(r.Result.Latency, base.Result.Latency),
				withRatio("%.2f", r.CPUSecondsPerGB(), base.CPUSecondsPerGB()),
				withRatio("%.1f", mbPerSec(r.Consume), mbPerSec(base.Consume)),
				withRatio("%.2f", r.ConsumeCPUSecondsPerGB(), base.ConsumeCPUSecondsPerGB()))
		}
	}
	return b.String()
}

// bySize groups rows by record size, keeping the order of first
// appearance of each size and of the rows within it.
func bySize(rows []CompareRow) [][]CompareRow {
	var groups [][]CompareRow
	index := map[int]int{}
	for _, r := range rows {
		i, ok := index[r.RecordSize]
		if !ok {
			i = len(groups)
			index[r.RecordSize] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	return groups
}

func mbPerSec(r *Result) float64 {
	if r == nil {
		return 0
	}
	return r.MBPerSec
}

// withRatio prints v with format and, when the baseline is not zero, its
// ratio to the baseline: "12.3 (×2.05)". A zero v with a zero baseline is
// "–" (not measured).
func withRatio(format string, v, base float64) string {
	if v == 0 && base == 0 {
		return "–"
	}
	s := fmt.Sprintf(format, v)
	if base != 0 {
		s += fmt.Sprintf(" (×%.2f)", v/base)
	}
	return s
}

func latencyCell(l, base *Latency) string {
	if l == nil {
		return "–"
	}
	s := fmt.Sprintf("%.2f / %.2f", l.P50, l.P99)
	if base != nil && base.P50 > 0 && base.P99 > 0 {
		s += fmt.Sprintf(" (×%.2f / ×%.2f)", l.P50/base.P50, l.P99/base.P99)
	}
	return s
}
