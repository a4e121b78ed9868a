package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRaiseLeaseEpoch(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	lease := func(transitions int32, holder string, renewed time.Time) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kaas-controller"},
			Spec: coordinationv1.LeaseSpec{LeaseTransitions: &transitions}}
		if holder != "" {
			d, r := int32(15), metav1.NewMicroTime(renewed)
			l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &d, &r
		}
		return l
	}
	for _, tc := range []struct {
		name       string
		existing   *coordinationv1.Lease
		epoch      int64
		wantBefore int64
		wantRaised bool
		wantHeld   bool
		want       int32
	}{
		{name: "missing: created unheld at the epoch", epoch: 57, wantRaised: true, want: 57},
		{name: "lower: raised", existing: lease(2, "", time.Time{}), epoch: 57, wantBefore: 2, wantRaised: true, want: 57},
		{name: "higher: kept", existing: lease(90, "", time.Time{}), epoch: 57, wantBefore: 90, want: 90},
		{name: "held by a running controller: refused", existing: lease(2, "kaas-0_x", now.Add(-5*time.Second)), epoch: 57, wantBefore: 2, wantHeld: true, want: 2},
		{name: "held but expired: raised", existing: lease(2, "kaas-0_x", now.Add(-16*time.Second)), epoch: 57, wantBefore: 2, wantRaised: true, want: 57},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tc.existing != nil {
				if _, err := client.CoordinationV1().Leases("ns").Create(ctx, tc.existing, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			before, raised, err := RaiseLeaseEpoch(ctx, client, "ns", "kaas-controller", tc.epoch, now)
			if errors.Is(err, ErrLeaseHeld) != tc.wantHeld || (err != nil && !tc.wantHeld) {
				t.Fatalf("err %v, want held=%v", err, tc.wantHeld)
			}
			if before != tc.wantBefore || raised != tc.wantRaised {
				t.Errorf("before %d raised %v, want %d %v", before, raised, tc.wantBefore, tc.wantRaised)
			}
			l, err := client.CoordinationV1().Leases("ns").Get(ctx, "kaas-controller", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := *l.Spec.LeaseTransitions; got != tc.want {
				t.Errorf("leaseTransitions %d, want %d", got, tc.want)
			}
		})
	}
}
