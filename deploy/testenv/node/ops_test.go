package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// e2e is the running cluster the operations below share, with the values acknowledged
// so far on its topic.
type e2e struct {
	ctx   context.Context
	n     *Node
	cl    *kgo.Client
	adm   *kadm.Client
	topic string
	acked []string
}

// terminationGrace is the e2e overlay's terminationGracePeriodSeconds.
const terminationGrace = 30 * time.Second

// rolloutRestart restarts every pod with `kubectl rollout restart` while a producer and a
// consumer run: every error either client sees must be retriable, each old pod's container
// must log a finished drain and exit 0 within the termination grace period, and the
// records must check out.
func (e *e2e) rolloutRestart(t *testing.T) {
	ctx := e.ctx
	old := podUIDs(t, ctx, e.n)
	if len(old) != 3 {
		t.Fatalf("pods before the rollout: %v", old)
	}
	w := watchPods(t, ctx, e.n)
	logs := followLogs(ctx, e.n, old)
	cons := consumeInBackground(t, ctx, e.topic)

	kubectl(t, ctx, e.n, "-n", e2eNamespace, "rollout", "restart", "statefulset/kaas")
	done := make(chan error, 1)
	go func() {
		_, err := e.n.Kubectl(ctx, "-n", e2eNamespace, "rollout", "status", "statefulset/kaas", "--watch", "--timeout=20m")
		done <- err
	}()
	e.acked = append(e.acked, produceUntil(t, ctx, e.cl, e.topic, "roll", done)...)
	waitPodsReady(t, ctx, e.n, 3)
	cons.stop(t)

	for name, uid := range old {
		term := w.terminated(uid, 2*time.Minute)
		if term == nil {
			t.Errorf("pod %s (%s): no terminated container state seen", name, uid)
			continue
		}
		if term.exitCode != 0 || term.took < 0 || term.took > terminationGrace {
			t.Errorf("pod %s: container exited %d (%s) %v after SIGTERM; want exit 0 within %v", name, term.exitCode, term.reason, term.took, terminationGrace)
		}
		t.Logf("pod %s: container exited %d (%s) %v after SIGTERM", name, term.exitCode, term.reason, term.took)
		if out := logs.wait(name); !drainedLog(out) {
			t.Errorf("pod %s did not log a finished drain; log tail:\n%s", name, lastLines(out, 15))
		}
	}
	for name, uid := range podUIDs(t, ctx, e.n) {
		if uid == old[name] {
			t.Errorf("pod %s was not replaced by the rollout", name)
		}
	}
	checkRecords(t, ctx, e.topic, e.acked)
}

// scale adds a fourth broker, which must take the lead of some partitions, then removes
// it again: its pod drains and exits 0, its partitions go back to the other three, and
// the records check out after each step.
func (e *e2e) scale(t *testing.T) {
	ctx := e.ctx
	kubectl(t, ctx, e.n, "-n", e2eNamespace, "scale", "statefulset/kaas", "--replicas=4")
	waitPodsReady(t, ctx, e.n, 4)
	waitUntil(t, ctx, "broker 3 leads partitions of "+e.topic, func() bool {
		return len(ledBy(ctx, e.adm, e.topic, 3)) > 0
	})
	t.Logf("broker 3 leads partitions %v", ledBy(ctx, e.adm, e.topic, 3))
	e.acked = append(e.acked, produceN(t, ctx, e.cl, e.topic, "up", 200)...)
	checkRecords(t, ctx, e.topic, e.acked)

	uid := podUIDs(t, ctx, e.n)["kaas-3"]
	w := watchPods(t, ctx, e.n)
	logs := followLogs(ctx, e.n, map[string]string{"kaas-3": uid})
	kubectl(t, ctx, e.n, "-n", e2eNamespace, "scale", "statefulset/kaas", "--replicas=3")
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if _, err := e.n.Kubectl(ctx, "-n", e2eNamespace, "get", "pod", "kaas-3"); err != nil && strings.Contains(err.Error(), "NotFound") {
				done <- nil
				return
			}
			time.Sleep(time.Second)
		}
		done <- ctx.Err()
	}()
	e.acked = append(e.acked, produceUntil(t, ctx, e.cl, e.topic, "down", done)...)
	waitPodsReady(t, ctx, e.n, 3)
	waitUntil(t, ctx, "no partition of "+e.topic+" led by broker 3", func() bool {
		m, err := e.adm.Metadata(ctx, e.topic)
		return err == nil && m.Topics[e.topic].Err == nil && len(m.Topics[e.topic].Partitions) > 0 && len(ledBy(ctx, e.adm, e.topic, 3)) == 0
	})
	if term := w.terminated(uid, 2*time.Minute); term == nil {
		t.Errorf("pod kaas-3: no terminated container state seen")
	} else if term.exitCode != 0 || term.took < 0 || term.took > terminationGrace {
		t.Errorf("pod kaas-3: container exited %d (%s) %v after SIGTERM; want exit 0 within %v", term.exitCode, term.reason, term.took, terminationGrace)
	} else {
		t.Logf("pod kaas-3: container exited %d (%s) %v after SIGTERM", term.exitCode, term.reason, term.took)
	}
	if out := logs.wait("kaas-3"); !drainedLog(out) {
		t.Errorf("pod kaas-3 did not log a finished drain; log tail:\n%s", lastLines(out, 15))
	}
	e.acked = append(e.acked, produceN(t, ctx, e.cl, e.topic, "three", 100)...)
	checkRecords(t, ctx, e.topic, e.acked)
}

