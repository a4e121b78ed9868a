package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// apiserver is a real kube-apiserver + etcd started by deploy/testenv.
type apiserver struct {
	dir        string
	kubeconfig string
	cmd        *exec.Cmd
}

// startAPIServer runs `deploy/testenv/bin/testenv up`. The binaries must have
// been built (`go tool task testenv`); a missing binary fails the test.
func startAPIServer(t testing.TB) *apiserver {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "deploy", "testenv", "bin", "testenv")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: build the test environment first (go tool task testenv): %v", bin, err)
	}
	dir := t.TempDir()
	var out bytes.Buffer
	cmd := exec.Command(bin, "up", "--dir", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &apiserver{dir: dir, kubeconfig: filepath.Join(dir, "kubeconfig"), cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "env")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("test apiserver not ready after 90s:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	a.kubectl(t, "apply", "-f", filepath.Join(root, "deploy", "base", "crd-kafkatopics.yaml"))
	a.kubectl(t, "apply", "-f", filepath.Join(root, "deploy", "base", "crd-kafkaacls.yaml"))
	a.kubectl(t, "apply", "-f", filepath.Join(root, "deploy", "base", "crd-kafkaquotas.yaml"))
	a.kubectl(t, "apply", "-f", filepath.Join(root, "deploy", "base", "crd-kafkausers.yaml"))
	a.kubectl(t, "wait", "--for=condition=Established", "--timeout=30s", "crd/kafkatopics.kaas.dev", "crd/kafkaacls.kaas.dev", "crd/kafkaquotas.kaas.dev", "crd/kafkausers.kaas.dev")
	return a
}

func (a *apiserver) kubectl(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", a.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kubectlMaybe runs kubectl and returns its output, or "" on error.
func (a *apiserver) kubectlMaybe(args ...string) string {
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", a.kubeconfig}, args...)...).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// clusterBroker is one kaas process in cluster mode (MY_POD_NAME set).
type clusterBroker struct {
	name      string
	kafka     string
	http      string
	heartbeat string
	cmd       *exec.Cmd
	log       *brokerLog
	exited    chan struct{}
	// env is added to the broker's environment at each start (KAAS_RACK=...).
	env []string
}

// brokerLog is a broker's output, in a file the process writes itself: a
// pipe would make every log line wait for the test process (busy driving
// the load) to copy it, and stall the broker's goroutines that log.
type brokerLog struct{ f *os.File }

func (l *brokerLog) String() string {
	b, err := os.ReadFile(l.f.Name())
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	return string(b)
}

type kaasCluster struct {
	t         testing.TB
	api       *apiserver
	ns        string
	dataDir   string
	brokers   map[string]*clusterBroker
	flags     []string
	usedPorts map[int]bool
	// netns, when set, runs each broker in a network namespace of its own
	// (netns_harness_test.go) instead of on loopback.
	netns *netLab
	// listener, when set, is the protocol of each broker's only listener
	// (e.g. SASL_SSL), given with --listeners instead of --kafka-addr.
	listener string
	// listeners, when set, gives each broker's listener flags instead
	// (b.kafka is its primary listener's address).
	listeners func(b *clusterBroker) []string
}

func newKaasCluster(t testing.TB, api *apiserver, flags ...string) *kaasCluster {
	ns := fmt.Sprintf("kaas-test-%d", time.Now().UnixNano()%1_000_000)
	api.kubectl(t, "create", "namespace", ns)
	c := &kaasCluster{t: t, api: api, ns: ns, dataDir: t.TempDir(), brokers: map[string]*clusterBroker{}, flags: flags, usedPorts: map[int]bool{}}
	t.Cleanup(func() {
		for _, b := range c.brokers {
			b.kill()
		}
		if t.Failed() || os.Getenv("KAAS_TEST_LOGS") != "" {
			for _, b := range c.brokers {
				t.Logf("--- %s log ---\n%s", b.name, b.log.String())
			}
		}
	})
	return c
}

// loopbackAddr picks a free loopback port that this cluster has not handed
// out before (a port freed by one probe can come back from the next).
func (c *kaasCluster) loopbackAddr() string {
	for {
		p := freeLoopbackPort(c.t)
		if !c.usedPorts[p] {
			c.usedPorts[p] = true
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		}
	}
}

// start launches broker name (kaas-N), reusing its ports after a restart.
func (c *kaasCluster) start(name string) *clusterBroker {
	return c.startWith(name)
}

// startWith is start with env added to the broker's environment (kept for
// its restarts unless given again).
func (c *kaasCluster) startWith(name string, env ...string) *clusterBroker {
	t := c.t
	t.Helper()
	b, ok := c.brokers[name]
	if ok && env != nil {
		b.env = env
	}
	if !ok {
		b = &clusterBroker{name: name, env: env}
		if c.netns != nil {
			b.kafka, b.http, b.heartbeat = c.netns.addBroker(name)
		} else {
			b.kafka, b.http, b.heartbeat = c.loopbackAddr(), c.loopbackAddr(), c.loopbackAddr()
		}
		c.brokers[name] = b
	}
	if b.log == nil {
		f, err := os.CreateTemp(t.TempDir(), name+"-*.log")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		b.log = &brokerLog{f: f}
	} else {
		// Keep the earlier incarnation's log: failures and timelines span restarts.
		fmt.Fprintf(b.log.f, "--- %s restarted ---\n", name)
	}
	b.exited = make(chan struct{})
	kafkaArgs := []string{"--kafka-addr", b.kafka, "--advertised-addr", b.kafka}
	if c.listener != "" {
		kafkaArgs = []string{"--listeners", c.listener + "://" + b.kafka, "--advertised-listeners", c.listener + "://" + b.kafka}
	}
	if c.listeners != nil {
		kafkaArgs = c.listeners(b)
	}
	args := append(append(kafkaArgs,
		"--http-addr", b.http,
		"--heartbeat-addr", b.heartbeat, "--advertised-heartbeat-addr", b.heartbeat,
		"--data-dir", c.dataDir, "--log-format", "json", "--log-level", "info",
	), c.flags...)
	if lvl := os.Getenv("KAAS_TEST_LOG_LEVEL"); lvl != "" { // e.g. debug, for a timeline of every move
		args = append(args, "--log-level", lvl)
	}
	if os.Getenv("KAAS_HANDOFF_PROFILE") != "" {
		args = append(args, "--debug-pprof") // profileBrokers reads /debug/pprof/
	}
	// Extra flags for every broker, for experiments (e.g. "--fence-after 3s").
	args = append(args, strings.Fields(os.Getenv("KAAS_TEST_BROKER_ARGS"))...)
	kubeconfig := c.api.kubeconfig
	if c.netns != nil {
		b.cmd = c.netns.command(name, append([]string{kaasBinary(t)}, args...)...)
		kubeconfig = c.netns.kubeconfig
	} else {
		b.cmd = exec.Command(kaasBinary(t), args...)
	}
	b.cmd.Stdout, b.cmd.Stderr = b.log.f, b.log.f
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KAAS_") && !strings.HasPrefix(e, "KUBERNETES_") {
			b.cmd.Env = append(b.cmd.Env, e)
		}
	}
	b.cmd.Env = append(b.cmd.Env, "MY_POD_NAME="+name, "MY_POD_NAMESPACE="+c.ns,
		fmt.Sprintf("MY_POD_UID=uid-%s-%d", name, time.Now().UnixNano()), "KUBECONFIG="+kubeconfig)
	b.cmd.Env = append(b.cmd.Env, b.env...)
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = b.cmd.Wait(); close(b.exited) }()
	// A broker that cannot start (a port taken meanwhile) fails the test at
	// once with its output rather than as a timeout later.
	select {
	case <-b.exited:
		t.Fatalf("%s exited at start:\n%s", name, b.log.String())
	case <-time.After(300 * time.Millisecond):
	}
	return b
}

