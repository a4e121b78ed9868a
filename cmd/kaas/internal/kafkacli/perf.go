package kafkacli

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/kaas-project/kaas/cmd/kaas/internal/bench"
)

// What kaas producer-perf-test, consumer-perf-test and e2e-latency share:
// Java's number and date formatting, which their output lines use, and
// Kafka's percentile rule over kaas bench's latency histogram.

// perfFixed formats f as Java's String.format("%.Nf") does: the exact
// binary value rounded half up (Go's %f rounds half to even), and
// Infinity and NaN spelled Java's way.
func perfFixed(f float64, prec int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	r := new(big.Rat).SetFloat64(f)
	neg := r.Sign() < 0
	r.Abs(r)
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(prec)), nil)
	r.Mul(r, new(big.Rat).SetInt(scale))
	r.Add(r, big.NewRat(1, 2))
	n := new(big.Int).Quo(r.Num(), r.Denom()) // floor, r being positive
	digits := n.String()
	if len(digits) <= prec {
		digits = strings.Repeat("0", prec-len(digits)+1) + digits
	}
	out := digits
	if prec > 0 {
		out = digits[:len(digits)-prec] + "." + digits[len(digits)-prec:]
	}
	if neg && n.Sign() != 0 {
		out = "-" + out
	}
	return out
}

// perfDouble formats f as Java's Double.toString does for the values the
// tools print (milliseconds): the shortest form that reads back, always
// with a decimal point.
func perfDouble(f float64) string {
	if a := math.Abs(f); a != 0 && (a < 1e-3 || a >= 1e7) {
		s := strconv.FormatFloat(f, 'E', -1, 64)
		mant, exp, _ := strings.Cut(s, "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		e, _ := strconv.Atoi(exp)
		return mant + "E" + strconv.Itoa(e)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// perfPercentile is Kafka's percentile of n sorted latencies: the value
// at index floor(q*n), that is rank floor(q*n)+1, read from the histogram.
func perfPercentile(h *bench.Histogram, q float64) int64 {
	rank := uint64(q*float64(h.Count())) + 1
	return int64(h.AtRank(rank))
}

// perfRecordMs records a latency of ms whole milliseconds. Kafka's tools
// keep latencies as whole milliseconds, so the histogram's unit here is
// one millisecond: exact up to 255 ms and within 0.8% above.
func perfRecordMs(h *bench.Histogram, ms int64) { h.Record(time.Duration(ms)) }

// perfDateFormat is a java.text.SimpleDateFormat pattern compiled to a
// function. It takes the pattern letters a date needs (G y M d H k K h m
// s S E a z Z X and quoted text); others are refused.
type perfDateFormat func(time.Time) string

func parsePerfDateFormat(pattern string) (perfDateFormat, error) {
	var parts []func(time.Time) string
	lit := func(s string) { parts = append(parts, func(time.Time) string { return s }) }
	num := func(width int, get func(time.Time) int) {
		parts = append(parts, func(t time.Time) string { return fmt.Sprintf("%0*d", width, get(t)) })
	}
	for i := 0; i < len(pattern); {
		c := pattern[i]
		if c == '\'' {
			j := i + 1
			var b strings.Builder
			for ; j < len(pattern); j++ {
				if pattern[j] == '\'' {
					if j+1 < len(pattern) && pattern[j+1] == '\'' {
						b.WriteByte('\'')
						j++
						continue
					}
					break
				}
				b.WriteByte(pattern[j])
			}
			if j >= len(pattern) {
				return nil, fmt.Errorf("--date-format %q: unterminated quote", pattern)
			}
			if j == i+1 {
				lit("'") // '' is a quote
			} else {
				lit(b.String())
			}
			i = j + 1
			continue
		}
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			lit(string(c))
			i++
			continue
		}
		n := 1
		for i+n < len(pattern) && pattern[i+n] == c {
			n++
		}
		i += n
		switch c {
		case 'G':
			lit("AD")
		case 'y':
			if n == 2 {
				num(2, func(t time.Time) int { return t.Year() % 100 })
			} else {
				num(n, func(t time.Time) int { return t.Year() })
			}
		case 'M':
			switch {
			case n >= 4:
				parts = append(parts, func(t time.Time) string { return t.Month().String() })
			case n == 3:
				parts = append(parts, func(t time.Time) string { return t.Month().String()[:3] })
			default:
				num(n, func(t time.Time) int { return int(t.Month()) })
			}
		case 'd':
			num(n, func(t time.Time) int { return t.Day() })
		case 'H':
			num(n, func(t time.Time) int { return t.Hour() })
		case 'k':
			num(n, func(t time.Time) int { return (t.Hour()+23)%24 + 1 })
		case 'K':
			num(n, func(t time.Time) int { return t.Hour() % 12 })
		case 'h':
			num(n, func(t time.Time) int { return (t.Hour()+11)%12 + 1 })
		case 'm':
			num(n, func(t time.Time) int { return t.Minute() })
		case 's':
			num(n, func(t time.Time) int { return t.Second() })
		case 'S':
			num(n, func(t time.Time) int { return t.Nanosecond() / 1e6 })
		case 'E':
			if n >= 4 {
				parts = append(parts, func(t time.Time) string { return t.Weekday().String() })
			} else {
				parts = append(parts, func(t time.Time) string { return t.Weekday().String()[:3] })
			}
		case 'a':
			parts = append(parts, func(t time.Time) string { return t.Format("PM") })
		case 'z':
			parts = append(parts, func(t time.Time) string { return t.Format("MST") })
		case 'Z':
			parts = append(parts, func(t time.Time) string { return t.Format("-0700") })
		case 'X':
			layout := map[int]string{1: "Z07", 2: "Z0700"}[n]
			if layout == "" {
				layout = "Z07:00"
			}
			parts = append(parts, func(t time.Time) string { return t.Format(layout) })
		default:
			return nil, fmt.Errorf("--date-format %q: pattern letter %q is not supported (kaas takes G y M d H k K h m s S E a z Z X)", pattern, c)
		}
	}
	return func(t time.Time) string {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p(t))
		}
		return b.String()
	}, nil
}

// perfExpandNargs rewrites a flag that takes several values (argparse4j's
// nargs("+"), as --producer-props a=1 b=2) into one flag per value, which
// Go's flag package takes.
func perfExpandNargs(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a != "--"+name && a != "-"+name {
			out = append(out, a)
			continue
		}
		j := i + 1
		for ; j < len(args) && !strings.HasPrefix(args[j], "-"); j++ {
			out = append(out, "--"+name, args[j])
		}
		if j == i+1 {
			out = append(out, a) // no value: the flag package reports it
		}
		i = j - 1
	}
	return out
}
