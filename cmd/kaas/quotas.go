package main

import (
	"context"

	"k8s.io/client-go/dynamic"

	"github.com/kaas-project/kaas/actors/cluster"
	"github.com/kaas-project/kaas/actors/quota"
)

// startQuotas sets up client quotas: the state Produce and Fetch meter
// into, and the store it is fed from: KafkaQuota objects (watched until ctx
// ends; returns once the first list is in) in cluster mode,
// <data-dir>/quotas.json (or memory) in local mode.
func (b *broker) startQuotas(ctx context.Context, cfg *serveConfig, dyn dynamic.Interface) (*quota.Quotas, quota.Store, error) {
	q := quota.New(quota.Window{Samples: cfg.QuotaWindowNum, Size: cfg.QuotaWindowSize})
	if cfg.clusterMode() {
		store := &cluster.Quotas{Dyn: dyn, Namespace: cfg.podNamespace, Q: q, Log: b.logger("component", "quotas")}
		if err := store.Watch(ctx); err != nil {
			return nil, nil, err
		}
		return q, store, nil
	}
	store, err := quota.OpenLocal(cfg.DataDir, q)
	if err != nil {
		return nil, nil, err
	}
	return q, store, nil
}
