package node

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kaas-project/kaas/deploy/testenv/testenv"
)

// Addresses of the node's network. They exist only inside the network namespace the node
// runs in (the caller's, which must be a private one: the tests re-run themselves under `unshare --net`).
const (
	// Bridge is the pods' bridge; its address is the node's address, the pods' gateway
	// and the cluster DNS server.
	Bridge = "cni0"
	// NodeIP is the bridge's address.
	NodeIP = "10.214.1.1"
	// PodCIDR is the pods' subnet on the bridge.
	PodCIDR = "10.214.1.0/24"
	// KubernetesServiceIP is the `kubernetes` Service's ClusterIP (the first address of
	// testenv's --service-cluster-ip-range); a DNAT rule stands in for kube-proxy.
	KubernetesServiceIP = "10.0.0.1"
	// Name is the Node object's name.
	Name = "kaas-node"
	// ClusterDomain is the DNS domain CoreDNS serves.
	ClusterDomain = "cluster.local"
	// SandboxImage is the pause image's name; Start loads it from an archive it writes.
	SandboxImage = "registry.k8s.io/pause:3.10"
	// CRINamespace is containerd's namespace for the kubelet's images and containers.
	CRINamespace = "k8s.io"
)

// Node is a running one-node cluster.
type Node struct {
	Dir string
	API *testenv.Env

	bin      string
	sock     string
	children []*child // in start order; stopped in reverse
}

// Start brings up the node in dir: the bridge and the DNAT rule in the current network
// namespace, the apiserver (bound to every address of the namespace, so pods reach it),
// containerd, the controller-manager, the scheduler, CoreDNS and the kubelet; it returns
// once the Node is Ready. Stop undoes it.
func Start(ctx context.Context, dir string) (_ *Node, err error) {
	bin, err := testenv.BinDir()
	if err != nil {
		return nil, err
	}
	for _, b := range []string{ControllerManagerBinary, SchedulerBinary, KubeletBinary, ContainerdBinary, ShimBinary, CtrBinary, CoreDNSBinary, PauseBinary} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("node binary %s missing (run node.Build): %w", b, err)
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	n := &Node{Dir: dir, bin: bin, sock: filepath.Join(dir, "containerd", "containerd.sock")}
	defer func() {
		if err != nil {
			n.Stop()
		}
	}()
	if err := n.network(); err != nil {
		return nil, fmt.Errorf("node network: %w", err)
	}
	if n.API, err = testenv.StartWith(ctx, filepath.Join(dir, "api"), testenv.Options{BindAddress: "0.0.0.0"}); err != nil {
		return nil, err
	}
	apiPort := n.API.URL[strings.LastIndex(n.API.URL, ":")+1:]
	if err := run("iptables", "-t", "nat", "-A", "PREROUTING", "-d", KubernetesServiceIP, "-p", "tcp", "--dport", "443",
		"-j", "DNAT", "--to-destination", NodeIP+":"+apiPort); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	if err := n.ImportImage(ctx, filepath.Join(dir, "pause.tar"), func(p string) error { return writePauseImage(p, filepath.Join(bin, PauseBinary)) }); err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	pki := filepath.Join(n.API.Dir, "pki")
	kc := n.API.Kubeconfig()
	if _, err := n.start("kube-controller-manager", ControllerManagerBinary,
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--service-account-private-key-file="+filepath.Join(pki, "sa.key"),
		"--root-ca-file="+filepath.Join(pki, "ca.crt"),
		"--leader-elect=false", "--secure-port=0", "--controllers=*",
		// Deleting a pod or a namespace must finish within a test.
		"--concurrent-gc-syncs=5"); err != nil {
		return nil, err
	}
	if _, err := n.start("kube-scheduler", SchedulerBinary,
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--leader-elect=false", "--secure-port=0"); err != nil {
		return nil, err
	}
	if err := n.startCoreDNS(); err != nil {
		return nil, err
	}
	if err := n.startKubelet(); err != nil {
		return nil, err
	}
	if err := n.waitNodeReady(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// network creates the bridge with the node's address and turns on forwarding. The CNI
// bridge plugin finds the bridge and keeps its address as the gateway.
func (n *Node) network() error {
	for _, args := range [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", Bridge, "type", "bridge"},
		{"ip", "addr", "add", NodeIP + "/24", "dev", Bridge},
		{"ip", "link", "set", Bridge, "up"},
		// Processes that look for a default route (the kubelet's address discovery) find one.
		{"ip", "route", "add", "default", "via", NodeIP, "dev", Bridge},
		{"sysctl", "-q", "-w", "net.ipv4.ip_forward=1"},
	} {
		if err := run(args...); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) startContainerd(ctx context.Context) error {
	d := filepath.Join(n.Dir, "containerd")
	cni := filepath.Join(n.Dir, "cni")
	for _, p := range []string{d, filepath.Join(cni, "net.d"), filepath.Join(cni, "ipam")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "kaas-node",
  "plugins": [{
    "type": "bridge", "bridge": %q, "isGateway": true, "isDefaultGateway": true, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q, "gateway": %q}]]}
  }]
}
`, Bridge, filepath.Join(cni, "ipam"), PodCIDR, NodeIP)
	if err := os.WriteFile(filepath.Join(cni, "net.d", "10-kaas-node.conflist"), []byte(conflist), 0o644); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`version = 3
