// Package node runs a one-node Kubernetes cluster for end-to-end tests: the testenv
// apiserver plus kube-controller-manager, kube-scheduler, kubelet, containerd (with runc
// and the CNI bridge plugins from Debian) and CoreDNS, all as child processes inside the
// caller's network namespace. Pods run real images loaded from OCI archives.
//
// Every component is built from source at pinned versions: the Kubernetes binaries from
// this module (the apiserver's version), containerd and CoreDNS from nested modules
// (deploy/testenv/containerd, deploy/testenv/coredns) so that their dependencies never
// meet Kubernetes' in one go.mod.
package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kaas-project/kaas/deploy/testenv/testenv"
)

// Binary names inside the bin directory (next to kube-apiserver and etcd).
const (
	ControllerManagerBinary = "kube-controller-manager"
	SchedulerBinary         = "kube-scheduler"
	KubeletBinary           = "kubelet"
	ContainerdBinary        = "containerd"
	ShimBinary              = "containerd-shim-runc-v2"
	CtrBinary               = "ctr"
	CoreDNSBinary           = "coredns"
	PauseBinary             = "pause"
)

// group is one `go build` run: packages of one module built into the bin directory.
type group struct {
	name   string   // the stamp file is bin/.stamp-<name>
	dir    string   // module directory, relative to the testenv module
	pkgs   []string // package paths
	outs   []string // binary names the packages produce
	inputs []string // files (relative to dir) whose content decides staleness
	cgo    bool
	tags   string
}

func groups() []group {
	kube := "k8s.io/kubernetes/cmd/"
	return []group{
		{name: "kube-node", dir: ".", pkgs: []string{kube + ControllerManagerBinary, kube + SchedulerBinary, kube + KubeletBinary},
			outs: []string{ControllerManagerBinary, SchedulerBinary, KubeletBinary}, inputs: []string{"go.mod", "go.sum"}},
		{name: "containerd", dir: "containerd",
			pkgs: []string{"github.com/containerd/containerd/v2/cmd/containerd", "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2", "github.com/containerd/containerd/v2/cmd/ctr"},
			outs: []string{ContainerdBinary, ShimBinary, CtrBinary}, inputs: []string{"go.mod", "go.sum"},
			// The snapshotters that need cgo are left out; the node uses overlayfs.
			tags: "no_btrfs no_devmapper no_zfs"},
		{name: "coredns", dir: "coredns", pkgs: []string{"github.com/coredns/coredns"}, outs: []string{CoreDNSBinary}, inputs: []string{"go.mod", "go.sum"}},
		{name: "pause", dir: ".", pkgs: []string{"./cmd/pause"}, outs: []string{PauseBinary}, inputs: []string{"cmd/pause/main.go"}},
	}
}

// Build builds the node's binaries into testenv's bin directory when they are missing or
// their module's go.mod/go.sum changed (the apiserver and etcd too, through testenv.Build).
// Current binaries cost a stat and a hash. With $KAAS_TESTENV_BIN set it only checks that
// the binaries exist there, as testenv.Build does. Cold, the Kubernetes group takes tens of
// minutes on two cores; deploy/README.md has the measured times.
func Build(ctx context.Context) error {
	if err := testenv.Build(ctx); err != nil {
		return err
	}
	bin, err := testenv.BinDir()
	if err != nil {
		return err
	}
	if os.Getenv(testenv.EnvBinDir) != "" {
		// Prebuilt binaries (a CI cache, another checkout): check only that they are there.
		for _, g := range groups() {
			for _, o := range g.outs {
				if _, err := os.Stat(filepath.Join(bin, o)); err != nil {
					return fmt.Errorf("node binary missing in %s=%s: %w", testenv.EnvBinDir, bin, err)
				}
			}
		}
		return nil
	}
	mod, err := testenv.ModuleDir()
	if err != nil {
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
	for _, g := range groups() {
		if err := buildGroup(ctx, mod, bin, g); err != nil {
			return err
		}
	}
	return nil
}

func buildGroup(ctx context.Context, mod, bin string, g group) error {
	dir := filepath.Join(mod, g.dir)
	h := sha256.New()
	fmt.Fprintf(h, "tags %s cgo %v ldflags %s\n", g.tags, g.cgo, testenv.LDFlags())
	for _, f := range g.inputs {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return fmt.Errorf("build %s: %w", g.name, err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	stamp := hex.EncodeToString(h.Sum(nil))
	stampFile := filepath.Join(bin, ".stamp-"+g.name)
	current := func() bool {
		b, err := os.ReadFile(stampFile)
		if err != nil || string(b) != stamp {
			return false
		}
		for _, o := range g.outs {
			if st, err := os.Stat(filepath.Join(bin, o)); err != nil || st.IsDir() {
				return false
			}
		}
		return true
	}
	if current() {
		return nil
	}
	_ = os.Remove(stampFile)
	start := time.Now()
	fmt.Fprintf(os.Stderr, "node: building %s (%s); cold, this takes minutes\n", g.name, strings.Join(g.outs, ", "))
	tmp, err := os.MkdirTemp(bin, ".build-"+g.name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	args := []string{"build", "-ldflags", testenv.LDFlags(), "-o", tmp + "/"}
	if g.tags != "" {
		args = append(args, "-tags", g.tags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, g.pkgs...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+map[bool]string{true: "1", false: "0"}[g.cgo])
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("build %s: go %s: %w\n%s", g.name, strings.Join(args, " "), err, out)
	}
	for _, o := range g.outs {
		if err := os.Rename(filepath.Join(tmp, o), filepath.Join(bin, o)); err != nil {
			return fmt.Errorf("build %s: %w", g.name, err)
		}
	}
	fmt.Fprintf(os.Stderr, "node: built %s in %s\n", g.name, time.Since(start).Round(time.Second))
	return os.WriteFile(stampFile, []byte(stamp), 0o644)
}
