package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/deploy/testenv/testenv"
)

// envInNetns marks the test binary re-run inside its own network namespace.
const envInNetns = "KAAS_NODE_IN_NETNS"

// TestMain re-runs the tests under `unshare --net`: the node's bridge, pod addresses and
// iptables rule then live in a network namespace of their own, which vanishes with the
// test process.
func TestMain(m *testing.M) {
	if os.Getenv(envInNetns) == "" {
		if os.Geteuid() != 0 {
			fmt.Fprintln(os.Stderr, "node tests need root (network namespace, containers, mounts), as CI has")
			os.Exit(1)
		}
		for _, b := range []string{"unshare", "ip", "iptables", "runc", "kubectl"} {
			if _, err := exec.LookPath(b); err != nil {
				fmt.Fprintf(os.Stderr, "node tests need %s (.ci/install-test-deps.sh): %v\n", b, err)
				os.Exit(1)
			}
		}
		cmd := exec.Command("unshare", append([]string{"--net", "--", os.Args[0]}, os.Args[1:]...)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), envInNetns+"=1")
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				os.Exit(ee.ExitCode())
			}
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const (
	e2eNamespace = "kaas-e2e"
	e2eVolume    = "/var/lib/kaas-e2e" // the e2e overlay's hostPath PersistentVolume
	podSelector  = "app.kubernetes.io/name=kaas"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	mod, err := testenv.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(mod))
}

// startNode builds what is missing and starts a node in a temporary directory.
func startNode(t *testing.T, ctx context.Context) *Node {
	t.Helper()
	if err := Build(ctx); err != nil {
		t.Fatal(err)
	}
	n, err := Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("component logs:\n%s", n.Logs(40))
		}
		n.Stop()
	})
	return n
}

func kubectl(t *testing.T, ctx context.Context, n *Node, args ...string) string {
	t.Helper()
	out, err := n.Kubectl(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNodeRunsKaas applies the e2e overlay on the one-node cluster, waits for three
// Ready kaas pods, then produces (idempotent, acks=all) and consumes through them,
// before and after the controller's pod is deleted; then, on the same cluster and each
// followed by the record check: a rolling restart, scaling to four brokers and back,
// KafkaTopic objects both ways, and the broker ServiceAccount's RBAC with its own token.
func TestNodeRunsKaas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	root := repoRoot(t)
	image := exec.CommandContext(ctx, "go", "tool", "task", "image")
	image.Dir = root
	if out, err := image.CombinedOutput(); err != nil {
		t.Fatalf("go tool task image: %v\n%s", err, out)
	}
	n := startNode(t, ctx)
	if err := n.ImportImage(ctx, filepath.Join(root, "bin", "kaas-image.tar"), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(e2eVolume); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e2eVolume, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(e2eVolume, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	kubectl(t, ctx, n, "apply", "-k", filepath.Join(root, "deploy", "overlays", "e2e"))
	defer func() {
		if t.Failed() {
			out, _ := n.Kubectl(context.Background(), "-n", e2eNamespace, "describe", "pods")
			t.Logf("pods:\n%s", out)
		}
	}()
	waitPodsReady(t, ctx, n, 3)

	cl := newClient(t)
	adm := kadm.NewClient(cl)
	const topic = "node-e2e"
	// Twelve partitions: three brokers lead four each, four brokers three each, so a
	// fourth broker takes some over. Ready pods may still be electing the controller or
	// writing the assignment: topic creation answers retriable errors until then.
	var createErr error
	waitUntil(t, ctx, "topic "+topic+" created", func() bool {
		_, createErr = adm.CreateTopic(ctx, 12, -1, nil, topic)
		if createErr != nil && !kerr.IsRetriable(createErr) && !errors.Is(createErr, kerr.TopicAlreadyExists) {
			t.Fatalf("create topic: %v", createErr)
		}
		return createErr == nil || errors.Is(createErr, kerr.TopicAlreadyExists)
	})
	var acked []string
	acked = append(acked, produce(t, ctx, cl, topic, "a", 300)...)
	checkRecords(t, ctx, topic, acked)

	// The controller's pod goes away: a new controller takes the Lease at a new epoch, the
	// StatefulSet recreates the pod, it rejoins and leads partitions again, and nothing
	// acknowledged is lost.
	// The holder identity is <pod name>_<pod uid>_<suffix>.
	holder, _, _ := strings.Cut(strings.TrimSpace(kubectl(t, ctx, n, "-n", e2eNamespace, "get", "lease", "kaas-controller", "-o", "jsonpath={.spec.holderIdentity}")), "_")
	if !strings.HasPrefix(holder, "kaas-") {
		t.Fatalf("controller lease holder %q is not a kaas pod", holder)
	}
	epoch := func() int {
		out, err := n.Kubectl(ctx, "-n", e2eNamespace, "get", "lease", "kaas-controller", "-o", "jsonpath={.spec.leaseTransitions}")
		if err != nil {
			return -1
		}
		v, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			return -1
		}
		return v
	}
	oldEpoch := epoch()
	if oldEpoch < 0 {
		t.Fatal("cannot read the controller Lease's leaseTransitions")
	}
	holderID, err := strconv.Atoi(strings.TrimPrefix(holder, "kaas-"))
	if err != nil {
		t.Fatalf("controller lease holder %q: %v", holder, err)
	}
	oldUID := strings.TrimSpace(kubectl(t, ctx, n, "-n", e2eNamespace, "get", "pod", holder, "-o", "jsonpath={.metadata.uid}"))
	kubectl(t, ctx, n, "-n", e2eNamespace, "delete", "pod", holder, "--wait=false")
	acked = append(acked, produce(t, ctx, cl, topic, "b", 300)...)
	waitUntil(t, ctx, "pod "+holder+" recreated", func() bool {
		uid, err := n.Kubectl(ctx, "-n", e2eNamespace, "get", "pod", holder, "-o", "jsonpath={.metadata.uid}")
		return err == nil && strings.TrimSpace(uid) != "" && strings.TrimSpace(uid) != oldUID
	})
	waitPodsReady(t, ctx, n, 3)
	waitUntil(t, ctx, "a new controller epoch", func() bool { return epoch() > oldEpoch })
	waitUntil(t, ctx, "the recreated "+holder+" leads partitions of "+topic, func() bool {
		return len(ledBy(ctx, adm, topic, int32(holderID))) > 0
	})
	acked = append(acked, produce(t, ctx, cl, topic, "c", 300)...)
	checkRecords(t, ctx, topic, acked)

	e := &e2e{ctx: ctx, n: n, cl: cl, adm: adm, topic: topic, acked: acked}
	defer cl.Close()
	for _, step := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"RolloutRestart", e.rolloutRestart},
		{"ScaleToFourAndBack", e.scale},
		{"KafkaTopicsBothWays", e.kafkaTopics},
		{"ServiceAccountRBAC", e.rbac},
	} {
		if !t.Run(step.name, step.run) {
			// The cluster may be left mid-operation; what follows would fail for that reason.
			break
		}
	}
}

