package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// netLab is a private network for a kaasCluster: each broker runs in its
// own network namespace, every namespace hangs off one bridge that lives in
// a switch namespace of its own, and the host (the test process, its
// clients and a proxy to the loopback-only test apiserver) is one more port
// on that bridge.
//
//	host  10.213.S.1  --veth--+
//	kaas-0 10.213.S.10 --veth--+-- bridge (namespace kaasnf-<pid>-<run>-sw)
//	kaas-1 10.213.S.11 --veth--+
//	kaas-2 10.213.S.12 --veth--+
//
// The bridge is inside its own namespace so that no host firewall
// (a FORWARD policy, br_netfilter) sees broker-to-broker traffic. S is a
// /24 of 10.213.0.0/16 that no host interface uses; namespace names carry
// the test process id, so parallel runs do not collide and the namespaces
// of an aborted run are swept by the next. A partition (isolate) is a set
// of iptables rules inside one broker's namespace; the data directory stays
// shared (the same filesystem), as a ReadWriteMany volume reached by a
// network of its own would.
type netLab struct {
	t         testing.TB
	prefix    string // namespace name prefix: kaasnf-<pid>-<run>-
	subnet    int    // S
	hostIP    string
	apiProxy  net.Listener
	proxyPort int
	// kubeconfig is the test apiserver's, pointed at the proxy.
	kubeconfig string

	mu      sync.Mutex
	brokers map[string]int // name -> index (address 10.213.S.10+index)
	conns   map[net.Conn]bool
}

const netnsPrefix = "kaasnf-"

var netLabRuns struct {
	sync.Mutex
	n int
}

// requireNetns fails (never skips) the test when it cannot build network
// namespaces: CI runs as root with iproute2 and iptables installed
// (.ci/install-test-deps.sh).
func requireNetns(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("network-partition tests need root (network namespaces, iptables); run them as root, as CI does")
	}
	for _, bin := range []string{"ip", "iptables", "iptables-restore"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("network-partition tests need %s (install iproute2 and iptables: .ci/install-test-deps.sh): %v", bin, err)
		}
	}
}

// run runs a command and fails the test with its output on error.
func (n *netLab) run(args ...string) {
	n.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		n.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newNetLab builds the switch namespace and the host's port on it, and a
// proxy on the host's address to the test apiserver.
func newNetLab(t testing.TB, api *apiserver) *netLab {
	t.Helper()
	requireNetns(t)
	sweepStaleNetns()
	netLabRuns.Lock()
	netLabRuns.n++
	run := netLabRuns.n
	netLabRuns.Unlock()
	n := &netLab{t: t, prefix: fmt.Sprintf("%s%d-%d-", netnsPrefix, os.Getpid(), run), brokers: map[string]int{}, conns: map[net.Conn]bool{}}
	// A lock across processes while a subnet is picked and claimed (by the
	// host address that marks it used).
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "kaas-netns.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	n.subnet = freeSubnet(t)
	n.hostIP = fmt.Sprintf("10.213.%d.1", n.subnet)
	t.Cleanup(n.teardown)
	sw := n.prefix + "sw"
	hostIf := fmt.Sprintf("knf%dx%d", os.Getpid()%1_000_000, run)
	n.run("ip", "netns", "add", sw)
	n.run("ip", "-n", sw, "link", "add", "br0", "type", "bridge")
	n.run("ip", "-n", sw, "link", "set", "br0", "up")
	n.run("ip", "link", "add", hostIf, "type", "veth", "peer", "name", "host", "netns", sw)
	n.run("ip", "-n", sw, "link", "set", "host", "master", "br0", "up")
	n.run("ip", "addr", "add", n.hostIP+"/24", "dev", hostIf)
	n.run("ip", "link", "set", hostIf, "up")

	// The apiserver listens on loopback only: a proxy on the host's address
	// reaches it, and a kubeconfig names the proxy (its certificate names
	// localhost, so the TLS server name stays localhost).
	n.apiProxy, err = net.Listen("tcp", net.JoinHostPort(n.hostIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	n.proxyPort = n.apiProxy.Addr().(*net.TCPAddr).Port
	cfg, err := clientcmd.LoadFromFile(api.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var target string
	for _, c := range cfg.Clusters {
		target = strings.TrimPrefix(c.Server, "https://")
		c.Server = "https://" + n.apiProxy.Addr().String()
		c.TLSServerName = "localhost"
	}
	n.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig-netns")
	if err := clientcmd.WriteToFile(*cfg, n.kubeconfig); err != nil {
		t.Fatal(err)
	}
	go n.proxy(target)
	return n
}

// freeSubnet picks S such that no host interface has an address in
// 10.213.S.0/24, starting from one derived from the process id.
func freeSubnet(t testing.TB) int {
	out, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip addr show: %v", err)
	}
	start := os.Getpid() % 250
	for i := 0; i < 250; i++ {
		s := (start+i)%250 + 1
		if !strings.Contains(string(out), fmt.Sprintf(" 10.213.%d.", s)) {
			return s
		}
	}
	t.Fatal("no free /24 in 10.213.0.0/16")
	return 0
}

// sweepStaleNetns deletes the namespaces of test processes that no longer
// run (an aborted run's; their veths go with them).
func sweepStaleNetns() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, netnsPrefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue
		}
		_ = exec.Command("ip", "netns", "del", name).Run()
	}
}

