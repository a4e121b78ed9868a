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

	"github.com/kaas-project/kaas/actors/quota"
)

// KafkaQuotaGVR is the KafkaQuota custom resource: one quota entity (a
// user, a client id, or both) and its values per object.
var KafkaQuotaGVR = schema.GroupVersionResource{Group: "kaas.dev", Version: "v1alpha1", Resource: "kafkaquotas"}

// QuotaObjectName is the name AlterClientQuotas gives an entity's
// KafkaQuota when none holds it yet: a hash of the entity. Objects applied
// by hand may have any name.
func QuotaObjectName(e quota.Entity) string {
	sp := quota.ToSpec(e, nil)
	key := fmt.Sprintf("%t\x00%s\x00%t\x00%s", e.User.Set, sp.User, e.ClientID.Set, sp.ClientID)
	if e.IP.Set {
		key += "\x00ip\x00" + sp.IP
	}
	sum := sha256.Sum256([]byte(key))
	return "quota-" + hex.EncodeToString(sum[:10])
}

// QuotaFromObject reads a KafkaQuota's spec.
func QuotaFromObject(u *unstructured.Unstructured) (quota.Entity, quota.Values, error) {
	var sp quota.Spec
	var err error
	if sp.User, _, err = unstructured.NestedString(u.Object, "spec", "user"); err == nil {
		sp.ClientID, _, err = unstructured.NestedString(u.Object, "spec", "clientId")
	}
	if err == nil {
		sp.IP, _, err = unstructured.NestedString(u.Object, "spec", "ip")
	}
	var raw map[string]any
	if err == nil {
		raw, _, err = unstructured.NestedMap(u.Object, "spec", "quotas")
	}
	if err != nil {
		return quota.Entity{}, nil, fmt.Errorf("KafkaQuota %s: spec: %w", u.GetName(), err)
	}
	sp.Quotas = map[string]float64{}
	for k, v := range raw {
		switch n := v.(type) {
		case int64:
			sp.Quotas[k] = float64(n)
		case float64:
			sp.Quotas[k] = n
		default:
			return quota.Entity{}, nil, fmt.Errorf("KafkaQuota %s: spec.quotas.%s: %v is not a number", u.GetName(), k, v)
		}
	}
	e, vs, err := quota.FromSpec(sp)
	if err != nil {
		return e, nil, fmt.Errorf("KafkaQuota %s: %w", u.GetName(), err)
	}
	return e, vs, nil
}

// quotaSpec is a spec as an unstructured object's field.
func quotaSpec(e quota.Entity, vs quota.Values) map[string]any {
	sp := quota.ToSpec(e, vs)
	q := map[string]any{}
	for k, v := range sp.Quotas {
		q[k] = v
	}
	out := map[string]any{"quotas": q}
	if sp.User != "" {
		out["user"] = sp.User
	}
	if sp.ClientID != "" {
		out["clientId"] = sp.ClientID
	}
	if sp.IP != "" {
		out["ip"] = sp.IP
	}
	return out
}

// Quotas is the cluster-mode quota store: it watches KafkaQuota objects in
// its namespace and feeds every valid one to Q (each broker enforces from
// its own cache), and AlterClientQuotas writes the objects.
type Quotas struct {
	Dyn       dynamic.Interface
	Namespace string
	Q         *quota.Quotas
	Log       zerolog.Logger

	mu      sync.Mutex
	cfg     quota.Config
	names   map[quota.Entity]string // entity -> the KafkaQuota holding it
	changed chan struct{}           // closed and replaced at every cache update
}

var _ quota.Store = (*Quotas)(nil)

func (s *Quotas) res() dynamic.ResourceInterface {
	return s.Dyn.Resource(KafkaQuotaGVR).Namespace(s.Namespace)
}

// Watch starts the informer, returns once its cache has synced (or ctx
// ended), and keeps Q current until ctx ends.
func (s *Quotas) Watch(ctx context.Context) error {
	s.mu.Lock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	return watchObjects(ctx, s.Dyn, KafkaQuotaGVR, s.Namespace, "KafkaQuota", s.reload)
}