root = %q
state = %q

[grpc]
  address = %q

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %q

[plugins.'io.containerd.cri.v1.runtime']
  # Both add sysctls to every sandbox's spec; the pods here need neither.
  enable_unprivileged_ports = false
  enable_unprivileged_icmp = false
  # Sandboxes ask for oom_score_adj -998; lowering it needs CAP_SYS_RESOURCE, which the test
  # machines lack (runc: "can't get final child's PID from pipe: EOF"). This clamps every
  # container's score at containerd's own.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%q]
    conf_dir = %q
`, filepath.Join(d, "root"), filepath.Join(d, "state"), n.sock, SandboxImage, runcPath(), CNIBinDir, filepath.Join(cni, "net.d"))
	cfgPath := filepath.Join(d, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	c, err := n.start("containerd", ContainerdBinary, "--config", cfgPath)
	if err != nil {
		return err
	}
	return waitFor(ctx, c, "containerd socket "+n.sock, func() bool {
		conn, err := net.Dial("unix", n.sock)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
}

// CNIBinDir is where Debian's containernetworking-plugins installs bridge, host-local
// and loopback.
const CNIBinDir = "/usr/lib/cni"

func runcPath() string {
	if p, err := exec.LookPath("runc"); err == nil {
		return p
	}
	return "/usr/sbin/runc"
}

// ImportImage writes an archive with write (if not nil) to path and imports it into
// containerd's CRI namespace, where the kubelet finds its images.
func (n *Node) ImportImage(ctx context.Context, path string, write func(string) error) error {
	if write != nil {
		if err := write(path); err != nil {
			return err
		}
	}
	out, err := n.Ctr(ctx, "images", "import", path)
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w\n%s", path, err, out)
	}
	return nil
}

// Ctr runs the ctr binary against the node's containerd in the CRI namespace.
func (n *Node) Ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(n.bin, CtrBinary), append([]string{"--address", n.sock, "--namespace", CRINamespace}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (n *Node) startCoreDNS() error {
	corefile := fmt.Sprintf(`.:53 {
    bind %s
    errors
    kubernetes %s in-addr.arpa {
        kubeconfig %s
        fallthrough in-addr.arpa
    }
}
`, NodeIP, ClusterDomain, n.API.Kubeconfig())
	p := filepath.Join(n.Dir, "Corefile")
	if err := os.WriteFile(p, []byte(corefile), 0o644); err != nil {
		return err
	}
	_, err := n.start("coredns", CoreDNSBinary, "-conf", p)
	return err
}

func (n *Node) startKubelet() error {
	d := filepath.Join(n.Dir, "kubelet")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine has cgroup v1 only.
failCgroupV1: false
cgroupDriver: cgroupfs
# No QoS hierarchy: the kubelet then leaves the host's cgroup layout as it is.
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://%s
# The apiserver reaches the kubelet (logs, exec) at the node's address, anonymously:
# the node lives in the test's own network namespace.
address: %s
port: %d
healthzBindAddress: 127.0.0.1
healthzPort: %d
readOnlyPort: 0
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
clusterDNS: [%s]
clusterDomain: %s
resolvConf: ""
failSwapOn: false
# A shared test machine: evict only when the disk is really full.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
maxPods: 30
volumePluginDir: %s
podLogsDir: %s
`, n.sock, NodeIP, ports[0], ports[1], NodeIP, ClusterDomain, filepath.Join(d, "volume-plugins"), filepath.Join(d, "pod-logs"))
	p := filepath.Join(d, "config.yaml")
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		return err
	}
	_, err = n.start("kubelet", KubeletBinary,
		"--config="+p, "--kubeconfig="+n.API.Kubeconfig(),
		"--hostname-override="+Name, "--node-ip="+NodeIP,
		"--root-dir="+filepath.Join(d, "root"), "--cert-dir="+filepath.Join(d, "pki"), "--v=2")
	return err
}

