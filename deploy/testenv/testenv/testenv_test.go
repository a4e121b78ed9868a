package testenv_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kaas-project/kaas/deploy/testenv/testenv"
)

// The version stamped into the binary is the one go.mod requires, and the server says so.
func TestServerVersion(t *testing.T) {
	mod, err := testenv.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(gomod)
	if m == nil || string(m[1]) != testenv.KubernetesVersion {
		t.Fatalf("go.mod requires k8s.io/kubernetes %q, testenv.KubernetesVersion is %q", m, testenv.KubernetesVersion)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != testenv.KubernetesVersion {
		t.Fatalf("server version %q, want %q", v.GitVersion, testenv.KubernetesVersion)
	}
}

// Build is idempotent and fast once the binaries are current.
func TestBuildIsIdempotent(t *testing.T) {
	start := time.Now()
	if err := testenv.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Build with current binaries took %s", d)
	}
}

// Without the binaries Start fails (it never silently skips) and says how to build them.
func TestStartWithoutBinariesFails(t *testing.T) {
	t.Setenv(testenv.EnvBinDir, t.TempDir())
	_, err := testenv.Start(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "build.sh") {
		t.Fatalf("Start without binaries: %v", err)
	}
}

func TestEnvFiles(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(env.Dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"export KUBECONFIG='" + env.Kubeconfig() + "'",
		"export KAAS_TESTENV_APISERVER_PID=" + strconv.Itoa(env.APIServerPID()),
		"export KAAS_TESTENV_ETCD_PID=" + strconv.Itoa(env.EtcdPID()),
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("env lacks %q:\n%s", want, b)
		}
	}
}

// `testenv up` serves until `testenv down`, which stops the apiserver and etcd.
func TestUpDownCommand(t *testing.T) {
	mod, err := testenv.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "testenv")
	build := exec.Command("go", "build", "-o", exe, "./cmd/testenv")
	build.Dir = mod
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/testenv: %v\n%s", err, out)
	}
	dir := t.TempDir()

	up := exec.Command(exe, "up", "--dir", dir)
	up.Env = append(os.Environ(), testenv.EnvBinDir+"="+bin)
	stdout, err := up.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	up.Stderr = os.Stderr
	start := time.Now()
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	upOut := &lines{}
	exited := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			upOut.add(sc.Text())
			if strings.HasPrefix(sc.Text(), "testenv ready") {
				ready <- sc.Text()
			}
		}
		exited <- up.Wait()
	}()
	t.Cleanup(func() { _ = up.Process.Kill() })
	select {
	case <-ready:
		t.Logf("up ready after %s", time.Since(start).Round(time.Millisecond))
	case err := <-exited:
		t.Fatalf("up exited before ready: %v\n%s", err, upOut)
	case <-time.After(2 * time.Minute):
		t.Fatal("up not ready after 2m")
	}

	vars := map[string]string{}
	envFile, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(envFile), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "export "), "="); ok {
			vars[k] = strings.Trim(v, "'")
		}
	}
	if vars["KUBECONFIG"] != filepath.Join(dir, "kubeconfig") || vars["KAAS_TESTENV_UP_PID"] != strconv.Itoa(up.Process.Pid) {
		t.Fatalf("env file:\n%s", envFile)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", vars["KUBECONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := dc.ServerVersion(); err != nil || v.GitVersion != testenv.KubernetesVersion {
		t.Fatalf("server version through DIR/kubeconfig: %v %v", v, err)
	}
	apiserverPID, _ := strconv.Atoi(vars["KAAS_TESTENV_APISERVER_PID"])
	etcdPID, _ := strconv.Atoi(vars["KAAS_TESTENV_ETCD_PID"])

	down := exec.Command(exe, "down", "--dir", dir)
	if out, err := down.CombinedOutput(); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("up exited with %v after down\n%s", err, upOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("up still running 30s after down")
	}
	for name, pid := range map[string]int{"kube-apiserver": apiserverPID, "etcd": etcdPID} {
		if pid <= 0 {
			t.Fatalf("no %s pid in env file", name)
		}
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("%s (pid %d) still running after down", name, pid)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "env")); !os.IsNotExist(err) {
		t.Errorf("DIR/env still present after down: %v", err)
	}
}

type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s + "\n")
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
