// Package ownwrites remembers a controller's own writes until its cache
// shows them.
package ownwrites

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Record remembers, per object, the resourceVersions that a controller's
// own patches replaced and produced. A reconcile that reads a replaced one,
// or one older than the version its last write produced, from the cache is
// reading an object older than what it already wrote: the watch has not
// delivered the write yet. Acting on it repeats the work and a patch
// conditional on what was read is refused. In a burst the next reconcile
// of an object often starts before its last write is back: in a
// 500-NodeClaim burst with 1,000 lifecycle workers, two of every three
// launches were such repeats (Karpenter sleeps a second after each patch;
// joiner skips the stale read instead, since the watch event that brings
// the write in enqueues the object again), and the nomination writer's
// pod patches were refused about once per pod.
//
// Versions are compared by order where the API server's are integers, as
// Kubernetes' CompareResourceVersion allows for one resource (KEP-5504):
// a write made from a copy already several versions behind (a patch not
// conditional on the version, as the nomination writer's) leaves the cache
// stale through all of them. Otherwise only equality with a replaced
// version is used.
type Record struct {
	mu sync.Mutex
	// written holds, per object, what its writes replaced and produced
	// since the cache last showed a version at least as new.
	written map[types.NamespacedName]*writes
}

type writes struct {
	replaced []string
	produced string
}

// New returns an empty record.
func New() *Record {
	return &Record{written: map[types.NamespacedName]*writes{}}
}

// Wrote records that a patch replaced version before of key and produced
// version after ("" when unknown).
func (w *Record) Wrote(key types.NamespacedName, before, after string) {
	if before == "" && after == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.written[key]
	if r == nil {
		r = &writes{}
		w.written[key] = r
	}
	if before != "" {
		r.replaced = append(r.replaced, before)
	}
	if after != "" {
		r.produced = after
	}
}

// Stale reports whether version rv of key is one that this controller's
// writes already replaced, or older than the last one they produced. Any
// other version (the write itself, or anyone's later change) clears what
// is remembered for key: the cache has caught up.
func (w *Record) Stale(key types.NamespacedName, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.written[key]
	if r == nil {
		return false
	}
	for _, old := range r.replaced {
		if old == rv {
			return true
		}
	}
	if r.produced != "" {
		if cmp, err := resourceversion.CompareResourceVersion(rv, r.produced); err == nil && cmp < 0 {
			return true
		}
	}
	delete(w.written, key)
	return false
}

// Forget drops key (the object is gone).
func (w *Record) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, key)
}
