package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// ModulePath is this module's path; used to recognise its go.mod.
const ModulePath = "github.com/kaas-project/kaas/deploy/testenv"

// KubernetesVersion is the k8s.io/kubernetes version go.mod requires. The build stamps it
// into the binary (without -X flags the server reports v0.0.0-master). A test checks that
// it matches go.mod.
const KubernetesVersion = "v1.37.2"

// Binary names inside BinDir.
const (
	APIServerBinary = "kube-apiserver"
	EtcdBinary      = "etcd"
)

// Environment variables that override path discovery.
const (
	// EnvBinDir names a directory holding kube-apiserver and etcd (prebuilt elsewhere).
	EnvBinDir = "KAAS_TESTENV_BIN"
	// EnvModuleDir names the deploy/testenv module directory (where Build runs go build).
	EnvModuleDir = "KAAS_TESTENV_MODULE"
)

// ModuleDir returns the directory of the deploy/testenv module: $KAAS_TESTENV_MODULE, else
// the source directory this package was compiled from, else the first ancestor of the
// working directory that is (or contains deploy/testenv as) this module.
func ModuleDir() (string, error) {
	if d := os.Getenv(EnvModuleDir); d != "" {
		if isModuleDir(d) {
			return filepath.Abs(d)
		}
		return "", fmt.Errorf("%s=%s is not the %s module", EnvModuleDir, d, ModulePath)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if d := filepath.Dir(filepath.Dir(file)); isModuleDir(d) {
			return d, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		for _, c := range []string{d, filepath.Join(d, "deploy", "testenv")} {
			if isModuleDir(c) {
				return c, nil
			}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return "", fmt.Errorf("cannot find the %s module (set %s)", ModulePath, EnvModuleDir)
}

func isModuleDir(d string) bool {
	b, err := os.ReadFile(filepath.Join(d, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(first) == "module "+ModulePath
}

// BinDir returns the directory holding (or meant to hold) the kube-apiserver and etcd
// binaries: $KAAS_TESTENV_BIN, else the directory of the running executable if the
// binaries sit next to it (deploy/testenv/bin/testenv), else <module>/bin.
func BinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		return filepath.Abs(d)
	}
	if exe, err := os.Executable(); err == nil {
		d := filepath.Dir(exe)
		if fileExists(filepath.Join(d, APIServerBinary)) && fileExists(filepath.Join(d, EtcdBinary)) {
			return d, nil
		}
	}
	m, err := ModuleDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(m, "bin"), nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// ldflags stamps the Kubernetes version (both packages that report it) and strips symbols.
func ldflags() string {
	v := strings.TrimPrefix(KubernetesVersion, "v")
	parts := strings.SplitN(v, ".", 3)
	f := []string{"-s", "-w"}
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		f = append(f,
			"-X", p+".gitVersion="+KubernetesVersion,
			"-X", p+".gitMajor="+parts[0],
			"-X", p+".gitMinor="+parts[1],
			"-X", p+".gitTreeState=clean",
			"-X", p+".buildDate=1970-01-01T00:00:00Z")
	}
	return strings.Join(f, " ")
}

// Build builds kube-apiserver and etcd into BinDir if they are missing or stale (go.mod,
// go.sum or the etcd command changed). It is idempotent and returns in milliseconds when
// the binaries are current. A cold build takes minutes (see deploy/README.md); concurrent
// callers are serialised with a file lock. Progress goes to stderr.
//
// If $KAAS_TESTENV_BIN is set, Build only checks that the binaries exist there.
func Build(ctx context.Context) error {
	bin, err := BinDir()
	if err != nil {
		return err
	}
	have := fileExists(filepath.Join(bin, APIServerBinary)) && fileExists(filepath.Join(bin, EtcdBinary))
	mod, modErr := ModuleDir()
	if os.Getenv(EnvBinDir) != "" || modErr != nil {
		if have {
			return nil
		}
		if modErr != nil {
			return fmt.Errorf("testenv binaries missing in %s and %w", bin, modErr)
		}
		return fmt.Errorf("testenv binaries missing in %s=%s (run deploy/testenv/build.sh)", EnvBinDir, bin)
	}
	stamp, err := buildStamp(mod)
	if err != nil {
		return err
	}
	stampFile := filepath.Join(bin, ".stamp")
	current := func() bool {
		b, err := os.ReadFile(stampFile)
		return err == nil && string(b) == stamp &&
			fileExists(filepath.Join(bin, APIServerBinary)) && fileExists(filepath.Join(bin, EtcdBinary))
	}
	if current() {
		return nil
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(bin, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	// Another process may have built it while we waited for the lock.
	if current() {
		return nil
	}
	_ = os.Remove(stampFile)
	for _, b := range []struct{ name, pkg, ldflags string }{
		{EtcdBinary, "./cmd/etcd", "-s -w"},
		{APIServerBinary, "k8s.io/kubernetes/cmd/kube-apiserver", ldflags()},
	} {
		if err := goBuild(ctx, mod, filepath.Join(bin, b.name), b.pkg, b.ldflags); err != nil {
			return err
		}
	}
	return os.WriteFile(stampFile, []byte(stamp), 0o644)
}

func goBuild(ctx context.Context, mod, out, pkg, ldflags string) error {
	start := time.Now()
	fmt.Fprintf(os.Stderr, "testenv: building %s (%s); a cold build of kube-apiserver takes minutes\n", filepath.Base(out), pkg)
	tmp := out + ".tmp"
	// No -trimpath: the packages this build compiles (client-go, apimachinery, ...) then
	// share the build cache with `go test` of this module, which saves minutes cold.
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", ldflags, "-o", tmp, pkg)
	cmd.Dir = mod
	var tail bytes.Buffer
	cmd.Stdout = io.MultiWriter(os.Stderr, &tail)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, lastLines(tail.String(), 30))
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "testenv: built %s in %s\n", filepath.Base(out), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// buildStamp identifies the inputs of a build: the module's requirements, the etcd
// command's source and the version flags.
func buildStamp(mod string) (string, error) {
	h := sha256.New()
	files := []string{"go.mod", "go.sum"}
	etcdSrc, _ := filepath.Glob(filepath.Join(mod, "cmd", "etcd", "*.go"))
	for _, f := range etcdSrc {
		rel, _ := filepath.Rel(mod, f)
		files = append(files, rel)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(mod, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "ldflags %s\n", ldflags())
	return hex.EncodeToString(h.Sum(nil)), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var errNotBuilt = errors.New("testenv binaries not built: run `bash deploy/testenv/build.sh` or call testenv.Build")

// LDFlags are the linker flags of the Kubernetes binaries (the version stamps, no symbols),
// for packages that build more of them.
func LDFlags() string { return ldflags() }
