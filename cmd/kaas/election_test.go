package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/kaas-project/kaas/actors/cluster"
)

// campaign is one RunElection under test, with what it reported.
type campaign struct {
	elected chan cluster.Election
	deposed chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

func startCampaign(t *testing.T, kc kubernetes.Interface, ns, identity string) *campaign {
	return startCampaignEvery(t, kc, ns, identity, 500*time.Millisecond)
}

// startCampaignEvery campaigns with the given retry period (lease duration
// six of them, renew deadline four).
func startCampaignEvery(t *testing.T, kc kubernetes.Interface, ns, identity string, retry time.Duration) *campaign {
	ctx, cancel := context.WithCancel(context.Background())
	c := &campaign{elected: make(chan cluster.Election, 8), deposed: make(chan struct{}, 8), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		err := cluster.RunElection(ctx, cluster.ElectionConfig{
			Client: kc, Namespace: ns, LeaseName: "kaas-controller", Identity: identity,
			LeaseDuration: 6 * retry, RenewDeadline: 4 * retry, RetryPeriod: retry,
			OnElected: func(_ context.Context, e cluster.Election) { c.elected <- e },
			OnDeposed: func() { c.deposed <- struct{}{} },
			Log:       zerolog.Nop(),
		})
		if err != nil {
			t.Errorf("RunElection: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

func (c *campaign) waitElected(t *testing.T) int64 {
	t.Helper()
	return c.waitElection(t).Epoch
}

func (c *campaign) waitElection(t *testing.T) cluster.Election {
	t.Helper()
	select {
	case e := <-c.elected:
		return e
	case <-time.After(20 * time.Second):
		t.Fatal("not elected within 20s")
		return cluster.Election{}
	}
}

// TestElectionEpochs drives cluster.RunElection against a real apiserver
// through the Lease writes that client-go's elector gets wrong on its own.
func TestElectionEpochs(t *testing.T) {
	api := startAPIServer(t)
	rc, err := clientcmd.BuildConfigFromFlags("", api.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc := kubernetes.NewForConfigOrDie(rc)
	lease := func(t *testing.T, ns string) (holder string, epoch int32) {
		t.Helper()
		l, err := kc.CoordinationV1().Leases(ns).Get(context.Background(), "kaas-controller", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if l.Spec.LeaseTransitions != nil {
			epoch = *l.Spec.LeaseTransitions
		}
		return holder, epoch
	}
	// rewrite sets the Lease's holder (nil: released) the way another
	// elector's update would: read, change, write, and again if the
	// holder's renewal wrote in between.
	rewrite := func(t *testing.T, ns string, holder *string, transitions int32) {
		t.Helper()
		leases := kc.CoordinationV1().Leases(ns)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			l, err := leases.Get(context.Background(), "kaas-controller", metav1.GetOptions{})
			if err != nil {
				return err
			}
			now := metav1.NewMicroTime(time.Now())
			secs := int32(3)
			if holder == nil {
				secs = 1
			}
			l.Spec.HolderIdentity, l.Spec.LeaseTransitions, l.Spec.LeaseDurationSeconds = holder, &transitions, &secs
			l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
			_, err = leases.Update(context.Background(), l, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	namespace := func(t *testing.T) string {
		ns := fmt.Sprintf("election-%d", time.Now().UnixNano()%1_000_000)
		api.kubectl(t, "create", "namespace", ns)
		return ns
	}

	// A deposed elector's release (client-go's ReleaseOnCancel judges
	// leadership from a stale observation) clears the holder's Lease;
	// client-go then re-acquires it on the next renewal at epoch+1 without
	// a word. The holder must notice and start over at the new epoch, or its
	// controller writes files every broker rejects.
	t.Run("stray release", func(t *testing.T) {
		ns := namespace(t)
		a := startCampaign(t, kc, ns, "a")
		e0 := a.waitElected(t)
		_, epoch := lease(t, ns)
		rewrite(t, ns, nil, epoch)
		select {
		case <-a.deposed:
		case <-time.After(10 * time.Second):
			holder, now := lease(t, ns)
			t.Fatalf("still leading at epoch %d after the Lease was released (now held by %q at %d)", e0, holder, now)
		}
		el := a.waitElection(t)
		e1 := el.Epoch
		holder, now := lease(t, ns)
		if e1 <= e0 || holder != "a" || int64(now) != e1 {
			t.Fatalf("re-elected at epoch %d (was %d); Lease held by %q at %d", e1, e0, holder, now)
		}
		// Cleared by another elector, not released by a kaas holder: no
		// controller of any epoch is known to have given it up.
		if el.Released {
			t.Fatalf("re-election reports a release at epoch %d; none happened", el.ReleasedAt)
		}
	})

	// A holder replaced while paused must not clear its successor's Lease
	// when it shuts down; a holder that still holds it releases it, keeping
	// the epoch, so a successor need not wait out the lease duration.
	t.Run("holder-scoped release", func(t *testing.T) {
		ns := namespace(t)
		a := startCampaign(t, kc, ns, "a")
		e0 := a.waitElected(t)
		b := "b"
		rewrite(t, ns, &b, int32(e0)+1)
		a.cancel()
		<-a.done
		if holder, epoch := lease(t, ns); holder != "b" || int64(epoch) != e0+1 {
			t.Fatalf("after the replaced holder shut down the Lease is held by %q at %d, want b at %d", holder, epoch, e0+1)
		}

		ns = namespace(t)
		c := startCampaign(t, kc, ns, "c")
		e0 = c.waitElected(t)
		c.cancel()
		<-c.done
		if holder, epoch := lease(t, ns); holder != "" || int64(epoch) != e0 {
			t.Fatalf("after the holder shut down the Lease is held by %q at %d, want released at %d", holder, epoch, e0)
		}
	})

	// A candidate learns of a release from its watch of the Lease and
	// campaigns at once: with a 30 s retry period its elector's next try
	// would come 30-66 s after its first (lost) one, so an election within
	// 15 s of the release can only be the watch's doing. The winner learns
	// which epoch's controller released it, and so does the one after it
	// (the mark stays until another release).
	t.Run("release hands over at once", func(t *testing.T) {
		ns := namespace(t)
		a := startCampaign(t, kc, ns, "a")
		e0 := a.waitElected(t)
		b := startCampaignEvery(t, kc, ns, "b", 30*time.Second)
		time.Sleep(time.Second) // b's first try has found the Lease held
		a.cancel()
		<-a.done
		var e1 int64
		select {
		case el := <-b.elected:
			e1 = el.Epoch
			if el.Epoch <= e0 {
				t.Fatalf("b elected at epoch %d, not above a's %d", el.Epoch, e0)
			}
			if !el.Released || el.ReleasedAt != e0 {
				t.Fatalf("b elected with release mark %v at %d, want a's epoch %d", el.Released, el.ReleasedAt, e0)
			}
		case <-time.After(15 * time.Second):
			holder, epoch := lease(t, ns)
			t.Fatalf("b not elected within 15 s of a's release (Lease held by %q at %d)", holder, epoch)
		}
		// b loses the Lease to another elector (x, which then stops
		// renewing): the next winner's mark still names a's epoch, not b's.
		x := "x"
		rewrite(t, ns, &x, int32(e1)+1)
		c := startCampaign(t, kc, ns, "c")
		if el := c.waitElection(t); el.Epoch <= e1+1 || !el.Released || el.ReleasedAt != e0 {
			t.Fatalf("c elected at %d with release mark %v at %d, want above %d and a's epoch %d", el.Epoch, el.Released, el.ReleasedAt, e1+1, e0)
		}
	})
}
