package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kaas-project/kaas/actors/acl"
)

// KafkaACLGVR is the KafkaAcl custom resource: one ACL binding per object.
var KafkaACLGVR = schema.GroupVersionResource{Group: "kaas.dev", Version: "v1alpha1", Resource: "kafkaacls"}

// ACLObjectName is the name CreateAcls gives a binding's KafkaAcl: a hash
// of the binding, so creating the same ACL twice finds the same object.
// Objects applied by hand may have any name.
func ACLObjectName(b acl.Binding) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%d\x00%s\x00%s\x00%d\x00%d",
		b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)))
	return "acl-" + hex.EncodeToString(sum[:10])
}

// ACLFromObject reads a KafkaAcl's spec into a binding.
func ACLFromObject(u *unstructured.Unstructured) (acl.Binding, error) {
	spec, _, err := unstructured.NestedStringMap(u.Object, "spec")
	if err != nil {
		return acl.Binding{}, fmt.Errorf("KafkaAcl %s: spec: %w", u.GetName(), err)
	}
	b, err := acl.FromSpec(acl.Spec{
		ResourceType: spec["resourceType"], ResourceName: spec["resourceName"], PatternType: spec["patternType"],
		Principal: spec["principal"], Host: spec["host"], Operation: spec["operation"], Permission: spec["permission"],
	})
	if err != nil {
		return b, fmt.Errorf("KafkaAcl %s: %w", u.GetName(), err)
	}
	return b, nil
}

// ACLs is the cluster-mode ACL store: it watches KafkaAcl objects in its
// namespace and feeds every valid binding to Auth (each broker authorizes
// from its own cache), and CreateAcls / DeleteAcls write the objects.
type ACLs struct {
	Dyn       dynamic.Interface
	Namespace string
	Auth      *acl.Authorizer
	Log       zerolog.Logger

	mu      sync.Mutex
	objects map[acl.Binding][]string // binding -> KafkaAcl names holding it
	changed chan struct{}            // closed and replaced at every cache update
}

var _ acl.Store = (*ACLs)(nil)

func (s *ACLs) res() dynamic.ResourceInterface {
	return s.Dyn.Resource(KafkaACLGVR).Namespace(s.Namespace)
}

// Watch starts the informer, returns once its cache has synced (or ctx
// ended), and keeps Auth current until ctx ends.
func (s *ACLs) Watch(ctx context.Context) error {
	s.mu.Lock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	return watchObjects(ctx, s.Dyn, KafkaACLGVR, s.Namespace, "KafkaAcl", s.reload)
}

// reload rebuilds the cache from the informer's objects; bad remembers
// the invalid objects already logged.
func (s *ACLs) reload(us []*unstructured.Unstructured, bad map[string]string) {
	objects := map[acl.Binding][]string{}
	var bs []acl.Binding
	for _, u := range us {
		b, err := ACLFromObject(u)
		if err != nil {
			if bad[u.GetName()] != err.Error() {
				s.Log.Error().Err(err).Str("kafkaacl", u.GetName()).Msg("invalid KafkaAcl ignored")
				bad[u.GetName()] = err.Error()
			}
			continue
		}
		delete(bad, u.GetName())
		objects[b] = append(objects[b], u.GetName())
		bs = append(bs, b)
	}
	s.Auth.Set(bs)
	s.mu.Lock()
	s.objects = objects
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Create implements acl.Store: one KafkaAcl per binding (an existing one
// is kept), then waits until this broker's cache holds them all, so a
// DescribeAcls right after sees them.
func (s *ACLs) Create(ctx context.Context, bs []acl.Binding) []error {
	errs := make([]error, len(bs))
	for i, b := range bs {
		sp := acl.ToSpec(b)
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kaas.dev/v1alpha1",
			"kind":       "KafkaAcl",
			"metadata":   map[string]any{"name": ACLObjectName(b), "namespace": s.Namespace},
			"spec": map[string]any{
				"resourceType": sp.ResourceType, "resourceName": sp.ResourceName, "patternType": sp.PatternType,
				"principal": sp.Principal, "host": sp.Host, "operation": sp.Operation, "permission": sp.Permission,
			},
		}}
		if _, err := s.res().Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			errs[i] = fmt.Errorf("create KafkaAcl for %s: %w", b, err)
		}
	}
	s.waitCache(ctx, func(have map[acl.Binding][]string) bool {
		for i, b := range bs {
			if errs[i] == nil && len(have[b]) == 0 {
				return false
			}
		}
		return true
	})
	return errs
}

// Delete implements acl.Store: every KafkaAcl holding each binding is
// deleted, then it waits until this broker's cache has dropped them.
func (s *ACLs) Delete(ctx context.Context, bs []acl.Binding) []error {
	s.mu.Lock()
	names := make([][]string, len(bs))
	for i, b := range bs {
		names[i] = append([]string(nil), s.objects[b]...)
	}
	s.mu.Unlock()
	errs := make([]error, len(bs))
	for i, b := range bs {
		for _, n := range names[i] {
			if err := s.res().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs[i] = fmt.Errorf("delete KafkaAcl %s (%s): %w", n, b, err)
			}
		}
	}
	s.waitCache(ctx, func(have map[acl.Binding][]string) bool {
		for i, b := range bs {
			if errs[i] == nil && len(have[b]) > 0 {
				return false
			}
		}
		return true
	})
	return errs
}

// waitCache waits until done holds for the cache, or ctx ends (the
// objects are written either way: the cache catches up later).
func (s *ACLs) waitCache(ctx context.Context, done func(map[acl.Binding][]string) bool) {
	for {
		s.mu.Lock()
		ok, ch := done(s.objects), s.changed
		s.mu.Unlock()
		if ok || ch == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}
