package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kaas-project/kaas/actors/controller/balancer"
)

// TestStatusWrittenOncePerTopic: a burst of KafkaTopic creations, each
// re-listing every topic while the earlier status writes are still queued,
// writes each topic's status once, not once per later creation.
func TestStatusWrittenOncePerTopic(t *testing.T) {
	const n = 12
	fake := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{KafkaTopicGVR: "KafkaTopicList"})
	// The apiserver gives each object a uid (the topic id); the fake does not.
	fake.PrependReactor("create", "kafkatopics", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
		u.SetUID(types.UID("uid-" + u.GetName()))
		return false, nil, nil
	})
	dyn := gatedStatus{Interface: fake, gate: make(chan struct{}), writes: new(atomic.Int32)}
	var release sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	reported := make(chan int, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		WatchTopics(ctx, dyn, "ns", func(ts map[string]balancer.TopicSpec) { reported <- len(ts) }, zerolog.Nop())
	}()
	t.Cleanup(func() { release.Do(func() { close(dyn.gate) }); cancel(); <-done })

	topics := &Topics{Dyn: dyn, Namespace: "ns"}
	for i := range n {
		if _, err := topics.Create(ctx, fmt.Sprintf("burst-%d", i), 1, nil, nil); err != nil {
			t.Fatal(err)
		}
		// Each creation is listed before the next one is made.
		for got := 0; got != i+1; {
			select {
			case got = <-reported:
			case <-time.After(10 * time.Second):
				t.Fatalf("topic %d not reported", i)
			}
		}
	}
	release.Do(func() { close(dyn.gate) })
	waitFor(t, "every status written", 10*time.Second, func() bool {
		list, err := dyn.Resource(KafkaTopicGVR).Namespace("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range list.Items {
			if id, _, _ := unstructured.NestedString(u.Object, "status", "topicID"); id != string(u.GetUID()) {
				return false
			}
		}
		return len(list.Items) == n
	})
	if got := dyn.writes.Load(); got != n {
		t.Fatalf("%d status writes for %d topics, want one each", got, n)
	}
}

// gatedStatus holds every KafkaTopic status write until gate closes, as
// client-go's rate limiter holds them when creations come faster than its
// rate, and counts them.
type gatedStatus struct {
	dynamic.Interface
	gate   chan struct{}
	writes *atomic.Int32
}

type gatedResource struct {
	dynamic.NamespaceableResourceInterface
	g gatedStatus
}

type gatedNamespace struct {
	dynamic.ResourceInterface
	g gatedStatus
}

func (g gatedStatus) Resource(r schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return gatedResource{g.Interface.Resource(r), g}
}

func (r gatedResource) Namespace(ns string) dynamic.ResourceInterface {
	return gatedNamespace{r.NamespaceableResourceInterface.Namespace(ns), r.g}
}

func (n gatedNamespace) UpdateStatus(ctx context.Context, u *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	n.g.writes.Add(1)
	select {
	case <-n.g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return n.ResourceInterface.UpdateStatus(ctx, u, opts)
}

// IsWatchListSemanticsUnSupported passes on the fake's answer: informers
// stream their initial list only from clients that support it.
func (g gatedStatus) IsWatchListSemanticsUnSupported() bool { return true }
