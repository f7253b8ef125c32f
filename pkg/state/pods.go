package state

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// indexUnbound indexes the pods bound to no node, all under "".
const indexUnbound = "joiner.dev/unbound"

// PodCache reads the pods of the manager's informer cache as the cache
// holds them, through client-go's lister and indexer, without the copy a
// client's List makes: even with UnsafeDisableDeepCopy a PodList holds a
// Pod struct (about 1.2 KiB) per pod. The provisioner's batch and
// disruption's poll read every pending pod, and the metrics every pod of
// the cluster; at 10,000 pods each such list was 12 MiB of garbage per
// pass. Callers must not change the pods (nobody changes a cached object;
// an update replaces it).
type PodCache struct {
	indexer toolscache.Indexer
	lister  corelisters.PodLister
}

// NewPodCache reads pods from c's pod informer, to which it adds an index
// of the unbound pods, so it must be called before c starts. c must cache
// pods of every namespace (as joiner's manager does).
func NewPodCache(ctx context.Context, c cache.Cache) (*PodCache, error) {
	shared, err := podInformer(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := shared.AddIndexers(toolscache.Indexers{indexUnbound: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName == "" {
			return []string{""}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing unbound pods: %w", err)
	}
	return &PodCache{indexer: shared.GetIndexer(), lister: corelisters.NewPodLister(shared.GetIndexer())}, nil
}

// podInformer is c's informer of pods as client-go's shared informer, whose
// indexer holds the cache's own objects.
func podInformer(ctx context.Context, c cache.Cache) (toolscache.SharedIndexInformer, error) {
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("getting the pod informer: %w", err)
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("the pod informer is a %T, not a client-go SharedIndexInformer (a cache of every namespace)", inf)
	}
	return shared, nil
}

// podIndexer is c's indexer of pods, keyed by namespace/name.
func podIndexer(ctx context.Context, c cache.Cache) (toolscache.Indexer, error) {
	shared, err := podInformer(ctx, c)
	if err != nil {
		return nil, err
	}
	return shared.GetIndexer(), nil
}

// Unbound returns the pods bound to no node, in no particular order.
func (c *PodCache) Unbound(context.Context) ([]*corev1.Pod, error) {
	objs, err := c.indexer.ByIndex(indexUnbound, "")
	if err != nil {
		return nil, fmt.Errorf("listing unbound pods: %w", err)
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// All returns every pod, in no particular order.
func (c *PodCache) All(context.Context) ([]*corev1.Pod, error) {
	pods, err := c.lister.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	return pods, nil
}
