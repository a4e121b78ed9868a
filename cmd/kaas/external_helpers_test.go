package main

// Helpers for external_test.go: build the real `kaas` binary once per test
// process, start it on free loopback ports, and drive external clients
// (kcat, node/kafkajs) as subprocesses. Missing tools fail the test: CI
// installs them with .ci/install-test-deps.sh (`go tool task deps`).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kaas-project/kaas/wire/wiretest"
)

const installHint = "install the test dependencies with `go tool task deps` (bash .ci/install-test-deps.sh)"

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// moduleRoot is the directory of go.mod of the module under test.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err == nil {
		if gomod := strings.TrimSpace(string(out)); gomod != "" && gomod != os.DevNull {
			return filepath.Dir(gomod), nil
		}
	}
	// go test runs in the package directory: cmd/kaas.
	wd, werr := os.Getwd()
	if werr != nil {
		return "", werr
	}
	root := filepath.Join(wd, "..", "..")
	if _, serr := os.Stat(filepath.Join(root, "go.mod")); serr != nil {
		return "", fmt.Errorf("cannot find the module root (go env GOMOD: %v; %s/go.mod: %v)", err, root, serr)
	}
	return root, nil
}

// binDirPrefix names the per-process directories the binary is built in.
// They cannot be removed at process exit without a TestMain, so each build
// first removes those left by processes that no longer run.
const binDirPrefix = "kaas-external-test-"

func sweepStaleBinDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), binDirPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}

// kaasBinary builds ./cmd/kaas once per test process and returns its path.
// KAAS_TEST_BINARY points the tests at a prebuilt binary instead.
func kaasBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KAAS_TEST_BINARY"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		start := time.Now()
		sweepStaleBinDirs()
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", binDirPrefix+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			buildErr = err
			return
		}
		bin := filepath.Join(dir, "kaas")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "./cmd/kaas")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/kaas: %v\n%s", err, out)
			return
		}
		builtBin = bin
		fmt.Fprintf(os.Stderr, "built %s in %v\n", bin, time.Since(start).Round(time.Millisecond))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// lockedBuffer is a bytes.Buffer safe for a process writer and test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// kaasProc is a started kaas binary.
type kaasProc struct {
	Addr     string // Kafka listener, also the advertised address
	HTTPAddr string
	Host     string
	Port     int
	cmd      *exec.Cmd
	stderr   *lockedBuffer
	exited   chan struct{}
	waitErr  error
}

// Log is everything the broker wrote to stderr so far.
func (k *kaasProc) Log() string { return k.stderr.String() }