// kafkaTopics: a KafkaTopic applied with kubectl becomes a topic clients see and use; a
// topic a client creates becomes a KafkaTopic object.
func (e *e2e) kafkaTopics(t *testing.T) {
	ctx := e.ctx
	const fromKubectl, fromClient = "from-kubectl", "from-client"
	manifest := filepath.Join(t.TempDir(), "topic.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: kaas.dev/v1alpha1
kind: KafkaTopic
metadata:
  name: `+fromKubectl+`
spec:
  partitions: 2
`), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, ctx, e.n, "-n", e2eNamespace, "apply", "-f", manifest)
	waitUntil(t, ctx, "topic "+fromKubectl+" with 2 partitions in Metadata", func() bool {
		m, err := e.adm.Metadata(ctx, fromKubectl)
		if err != nil {
			return false
		}
		d := m.Topics[fromKubectl]
		if d.Err != nil || len(d.Partitions) != 2 {
			return false
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
		return true
	})
	acked := produceN(t, ctx, e.cl, fromKubectl, "kt", 50)
	checkRecords(t, ctx, fromKubectl, acked)

	if _, err := e.adm.CreateTopic(ctx, 2, -1, nil, fromClient); err != nil {
		t.Fatalf("kadm create topic %s: %v", fromClient, err)
	}
	var got string
	waitUntil(t, ctx, "KafkaTopic "+fromClient+" listed by kubectl", func() bool {
		out, err := e.n.Kubectl(ctx, "-n", e2eNamespace, "get", "kafkatopics", "-o", `jsonpath={range .items[*]}{.metadata.name}={.spec.partitions}{" "}{end}`)
		got = out
		return err == nil && strings.Contains(" "+out, " "+fromClient+"=2 ")
	})
	if !strings.Contains(" "+got, " "+fromKubectl+"=2 ") || !strings.Contains(" "+got, " "+e.topic+"=") {
		t.Errorf("kubectl get kafkatopics: %q, want %s, %s and %s", got, fromKubectl, fromClient, e.topic)
	}
}

// rbac proves the broker ServiceAccount's Role with a token of that account: what a
// broker uses is allowed, other reads and writes are refused by the apiserver.
func (e *e2e) rbac(t *testing.T) {
	ctx := e.ctx
	tok := strings.TrimSpace(kubectl(t, ctx, e.n, "-n", e2eNamespace, "create", "token", "kaas", "--duration=10m"))
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	// Only the token: no client certificate that would authenticate as the admin.
	if err := os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: node
  cluster: {server: %q, certificate-authority: %q}
users:
- name: kaas
  user: {token: %q}
contexts:
- name: kaas
  context: {cluster: node, user: kaas, namespace: %s}
current-context: kaas
`, e.n.API.URL, e.n.API.CAFile, tok, e2eNamespace)), 0o600); err != nil {
		t.Fatal(err)
	}
	as := func(args ...string) (string, error) {
		return e.n.Kubectl(ctx, append([]string{"--kubeconfig=" + kc}, args...)...)
	}
	if out, err := as("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || strings.TrimSpace(out) != "system:serviceaccount:"+e2eNamespace+":kaas" {
		t.Fatalf("token user: %q %v", out, err)
	}
	allowed := [][]string{
		{"get", "lease", "kaas-controller"},
		{"patch", "lease", "kaas-controller", "--type=merge", "-p", `{"metadata":{"annotations":{"kaas.dev/rbac-check":"1"}}}`, "--dry-run=server"},
		{"get", "kafkatopics"},
		{"label", "kafkatopic", "from-kubectl", "kaas.dev/rbac-check=1", "--overwrite"},
		{"get", "kafkaacls"},
		{"get", "kafkaquotas"},
		{"get", "kafkausers"},
		{"get", "endpointslices"},
		{"get", "pod", "kaas-0"},
	}
	for _, a := range allowed {
		if out, err := as(a...); err != nil {
			t.Errorf("kubectl %s as kaas: %v\n%s", strings.Join(a, " "), err, out)
		}
	}
	forbidden := [][]string{
		{"delete", "pod", "kaas-0", "--dry-run=server"},
		{"get", "pods"},
		{"get", "secrets"},
		{"get", "configmaps"},
		{"delete", "lease", "kaas-controller", "--dry-run=server"},
		{"get", "statefulsets"},
		{"get", "leases", "-n", "default"},
		{"get", "nodes"},
	}
	for _, a := range forbidden {
		out, err := as(a...)
		if err == nil || !strings.Contains(out, "Forbidden") {
			t.Errorf("kubectl %s as kaas: want Forbidden, got %v\n%s", strings.Join(a, " "), err, out)
		}
	}
}

