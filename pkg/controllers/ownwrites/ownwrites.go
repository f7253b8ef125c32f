// Package ownwrites remembers a controller's own writes until its cache
// shows them.
package ownwrites

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
//
// A writer may also keep the object its write returned (Keep): the
// reconcile that finds its cache stale then acts on that copy at once
// (Latest) instead of waiting for the watch. On a saturated API server the
// watch ran 12 s behind in a 500-NodeClaim burst, and each lifecycle step
// (launch, registration) waited that long for the previous step's write.
// The copy is exactly what the API server held after the write, so it is
// never older than the cache's copy. A change made since by someone else
// is unknown to both; the writer's next optimistic-locked write of the
// object itself finds it, after which the writer drops the copy (Discard)
// and waits for the watch again. (Writes to other objects made from
// either copy, such as a NodeClaim's Node, are not checked that way.)
type Record struct {
	mu sync.Mutex
	// written holds, per object, what its writes replaced and produced
	// since the cache last showed a version at least as new.
	written map[types.NamespacedName]*writes
}

type writes struct {
	replaced []string
	produced string
	// kept is the object as the last write that kept it left it (Keep),
	// while it is still the version produced.
	kept client.Object
	// seen: the cache has shown the object (before the first write
	// remembered here, or since), so its absence from the cache is a
	// deletion, not a create the watch has yet to deliver.
	seen bool
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
		// A first write that replaced a version was made from a copy the
		// cache held; one that replaced none created the object.
		r = &writes{seen: before != ""}
		w.written[key] = r
	}
	if before != "" {
		r.replaced = append(r.replaced, before)
	}
	if after != "" && !older(after, r.produced) {
		r.produced = after
	}
}

// older reports whether version a is known to be older than b.
func older(a, b string) bool {
	cmp, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && cmp < 0
}

// Keep records a write that replaced version before of key ("" for a
// create) and keeps a copy of obj, the object as the write returned it.
func (w *Record) Keep(key types.NamespacedName, before string, obj client.Object) {
	after := obj.GetResourceVersion()
	w.Wrote(key, before, after)
	if after == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.written[key]; r.produced == after {
		// Not when a later write was recorded first (the hand-over of a
		// create racing the watch-driven reconcile's own write).
		r.kept = obj.DeepCopyObject().(client.Object)
	}
}

// Stale reports whether version rv of key is one that this controller's
// writes already replaced, or older than the last one they produced. Any
// other version (the write itself, or anyone's later change) clears what
// is remembered for key: the cache has caught up.
func (w *Record) Stale(key types.NamespacedName, rv string) bool {
	_, stale := w.Latest(key, rv)
	return stale
}

// Latest is Stale, and, when rv is stale, also returns a copy of the object
// kept by the last write (nil when that write kept none). rv "" means the
// cache does not hold key at all: that is stale only while a kept object
// was never seen in the cache (the watch has not delivered its create yet).
func (w *Record) Latest(key types.NamespacedName, rv string) (client.Object, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.written[key]
	if r == nil {
		return nil, false
	}
	if rv != "" {
		r.seen = true
	}
	stale := rv == "" && r.kept != nil && !r.seen
	for _, old := range r.replaced {
		if old == rv {
			stale = true
		}
	}
	if r.produced != "" && !stale && older(rv, r.produced) {
		stale = true
	}
	if !stale {
		delete(w.written, key)
		return nil, false
	}
	if r.kept == nil || r.kept.GetResourceVersion() != r.produced {
		return nil, true
	}
	return r.kept.DeepCopyObject().(client.Object), true
}

// Discard drops the object kept for key, and keeps its versions: a write
// from the kept copy was refused, so the copy is no longer the object's
// latest version and the writer waits for its cache again.
func (w *Record) Discard(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.written[key]; r != nil {
		r.kept = nil
	}
}

// Forget drops key (the object is gone).
func (w *Record) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, key)
}
