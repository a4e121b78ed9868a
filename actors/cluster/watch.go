package cluster

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// watchObjects runs an informer on the custom resource gvr in namespace and
// returns once its cache has synced (or ctx ended, an error naming kind).
// reload then gets every object, in name order (so that "the first by name
// wins" means one thing everywhere), at once and again after each change
// (changes that arrive while it runs are coalesced into one call), until
// ctx ends. bad is reload's memory of the invalid objects it has logged.
func watchObjects(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace, kind string,
	reload func(objs []*unstructured.Unstructured, bad map[string]string)) error {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 30*time.Second, namespace, nil)
	inf := factory.ForResource(gvr).Informer()
	poke := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case poke <- struct{}{}:
		default:
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: notify, UpdateFunc: func(_, n any) { notify(n) }, DeleteFunc: notify})
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("%s informer: %w", kind, ctx.Err())
	}
	reload(byName(inf.GetStore().List()), map[string]string{})
	go func() {
		bad := map[string]string{}
		for {
			select {
			case <-ctx.Done():
				return
			case <-poke:
			}
			reload(byName(inf.GetStore().List()), bad)
		}
	}()
	return nil
}

// byName returns the informer's objects sorted by name.
func byName(objs []any) []*unstructured.Unstructured {
	us := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			us = append(us, u)
		}
	}
	sort.Slice(us, func(i, j int) bool { return us[i].GetName() < us[j].GetName() })
	return us
}
