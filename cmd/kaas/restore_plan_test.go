package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kaas-project/kaas/actors/cluster"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
)

func TestPlanRestore(t *testing.T) {
	const (
		idOrders   = "11111111-1111-4111-8111-111111111111"
		idPayments = "22222222-2222-4222-8222-222222222222"
		idRefunds  = "33333333-3333-4333-8333-333333333333"
		idOther    = "44444444-4444-4444-8444-444444444444"
		idOldIncar = "55555555-5555-4555-8555-555555555555"
	)
	file := &assignment.Assignment{Topics: map[string]assignment.Topic{
		"orders":      {ID: idOrders, Partitions: make([]assignment.Partition, 2)},
		"Payments_EU": {ID: idPayments, Partitions: make([]assignment.Partition, 1)},
		"refunds":     {ID: idRefunds, Partitions: make([]assignment.Partition, 1)},
		"audit":       {ID: idOther, Partitions: make([]assignment.Partition, 1)},
	}}
	obj := func(name, topic, uid, id string) *unstructured.Unstructured {
		spec := map[string]any{"partitions": int64(1), "topicName": topic}
		if id != "" {
			spec["topicID"] = id
		}
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetName(name)
		u.SetUID(types.UID(uid))
		u.SetCreationTimestamp(metav1.NewTime(time.Unix(1, 0)))
		return u
	}
	objs := []*unstructured.Unstructured{
		obj("orders", "orders", "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", idOrders), // restored before: kept
		obj("refunds", "refunds", "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb", ""),     // made again with a new uid
		obj("audit-log", "audit-log", idOther, ""),                                // another topic has audit's id
	}
	dirs := []storage.PartitionID{
		{Topic: "orders", TopicID: idOrders, Partition: 0},
		{Topic: "orders", TopicID: idOldIncar, Partition: 0}, // an earlier incarnation
		{Topic: "__consumer_offsets", TopicID: assignment.OffsetsTopicID, Partition: 3},
	}
	p := planRestore(file, objs, dirs)
	if !slices.Equal(p.kept, []string{"orders"}) || !slices.Equal(p.create, []string{"Payments_EU"}) {
		t.Errorf("kept %v create %v, want [orders] [Payments_EU]", p.kept, p.create)
	}
	if len(p.conflicts) != 2 || !strings.Contains(p.conflicts[0], "topic audit: its id "+idOther+" is topic audit-log's") ||
		!strings.Contains(p.conflicts[1], "topic refunds: a KafkaTopic names it with id bbbbbbbb") {
		t.Errorf("conflicts %q", p.conflicts)
	}
	if len(p.strays) != 1 || p.strays[0].TopicID != idOldIncar {
		t.Errorf("strays %v, want the earlier incarnation of orders only", p.strays)
	}

	// An object whose name a created topic needs, refused for its spec.
	bad := obj(cluster.ObjectName("Payments_EU"), "Payments_EU", "cccccccc-cccc-4ccc-8ccc-cccccccccccc", "not-a-uuid")
	p = planRestore(file, []*unstructured.Unstructured{bad}, nil)
	if len(p.conflicts) != 1 || !strings.Contains(p.conflicts[0], "topic Payments_EU: the KafkaTopic "+bad.GetName()+" is in the way") {
		t.Errorf("conflicts %q", p.conflicts)
	}
}
