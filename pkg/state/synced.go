package state

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/metrics"
)

// Synced reports whether the model has seen every Node and NodeClaim the
// API server holds: it lists both through Options.Reader and checks each
// is tracked (a launched NodeClaim under its provider ID), and forgets the
// NodeClaims its creator recorded (NodeClaimCreated) more than
// Options.CreatedTTL before the list began that the list no longer holds
// and no informer event confirmed: deleted before the model saw them. A
// consumer that
// acts on an unsynced state could launch capacity that already exists or
// remove capacity that is still needed, so it must wait instead. A failed
// list counts as not synced.
//
// The lists are full and uncached, so a positive result is reused for
// Options.SyncedRecheckInterval: once the model has caught up with a live
// list, the informers keep it current, and the periodic re-list catches a
// model that fell behind. A negative result is never reused, so a caller
// waiting for sync sees it as soon as it happens. Concurrent callers share
// one check.
func (c *Cluster) Synced(ctx context.Context) bool {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if !c.syncedAt.IsZero() && c.opts.Clock.Since(c.syncedAt) < c.opts.SyncedRecheckInterval {
		return true
	}
	synced := c.synced(ctx)
	if synced {
		c.syncedAt = c.opts.Clock.Now()
		c.unsyncedSince = time.Time{}
		metrics.ClusterStateSynced.Set(1)
		metrics.ClusterStateUnsyncedTime.Set(0)
	} else {
		c.syncedAt = time.Time{}
		if c.unsyncedSince.IsZero() {
			c.unsyncedSince = c.opts.Clock.Now()
		}
		metrics.ClusterStateSynced.Set(0)
		metrics.ClusterStateUnsyncedTime.Set(c.opts.Clock.Since(c.unsyncedSince).Seconds())
	}
	return synced
}

func (c *Cluster) synced(ctx context.Context) bool {
	listed := c.opts.Clock.Now()
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := c.opts.Reader.List(ctx, nodes); err != nil {
		log.FromContext(ctx).Error(err, "listing nodes to check cluster state sync")
		return false
	}
	nodeClaims := &v1.NodeClaimList{}
	if err := c.opts.Reader.List(ctx, nodeClaims); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims to check cluster state sync")
		return false
	}
	c.forgetUnlisted(nodeClaims, listed)
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i := range nodes.Items {
		if _, ok := c.nodeKeys[nodes.Items[i].Name]; !ok {
			return false
		}
	}
	for i := range nodeClaims.Items {
		nc := &nodeClaims.Items[i]
		key, ok := c.nodeClaimKeys[nc.Name]
		if !ok {
			return false
		}
		if nc.Status.ProviderID != "" && key != nc.Status.ProviderID {
			return false
		}
	}
	return true
}

// forgetUnlisted drops the NodeClaims recorded by NodeClaimCreated more
// than Options.CreatedTTL before listed that no informer event confirmed
// and that list, begun at listed, does not hold: the API server had them
// when they were recorded, so they were deleted since, and their pods
// must not wait for them. Younger records are left alone: the list may
// have been served before they were created.
func (c *Cluster) forgetUnlisted(list *v1.NodeClaimList, listed time.Time) {
	stale := func(at time.Time) bool { return listed.Sub(at) > c.opts.CreatedTTL }
	c.mu.RLock()
	due := false
	for _, at := range c.created {
		due = due || stale(at)
	}
	c.mu.RUnlock()
	if !due {
		return
	}
	held := make(map[string]bool, len(list.Items))
	for i := range list.Items {
		held[list.Items[i].Name] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Read again under the write lock: an informer event since may have
	// confirmed a record, or a new one replaced it.
	for name, at := range c.created {
		if stale(at) && !held[name] {
			c.deleteNodeClaimLocked(name)
		}
	}
}