func freeLoopbackPort(t testing.TB) int {
	t.Helper()
	_, port, err := net.SplitHostPort(wiretest.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startKaas starts the kaas binary on free loopback ports with extra flags
// (with --listeners, the primary listener's address is written {kafka}),
// waits for /readyz and stops it (SIGTERM, then SIGKILL) at cleanup. The
// broker's stderr is printed when the test fails. Set KAAS_TEST_LOGS to
// print it always.
func startKaas(t testing.TB, args ...string) *kaasProc {
	t.Helper()
	bin := kaasBinary(t)
	var lastErr error
	// A port picked free can be taken by someone else before kaas binds it:
	// retry a few times on "address already in use".
	for attempt := 0; attempt < 3; attempt++ {
		k, err := tryStartKaas(t, bin, args)
		if err == nil {
			return k
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatal(lastErr)
	return nil
}

func tryStartKaas(t testing.TB, bin string, args []string) (*kaasProc, error) {
	port, hport := freeLoopbackPort(t), freeLoopbackPort(t)
	k := &kaasProc{
		Host:     "127.0.0.1",
		Port:     port,
		Addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		HTTPAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(hport)),
		stderr:   &lockedBuffer{},
		exited:   make(chan struct{}),
	}
	all := []string{"--kafka-addr", k.Addr, "--advertised-addr", k.Addr}
	if slices.Contains(args, "--listeners") {
		// The caller's listeners name the primary one's address {kafka}.
		all = nil
		args = slices.Clone(args)
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "{kafka}", k.Addr)
		}
	}
	all = append(append(all, "--http-addr", k.HTTPAddr, "--log-format", "json"), args...)
	k.cmd = exec.Command(bin, all...)
	k.cmd.Stdout = k.stderr
	k.cmd.Stderr = k.stderr
	// Keep the environment from configuring the broker behind our back.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KAAS_") {
			k.cmd.Env = append(k.cmd.Env, e)
		}
	}
	start := time.Now()
	if err := k.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		k.waitErr = k.cmd.Wait()
		close(k.exited)
	}()

	ready := false
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for !ready && time.Now().Before(deadline) {
		select {
		case <-k.exited:
			return nil, fmt.Errorf("kaas %s exited before it was ready: %v\n--- kaas output ---\n%s", strings.Join(all, " "), k.waitErr, k.Log())
		default:
		}
		resp, err := hc.Get("http://" + k.HTTPAddr + "/readyz")
		if err == nil {
			ready = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
		if !ready {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !ready {
		_ = k.cmd.Process.Kill()
		<-k.exited
		return nil, fmt.Errorf("kaas did not answer /readyz within 20s\n--- kaas output ---\n%s", k.Log())
	}
	t.Logf("kaas ready on %s (http %s) in %v", k.Addr, k.HTTPAddr, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { k.stop(t) })
	return k, nil
}

// stop sends SIGTERM and expects a clean exit (status 0) within 15s; it
// then kills the process whatever happened.
func (k *kaasProc) stop(t testing.TB) {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
		if k.waitErr != nil {
			t.Errorf("kaas did not exit cleanly on SIGTERM: %v", k.waitErr)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("kaas did not exit within 15s of SIGTERM; killing it")
		_ = k.cmd.Process.Kill()
		<-k.exited
	}
	if t.Failed() || os.Getenv("KAAS_TEST_LOGS") != "" {
		t.Logf("--- kaas %s output ---\n%s--- end of kaas output ---", k.Addr, k.Log())
	}
}

// kill sends SIGKILL and waits for the process to end: a crash, which the
// cleanup's stop then does not count as an unclean exit.
func (k *kaasProc) kill() {
	_ = k.cmd.Process.Kill()
	<-k.exited
	k.waitErr = nil
}

// requireTool returns the path of an external program the tests need, and
// fails the test (never skips) when it is not installed.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is required by this test but not found in PATH: %s", name, installHint)
	}
	return p
}

// runResult is a finished external command.
type runResult struct {
	Stdout, Stderr string
	Took           time.Duration
}

// runTool runs name with args and stdin under a timeout and fails the test
// when it does not exit 0.
func runTool(t testing.TB, timeout time.Duration, dir, stdin, name string, args ...string) runResult {
	t.Helper()
	return runToolAbortOn(t, timeout, dir, stdin, nil, name, args...)
}

// runToolAbortOn is runTool that also kills the program, failing the test
// at once, when its stderr shows one of abortOn: a client that retries a
// protocol error for ever would otherwise only fail at the timeout.
func runToolAbortOn(t testing.TB, timeout time.Duration, dir, stdin string, abortOn []string, name string, args ...string) runResult {
	t.Helper()
	res, err := runToolErr(timeout, dir, stdin, abortOn, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n--- stdout ---\n%s\n--- stderr ---\n%s", name, strings.Join(args, " "), err, truncate(res.Stdout, 4000), truncate(res.Stderr, 8000))
	}
	return res
}

// watchWriter collects output and calls found once it contains a pattern.
type watchWriter struct {
	lockedBuffer
	patterns []string
	found    func(string)
	hit      string
}

func (w *watchWriter) Write(p []byte) (int, error) {
	n, err := w.lockedBuffer.Write(p)
	if w.hit == "" && len(w.patterns) > 0 {
		s := w.lockedBuffer.String()
		for _, pat := range w.patterns {
			if strings.Contains(s, pat) {
				w.hit = pat
				w.found(pat)
				break
			}
		}
	}
	return n, err
}

func runToolErr(timeout time.Duration, dir, stdin string, abortOn []string, name string, args ...string) (runResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.WaitDelay = 2 * time.Second
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout lockedBuffer
	stderr := &watchWriter{patterns: abortOn, found: func(string) {
		// Let the client print a little more context first.
		time.AfterFunc(200*time.Millisecond, cancel)
	}}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	start := time.Now()
	err := cmd.Run()
	res := runResult{Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}
	switch {
	case stderr.hit != "":
		err = fmt.Errorf("aborted: stderr shows %q (%v)", stderr.hit, err)
	case ctx.Err() != nil:
		err = fmt.Errorf("timed out after %v (%v)", timeout, err)
	}
	return res, err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n/2] + fmt.Sprintf("\n... (%d bytes cut) ...\n", len(s)-n) + s[len(s)-n/2:]
}
