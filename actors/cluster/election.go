// Package cluster holds the cluster-mode pieces a broker runs besides its
// actors: Lease election (the controller epoch), the Lease watcher that fences
// stale assignment files, the heartbeat client, and KafkaTopic access. Each
// runs on its own goroutine and reports to the supervisor actor by message.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kaas-project/kaas/actors/clock"
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
	// OnElected is called once this process holds the Lease; ctx ends when
	// leadership is lost.
	OnElected func(ctx context.Context, e Election)
	// OnDeposed is called when leadership ends (renew deadline passed or
	// shutdown).
	OnDeposed func()
	// OnHolder is called whenever the observed holder changes.
	OnHolder func(identity string)
	// OnElector receives each campaign's elector (its Check tells how
	// recently the Lease was renewed).
	OnElector func(le *leaderelection.LeaderElector)
	// OnRenewed is called after each successful write of the Lease naming
	// this identity (an acquisition or a renewal), with when the write was
	// started, on Clock: no other broker can acquire the Lease until a
	// lease duration after that (LeaseBacking).
	OnRenewed func(startedAt time.Time)
	Log       zerolog.Logger
	// Clock paces the waits between rounds and the holder check while
	// leading (client-go's elector keeps its own); clock.Real when nil.
	Clock clock.Clock
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
// every loss. On ctx end a Lease this process still holds is released (the
// epoch is kept: a release does not reset leaseTransitions).
//
// Two things client-go's elector does not do are done here:
//   - The release is our own and holder-scoped. client-go's ReleaseOnCancel
//     re-reads the Lease but judges "am I the leader" from its last
//     observation, so an elector deposed during a pause (SIGSTOP, a stalled
//     node) clears the Lease of the controller that replaced it.
//   - The epoch is watched while leading. When the Lease is cleared under a
//     holder, client-go re-acquires it on the next renewal with
//     leaseTransitions+1 and reports nothing; the controller would keep
//     writing files at the old epoch, which every broker rejects. A leader
//     whose Lease no longer names it at its epoch ends the round and
//     campaigns again, which starts a controller at the current epoch.
func RunElection(ctx context.Context, cfg ElectionConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Clock = clock.OrReal(cfg.Clock)
	lock := &renewalLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.LeaseName},
		Client:     cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}, clk: cfg.Clock, onRenewed: cfg.OnRenewed}
	released := make(chan struct{}, 1)
	go watchReleases(ctx, cfg, released)
	for ctx.Err() == nil {
		roundCtx, endRound := context.WithCancel(ctx)
		// client-go starts OnStartedLeading on a goroutine: the round's
		// mutex keeps OnElected from following OnDeposed.
		var (
			mu               sync.Mutex
			started, stopped bool
			byRelease        atomic.Bool
		)
		// A new round tries to acquire at once; a release seen before it
		// began is already covered by that try.
		select {
		case <-released:
		default:
		}
		// A release while this process campaigns ends the round, so the
		// next one tries at once instead of at the elector's next retry
		// (client-go waits up to 2.2 retry periods, jitter included). A
		// drained controller's successor is then elected in milliseconds,
		// well before the brokers without a controller to answer their
		// pings fence themselves.
		go func() {
			select {
			case <-roundCtx.Done():
			case <-released:
				mu.Lock()
				leading := started
				mu.Unlock()
				if !leading {
					cfg.Log.Debug().Msg("lease released; campaigning now")
					byRelease.Store(true)
					endRound()
				}
			}
		}()
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:          lock,
			LeaseDuration: cfg.LeaseDuration,
			RenewDeadline: cfg.RenewDeadline,
			RetryPeriod:   cfg.RetryPeriod,
			Name:          cfg.LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					el, err := HeldLease(lctx, cfg.Client, cfg.Namespace, cfg.LeaseName, cfg.Identity)
					mu.Lock()
					defer mu.Unlock()
					if stopped || lctx.Err() != nil {
						return
					}
					if err != nil {
						cfg.Log.Error().Err(err).Msg("read lease epoch after election")
						endRound()
						return
					}
					started = true
					ev := cfg.Log.Info().Int64("epoch", el.Epoch).Str("identity", cfg.Identity)
					if el.Released {
						ev = ev.Int64("released_at_epoch", el.ReleasedAt)
					}
					ev.Msg("elected controller")
					go watchHolder(lctx, cfg, el.Epoch, endRound)
					cfg.OnElected(lctx, el)
				},
				OnStoppedLeading: func() {
					mu.Lock()
					stopped = true
					was := started
					mu.Unlock()
					if !was {
						return
					}
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
			endRound()
			return fmt.Errorf("leader elector: %w", err)
		}
		if cfg.OnElector != nil {
			cfg.OnElector(le)
		}
		le.Run(roundCtx)
		endRound()
		mu.Lock()
		was := started
		mu.Unlock()
		if ctx.Err() != nil {
			if was {
				releaseLease(cfg)
			}
			break
		}
		if byRelease.Load() && !was {
			continue // campaign at once
		}
		retry, t := after(cfg.Clock, cfg.RetryPeriod)
		select {
		case <-ctx.Done():
		case <-released:
		case <-retry:
		}
		t.Stop()
	}
	return nil
}