func (b *clusterBroker) kill() {
	if b.cmd == nil || b.cmd.Process == nil {
		return
	}
	select {
	case <-b.exited:
		return
	default:
	}
	_ = b.cmd.Process.Kill()
	<-b.exited
}

// healthz is the broker's /healthz body.
func (b *clusterBroker) healthz() (health, error) {
	var h health
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Get("http://" + b.http + "/healthz")
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&h)
	return h, err
}

func (c *kaasCluster) seeds() []string {
	var out []string
	for _, b := range c.brokers {
		select {
		case <-b.exited:
		default:
			out = append(out, b.kafka)
		}
	}
	return out
}

// names lists the cluster's brokers, started or not, in name order.
func (c *kaasCluster) names() []string {
	return slices.Sorted(maps.Keys(c.brokers))
}

// namesBut lists every broker but the one named.
func (c *kaasCluster) namesBut(name string) []string {
	return slices.DeleteFunc(c.names(), func(n string) bool { return n == name })
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not reached within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// clientLog is a kgo client's debug log, kept in memory and printed (its
// last lines) only if the test fails: what the client retried and why.
func clientLog(t testing.TB) kgo.Opt {
	var buf lockedBuffer
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		t.Logf("--- client log (last 200 lines) ---\n%s", lastLines(buf.String(), 200))
	})
	return kgo.WithLogger(kgo.BasicLogger(&buf, kgo.LogLevelDebug, func() string { return time.Now().Format("15:04:05.000 ") }))
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startAll starts names and waits until a controller is elected, every
// one of them is alive and each one's Metadata lists them all (a client's
// first Metadata may predate the later brokers); it returns the
// controller's name.
func (c *kaasCluster) startAll(names ...string) string {
	t := c.t
	t.Helper()
	for _, n := range names {
		c.start(n)
	}
	var ctrl string
	waitUntil(t, 30*time.Second, "a controller elected and every broker alive", func() bool {
		led, name, _ := c.ledBy()
		ctrl = name
		return ctrl != "" && len(led) == len(names)
	})
	// Every broker's view, not only one: a manual replica assignment is
	// checked against the view of the broker a request reaches.
	waitUntil(t, 30*time.Second, "every broker in every broker's Metadata", func() bool {
		for _, n := range names {
			cl := newClient(t, c.brokers[n].kafka)
			m, err := kadm.NewClient(cl).BrokerMetadata(ctxFor(t, 10*time.Second))
			cl.Close()
			if err != nil || len(m.Brokers) != len(names) {
				return false
			}
		}
		return true
	})
	return ctrl
}
