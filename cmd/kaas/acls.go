package main

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/dynamic"

	"github.com/kaas-project/kaas/actors/acl"
	"github.com/kaas-project/kaas/actors/cluster"
)

// validateAuthorizer checks --authorizer and --super-users.
func (c *serveConfig) validateAuthorizer() error {
	switch c.Authorizer {
	case "", "acl":
	default:
		return fmt.Errorf("--authorizer %q: want acl, or empty for none", c.Authorizer)
	}
	for _, p := range c.superUsers() {
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return fmt.Errorf("--super-users: principal %q: want Type:name (User:admin)", p)
		}
	}
	return nil
}

// superUsers is --super-users as a list.
func (c *serveConfig) superUsers() []string {
	var out []string
	for _, p := range strings.Split(c.SuperUsers, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// startACLs sets up authorization when --authorizer=acl: the authorizer
// every connection asks, and the ACL store it is fed from: KafkaAcl
// objects (watched until ctx ends; returns once the first list is in) in
// cluster mode, <data-dir>/acls.json (or memory) in local mode.
func (b *broker) startACLs(ctx context.Context, cfg *serveConfig, dyn dynamic.Interface) (*acl.Authorizer, acl.Store, error) {
	if cfg.Authorizer == "" {
		return nil, nil, nil
	}
	auth := acl.New(acl.Config{SuperUsers: cfg.superUsers(), AllowIfNoACL: cfg.AllowEveryoneIfNoACL})
	if cfg.clusterMode() {
		store := &cluster.ACLs{Dyn: dyn, Namespace: cfg.podNamespace, Auth: auth, Log: b.logger("component", "acls")}
		if err := store.Watch(ctx); err != nil {
			return nil, nil, err
		}
		return auth, store, nil
	}
	store, err := acl.OpenLocal(cfg.DataDir, auth)
	if err != nil {
		return nil, nil, err
	}
	return auth, store, nil
}