// proxy copies connections on the host's address to the apiserver.
func (n *netLab) proxy(target string) {
	for {
		c, err := n.apiProxy.Accept()
		if err != nil {
			return
		}
		go func() {
			up, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				c.Close()
				return
			}
			n.mu.Lock()
			n.conns[c], n.conns[up] = true, true
			n.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			_, _ = io.Copy(c, up)
			c.Close()
			n.mu.Lock()
			delete(n.conns, c)
			delete(n.conns, up)
			n.mu.Unlock()
		}()
	}
}

// teardown deletes every namespace of this lab (their veths with them) and
// stops the proxy; it runs at cleanup, after the brokers were killed
// (cleanups run last-registered first).
func (n *netLab) teardown() {
	if n.apiProxy != nil {
		n.apiProxy.Close()
	}
	n.mu.Lock()
	for c := range n.conns {
		c.Close()
	}
	n.mu.Unlock()
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.HasPrefix(name, n.prefix) {
			if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
				n.t.Errorf("ip netns del %s: %v\n%s", name, err, out)
			}
		}
	}
}

// ns is broker name's namespace.
func (n *netLab) ns(name string) string { return n.prefix + name }

// ip is broker name's address.
func (n *netLab) ip(name string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return fmt.Sprintf("10.213.%d.%d", n.subnet, 10+n.brokers[name])
}

// addBroker creates broker name's namespace, its port on the bridge and
// its address, and returns its Kafka, HTTP and heartbeat addresses (fixed
// ports: the namespace is the broker's alone).
func (n *netLab) addBroker(name string) (kafka, http, heartbeat string) {
	n.t.Helper()
	n.mu.Lock()
	i, ok := n.brokers[name]
	if !ok {
		i = len(n.brokers)
		n.brokers[name] = i
	}
	n.mu.Unlock()
	ip := n.ip(name)
	if !ok {
		ns, sw := n.ns(name), n.prefix+"sw"
		n.run("ip", "netns", "add", ns)
		n.run("ip", "-n", ns, "link", "set", "lo", "up")
		n.run("ip", "-n", sw, "link", "add", fmt.Sprintf("b%d", i), "type", "veth", "peer", "name", "eth0", "netns", ns)
		n.run("ip", "-n", sw, "link", "set", fmt.Sprintf("b%d", i), "master", "br0", "up")
		n.run("ip", "-n", ns, "addr", "add", ip+"/24", "dev", "eth0")
		n.run("ip", "-n", ns, "link", "set", "eth0", "up")
	}
	return net.JoinHostPort(ip, "9092"), net.JoinHostPort(ip, "8080"), net.JoinHostPort(ip, "9094")
}

// command runs argv inside broker name's namespace (ip netns exec execs
// it: the process is argv[0] itself).
func (n *netLab) command(name string, argv ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.ns(name)}, argv...)...)
}

// isolate cuts broker name off from every other broker and from the
// apiserver (the proxy's port), in both directions, by dropping packets
// inside its namespace: its clients (the host, on other ports) still reach
// it. Dropping rather than rejecting is what a partition looks like: open
// connections hang rather than fail.
func (n *netLab) isolate(name string) {
	n.t.Helper()
	ns := n.ns(name)
	n.mu.Lock()
	var others []string
	for o, i := range n.brokers {
		if o != name {
			others = append(others, fmt.Sprintf("10.213.%d.%d", n.subnet, 10+i))
		}
	}
	n.mu.Unlock()
	// One iptables-restore: every rule takes effect at once, so the cut
	// has one time.
	rules := "*filter\n"
	for _, ip := range others {
		rules += fmt.Sprintf("-A OUTPUT -d %s -j DROP\n-A INPUT -s %s -j DROP\n", ip, ip)
	}
	// Both directions for the apiserver too: an answer to a request sent
	// before the cut (a Lease renewal) must not arrive after it.
	rules += fmt.Sprintf("-A OUTPUT -d %s -p tcp --dport %d -j DROP\n-A INPUT -s %s -p tcp --sport %d -j DROP\nCOMMIT\n",
		n.hostIP, n.proxyPort, n.hostIP, n.proxyPort)
	cmd := exec.Command("ip", "netns", "exec", ns, "iptables-restore", "-w", "--noflush")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		n.t.Fatalf("iptables-restore in %s: %v\n%s\n%s", ns, err, out, rules)
	}
}

// heal removes the rules isolate added.
func (n *netLab) heal(name string) {
	n.t.Helper()
	n.run("ip", "netns", "exec", n.ns(name), "iptables", "-w", "-F", "OUTPUT")
	n.run("ip", "netns", "exec", n.ns(name), "iptables", "-w", "-F", "INPUT")
}
