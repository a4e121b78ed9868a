// Package cluster holds the cluster-mode pieces a broker runs besides its
// actors: Lease election (the controller epoch), the Lease watcher that fences
// stale assignment files, the heartbeat client, and KafkaTopic access. Each
// runs on its own goroutine and reports to the supervisor actor by message.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ElectionConfig configures the controller election.
type ElectionConfig struct {
	Client    kubernetes.Interface
	Namespace string
	LeaseName string
	// Identity must be unique per process incarnation
	// (<pod>_<pod uid>_<start nonce>): client-go bumps leaseTransitions only
	// when the holder identity changes, and the epoch must never rewind.
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// OnElected is called with the epoch (leaseTransitions) once this
	// process holds the Lease; ctx ends when leadership is lost.
	OnElected func(ctx context.Context, epoch int64)
	// OnDeposed is called when leadership ends (renew deadline passed or
	// shutdown).
	OnDeposed func()
	// OnHolder is called whenever the observed holder changes.
	OnHolder func(identity string)
	// OnElector receives each campaign's elector (its Check tells how
	// recently the Lease was renewed).
	OnElector func(le *leaderelection.LeaderElector)
	Log       zerolog.Logger
}

// Validate checks the timing rules client-go requires.
func (c *ElectionConfig) Validate() error {
	switch {
	case c.Client == nil:
		return errors.New("election: no Kubernetes client")
	case c.Namespace == "" || c.LeaseName == "" || c.Identity == "":
		return errors.New("election: namespace, lease name and identity are required")
	case c.LeaseDuration <= c.RenewDeadline:
		return fmt.Errorf("election: lease duration %s must exceed the renew deadline %s", c.LeaseDuration, c.RenewDeadline)
	case c.RenewDeadline <= c.RetryPeriod:
		return fmt.Errorf("election: renew deadline %s must exceed the retry period %s", c.RenewDeadline, c.RetryPeriod)
	case c.RetryPeriod <= 0:
		return errors.New("election: retry period must be positive")
	}
	return nil
}

// RunElection campaigns for the Lease until ctx ends, re-campaigning after
// every loss. On ctx end a held Lease is released (the epoch is kept: a
// release does not reset leaseTransitions).
func RunElection(ctx context.Context, cfg ElectionConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.LeaseName},
		Client:     cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   cfg.LeaseDuration,
			RenewDeadline:   cfg.RenewDeadline,
			RetryPeriod:     cfg.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            cfg.LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					epoch, err := LeaseEpoch(lctx, cfg.Client, cfg.Namespace, cfg.LeaseName)
					if err != nil {
						cfg.Log.Error().Err(err).Msg("read lease epoch after election")
						return
					}
					cfg.Log.Info().Int64("epoch", epoch).Str("identity", cfg.Identity).Msg("elected controller")
					cfg.OnElected(lctx, epoch)
				},
				OnStoppedLeading: func() {
					cfg.Log.Warn().Str("identity", cfg.Identity).Msg("controller leadership lost")
					if cfg.OnDeposed != nil {
						cfg.OnDeposed()
					}
				},
				OnNewLeader: func(identity string) {
					if cfg.OnHolder != nil {
						cfg.OnHolder(identity)
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("leader elector: %w", err)
		}
		if cfg.OnElector != nil {
			cfg.OnElector(le)
		}
		le.Run(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(cfg.RetryPeriod):
		}
	}
	return nil
}

// LeaseEpoch reads the Lease's leaseTransitions: the cluster epoch.
func LeaseEpoch(ctx context.Context, client kubernetes.Interface, ns, name string) (int64, error) {
	l, err := client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get lease %s/%s: %w", ns, name, err)
	}
	if l.Spec.LeaseTransitions == nil {
		return 0, nil
	}
	return int64(*l.Spec.LeaseTransitions), nil
}

// WatchLeaseEpoch polls the Lease every period and reports its epoch, so a
// broker raises its floor for assignment files (a deposed controller's file
// is then ignored). It returns when ctx ends.
func WatchLeaseEpoch(ctx context.Context, client kubernetes.Interface, ns, name string, period time.Duration, report func(epoch int64), log zerolog.Logger) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		if e, err := LeaseEpoch(ctx, client, ns, name); err == nil {
			report(e)
		} else if ctx.Err() == nil {
			log.Warn().Err(err).Msg("lease watch")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ErrNotHolder means the Lease is held by another identity or epoch.
var ErrNotHolder = errors.New("not the lease holder")

// VerifyHolder checks, with a fresh read, that identity still holds the
// Lease at epoch.
func VerifyHolder(ctx context.Context, client kubernetes.Interface, ns, name, identity string, epoch int64) error {
	l, err := client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("verify lease %s/%s: %w", ns, name, err)
	}
	sp := l.Spec
	if sp.HolderIdentity == nil || *sp.HolderIdentity != identity {
		return fmt.Errorf("%w: lease %s/%s is held by someone else", ErrNotHolder, ns, name)
	}
	if sp.LeaseTransitions == nil || int64(*sp.LeaseTransitions) != epoch {
		return fmt.Errorf("%w: lease %s/%s epoch moved on from %d", ErrNotHolder, ns, name, epoch)
	}
	// An expired Lease that nobody took over still names us at our epoch:
	// writing is then safe (no other controller exists), and no wall clock
	// is compared.
	return nil
}
