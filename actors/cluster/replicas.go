package cluster

import (
	"context"
	"strings"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kaas-project/kaas/actors/clock"
)

// StatefulSetOf is the StatefulSet a pod belongs to, from its name
// (<statefulset>-<ordinal>); "" when the name has no ordinal.
func StatefulSetOf(pod string) string {
	i := strings.LastIndexByte(pod, '-')
	if i <= 0 || i == len(pod)-1 || strings.Trim(pod[i+1:], "0123456789") != "" {
		return ""
	}
	return pod[:i]
}

// WatchReplicas reads StatefulSet name's spec.replicas every period and
// reports it whenever it changes (known false: the StatefulSet does not
// exist or cannot be read; logged once per kind of failure). It returns
// when ctx ends.
func WatchReplicas(ctx context.Context, kube kubernetes.Interface, clk clock.Clock, ns, name string, period time.Duration,
	report func(replicas int32, known bool), log zerolog.Logger) {
	last, lastKnown, first, lastErr := int32(0), false, true, ""
	for ctx.Err() == nil {
		var replicas int32
		known := false
		gctx, cancel := context.WithTimeout(ctx, period)
		sts, err := kube.AppsV1().StatefulSets(ns).Get(gctx, name, metav1.GetOptions{})
		cancel()
		switch {
		case err == nil:
			known, replicas = true, 1 // Kubernetes' default
			if sts.Spec.Replicas != nil {
				replicas = *sts.Spec.Replicas
			}
			lastErr = ""
		case ctx.Err() != nil:
			return
		default:
			msg := err.Error()
			if apierrors.IsNotFound(err) {
				msg = "not found"
			}
			if msg != lastErr {
				log.Info().Err(err).Str("statefulset", name).Msg("StatefulSet not read: brokers it removes are not unregistered automatically")
				lastErr = msg
			}
		}
		if first || known != lastKnown || replicas != last {
			report(replicas, known)
			first, last, lastKnown = false, replicas, known
		}
		sleep(ctx, clk, period)
	}
}
