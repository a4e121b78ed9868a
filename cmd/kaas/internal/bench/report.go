package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Report file names under the --out directory of `kaas bench compare`.
const (
	ReportTables     = "bench-compare.md"
	ReportThroughput = "bench-throughput.png"
)

// ReportLatencyCDF is the file name of the latency plot at a record size:
// bench-latency-1KiB.png, bench-latency-100B.png.
func ReportLatencyCDF(recordSize int) string {
	return "bench-latency-" + strings.ReplaceAll(SizeLabel(recordSize), " ", "") + ".png"
}

// WriteReport writes the comparison into dir (created if missing): the
// markdown tables under heading (the run's settings), the throughput plot
// and one latency plot per record size. It returns the files written.
func WriteReport(dir, heading string, rows []CompareRow) ([]string, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("report: no rows")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var written []string
	write := func(name string, data []byte) error {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		written = append(written, path)
		return nil
	}
	md := heading + "\n\n" + CompareTables(rows)
	if err := write(ReportTables, []byte(md)); err != nil {
		return written, err
	}
	var buf bytes.Buffer
	if err := WriteThroughputPNG(&buf, rows, "throughput by record size"); err != nil {
		return written, err
	}
	if err := write(ReportThroughput, buf.Bytes()); err != nil {
		return written, err
	}
	for _, group := range bySizeAscending(rows) {
		size := group[0].RecordSize
		if len(LatencyCDFSeriesOf(rows, size)) == 0 {
			continue
		}
		buf.Reset()
		if err := WriteLatencyCDFPNG(&buf, rows, size, "latency, "+SizeLabel(size)+" records"); err != nil {
			return written, err
		}
		if err := write(ReportLatencyCDF(size), buf.Bytes()); err != nil {
			return written, err
		}
	}
	return written, nil
}
