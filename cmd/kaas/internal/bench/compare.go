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
// {addr} argument is replaced with ({datadir}: see dataDirArg).
type Target struct {
	Name string
	Args []string
}

// dataDirArg in a target's arguments is replaced with a fresh, empty
// directory for each broker process, removed after its runs.
const dataDirArg = "{datadir}"

// CompareTargets are kfake (the baseline, first), kaas in memory and kaas
// on a fresh data directory, each a child process of exe.
func CompareTargets() []Target {
	return []Target{
		{"kfake", []string{"bench", "kfake", "--kafka-addr", "{addr}"}},
		{"kaas in memory", []string{"serve", "--kafka-addr", "{addr}", "--http-addr", "", "--log-level", "warn"}},
		{"kaas --data-dir", []string{"serve", "--kafka-addr", "{addr}", "--http-addr", "", "--log-level", "warn", "--data-dir", dataDirArg}},
	}
}

// CompareRow is one target's runs at one record size, each against a
// fresh broker process: the produce (or e2e) run, then a consume run
// reading from the start the records it acknowledged, and what the broker
// process spent on CPU during each.
type CompareRow struct {
	Target     string  `json:"target"`
	RecordSize int     `json:"record_size"`
	Result     *Result `json:"result"`             // the produce or e2e run
	CPUSeconds float64 `json:"broker_cpu_seconds"` // user+system of the broker process over Result's run

	Consume           *Result `json:"consume,omitempty"`
	ConsumeCPUSeconds float64 `json:"consume_broker_cpu_seconds"`
}

// CPUSecondsPerGB is the broker's CPU time per 10^9 bytes the produce (or
// e2e) run counted; 0 when nothing was counted.
func (r CompareRow) CPUSecondsPerGB() float64 { return perGB(r.CPUSeconds, r.Result) }

// ConsumeCPUSecondsPerGB is the broker's CPU time per 10^9 bytes consumed;
// 0 when nothing was.
func (r CompareRow) ConsumeCPUSecondsPerGB() float64 { return perGB(r.ConsumeCPUSeconds, r.Consume) }

func perGB(cpuSeconds float64, res *Result) float64 {
	if res == nil || res.Bytes == 0 {
		return 0
	}
	return cpuSeconds / (float64(res.Bytes) / 1e9)
}

// Compare runs cfg at each record size against every target in turn, each
// time a fresh child process of exe: first cfg's produce or e2e run, then
// a consume run of the records it acknowledged. It measures the child's CPU
// time from /proc/<pid>/stat (Linux) around each run, so the load
// generator's own CPU is not counted. The rows come by record size, then
// by target in the order given (the first is the baseline).
// Data directories are made under dataRoot.
func Compare(ctx context.Context, cfg Config, exe, dataRoot string, targets []Target, sizes []int, log io.Writer) ([]CompareRow, error) {
	if cfg.Mode == ModeConsume {
		return nil, errors.New("compare runs produce or e2e, then consumes what they wrote (a fresh broker has nothing to consume)")
	}
	if len(sizes) == 0 {
		sizes = []int{cfg.RecordSize}
	}
	var rows []CompareRow
	for _, size := range sizes {
		c := cfg
		c.RecordSize = size
		if err := c.Validate(); err != nil {
			return rows, err
		}
		for _, tg := range targets {
			row, err := compareOne(ctx, c, exe, dataRoot, tg, log)
			if err != nil {
				return rows, fmt.Errorf("%s, %s records: %w", tg.Name, SizeLabel(size), err)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// consumeConfig is the consume run that follows prod: it reads the acked
// records from the start, and gives up after a bound well past what the
// produce run took, so a broker that loses records cannot hang the
// comparison (the shortfall shows in the consumed count).
func consumeConfig(cfg Config, prod *Result) Config {
	c := cfg
	c.Mode = ModeConsume
	c.Count = prod.Acked
	c.Duration = max(time.Minute, 4*time.Duration(prod.Seconds*float64(time.Second)))
	c.Rate = 0
	return c
}

func compareOne(ctx context.Context, cfg Config, exe, dataRoot string, tg Target, log io.Writer) (CompareRow, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return CompareRow{}, err
	}
	dataDir, err := os.MkdirTemp(dataRoot, "broker-")
	if err != nil {
		return CompareRow{}, fmt.Errorf("data directory: %w", err)
	}
	defer os.RemoveAll(dataDir)
	args := make([]string, len(tg.Args))
	for i, a := range tg.Args {
		args[i] = strings.NewReplacer("{addr}", addr, dataDirArg, dataDir).Replace(a)
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
	fmt.Fprintf(log, "== %s, %s records (pid %d, %s)\n", tg.Name, SizeLabel(cfg.RecordSize), cmd.Process.Pid, addr)
	cfg.Brokers = []string{addr}
	row := CompareRow{Target: tg.Name, RecordSize: cfg.RecordSize}
	pid := cmd.Process.Pid
	if row.Result, row.CPUSeconds, err = runMeasured(ctx, cfg, pid); err != nil {
		return CompareRow{}, err
	}
	if row.Result.Acked == 0 {
		return row, nil
	}
	if row.Consume, row.ConsumeCPUSeconds, err = runMeasured(ctx, consumeConfig(cfg, row.Result), pid); err != nil {
		return CompareRow{}, fmt.Errorf("consume: %w", err)
	}
	return row, nil
}

// runMeasured runs cfg and reports the CPU seconds process pid spent
// meanwhile.
func runMeasured(ctx context.Context, cfg Config, pid int) (*Result, float64, error) {
	before, err := ProcCPU(pid)
	if err != nil {
		return nil, 0, err
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		return nil, 0, err
	}
	after, err := ProcCPU(pid)
	if err != nil {
		return nil, 0, err
	}
	return res, (after - before).Seconds(), nil
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
