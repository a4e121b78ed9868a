package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestKafkaTopicNamedApart (real apiserver): a KafkaTopic whose object name
// is not its topic's (spec.topicName, as GitOps repositories name them) is
// the object the Kafka admin APIs change: CreatePartitions, AlterConfigs,
// AlterPartitionReassignments and DeleteTopics reach it, CreateTopics of its topic is
// TOPIC_ALREADY_EXISTS, and an object of the same name as the topic that
// holds another topic is left alone.
func TestKafkaTopicNamedApart(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	c.startAll("kaas-0")
	apply := func(doc string) {
		cmd := exec.Command("kubectl", "--kubeconfig", api.kubeconfig, "-n", c.ns, "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(doc)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
	}
	apply("apiVersion: kaas.dev/v1alpha1\nkind: KafkaTopic\nmetadata: {name: orders-v2}\nspec: {topicName: orders, partitions: 2}\n")
	// The object called "orders" holds another topic.
	apply("apiVersion: kaas.dev/v1alpha1\nkind: KafkaTopic\nmetadata: {name: orders}\nspec: {topicName: legacy-orders, partitions: 1}\n")
	adm := kadm.NewClient(c.client())
	ctx := ctxFor(t, 60*time.Second)
	waitUntil(t, 30*time.Second, "both topics in Metadata", func() bool {
		td, err := adm.ListTopics(ctx, "orders", "legacy-orders")
		return err == nil && td["orders"].Err == nil && td["legacy-orders"].Err == nil && len(td["orders"].Partitions) == 2
	})
	get := func(obj, path string) string {
		return api.kubectl(t, "-n", c.ns, "get", "kafkatopic", obj, "-o", "jsonpath="+path)
	}

	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("CreateTopics of orders: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	if r, err := adm.CreatePartitions(ctx, 1, "orders"); err != nil || r["orders"].Err != nil {
		t.Fatalf("CreatePartitions of orders: %v %v", err, r["orders"].Err)
	}
	if got := get("orders-v2", "{.spec.partitions}"); got != "3" {
		t.Fatalf("orders-v2 has %s partitions after CreatePartitions, want 3", got)
	}
	if got := get("orders", "{.spec.partitions}"); got != "1" {
		t.Fatalf("the object orders (topic legacy-orders) has %s partitions, want 1", got)
	}
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, "orders")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("AlterConfigs of orders: %v %v", err, rs)
	}
	if got := get("orders-v2", "{.spec.config.retention\\.ms}"); got != "3600000" {
		t.Fatalf("orders-v2 has retention.ms %q after AlterConfigs", got)
	}
	if got := get("orders", "{.spec.config}"); got != "" && got != "{}" {
		t.Fatalf("the object orders (topic legacy-orders) has config %s", got)
	}
	var move kadm.AlterPartitionAssignmentsReq
	move.Assign("orders", 1, []int32{0})
	if res, err := adm.AlterPartitionAssignments(ctx, move); err != nil || res.Error() != nil {
		t.Fatalf("AlterPartitionReassignments of orders: %v %v", err, res.Error())
	}
	if got := get("orders-v2", "{.spec.pins}"); !strings.Contains(got, `"partition":1`) {
		t.Fatalf("orders-v2 has pins %s after AlterPartitionReassignments", got)
	}
	if got := get("orders", "{.spec.pins}"); got != "" {
		t.Fatalf("the object orders (topic legacy-orders) has pins %s", got)
	}
	if r, err := adm.DeleteTopics(ctx, "orders"); err != nil || r["orders"].Err != nil {
		t.Fatalf("DeleteTopics of orders: %v %v", err, r["orders"].Err)
	}
	waitUntil(t, 30*time.Second, "orders-v2 deleted", func() bool {
		return api.kubectlMaybe("-n", c.ns, "get", "kafkatopic", "orders-v2") == ""
	})
	if got := get("orders", "{.spec.topicName}"); got != "legacy-orders" {
		t.Fatalf("the object orders after deleting topic orders: %q", got)
	}
	td, err := adm.ListTopics(ctx, "legacy-orders")
	if err != nil || td["legacy-orders"].Err != nil {
		t.Fatalf("legacy-orders after deleting orders: %v %v", err, td["legacy-orders"].Err)
	}
}