// renewalLock reports every successful write of the Lease that names this
// identity, dated by when it started: client-go's own observation time is
// taken after the write returns, later than the apiserver may have applied it.
type renewalLock struct {
	resourcelock.Interface
	clk       clock.Clock
	onRenewed func(startedAt time.Time)
}

func (l *renewalLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.written(r, func() error { return l.Interface.Create(ctx, r) })
}

func (l *renewalLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.written(r, func() error { return l.Interface.Update(ctx, r) })
}

func (l *renewalLock) written(r resourcelock.LeaderElectionRecord, write func() error) error {
	start := l.clk.Now()
	err := write()
	if err == nil && l.onRenewed != nil && r.HolderIdentity == l.Identity() {
		l.onRenewed(start)
	}
	return err
}

// watchReleases signals released (without blocking) whenever a watch of the
// Lease shows it held by nobody: a controller that released it on shutdown
// (a drain). It re-establishes the watch until ctx ends; a watch that cannot
// be had only costs the fast path, the electors' own retries remain.
func watchReleases(ctx context.Context, cfg ElectionConfig, released chan<- struct{}) {
	leases := cfg.Client.CoordinationV1().Leases(cfg.Namespace)
	for ctx.Err() == nil {
		w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + cfg.LeaseName})
		if err != nil {
			if ctx.Err() == nil {
				cfg.Log.Debug().Err(err).Msg("lease release watch")
			}
			sleep(ctx, cfg.Clock, cfg.RetryPeriod)
			continue
		}
		for ev := range w.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
				select {
				case released <- struct{}{}:
				default:
				}
			}
		}
		w.Stop()
	}
}

// watchHolder reads the Lease every retry period while this process leads
// and ends the round (endRound) once it no longer names this identity at
// epoch.
func watchHolder(ctx context.Context, cfg ElectionConfig, epoch int64, endRound context.CancelFunc) {
	t := cfg.Clock.NewTicker(cfg.RetryPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		err := VerifyHolder(ctx, cfg.Client, cfg.Namespace, cfg.LeaseName, cfg.Identity, epoch)
		if errors.Is(err, ErrNotHolder) {
			cfg.Log.Warn().Err(err).Int64("epoch", epoch).Msg("lease moved on while leading; campaigning again")
			endRound()
			return
		}
	}
}

