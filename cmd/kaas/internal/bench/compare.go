package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Target is one broker a comparison runs the load against: a child process
// of the kaas binary started with Args, listening on the address the
// {addr} argument is replaced with.
type Target struct {
	Name string
	Args []string
}

// CompareTargets are kfake (the baseline, first), kaas in memory and kaas
// on a data directory under dataDir, each a child process of exe.
func CompareTargets(dataDir string) []Target {
	return []Target{
		{"kfake", []string{"bench", "kfake", "--kafka-addr", "{addr}"}},
		{"kaas in memory", []string{"serve", "--kafka-addr", "{addr}", "--http-addr", "", "--log-level", "warn"}},
		{"kaas --data-dir", []string{"serve", "--kafka-addr", "{addr}", "--http-addr", "", "--log-level", "warn", "--data-dir", dataDir}},
	}
}

// CompareRow is one target's run and what its broker process spent on CPU.
type CompareRow struct {
	Target     string  `json:"target"`
	Result     *Result `json:"result"`
	CPUSeconds float64 `json:"broker_cpu_seconds"` // user+system of the broker process over the run
}

// CPUSecondsPerGB is the broker's CPU time per 10^9 bytes the run counted;
// 0 when nothing was counted.
func (r CompareRow) CPUSecondsPerGB() float64 {
	if r.Result == nil || r.Result.Bytes == 0 {
		return 0
	}
	return r.CPUSeconds / (float64(r.Result.Bytes) / 1e9)
}

// Compare runs cfg against every target in turn, each a fresh child
// process of exe, and measures the child's CPU time from /proc/<pid>/stat
// (Linux) around the run, so the load generator's own CPU is not counted.
func Compare(ctx context.Context, cfg Config, exe string, targets []Target, log io.Writer) ([]CompareRow, error) {
	if cfg.Mode == ModeConsume {
		return nil, errors.New("compare runs produce or e2e (a fresh broker has nothing to consume)")
	}
	var rows []CompareRow
	for _, tg := range targets {
		row, err := compareOne(ctx, cfg, exe, tg, log)
		if err != nil {
			return rows, fmt.Errorf("%s: %w", tg.Name, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func compareOne(ctx context.Context, cfg Config, exe string, tg Target, log io.Writer) (CompareRow, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return CompareRow{}, err
	}
	args := make([]string, len(tg.Args))
	for i, a := range tg.Args {
		args[i] = strings.ReplaceAll(a, "{addr}", addr)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// The broker dies with the load generator, however that ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return CompareRow{}, fmt.Errorf("start %s: %w", exe, err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	if err := waitListening(ctx, addr, 15*time.Second); err != nil {
		return CompareRow{}, err
	}
	fmt.Fprintf(log, "== %s (pid %d, %s)\n", tg.Name, cmd.Process.Pid, addr)
	cfg.Brokers = []string{addr}
	before, err := ProcCPU(cmd.Process.Pid)
	if err != nil {
		return CompareRow{}, err
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		return CompareRow{}, err
	}
	after, err := ProcCPU(cmd.Process.Pid)
	if err != nil {
		return CompareRow{}, err
	}
	return CompareRow{Target: tg.Name, Result: res, CPUSeconds: (after - before).Seconds()}, nil
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitListening(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("broker not listening on %s after %s: %w", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clockTick is the unit of /proc CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// ProcCPU is process pid's user+system CPU time so far, from
// /proc/<pid>/stat.
func ProcCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("broker CPU time: %w", err)
	}
	return parseProcStatCPU(string(raw))
}

// parseProcStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/<pid>/stat line; the command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseProcStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want 13 or more", len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc stat: %w", err)
	}
	return time.Duration(u+s) * clockTick, nil
}

// CompareTable is rows as a markdown table, each figure also as a ratio
// against the first row (the baseline): throughput ratios above 1 and CPU
// ratios below 1 favour the row.
func CompareTable(rows []CompareRow) string {
	var b strings.Builder
	b.WriteString("| broker | records/s | MB/s | p50 ms | p99 ms | broker CPU s per GB |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	if len(rows) == 0 {
		return b.String()
	}
	base := rows[0]
	ratio := func(v, baseV float64) string {
		if baseV == 0 {
			return ""
		}
		return fmt.Sprintf(" (×%.2f)", v/baseV)
	}
	for i, r := range rows {
		res := r.Result
		p50, p99, bp50, bp99 := 0.0, 0.0, 0.0, 0.0
		if res.Latency != nil {
			p50, p99 = res.Latency.P50, res.Latency.P99
		}
		if base.Result.Latency != nil {
			bp50, bp99 = base.Result.Latency.P50, base.Result.Latency.P99
		}
		name := r.Target
		if i == 0 {
			name += " (baseline)"
		}
		lat := func(v, baseV float64) string {
			if res.Latency == nil {
				return "–"
			}
			return fmt.Sprintf("%.2f", v) + ratio(v, baseV)
		}
		fmt.Fprintf(&b, "| %s | %.0f%s | %.2f%s | %s | %s | %.2f%s |\n", name,
			res.RecordsPerSec, ratio(res.RecordsPerSec, base.Result.RecordsPerSec),
			res.MBPerSec, ratio(res.MBPerSec, base.Result.MBPerSec),
			lat(p50, bp50), lat(p99, bp99),
			r.CPUSecondsPerGB(), ratio(r.CPUSecondsPerGB(), base.CPUSecondsPerGB()))
	}
	return b.String()
}

// ServeKfake runs franz-go's kfake cluster (one broker) on addr until ctx
// ends: the baseline broker of a comparison.
func ServeKfake(ctx context.Context, addr string) error {
	_, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("kfake address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("kfake address %q: %w", addr, err)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port))
	if err != nil {
		return fmt.Errorf("kfake: %w", err)
	}
	defer c.Close()
	<-ctx.Done()
	return nil
}
