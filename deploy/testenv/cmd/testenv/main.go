// Command testenv builds and runs a real kube-apiserver + etcd on loopback for tests.
//
//	testenv build [--node]        build bin/kube-apiserver and bin/etcd if missing or stale;
//	                              --node also the one-node cluster's binaries (package node)
//	testenv up --dir DIR          start both, write DIR/kubeconfig and DIR/env, stay in the
//	                              foreground until SIGTERM/SIGINT, then stop both
//	testenv down --dir DIR        stop the environment an `up` started in DIR
//
// Run it from deploy/testenv with `go run ./cmd/testenv ...`, or as deploy/testenv/bin/testenv
// (built by build.sh). `source DIR/env` exports KUBECONFIG.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kaas-project/kaas/deploy/testenv/node"
	"github.com/kaas-project/kaas/deploy/testenv/testenv"
)

func usage() {
	fmt.Fprintf(os.Stderr, `usage:
  testenv build [--node]
  testenv up   --dir DIR [--timeout 2m]
  testenv down --dir DIR [--timeout 30s]
`)
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "up":
		err = up(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	withNode := fs.Bool("node", false, "also build the one-node cluster's binaries (kubelet, kube-controller-manager, kube-scheduler, containerd, CoreDNS, pause)")
	fs.Parse(args) //nolint:errcheck // ExitOnError
	start := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	build := testenv.Build
	if *withNode {
		build = node.Build
	}
	if err := build(ctx); err != nil {
		return err
	}
	bin, _ := testenv.BinDir()
	fmt.Printf("testenv: binaries current in %s (%s)\n", bin, time.Since(start).Round(10*time.Millisecond))
	return nil
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory: certificates, logs, etcd data, kubeconfig, env (required)")
	timeout := fs.Duration("timeout", testenv.DefaultStartTimeout, "startup timeout")
	fs.Parse(args) //nolint:errcheck // ExitOnError
	if *dir == "" {
		return errors.New("--dir is required")
	}
	// Catch signals before starting, so a SIGTERM during startup still stops the children.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt, syscall.SIGHUP)

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	env, err := testenv.Start(ctx, *dir)
	cancel()
	if err != nil {
		return err
	}
	if err := env.WriteEnvFile(os.Getpid()); err != nil {
		env.Stop()
		return err
	}
	fmt.Printf("testenv ready in %s: %s\n", time.Since(start).Round(10*time.Millisecond), env.URL)
	fmt.Printf("  source %s   # exports KUBECONFIG=%s\n", filepath.Join(env.Dir, "env"), env.Kubeconfig())
	fmt.Printf("  logs: %s/{kube-apiserver,etcd}.log\n", env.Dir)

	var exitErr error
	select {
	case s := <-sig:
		fmt.Printf("testenv: %v, stopping\n", s)
	case <-env.Exited():
		exitErr = fmt.Errorf("a child process exited unexpectedly; see logs in %s", env.Dir)
	}
	return errors.Join(exitErr, env.Stop())
}

// down signals the `up` process recorded in DIR/env and waits for it; if that process is
// gone, it stops the recorded apiserver and etcd directly.
func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory given to up (required)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait before SIGKILL")
	fs.Parse(args) //nolint:errcheck // ExitOnError
	if *dir == "" {
		return errors.New("--dir is required")
	}
	vars, err := readEnv(filepath.Join(*dir, "env"))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(*timeout)
	// Order matters: the owner stops apiserver before etcd; do the same by hand.
	targets := []struct{ key, name string }{
		{"KAAS_TESTENV_UP_PID", "testenv"},
		{"KAAS_TESTENV_APISERVER_PID", testenv.APIServerBinary},
		{"KAAS_TESTENV_ETCD_PID", testenv.EtcdBinary},
	}
	for _, t := range targets {
		pid, _ := strconv.Atoi(vars[t.key])
		if pid <= 0 || !alive(pid) || !isBinary(pid, t.name) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			fmt.Fprintf(os.Stderr, "testenv down: pid %d (%s) killed after %s\n", pid, t.key, *timeout)
		}
	}
	_ = os.Remove(filepath.Join(*dir, "env"))
	fmt.Println("testenv: stopped")
	return nil
}

func readEnv(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no running environment: %w", err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if ok {
			vars[k] = strings.Trim(v, "'")
		}
	}
	return vars, nil
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs: trust kill(0)
	}
	// Field 3, after "(comm)", is the state.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// isBinary guards against a recycled pid: the process must run the named binary.
func isBinary(pid int, name string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return true // no procfs: trust the recorded pid
	}
	return filepath.Base(strings.TrimSuffix(exe, " (deleted)")) == name
}
