package cluster

import (
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// topicObject is a KafkaTopic as the apiserver lists it: created at
// second created, with uid uid, and spec.topicID id when not empty.
func topicObject(name, topic, uid, id string, created int) *unstructured.Unstructured {
	spec := map[string]any{"partitions": int64(1)}
	if topic != "" {
		spec["topicName"] = topic
	}
	if id != "" {
		spec["topicID"] = id
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kaas.dev/v1alpha1", "kind": "KafkaTopic", "spec": spec}}
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetCreationTimestamp(metav1.NewTime(time.Unix(int64(created), 0)))
	return u
}

const (
	uidA = "0f4cc1a0-7b1e-4c6e-9d55-3f0a6a1e2b01"
	uidB = "0f4cc1a0-7b1e-4c6e-9d55-3f0a6a1e2b02"
	uidC = "0f4cc1a0-7b1e-4c6e-9d55-3f0a6a1e2b03"
	old1 = "5d2b8e7a-1c3f-4a9e-b2d4-6e8f0a1c3e51"
)

func TestResolveTopics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objs    []*unstructured.Unstructured
		ids     map[string]string // topic -> id accepted
		refused map[string]string // object -> reason
	}{{
		name: "the uid is the id",
		objs: []*unstructured.Unstructured{topicObject("orders", "", uidA, "", 1)},
		ids:  map[string]string{"orders": uidA},
	}, {
		name: "spec.topicID is the id",
		objs: []*unstructured.Unstructured{topicObject("orders", "", uidA, old1, 1)},
		ids:  map[string]string{"orders": old1},
	}, {
		name: "the oldest object keeps a topic name, whatever the list order",
		objs: []*unstructured.Unstructured{
			topicObject("orders-copy", "orders", uidB, "", 2),
			topicObject("orders", "", uidA, "", 1),
		},
		ids:     map[string]string{"orders": uidA},
		refused: map[string]string{"orders-copy": "DuplicateTopicName"},
	}, {
		name: "same creation time: the object name decides",
		objs: []*unstructured.Unstructured{
			topicObject("b", "orders", uidB, "", 1),
			topicObject("a", "orders", uidA, "", 1),
		},
		ids:     map[string]string{"orders": uidA},
		refused: map[string]string{"b": "DuplicateTopicName"},
	}, {
		name: "a restored id another object already has",
		objs: []*unstructured.Unstructured{
			topicObject("payments", "", uidA, "", 1),
			topicObject("orders", "", uidB, uidA, 2),
			topicObject("refunds", "", uidC, old1, 3),
		},
		ids:     map[string]string{"payments": uidA, "refunds": old1},
		refused: map[string]string{"orders": "DuplicateTopicID"},
	}, {
		name: "an invalid object takes nothing from a valid one",
		objs: []*unstructured.Unstructured{
			topicObject("bad", "orders", uidA, "NOT-A-UUID", 1),
			topicObject("orders", "", uidB, "", 2),
		},
		ids:     map[string]string{"orders": uidB},
		refused: map[string]string{"bad": "Invalid"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			names := make([]string, len(tc.objs))
			for i, u := range tc.objs {
				names[i] = u.GetName()
			}
			set := ResolveTopics(tc.objs)
			topics, refused := set.Topics, set.Refused
			for name := range topics {
				if set.Objects[name] == "" {
					t.Errorf("topic %s has no object", name)
				}
			}
			ids := map[string]string{}
			for n, s := range topics {
				ids[n] = s.ID
			}
			if !maps.Equal(ids, tc.ids) {
				t.Errorf("topics %v, want %v", ids, tc.ids)
			}
			reasons := map[string]string{}
			for n, r := range refused {
				reasons[n] = r.Reason
			}
			if len(reasons) != len(tc.refused) || !maps.Equal(reasons, tc.refused) {
				t.Errorf("refused %v, want %v", reasons, tc.refused)
			}
			// The caller's list is not reordered.
			again := make([]string, len(tc.objs))
			for i, u := range tc.objs {
				again[i] = u.GetName()
			}
			if !slices.Equal(names, again) {
				t.Errorf("list reordered: %v", again)
			}
		})
	}
}

func TestValidTopicID(t *testing.T) {
	for id, ok := range map[string]bool{
		old1:                                   true,
		"00000000-0000-0000-0000-000000000001": true,
		"00000000-0000-0000-0000-000000000000": false,
		"5D2B8E7A-1C3F-4A9E-B2D4-6E8F0A1C3E51": false,
		"5d2b8e7a1c3f4a9eb2d46e8f0a1c3e51":     false,
		"5d2b8e7a-1c3f-4a9e-b2d4-6e8f0a1c3e5":  false,
		"5d2b8e7a-1c3f-4a9e-b2d4_6e8f0a1c3e51": false,
		"5d2b8e7a-1c3f-4a9e-b2d4-6e8f0a1c3e5g": false,
	} {
		if err := ValidTopicID(id); (err == nil) != ok {
			t.Errorf("ValidTopicID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
}
