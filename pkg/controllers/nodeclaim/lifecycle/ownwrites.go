package lifecycle

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// ownWrites remembers, per NodeClaim, the resourceVersions that this
// controller's own patches replaced. A reconcile that reads one of them from
// the cache is reading a NodeClaim older than what it already wrote: the
// watch has not delivered the write yet. Acting on it repeats the work
// (Create is asked again for the launched instance, registration and its
// events again) and its optimistic-lock patch is refused with a conflict.
// With Karpenter's worker counts the next reconcile of a NodeClaim often
// starts before its last write is back (a Node event arrives first): in a
// 500-NodeClaim burst with 1,000 workers, two of every three launches were
// such repeats. Karpenter sleeps a second after each patch; joiner skips the
// stale read instead, since the watch event that brings the write in
// enqueues the NodeClaim again.
//
// resourceVersions are opaque: only equality is used, never order.
type ownWrites struct {
	mu sync.Mutex
	// replaced holds, per NodeClaim, the resourceVersions its writes
	// replaced since the cache last showed a newer one.
	replaced map[types.NamespacedName][]string
}

func newOwnWrites() *ownWrites {
	return &ownWrites{replaced: map[types.NamespacedName][]string{}}
}

// wrote records that a patch replaced version before of key.
func (w *ownWrites) wrote(key types.NamespacedName, before string) {
	if before == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.replaced[key] = append(w.replaced[key], before)
}

// stale reports whether version rv of key is one that this controller's
// writes already replaced. A version it did not replace (the write itself,
// or anyone's later change) clears what is remembered for key: the cache
// has caught up.
func (w *ownWrites) stale(key types.NamespacedName, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, old := range w.replaced[key] {
		if old == rv {
			return true
		}
	}
	delete(w.replaced, key)
	return false
}

// forget drops key (the NodeClaim is gone).
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.replaced, key)
}
