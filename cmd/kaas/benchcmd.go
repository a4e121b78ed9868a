package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kaas-project/kaas/cmd/kaas/internal/bench"
)

const benchUsage = `usage: kaas bench [flags]
  produce, consume or measure end-to-end latency against any Kafka-compatible
  cluster; a progress line every second on stderr, the result on stdout
  (text, or JSON with --json)
usage: kaas bench compare [flags] [--record-sizes 100,1024,...] [--out DIR]
  the same load (produce or e2e) against franz-go's kfake, kaas in memory and
  kaas on a temporary --data-dir, each a fresh child process per record size,
  then a consume run of what was acknowledged; prints markdown tables with
  ratios against kfake, including the broker process's CPU seconds per GB
  produced and consumed (from /proc/<pid>/stat); --out also writes the tables
  and PNG plots (throughput by record size, latency CDF) to DIR; --brokers is
  ignored
`

// newBenchFlags binds the flags of "kaas bench" to cfg.
func newBenchFlags(cfg *bench.Config, brokers *string, asJSON, quiet *bool, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kaas bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(brokers, "brokers", "localhost:9092", "bootstrap brokers, comma-separated host:port")
	fs.StringVar(&cfg.Topic, "topic", "kaas-bench", "topic to use; created if missing")
	fs.Func("partitions", "partitions of the topic when it is created (default 6)", func(s string) error {
		var n int32
		if _, err := fmt.Sscan(s, &n); err != nil {
			return err
		}
		cfg.Partitions = n
		return nil
	})
	fs.StringVar(&cfg.Mode, "mode", bench.ModeProduce, "produce (acknowledgement latency), consume (read from the start; throughput only) or e2e (produce and consume; latency from Produce to arrival)")
	fs.IntVar(&cfg.RecordSize, "record-size", 1024, "bytes of each record value (e2e: at least 16)")
	fs.Int64Var(&cfg.Count, "count", 0, "records to produce (consume: to read); 0 runs for --duration")
	fs.DurationVar(&cfg.Duration, "duration", 0, "how long to run (default 10s when --count is 0)")
	fs.StringVar(&cfg.Acks, "acks", "all", "producer acks: 0, 1 or all")
	fs.BoolVar(&cfg.Idempotent, "idempotent", true, "idempotent producer (needs --acks all)")
	fs.StringVar(&cfg.Compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fs.Float64Var(&cfg.Rate, "rate", 0, "target records per second; 0 is unlimited")
	fs.DurationVar(&cfg.Linger, "linger", 5*time.Millisecond, "producer linger before a batch is sent")
	fs.BoolVar(asJSON, "json", false, "print the result as JSON")
	fs.BoolVar(quiet, "quiet", false, "no progress line")
	return fs
}

// parseBench parses the flags of "kaas bench".
func parseBench(args []string, stderr io.Writer) (cfg bench.Config, asJSON bool, err error) {
	return parseBenchWith(args, stderr, nil)
}

// compareOpts are the flags only "kaas bench compare" has.
type compareOpts struct {
	sizes  string
	outDir string
}

// parseBenchCompare parses the flags of "kaas bench compare": those of
// "kaas bench" plus --record-sizes and --out. sizes is nil without
// --record-sizes (then --record-size is the one size).
func parseBenchCompare(args []string, stderr io.Writer) (cfg bench.Config, sizes []int, outDir string, asJSON bool, err error) {
	var opts compareOpts
	cfg, asJSON, err = parseBenchWith(args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&opts.sizes, "record-sizes", "", "compare: comma-separated record sizes to sweep, in bytes (a k or KiB suffix is ×1024), e.g. 100,1024,16k; overrides --record-size")
		fs.StringVar(&opts.outDir, "out", "", "compare: also write the markdown tables and PNG plots into this directory")
	})
	if err != nil {
		return cfg, nil, "", false, err
	}
	if opts.sizes != "" {
		minSize := 0
		if cfg.Mode == bench.ModeE2E {
			minSize = 16
		}
		if sizes, err = bench.ParseRecordSizes(opts.sizes, minSize); err != nil {
			return cfg, nil, "", false, fmt.Errorf("bench compare: %w", err)
		}
		cfg.RecordSize = sizes[0]
	}
	if cfg.Mode == bench.ModeConsume {
		return cfg, nil, "", false, errors.New("bench compare: --mode consume: compare runs produce or e2e, then consumes what they wrote")
	}
	return cfg, sizes, opts.outDir, asJSON, nil
}

