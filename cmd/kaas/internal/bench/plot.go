package bench

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot size: small PNGs for the docs.
const (
	plotWidth  = 16 * vg.Centimeter
	plotHeight = 10 * vg.Centimeter
	plotDPI    = 96
)

// targetColors are the lines' colours, by the target's place in the rows.
var targetColors = []color.Color{
	color.RGBA{R: 0x77, G: 0x77, B: 0x77, A: 0xff}, // the baseline: grey
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// targetsOf is the targets of rows in order of first appearance.
func targetsOf(rows []CompareRow) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Target] {
			seen[r.Target] = true
			names = append(names, r.Target)
		}
	}
	return names
}

// ThroughputSeries is one line of the throughput plot: a target's MB/s by
// record size, produce or consume, sizes ascending.
type ThroughputSeries struct {
	Target  string
	Consume bool
	Points  plotter.XYs // X: record size in bytes, Y: MB/s
}

// ThroughputSeriesOf is the produce and consume lines of each target;
// sizes with no measurement (no consume run) are left out.
func ThroughputSeriesOf(rows []CompareRow) []ThroughputSeries {
	var out []ThroughputSeries
	for _, name := range targetsOf(rows) {
		for _, consume := range []bool{false, true} {
			s := ThroughputSeries{Target: name, Consume: consume}
			for _, group := range bySizeAscending(rows) {
				for _, r := range group {
					if r.Target != name {
						continue
					}
					mb := mbPerSec(r.Result)
					if consume {
						mb = mbPerSec(r.Consume)
					}
					if mb > 0 {
						s.Points = append(s.Points, plotter.XY{X: float64(r.RecordSize), Y: mb})
					}
				}
			}
			if len(s.Points) > 0 {
				out = append(out, s)
			}
		}
	}
	return out
}

func bySizeAscending(rows []CompareRow) [][]CompareRow {
	groups := bySize(rows)
	slices.SortStableFunc(groups, func(a, b []CompareRow) int { return cmp.Compare(a[0].RecordSize, b[0].RecordSize) })
	return groups
}

// WriteThroughputPNG draws MB/s by record size (log scale), a solid line
// per target for produce and a dashed one for consume.
func WriteThroughputPNG(w io.Writer, rows []CompareRow, title string) error {
	series := ThroughputSeriesOf(rows)
	if len(series) == 0 {
		return errors.New("throughput plot: no throughput measured")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "record size (bytes)"
	p.Y.Label.Text = "MB/s of record values"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, sizeTicks(rows)
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	// Headroom above the highest point for the legend (top left).
	top := 0.0
	for _, s := range series {
		for _, pt := range s.Points {
			top = max(top, pt.Y)
		}
	}
	p.Y.Max = top * (1 + 0.07*float64(len(series)))
	colors := colorByTarget(rows)
	for _, s := range series {
		l, err := plotter.NewLine(s.Points)
		if err != nil {
			return fmt.Errorf("throughput plot: %w", err)
		}
		l.Color, l.Width = colors[s.Target], vg.Points(1.5)
		pts, err := plotter.NewScatter(s.Points)
		if err != nil {
			return fmt.Errorf("throughput plot: %w", err)
		}
		pts.Color = colors[s.Target]
		name := s.Target + ", produce"
		if s.Consume {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			pts.Shape = draw.BoxGlyph{}
			name = s.Target + ", consume"
		}
		p.Add(l, pts)
		p.Legend.Add(name, l, pts)
	}
	return writePNG(w, p)
}

// LatencyCDFSeries is one line of a latency plot: a target's latency
// distribution at one record size.
type LatencyCDFSeries struct {
	Target string
	Points plotter.XYs // X: latency in ms, Y: fraction at or below
}

// LatencyCDFSeriesOf is each target's latency distribution at recordSize,
// from the produce (or e2e) run; targets without one are left out.
func LatencyCDFSeriesOf(rows []CompareRow, recordSize int) []LatencyCDFSeries {
	var out []LatencyCDFSeries
	for _, r := range rows {
		if r.RecordSize != recordSize || r.Result == nil {
			continue
		}
		cdf := r.Result.LatencyCDF()
		if len(cdf) == 0 {
			continue
		}
		s := LatencyCDFSeries{Target: r.Target}
		for _, pt := range cdf {
			// A log axis has no 0: the fastest values sit at 1 µs.
			s.Points = append(s.Points, plotter.XY{X: math.Max(millis(pt.Value), 0.001), Y: pt.Fraction})
		}
		out = append(out, s)
	}
	return out
}

// WriteLatencyCDFPNG draws each target's latency distribution at
// recordSize: latency (log scale) against the fraction of records at or
// below it.
func WriteLatencyCDFPNG(w io.Writer, rows []CompareRow, recordSize int, title string) error {
	series := LatencyCDFSeriesOf(rows, recordSize)
	if len(series) == 0 {
		return fmt.Errorf("latency plot: no latency measured at %s", SizeLabel(recordSize))
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "latency (ms)"
	p.Y.Label.Text = "fraction of records at or below"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.TickerFunc(logTicks125)
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = true, true
	colors := colorByTarget(rows)
	for _, s := range series {
		l, err := plotter.NewLine(s.Points)
		if err != nil {
			return fmt.Errorf("latency plot: %w", err)
		}
		l.Color, l.Width = colors[s.Target], vg.Points(1.5)
		l.StepStyle = plotter.PreStep
		p.Add(l)
		p.Legend.Add(s.Target, l)
	}
	return writePNG(w, p)
}

// sizeTicks labels the record sizes measured.
func sizeTicks(rows []CompareRow) plot.ConstantTicks {
	var ticks plot.ConstantTicks
	for _, group := range bySizeAscending(rows) {
		ticks = append(ticks, plot.Tick{Value: float64(group[0].RecordSize), Label: SizeLabel(group[0].RecordSize)})
	}
	return ticks
}

// logTicks125 are the ticks of a log axis from lo to hi: labelled at 1, 2
// and 5 times each power of ten, unlabelled at the other multiples.
func logTicks125(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for decade := math.Pow10(int(math.Floor(math.Log10(lo)))); decade <= hi; decade *= 10 {
		for m := 1; m <= 9; m++ {
			v := decade * float64(m)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

func colorByTarget(rows []CompareRow) map[string]color.Color {
	m := map[string]color.Color{}
	for i, name := range targetsOf(rows) {
		m[name] = targetColors[i%len(targetColors)]
	}
	return m
}

func writePNG(w io.Writer, p *plot.Plot) error {
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))}
	p.Draw(draw.New(c))
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("png: %w", err)
	}
	return nil
}
