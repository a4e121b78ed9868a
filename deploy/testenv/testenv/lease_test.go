package testenv_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationac "k8s.io/client-go/applyconfigurations/coordination/v1"
	"k8s.io/utils/ptr"
)

// The controller's fencing rests on this: a write carrying a stale resourceVersion is
// rejected with HTTP 409, by a real apiserver.
func TestLeaseStaleUpdateConflicts(t *testing.T) {
	ctx := context.Background()
	cs, _ := clients(t)
	ns := newNamespace(t)
	leases := cs.CoordinationV1().Leases(ns)

	created, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kaas-controller"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("kaas-0"),
			LeaseDurationSeconds: ptr.To[int32](15),
			LeaseTransitions:     ptr.To[int32](0),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create lease: %v", err)
	}
	stale := created.DeepCopy()

	// Writer A (read rv=N) wins.
	a := created.DeepCopy()
	a.Spec.HolderIdentity = ptr.To("kaas-1")
	a.Spec.LeaseTransitions = ptr.To[int32](1)
	updated, err := leases.Update(ctx, a, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("first update: %v", err)
	}
	if updated.ResourceVersion == stale.ResourceVersion {
		t.Fatalf("resourceVersion did not change on update: %s", updated.ResourceVersion)
	}

	// Writer B also read rv=N: 409 Conflict.
	stale.Spec.HolderIdentity = ptr.To("kaas-2")
	_, err = leases.Update(ctx, stale, metav1.UpdateOptions{})
	assertConflict(t, err, "the object has been modified")

	got, err := leases.Get(ctx, "kaas-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *got.Spec.HolderIdentity != "kaas-1" || *got.Spec.LeaseTransitions != 1 {
		t.Fatalf("lease after conflict: holder %q transitions %d, want kaas-1 / 1",
			*got.Spec.HolderIdentity, *got.Spec.LeaseTransitions)
	}

	// Server-side apply carrying a stale resourceVersion is a compare-and-swap too.
	ac := coordinationac.Lease("kaas-controller", ns).
		WithResourceVersion(stale.ResourceVersion).
		WithSpec(coordinationac.LeaseSpec().WithHolderIdentity("kaas-2"))
	_, err = leases.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: "kaas-2", Force: true})
	assertConflict(t, err, "the object has been modified")
}

// Server-side apply by a second field manager conflicts unless forced.
func TestLeaseApplyFieldManagerConflict(t *testing.T) {
	ctx := context.Background()
	cs, _ := clients(t)
	ns := newNamespace(t)
	leases := cs.CoordinationV1().Leases(ns)

	apply := func(holder string) *coordinationac.LeaseApplyConfiguration {
		return coordinationac.Lease("kaas-controller", ns).WithSpec(coordinationac.LeaseSpec().
			WithHolderIdentity(holder).WithLeaseDurationSeconds(15))
	}
	if _, err := leases.Apply(ctx, apply("kaas-0"), metav1.ApplyOptions{FieldManager: "kaas-0"}); err != nil {
		t.Fatalf("first apply: %v", err)
	}
	_, err := leases.Apply(ctx, apply("kaas-1"), metav1.ApplyOptions{FieldManager: "kaas-1"})
	assertConflict(t, err, "conflict")
	got, err := leases.Apply(ctx, apply("kaas-1"), metav1.ApplyOptions{FieldManager: "kaas-1", Force: true})
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if *got.Spec.HolderIdentity != "kaas-1" {
		t.Fatalf("holder after forced apply: %q", *got.Spec.HolderIdentity)
	}
}

func assertConflict(t *testing.T, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatal("write succeeded, want HTTP 409 Conflict")
	}
	if !apierrors.IsConflict(err) {
		t.Fatalf("want Conflict, got %T: %v", err, err)
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Code != http.StatusConflict {
		t.Fatalf("want HTTP 409, got %v", err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("conflict message %q does not contain %q", err.Error(), msg)
	}
}