// Kubectl runs kubectl with the node's admin kubeconfig.
func (n *Node) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+n.API.Kubeconfig())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (n *Node) waitNodeReady(ctx context.Context) error {
	var last string
	for {
		out, err := n.Kubectl(ctx, "get", "node", Name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err == nil && strings.TrimSpace(out) == "True" {
			return nil
		}
		last = out
		for _, c := range n.children {
			select {
			case <-c.done:
				return fmt.Errorf("%s exited (%v) before the node was Ready; log %s:\n%s", c.name, c.err, c.logPath, tail(c.logPath, 30))
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready: %w; last: %s; kubelet log:\n%s", Name, ctx.Err(), last, tail(filepath.Join(n.Dir, "kubelet.log"), 30))
		case <-time.After(time.Second):
		}
	}
}

// Logs returns the last lines of each component's log, for a failing test.
func (n *Node) Logs(lines int) string {
	var b strings.Builder
	for _, c := range n.children {
		fmt.Fprintf(&b, "==== %s (%s)\n%s\n", c.name, c.logPath, tail(c.logPath, lines))
	}
	return b.String()
}

// Stop kills every container, stops the components in reverse order, then the apiserver,
// and unmounts what the kubelet and containerd mounted under Dir.
func (n *Node) Stop() {
	if n.sock != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if out, err := n.Ctr(ctx, "tasks", "list", "-q"); err == nil {
			for _, id := range strings.Fields(out) {
				n.Ctr(ctx, "tasks", "kill", "-s", "SIGKILL", id) //nolint:errcheck
			}
		}
		cancel()
	}
	for i := len(n.children) - 1; i >= 0; i-- {
		n.children[i].stop()
	}
	killShims(n.Dir)
	if n.API != nil {
		n.API.Stop() //nolint:errcheck
	}
	unmountUnder(n.Dir)
}

// killShims kills the containerd shims (they outlive containerd) whose command line
// names a path under dir, and the containers they hold.
func killShims(dir string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, ShimBinary) && strings.Contains(cmd, dir) {
			syscall.Kill(-pid, syscall.SIGKILL) //nolint:errcheck
			syscall.Kill(pid, syscall.SIGKILL)  //nolint:errcheck
		}
	}
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			mounts = append(mounts, fields[4])
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	for _, m := range mounts {
		syscall.Unmount(m, syscall.MNT_DETACH) //nolint:errcheck
	}
}

// child is one component process; its output goes to Dir/<name>.log.
type child struct {
	name, logPath string
	cmd           *exec.Cmd
	done          chan struct{}
	err           error
}

func (n *Node) start(name, binary string, args ...string) (*child, error) {
	logPath := filepath.Join(n.Dir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	c := &child{name: name, logPath: logPath, done: make(chan struct{})}
	c.cmd = exec.Command(filepath.Join(n.bin, binary), args...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	// containerd finds the shim on PATH.
	c.cmd.Env = append(os.Environ(), "PATH="+n.bin+":"+os.Getenv("PATH"))
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	n.children = append(n.children, c)
	return c, nil
}

func (c *child) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill() //nolint:errcheck
		<-c.done
	}
}

func waitFor(ctx context.Context, c *child, what string, cond func() bool) error {
	for !cond() {
		select {
		case <-c.done:
			return fmt.Errorf("%s exited (%v) waiting for %s; log:\n%s", c.name, c.err, what, tail(c.logPath, 30))
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w; log:\n%s", what, ctx.Err(), tail(c.logPath, 30))
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePorts(k int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < k; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
