package testenv_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

var (
	crdGVR   = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	topicGVR = schema.GroupVersionResource{Group: "kaas.dev", Version: "v1alpha1", Resource: "kafkatopics"}
)

// readManifests decodes a multi-document YAML file.
func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
	return objs
}

// applyCRD applies deploy/base/crd-kafkatopics.yaml (server-side, idempotent) and waits
// until KafkaTopic objects can be created.
func applyCRD(t *testing.T, dc *dynamic.DynamicClient) {
	t.Helper()
	ctx := context.Background()
	objs := readManifests(t, filepath.Join(deployDir(t), "base", "crd-kafkatopics.yaml"))
	if len(objs) != 1 || objs[0].GetKind() != "CustomResourceDefinition" {
		t.Fatalf("crd-kafkatopics.yaml: want one CustomResourceDefinition, got %d objects", len(objs))
	}
	crd := objs[0]
	if _, err := dc.Resource(crdGVR).Apply(ctx, crd.GetName(), crd,
		metav1.ApplyOptions{FieldManager: "testenv-test", Force: true}); err != nil {
		t.Fatalf("apply CRD: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := dc.Resource(crdGVR).Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		established := false
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				established = true
			}
		}
		// Established can precede the REST endpoint by a moment: list until it answers.
		if established {
			if _, err := dc.Resource(topicGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
				return
			} else if !apierrors.IsNotFound(err) {
				t.Fatalf("list kafkatopics: %v", err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD %s not established/served after 30s: %v", crd.GetName(), conds)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func kafkaTopic(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kaas.dev/v1alpha1",
		"kind":       "KafkaTopic",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
}

func TestKafkaTopicCRD(t *testing.T) {
	ctx := context.Background()
	_, dc := clients(t)
	applyCRD(t, dc)
	ns := newNamespace(t)
	topics := dc.Resource(topicGVR).Namespace(ns)

	created, err := topics.Create(ctx, kafkaTopic("orders", map[string]any{
		"partitions": int64(3),
		"config":     map[string]any{"retention.ms": "60000", "cleanup.policy": "delete"},
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create KafkaTopic: %v", err)
	}
	uid := string(created.GetUID())
	if uid == "" {
		t.Fatal("metadata.uid is empty (it is the topic ID)")
	}
	if created.GetGeneration() != 1 {
		t.Fatalf("generation %d, want 1", created.GetGeneration())
	}

	got, err := topics.Get(ctx, "orders", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get KafkaTopic: %v", err)
	}
	if string(got.GetUID()) != uid {
		t.Fatalf("uid changed: %s then %s", uid, got.GetUID())
	}
	if p, _, _ := unstructured.NestedInt64(got.Object, "spec", "partitions"); p != 3 {
		t.Fatalf("spec.partitions = %d, want 3", p)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "config", "retention.ms"); v != "60000" {
		t.Fatalf("spec.config[retention.ms] = %q", v)
	}

	// Status subresource: the controller reports topicID, partitions and a Ready condition.
	status := map[string]any{
		"topicID":            uid,
		"partitions":         int64(3),
		"observedGeneration": int64(1),
		"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "PartitionsAssigned", "message": "3/3 partitions led",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": int64(1),
		}},
	}
	if err := unstructured.SetNestedField(got.Object, status, "status"); err != nil {
		t.Fatal(err)
	}
	withStatus, err := topics.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if id, _, _ := unstructured.NestedString(withStatus.Object, "status", "topicID"); id != uid {
		t.Fatalf("status.topicID = %q, want %q", id, uid)
	}
	if withStatus.GetGeneration() != 1 {
		t.Fatalf("a status write bumped generation to %d", withStatus.GetGeneration())
	}

	// A spec write through the main endpoint ignores status and bumps generation.
	if err := unstructured.SetNestedField(withStatus.Object, int64(6), "spec", "partitions"); err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(withStatus.Object, "status")
	grown, err := topics.Update(ctx, withStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("grow partitions: %v", err)
	}
	if grown.GetGeneration() != 2 {
		t.Fatalf("generation after spec change = %d, want 2", grown.GetGeneration())
	}
	if id, _, _ := unstructured.NestedString(grown.Object, "status", "topicID"); id != uid {
		t.Fatalf("main-endpoint update changed status.topicID to %q", id)
	}

	if err := topics.Delete(ctx, "orders", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete KafkaTopic: %v", err)
	}
	if _, err := topics.Get(ctx, "orders", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: want NotFound, got %v", err)
	}
}

// The schema rejects what Kafka would reject.
func TestKafkaTopicValidation(t *testing.T) {
	ctx := context.Background()
	_, dc := clients(t)
	applyCRD(t, dc)
	ns := newNamespace(t)
	topics := dc.Resource(topicGVR).Namespace(ns)

	for name, spec := range map[string]map[string]any{
		"zero-partitions":     {"partitions": int64(0)},
		"negative-partitions": {"partitions": int64(-1)},
		"missing-partitions":  {"config": map[string]any{"retention.ms": "1"}},
		"non-string-config":   {"partitions": int64(1), "config": map[string]any{"retention.ms": int64(1)}},
		"string-partitions":   {"partitions": "3"},
		"upper-case-topic-id": {"partitions": int64(1), "topicID": "6F1B3C2A-0D4E-4F5A-8B6C-7D8E9F0A1B2C"},
		"short-topic-id":      {"partitions": int64(1), "topicID": "6f1b3c2a-0d4e-4f5a-8b6c"},
	} {
		_, err := topics.Create(ctx, kafkaTopic(name, spec), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: want 422 Invalid, got %v", name, err)
		}
	}
	noSpec := kafkaTopic("no-spec", nil)
	delete(noSpec.Object, "spec")
	if _, err := topics.Create(ctx, noSpec, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("no spec: want 422 Invalid, got %v", err)
	}

	// Partitions can grow, never shrink.
	obj, err := topics.Create(ctx, kafkaTopic("grow-only", map[string]any{"partitions": int64(4)}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(obj.Object, int64(2), "spec", "partitions")
	if _, err := topics.Update(ctx, obj, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("shrink 4 -> 2: want 422 Invalid, got %v", err)
	}

	// A topic id is set at creation or never: changing it would make the
	// topic's data strays of another incarnation.
	const id = "6f1b3c2a-0d4e-4f5a-8b6c-7d8e9f0a1b2c"
	restored, err := topics.Create(ctx, kafkaTopic("restored", map[string]any{"partitions": int64(1), "topicID": id}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create with spec.topicID: %v", err)
	}
	changed := restored.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, "6f1b3c2a-0d4e-4f5a-8b6c-000000000000", "spec", "topicID")
	if _, err := topics.Update(ctx, changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("change spec.topicID: want 422 Invalid, got %v", err)
	}
	removed := restored.DeepCopy()
	unstructured.RemoveNestedField(removed.Object, "spec", "topicID")
	if _, err := topics.Update(ctx, removed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("remove spec.topicID: want 422 Invalid, got %v", err)
	}
	_ = unstructured.SetNestedField(obj.Object, int64(4), "spec", "partitions")
	_ = unstructured.SetNestedField(obj.Object, id, "spec", "topicID")
	if _, err := topics.Update(ctx, obj, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("add spec.topicID: want 422 Invalid, got %v", err)
	}
	grown := restored.DeepCopy()
	_ = unstructured.SetNestedField(grown.Object, int64(3), "spec", "partitions")
	if _, err := topics.Update(ctx, grown, metav1.UpdateOptions{}); err != nil {
		t.Errorf("grow a topic with spec.topicID: %v", err)
	}
}