// releaseLease clears the Lease if, on a fresh read, it still names this
// identity; the update carries that read's resourceVersion, so a Lease
// taken over meanwhile is left alone (conflict). leaseTransitions is kept,
// and ReleasedAtAnnotation names it.
func releaseLease(cfg ElectionConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.RenewDeadline)
	defer cancel()
	leases := cfg.Client.CoordinationV1().Leases(cfg.Namespace)
	l, err := leases.Get(ctx, cfg.LeaseName, metav1.GetOptions{})
	if err != nil {
		cfg.Log.Warn().Err(err).Msg("release lease: read")
		return
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != cfg.Identity {
		return
	}
	now := metav1.NewMicroTime(time.Now())
	one := int32(1)
	var epoch int32
	if l.Spec.LeaseTransitions != nil {
		epoch = *l.Spec.LeaseTransitions
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[ReleasedAtAnnotation] = strconv.Itoa(int(epoch))
	l.Spec.HolderIdentity = nil
	l.Spec.LeaseDurationSeconds = &one
	l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		cfg.Log.Warn().Err(err).Msg("release lease")
		return
	}
	cfg.Log.Info().Str("identity", cfg.Identity).Msg("lease released")
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

// ReleasedAtAnnotation is written on the Lease by a holder that releases it
// (a drain): the epoch it held. It stays through the next acquisitions
// (client-go rewrites only the spec), so a new controller can tell whether
// the controller of a given epoch gave the Lease up, and was still serving
// when it did, rather than lost it.
const ReleasedAtAnnotation = "kaas.io/released-at-epoch"

// Election is what a won campaign read from the Lease: the epoch
// (leaseTransitions), and the epoch whose holder last released the Lease
// (ReleasedAt, when Released).
type Election struct {
	Epoch      int64
	Released   bool
	ReleasedAt int64
}

// HeldLease reads the Lease's epoch and release mark, checking in the same
// read that identity holds it: an epoch read after the Lease changed hands
// again would be the next holder's.
func HeldLease(ctx context.Context, client kubernetes.Interface, ns, name, identity string) (Election, error) {
	l, err := client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Election{}, fmt.Errorf("get lease %s/%s: %w", ns, name, err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != identity {
		return Election{}, fmt.Errorf("%w: lease %s/%s is held by someone else", ErrNotHolder, ns, name)
	}
	var el Election
	if l.Spec.LeaseTransitions != nil {
		el.Epoch = int64(*l.Spec.LeaseTransitions)
	}
	if v, ok := l.Annotations[ReleasedAtAnnotation]; ok {
		if at, err := strconv.ParseInt(v, 10, 64); err == nil {
			el.Released, el.ReleasedAt = true, at
		}
	}
	return el, nil
}

// WatchLeaseEpoch polls the Lease every period and reports its epoch, so a
// broker raises its floor for assignment files (a deposed controller's file
// is then ignored). It returns when ctx ends.
func WatchLeaseEpoch(ctx context.Context, client kubernetes.Interface, ns, name string, period time.Duration, report func(epoch int64), log zerolog.Logger) {
	WatchLeaseEpochOn(ctx, clock.Real(), client, ns, name, period, report, log)
}

// WatchLeaseEpochOn is WatchLeaseEpoch polling on clk.
func WatchLeaseEpochOn(ctx context.Context, clk clock.Clock, client kubernetes.Interface, ns, name string, period time.Duration, report func(epoch int64), log zerolog.Logger) {
	t := clk.NewTicker(period)
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
		case <-t.C():
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

// ErrLeaseHeld: the Lease is held and not expired, so a controller runs.
var ErrLeaseHeld = errors.New("the controller Lease is held")

// RaiseLeaseEpoch makes the Lease's leaseTransitions at least epoch, so the
// next controller's epoch (one above it: client-go counts its acquisition)
// is above every epoch recorded on the volume. A restored volume needs it
// when the Lease was made again: brokers ignore files of a lower epoch than
// the volume's, and claims fence coordinators of lower positions. A missing
// Lease is created unheld. A Lease held and not expired at now is left
// alone (ErrLeaseHeld): its controller would write at its old epoch. It
// returns the epoch the Lease had (0 when missing) and whether it was raised.
func RaiseLeaseEpoch(ctx context.Context, client kubernetes.Interface, ns, name string, epoch int64, now time.Time) (before int64, raised bool, err error) {
	if epoch > math.MaxInt32 {
		return 0, false, fmt.Errorf("epoch %d does not fit leaseTransitions", epoch)
	}
	leases := client.CoordinationV1().Leases(ns)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		e := int32(epoch)
		_, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       coordinationv1.LeaseSpec{LeaseTransitions: &e},
		}, metav1.CreateOptions{})
		if err != nil {
			return 0, false, fmt.Errorf("create lease %s/%s: %w", ns, name, err)
		}
		return 0, true, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("get lease %s/%s: %w", ns, name, err)
	}
	if l.Spec.LeaseTransitions != nil {
		before = int64(*l.Spec.LeaseTransitions)
	}
	if err := heldAt(l, now); err != nil {
		return before, false, err
	}
	if before >= epoch {
		return before, false, nil
	}
	e := int32(epoch)
	l.Spec.LeaseTransitions = &e
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		return before, false, fmt.Errorf("update lease %s/%s: %w", ns, name, err)
	}
	return before, true, nil
}

// LeaseFree fails with ErrLeaseHeld while the Lease is held and not expired
// at now; a missing Lease is free.
func LeaseFree(ctx context.Context, client kubernetes.Interface, ns, name string, now time.Time) error {
	l, err := client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get lease %s/%s: %w", ns, name, err)
	}
	return heldAt(l, now)
}

// heldAt is ErrLeaseHeld, naming the holder, when l is held and not expired
// at now. A holder without a renewal time counts as live.
func heldAt(l *coordinationv1.Lease, now time.Time) error {
	h := l.Spec.HolderIdentity
	if h == nil || *h == "" {
		return nil
	}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return fmt.Errorf("%w by %s", ErrLeaseHeld, *h)
	}
	if until := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second); now.Before(until) {
		return fmt.Errorf("%w by %s until %s", ErrLeaseHeld, *h, until.UTC().Format(time.RFC3339))
	}
	return nil
}