// parseBenchWith parses the flags of "kaas bench", and those extra adds.
func parseBenchWith(args []string, stderr io.Writer, extra func(*flag.FlagSet)) (cfg bench.Config, asJSON bool, err error) {
	cfg.Partitions = 6
	var brokers string
	var quiet bool
	fs := newBenchFlags(&cfg, &brokers, &asJSON, &quiet, stderr)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return cfg, false, err
	}
	if fs.NArg() > 0 {
		return cfg, false, fmt.Errorf("bench: unexpected argument %q", fs.Arg(0))
	}
	for _, b := range strings.Split(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			cfg.Brokers = append(cfg.Brokers, b)
		}
	}
	if cfg.Count == 0 && cfg.Duration == 0 {
		cfg.Duration = 10 * time.Second
	}
	if !quiet {
		cfg.Progress = stderr
	}
	if cfg.Acks != "all" && cfg.Acks != "-1" && !flagSet(fs, "idempotent") {
		// An idempotent producer needs acks all: --acks 0 or 1 alone
		// asks for a plain producer.
		cfg.Idempotent = false
	}
	if err := cfg.Validate(); err != nil {
		return cfg, false, fmt.Errorf("bench: %w", err)
	}
	return cfg, asJSON, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// runBench implements "kaas bench ...".
func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "help":
			fmt.Fprint(stdout, benchUsage)
			return flag.ErrHelp
		case "compare":
			return runBenchCompare(args[1:], stdout, stderr)
		case "kfake":
			return runBenchKfake(args[1:], stderr)
		}
	}
	cfg, asJSON, err := parseBench(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	} else {
		res.WriteText(stdout)
	}
	if res.Records == 0 {
		return errors.New("bench: no record was counted")
	}
	return nil
}

// runBenchCompare implements "kaas bench compare ...".
func runBenchCompare(args []string, stdout, stderr io.Writer) error {
	cfg, sizes, outDir, asJSON, err := parseBenchCompare(args, stderr)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench compare: own executable: %w", err)
	}
	dataDir, err := os.MkdirTemp("", "kaas-bench-")
	if err != nil {
		return fmt.Errorf("bench compare: %w", err)
	}
	defer os.RemoveAll(dataDir)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	rows, err := bench.Compare(ctx, cfg, exe, dataDir, bench.CompareTargets(), sizes, stderr)
	if err != nil {
		return fmt.Errorf("bench compare: %w", err)
	}
	heading := compareHeading(cfg)
	if outDir != "" {
		files, err := bench.WriteReport(outDir, heading, rows)
		if err != nil {
			return fmt.Errorf("bench compare: %w", err)
		}
		fmt.Fprintf(stderr, "wrote %s\n", strings.Join(files, ", "))
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	fmt.Fprint(stdout, heading+"\n\n"+bench.CompareTables(rows))
	return nil
}

// compareHeading names the load every row of a comparison ran.
func compareHeading(cfg bench.Config) string {
	run := fmt.Sprintf("%d records", cfg.Count)
	if cfg.Count == 0 {
		run = cfg.Duration.String()
	} else if cfg.Duration > 0 {
		run += " or " + cfg.Duration.String()
	}
	rate := "unlimited rate"
	if cfg.Rate > 0 {
		rate = fmt.Sprintf("%g records/s", cfg.Rate)
	}
	return fmt.Sprintf("mode %s, acks %s, idempotent %t, compression %s, %d partitions, %s, %s per run, then a consume run from the start of what was acknowledged",
		cfg.Mode, cfg.Acks, cfg.Idempotent, cfg.Compression, cfg.Partitions, rate, run)
}

// runBenchKfake implements "kaas bench kfake --kafka-addr ADDR": franz-go's
// kfake broker as the baseline child process of "kaas bench compare".
func runBenchKfake(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("kaas bench kfake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("kafka-addr", "127.0.0.1:9092", "address kfake listens on (loopback)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return bench.ServeKfake(ctx, *addr)
}