// podUIDs maps each kaas pod's name to its uid.
func podUIDs(t *testing.T, ctx context.Context, n *Node) map[string]string {
	t.Helper()
	out := kubectl(t, ctx, n, "-n", e2eNamespace, "get", "pods", "-l", podSelector,
		"-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{" "}{end}`)
	m := map[string]string{}
	for _, f := range strings.Fields(out) {
		name, uid, _ := strings.Cut(f, "=")
		m[name] = uid
	}
	return m
}

// ledBy lists the partitions of topic whose leader is broker id.
func ledBy(ctx context.Context, adm *kadm.Client, topic string, id int32) []int32 {
	m, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil
	}
	var ps []int32
	for p, d := range m.Topics[topic].Partitions {
		if d.Leader == id {
			ps = append(ps, p)
		}
	}
	return ps
}

// produceUntil sends records valued prefix-i one at a time with the idempotent producer
// until done yields, and returns the acknowledged values. The client retries retriable
// errors itself; one that reaches the caller fails the test, as does done yielding an
// error.
func produceUntil(t *testing.T, ctx context.Context, cl *kgo.Client, topic, prefix string, done <-chan error) []string {
	t.Helper()
	var acked []string
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("waiting while producing: %v", err)
			}
			if len(acked) == 0 {
				t.Fatalf("no record acknowledged while the operation ran")
			}
			t.Logf("%d records acknowledged during %s", len(acked), prefix)
			return acked
		default:
		}
		acked = append(acked, produceOne(t, ctx, cl, topic, fmt.Sprintf("%s-%05d", prefix, i)))
	}
}

// produceN sends count records valued prefix-i, each of which must be acknowledged.
func produceN(t *testing.T, ctx context.Context, cl *kgo.Client, topic, prefix string, count int) []string {
	t.Helper()
	var acked []string
	for i := 0; i < count; i++ {
		acked = append(acked, produceOne(t, ctx, cl, topic, fmt.Sprintf("%s-%05d", prefix, i)))
	}
	return acked
}

func produceOne(t *testing.T, ctx context.Context, cl *kgo.Client, topic, v string) string {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v (retriable: %v)", v, err, kerr.IsRetriable(err))
	}
	return v
}

// background is a consumer reading a topic until stopped, keeping the errors it sees.
type background struct {
	cancel context.CancelFunc
	done   chan struct{}
	errs   []error
	n      int
}

func consumeInBackground(t *testing.T, ctx context.Context, topic string) *background {
	t.Helper()
	cl := newClient(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	cctx, cancel := context.WithCancel(ctx)
	b := &background{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		defer cl.Close()
		for cctx.Err() == nil {
			fs := cl.PollFetches(cctx)
			fs.EachError(func(_ string, _ int32, err error) { b.errs = append(b.errs, err) })
			b.n += fs.NumRecords()
		}
	}()
	return b
}

// stop ends the consumer and fails the test on any error a client should not see
// during planned restarts: only retriable Kafka errors and broken connections are.
func (b *background) stop(t *testing.T) {
	t.Helper()
	b.cancel()
	<-b.done
	for _, err := range b.errs {
		if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			continue
		}
		if !kerr.IsRetriable(err) && !kgo.IsRetryableBrokerErr(err) {
			t.Errorf("consumer saw a non-retriable error: %v", err)
			continue
		}
		t.Logf("consumer saw a retriable error: %v", err)
	}
	if b.n == 0 {
		t.Errorf("the consumer read nothing")
	}
	t.Logf("consumer read %d records", b.n)
}