// reload rebuilds the cache from the informer's objects; bad remembers the
// invalid objects already logged. Two objects for one entity: the first by
// name wins, the other is logged.
func (s *Quotas) reload(us []*unstructured.Unstructured, bad map[string]string) {
	cfg, names := quota.Config{}, map[quota.Entity]string{}
	for _, u := range us {
		e, vs, err := QuotaFromObject(u)
		if err == nil {
			if other, dup := names[e]; dup {
				err = fmt.Errorf("KafkaQuota %s: entity %s is already configured by %s", u.GetName(), e, other)
			}
		}
		if err != nil {
			if bad[u.GetName()] != err.Error() {
				s.Log.Error().Err(err).Str("kafkaquota", u.GetName()).Msg("invalid KafkaQuota ignored")
				bad[u.GetName()] = err.Error()
			}
			continue
		}
		delete(bad, u.GetName())
		cfg[e], names[e] = vs, u.GetName()
	}
	s.Q.Set(cfg)
	s.mu.Lock()
	s.cfg, s.names = cfg, names
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// quotaConflictRetries bounds the read-modify-write retries of one entity
// when another broker writes it at the same time.
const quotaConflictRetries = 5

// Alter implements quota.Store: each entity's KafkaQuota is read, changed
// and written back (created, updated with its resourceVersion, or deleted
// when no value is left), then it waits until this broker's cache holds
// the result, so a DescribeClientQuotas right after sees it.
func (s *Quotas) Alter(ctx context.Context, cs []quota.Change) []error {
	errs := make([]error, len(cs))
	want := make([]quota.Values, len(cs))
	for i, c := range cs {
		for try := 0; ; try++ {
			want[i], errs[i] = s.alter(ctx, c)
			if !apierrors.IsConflict(errs[i]) && !apierrors.IsAlreadyExists(errs[i]) || try == quotaConflictRetries {
				break
			}
		}
	}
	s.waitCache(ctx, func(have quota.Config) bool {
		for i, c := range cs {
			if errs[i] == nil && !sameValues(have[c.Entity], want[i]) {
				return false
			}
		}
		return true
	})
	return errs
}

// alter applies one change to the entity's object; it returns the values
// written.
func (s *Quotas) alter(ctx context.Context, c quota.Change) (quota.Values, error) {
	s.mu.Lock()
	name, ok := s.names[c.Entity]
	s.mu.Unlock()
	if !ok {
		name = QuotaObjectName(c.Entity)
	}
	u, err := s.res().Get(ctx, name, metav1.GetOptions{})
	var cur quota.Values
	switch {
	case apierrors.IsNotFound(err):
		u = nil
	case err != nil:
		return nil, fmt.Errorf("read KafkaQuota %s: %w", name, err)
	default:
		e, vs, err := QuotaFromObject(u)
		if err != nil || e != c.Entity {
			// An invalid or foreign object under the hash name: replace it.
			vs = nil
		}
		cur = vs
	}
	next, err := quota.Apply(c.Entity, cur, c.Ops)
	if err != nil {
		return nil, err
	}
	switch {
	case len(next) == 0 && u == nil:
		return next, nil
	case len(next) == 0:
		err = s.res().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr(u.GetResourceVersion())}})
		if apierrors.IsNotFound(err) {
			err = nil
		}
	case u == nil:
		u = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kaas.dev/v1alpha1",
			"kind":       "KafkaQuota",
			"metadata":   map[string]any{"name": name, "namespace": s.Namespace},
			"spec":       quotaSpec(c.Entity, next),
		}}
		_, err = s.res().Create(ctx, u, metav1.CreateOptions{})
	default:
		u.Object["spec"] = quotaSpec(c.Entity, next)
		_, err = s.res().Update(ctx, u, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("write KafkaQuota %s for %s: %w", name, c.Entity, err)
	}
	return next, nil
}

func ptr[T any](v T) *T { return &v }

func sameValues(a, b quota.Values) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// waitCache waits until done holds for the cache, or ctx ends (the objects
// are written either way: the cache catches up later).
func (s *Quotas) waitCache(ctx context.Context, done func(quota.Config) bool) {
	for {
		s.mu.Lock()
		ok, ch := done(s.cfg), s.changed
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