// waitPodsReady waits until want kaas pods exist and all are Ready.
func waitPodsReady(t *testing.T, ctx context.Context, n *Node, want int) {
	t.Helper()
	waitUntil(t, ctx, fmt.Sprintf("%d Ready kaas pods", want), func() bool {
		out, err := n.Kubectl(ctx, "-n", e2eNamespace, "get", "pods", "-l", podSelector,
			"-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{" "}{end}`)
		if err != nil {
			return false
		}
		f := strings.Fields(out)
		if len(f) != want {
			return false
		}
		for _, p := range f {
			if !strings.HasSuffix(p, "=True") {
				return false
			}
		}
		return true
	})
}

func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// resolver asks the node's CoreDNS, as pods do.
var resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort(NodeIP, "53"))
}}

// clusterDial resolves the brokers' advertised names (kaas-N.kaas.NS.svc) in the
// cluster domain, through CoreDNS.
func clusterDial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if net.ParseIP(host) == nil {
		name := host
		if !strings.HasSuffix(name, "."+ClusterDomain) {
			name += "." + ClusterDomain
		}
		ips, err := resolver.LookupHost(ctx, name)
		if err != nil {
			return nil, err
		}
		host = ips[0]
	}
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort(host, port))
}

func seeds() []string {
	var s []string
	for i := 0; i < 3; i++ {
		s = append(s, fmt.Sprintf("kaas-%d.kaas.%s.svc:9092", i, e2eNamespace))
	}
	return s
}

func newClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds()...),
		kgo.Dialer(clusterDial),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(1 << 30),
		kgo.RetryTimeout(2 * time.Minute),
		kgo.ProducerLinger(0),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// produce sends count records valued prefix-i with the idempotent producer, one at a
// time so that acknowledged order is send order, and returns the acknowledged values.
// A record whose produce fails (after the client's retries) is not acknowledged and is
// allowed to be missing; it must not appear twice.
func produce(t *testing.T, ctx context.Context, cl *kgo.Client, topic, prefix string, count int) []string {
	t.Helper()
	var acked []string
	for i := 0; i < count; i++ {
		v := fmt.Sprintf("%s-%04d", prefix, i)
		pctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		err := cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}).FirstErr()
		cancel()
		if err != nil {
			t.Logf("produce %s: %v (not acknowledged)", v, err)
			continue
		}
		acked = append(acked, v)
	}
	if len(acked) < count/2 {
		t.Fatalf("only %d of %d records acknowledged", len(acked), count)
	}
	return acked
}

// checkRecords reads the topic from the start with a fresh client and checks that every
// acknowledged value is there exactly once, and that within each partition the values
// of the acknowledged records appear in the order they were acknowledged.
func checkRecords(t *testing.T, ctx context.Context, topic string, acked []string) {
	t.Helper()
	cl := newClient(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	want := map[string]int{}
	for i, v := range acked {
		want[v] = i
	}
	seen := map[string]int{}
	lastIdx := map[int32]int{}
	found := 0
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for found < len(acked) {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records: %v", found, len(acked), rctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Logf("fetch %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			seen[v]++
			if seen[v] > 1 {
				t.Errorf("record %s read twice (partition %d offset %d)", v, r.Partition, r.Offset)
			}
			idx, ok := want[v]
			if !ok {
				return // sent but not acknowledged: allowed once
			}
			if seen[v] == 1 {
				found++
			}
			if last, ok := lastIdx[r.Partition]; ok && idx < last {
				t.Errorf("partition %d: %s after a later acknowledged record", r.Partition, v)
			}
			lastIdx[r.Partition] = idx
		})
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("checked %d acknowledged records on %s", len(acked), topic)
}
