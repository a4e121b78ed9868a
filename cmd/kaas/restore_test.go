package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/actors/cluster"
	"github.com/kaas-project/kaas/actors/supervisor"
	"github.com/kaas-project/kaas/storage/assignment"
)

// runRestoreCmd runs `kaas restore` against the test apiserver.
func runRestoreCmd(t *testing.T, api *apiserver, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(kaasBinary(t), append([]string{"restore"}, args...)...)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KAAS_") && !strings.HasPrefix(e, "KUBERNETES_") && !strings.HasPrefix(e, "MY_POD_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, "KUBECONFIG="+api.kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestRestoreIntoANewNamespace (real apiserver, real processes): a cluster's
// shared volume, copied after its brokers were killed (a crash-consistent
// backup), is served by a cluster in a namespace that has neither its
// KafkaTopics nor its Lease once `kaas restore` has run there: the topics
// keep their ids, configs and records, a group its committed offsets, and
// the new controller's epoch is above the volume's.
func TestRestoreIntoANewNamespace(t *testing.T) {
	api := startAPIServer(t)
	src := newKaasCluster(t, api, clusterFlags...)
	src.startAll("kaas-0", "kaas-1")
	adm := kadm.NewClient(src.client())
	ctx := ctxFor(t, 90*time.Second)
	topics := map[string]int{"orders": 3, "Payments_EU": 2}
	for name, parts := range topics {
		cfg := map[string]*string{"retention.ms": kadm.StringPtr("86400000")}
		if resp, err := adm.CreateTopic(ctx, int32(parts), 1, cfg, name); err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", name, err, resp.Err)
		}
	}
	// A controller failover, so the volume's epoch is above a new Lease's.
	_, ctrl, firstEpoch := src.ledBy()
	src.brokers[ctrl].kill()
	waitUntil(t, 30*time.Second, "a controller of a later epoch", func() bool {
		_, now, epoch := src.ledBy()
		return now != "" && now != ctrl && epoch > firstEpoch
	})
	src.start(ctrl)
	prod := src.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	const perTopic = 60
	for name := range topics {
		for i := range perTopic {
			r := &kgo.Record{Topic: name, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%s-%d", name, i))}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	before, err := adm.ListTopics(ctx, "orders", "Payments_EU")
	if err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	for name, parts := range topics {
		for p := range parts {
			offsets.Add(kadm.Offset{Topic: name, Partition: int32(p), At: int64(p + 5), LeaderEpoch: -1})
		}
	}
	if resp, err := adm.CommitOffsets(ctx, "restored-group", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	for _, b := range src.brokers {
		b.kill()
	}
	backup := t.TempDir()
	if out, err := exec.Command("cp", "-a", src.dataDir+"/.", backup).CombinedOutput(); err != nil {
		t.Fatalf("copy the volume: %v\n%s", err, out)
	}
	file, err := assignment.ReadFile(assignment.Path(backup))
	if err != nil {
		t.Fatal(err)
	}
	if file.ControllerEpoch < 1 {
		t.Fatalf("the volume's controller epoch is %d after a failover", file.ControllerEpoch)
	}

	dst := newKaasCluster(t, api, clusterFlags...)
	dst.dataDir = backup
	// A dry run changes nothing.
	out, err := runRestoreCmd(t, api, "--data-dir", backup, "--namespace", dst.ns, "--dry-run")
	if err != nil || !strings.Contains(out, "to create") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if got := api.kubectl(t, "-n", dst.ns, "get", "kafkatopics", "-o", "name"); got != "" {
		t.Fatalf("the dry run created KafkaTopics: %q", got)
	}
	// A KafkaTopic that names a restored topic with another id: nothing is
	// changed, and the output says which.
	kt := fmt.Sprintf("apiVersion: kaas.dev/v1alpha1\nkind: KafkaTopic\nmetadata: {name: orders, namespace: %s}\nspec: {partitions: 3}\n", dst.ns)
	apply := exec.Command("kubectl", "--kubeconfig", api.kubeconfig, "create", "-f", "-")
	apply.Stdin = strings.NewReader(kt)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("create KafkaTopic orders: %v\n%s", err, out)
	}
	out, err = runRestoreCmd(t, api, "--data-dir", backup, "--namespace", dst.ns)
	if err == nil || !strings.Contains(out, "topic orders: a KafkaTopic names it with id") || !strings.Contains(out, "nothing changed") {
		t.Fatalf("restore over a KafkaTopic of another id: %v\n%s", err, out)
	}
	if got := api.kubectl(t, "-n", dst.ns, "get", "kafkatopics", "-o", "name"); strings.Count(got, "\n") != 1 {
		t.Fatalf("a refused restore changed the KafkaTopics: %q", got)
	}
	if got := api.kubectlMaybe("-n", dst.ns, "get", "lease", "kaas-controller"); got != "" {
		t.Fatalf("a refused restore made the Lease: %q", got)
	}
	api.kubectl(t, "-n", dst.ns, "delete", "kafkatopic", "orders")

	// A KafkaTopic CRD without spec.topicID (from before the field) prunes
	// it: the restore stops at the first topic and leaves no KafkaTopic of
	// a new incarnation behind.
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	crdPath := filepath.Join(root, "deploy", "base", "crd-kafkatopics.yaml")
	crd, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	oldCRD := withoutTopicIDField(t, string(crd))
	applyCRD := func(doc string) {
		cmd := exec.Command("kubectl", "--kubeconfig", api.kubeconfig, "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(doc)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apply the KafkaTopic CRD: %v\n%s", err, out)
		}
	}
	applyCRD(oldCRD)
	out, err = runRestoreCmd(t, api, "--data-dir", backup, "--namespace", dst.ns)
	if err == nil || !strings.Contains(out, "the KafkaTopic CRD in the cluster predates the field") {
		t.Fatalf("restore with a CRD without spec.topicID: %v\n%s", err, out)
	}
	waitUntil(t, 30*time.Second, "the KafkaTopic without its id deleted", func() bool {
		return api.kubectlMaybe("-n", dst.ns, "get", "kafkatopics", "-o", "name") == ""
	})
	applyCRD(string(crd))

	out, err = runRestoreCmd(t, api, "--data-dir", backup, "--namespace", dst.ns)
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	t.Logf("kaas restore:\n%s", out)
	transitions := api.kubectl(t, "-n", dst.ns, "get", "lease", "kaas-controller", "-o", "jsonpath={.spec.leaseTransitions}")
	if transitions != fmt.Sprint(file.ControllerEpoch) {
		t.Fatalf("leaseTransitions %s, want the volume's epoch %d", transitions, file.ControllerEpoch)
	}
	for name := range topics {
		id := api.kubectl(t, "-n", dst.ns, "get", "kafkatopics", cluster.ObjectName(name), "-o", "jsonpath={.spec.topicID}")
		if want := supervisor.FormatUUID(before[name].ID); id != want {
			t.Fatalf("KafkaTopic of %s has spec.topicID %q, want %s", name, id, want)
		}
	}

	dst.startAll("kaas-0", "kaas-1")
	// While a controller holds the Lease, a restore is refused.
	if out, err := runRestoreCmd(t, api, "--data-dir", backup, "--namespace", dst.ns); err == nil || !strings.Contains(out, "Lease is held") {
		t.Fatalf("restore beside running brokers: %v\n%s", err, out)
	}
	_, _, epoch := dst.ledBy()
	if epoch <= file.ControllerEpoch {
		t.Fatalf("controller epoch %d, want above the volume's %d", epoch, file.ControllerEpoch)
	}
	dadm := kadm.NewClient(dst.client())
	after, err := dadm.ListTopics(ctx, "orders", "Payments_EU")
	if err != nil {
		t.Fatal(err)
	}
	for name, parts := range topics {
		if after[name].Err != nil || after[name].ID != before[name].ID || len(after[name].Partitions) != parts {
			t.Fatalf("%s after the restore: id %v (was %v), %d partitions, err %v", name, after[name].ID, before[name].ID, len(after[name].Partitions), after[name].Err)
		}
		got := consumeAll(t, dst, name, perTopic)
		for i := range perTopic {
			if _, ok := got[fmt.Sprintf("%s-%d", name, i)]; !ok {
				t.Fatalf("%s-%d lost in the restore", name, i)
			}
		}
	}
	rc, err := dadm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rc.On("orders", nil); err != nil || configValue(v.Configs, "retention.ms") != "86400000" {
		t.Fatalf("orders' retention.ms after the restore: %v %v", v.Configs, err)
	}
	fetched, err := dadm.FetchOffsets(ctx, "restored-group")
	if err != nil || fetched.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, fetched.Error())
	}
	for name, parts := range topics {
		for p := range parts {
			if o, ok := fetched.Lookup(name, int32(p)); !ok || o.At != int64(p+5) {
				t.Fatalf("restored-group's offset of %s[%d]: %+v (found %v), want %d", name, p, o, ok, p+5)
			}
		}
	}
	// The restored topics take writes.
	dprod := dst.client(kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := dprod.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("orders-after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the restore: %v", err)
	}
	if got := consumeAll(t, dst, "orders", perTopic+1); len(got) != perTopic+1 {
		t.Fatalf("orders after one more record: %d records", len(got))
	}
}

// withoutTopicIDField is the KafkaTopic CRD as it was before spec.topicID.
func withoutTopicIDField(t *testing.T, crd string) string {
	t.Helper()
	start := strings.Index(crd, "                topicID:\n                  description: >-\n                    The topic ID, for a topic restored")
	end := strings.Index(crd, "                partitions:\n")
	rule := "                - rule: \"has(self.topicID) == has(oldSelf.topicID)\"\n                  message: topicID is fixed at creation\n"
	if start < 0 || end < start || !strings.Contains(crd, rule) {
		t.Fatal("crd-kafkatopics.yaml: spec.topicID or its rule not found where expected")
	}
	return strings.Replace(crd[:start]+crd[end:], rule, "", 1)
}

func configValue(cs []kadm.Config, name string) string {
	for _, c := range cs {
		if c.Key == name && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}