// termination is how a pod's container ended: its exit code and the time from the
// pod's deletion (SIGTERM) to its exit.
type termination struct {
	exitCode int
	reason   string
	took     time.Duration
}

// podWatch follows the kaas pods with `kubectl get -w` and keeps each pod's container
// termination, which the kubelet reports before the pod object goes away.
type podWatch struct {
	mu    sync.Mutex
	terms map[string]*termination // by pod uid
}

type watchedPod struct {
	Metadata struct {
		UID                        string     `json:"uid"`
		DeletionTimestamp          *time.Time `json:"deletionTimestamp"`
		DeletionGracePeriodSeconds *int64     `json:"deletionGracePeriodSeconds"`
	} `json:"metadata"`
	Status struct {
		ContainerStatuses []struct {
			Name  string `json:"name"`
			State struct {
				Terminated *struct {
					ExitCode   int       `json:"exitCode"`
					Reason     string    `json:"reason"`
					FinishedAt time.Time `json:"finishedAt"`
				} `json:"terminated"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func watchPods(t *testing.T, ctx context.Context, n *Node) *podWatch {
	t.Helper()
	wctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(wctx, "kubectl", "-n", e2eNamespace, "get", "pods", "-l", podSelector, "--watch", "-o", "json")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+n.API.Kubeconfig())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &podWatch{terms: map[string]*termination{}}
	go func() {
		// The first event with a deletion timestamp gives the SIGTERM time (the timestamp
		// less the grace period); the kubelet's final delete rewrites both later.
		sigterm := map[string]time.Time{}
		dec := json.NewDecoder(out)
		for {
			var p watchedPod
			if err := dec.Decode(&p); err != nil {
				return
			}
			m := p.Metadata
			if m.DeletionTimestamp == nil || m.DeletionGracePeriodSeconds == nil {
				continue
			}
			if _, ok := sigterm[m.UID]; !ok {
				sigterm[m.UID] = m.DeletionTimestamp.Add(-time.Duration(*m.DeletionGracePeriodSeconds) * time.Second)
			}
			for _, c := range p.Status.ContainerStatuses {
				if c.Name != "kaas" || c.State.Terminated == nil {
					continue
				}
				w.mu.Lock()
				w.terms[m.UID] = &termination{exitCode: c.State.Terminated.ExitCode, reason: c.State.Terminated.Reason, took: c.State.Terminated.FinishedAt.Sub(sigterm[m.UID])}
				w.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		cmd.Wait() //nolint:errcheck
	})
	return w
}

// terminated waits up to d for the pod's termination and returns it, or nil.
func (w *podWatch) terminated(uid string, d time.Duration) *termination {
	deadline := time.Now().Add(d)
	for {
		w.mu.Lock()
		term := w.terms[uid]
		w.mu.Unlock()
		if term != nil || time.Now().After(deadline) {
			return term
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// podLogs follows the log of each named pod (the pod object of that name at the time of
// the call) until its container exits.
type podLogs struct {
	mu   sync.Mutex
	out  map[string]*strings.Builder
	done map[string]chan struct{}
}

func followLogs(ctx context.Context, n *Node, pods map[string]string) *podLogs {
	l := &podLogs{out: map[string]*strings.Builder{}, done: map[string]chan struct{}{}}
	for name := range pods {
		b, d := &strings.Builder{}, make(chan struct{})
		l.out[name], l.done[name] = b, d
		go func() {
			defer close(d)
			cmd := exec.CommandContext(ctx, "kubectl", "-n", e2eNamespace, "logs", "-f", "pod/"+name, "-c", "kaas")
			cmd.Env = append(os.Environ(), "KUBECONFIG="+n.API.Kubeconfig())
			out, _ := cmd.CombinedOutput()
			l.mu.Lock()
			b.Write(out)
			l.mu.Unlock()
		}()
	}
	return l
}

// wait returns the pod's log once the stream has ended (its container exited).
func (l *podLogs) wait(name string) string {
	select {
	case <-l.done[name]:
	case <-time.After(2 * time.Minute):
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out[name].String()
}

// ansi matches the colour codes of kaas's console log format.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// drainedLog reports whether a broker's log shows a drain that finished (the "drained"
// message, in the console or the JSON format) rather than one that timed out.
func drainedLog(log string) bool {
	log = ansi.ReplaceAllString(log, "")
	return (strings.Contains(log, " INF drained ") || strings.Contains(log, `"message":"drained"`)) &&
		!strings.Contains(log, "drain timed out")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
