package provisioningrequest

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/joiner-dev/joiner/pkg/apis/autoscaling/v1"
)

// Bookings is the capacity held for provisioned requests, as the
// provisioner reads it (provisioning.Bookings): placeholder pods per node
// or NodeClaim, and which requests' pods are left out of batches. The
// controller replaces a request's entry on each reconcile.
type Bookings struct {
	mu sync.RWMutex
	// held are the requests whose booking is in force.
	held map[types.NamespacedName]booking
	// live are the requests being served (accepted, neither failed nor
	// expired): their pods are theirs, even before the capacity exists.
	live map[types.NamespacedName]bool
	// byNode indexes every held request's placeholders by node or
	// NodeClaim name.
	byNode map[string][]*corev1.Pod
	// listed is set once the requests that existed at start are known;
	// unrestored are those of them not reconciled yet, and reconciled the
	// requests reconciled since start (see Synced).
	listed     bool
	unrestored map[types.NamespacedName]bool
	reconciled map[types.NamespacedName]bool
}

type booking struct {
	class        string
	placeholders map[string][]*corev1.Pod
}

// NewBookings returns an empty set of bookings.
func NewBookings() *Bookings {
	return &Bookings{held: map[types.NamespacedName]booking{}, live: map[types.NamespacedName]bool{}, byNode: map[string][]*corev1.Pod{},
		unrestored: map[types.NamespacedName]bool{}, reconciled: map[types.NamespacedName]bool{}}
}

// Consumes implements provisioning.Bookings: a pod annotated with a
// request that is being served (or whose booking is held) is the
// request's, not the batch's: planning it one by one would break the
// all-or-nothing launch. A pod naming an unknown, failed or expired
// request is an ordinary pod.
func (b *Bookings) Consumes(pod *corev1.Pod) bool {
	name := pod.Annotations[autoscalingv1.AnnotationConsumeProvisioningRequest]
	if name == "" {
		return false
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	key := types.NamespacedName{Namespace: pod.Namespace, Name: name}
	_, ok := b.held[key]
	return ok || b.live[key]
}

// Synced reports whether every ProvisioningRequest that existed when
// joiner started has been reconciled once, so the bookings held before a
// restart are held again: a provisioning pass before that would give a
// booked node's room to other pods, or plan a request's pods one by one,
// and consolidation could take a booked node away.
func (b *Bookings) Synced() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.listed && len(b.unrestored) == 0
}

// restoring records the requests that exist at start (those already
// reconciled since start are done).
func (b *Bookings) restoring(requests []types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range requests {
		if !b.reconciled[r] {
			b.unrestored[r] = true
		}
	}
	b.listed = true
	b.reconciled = nil
}

// restored records that request was reconciled (or is gone).
func (b *Bookings) restored(request types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.unrestored, request)
	if !b.listed {
		b.reconciled[request] = true
	}
}

// serve marks request as served (live) or not.
func (b *Bookings) serve(request types.NamespacedName, live bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if live {
		b.live[request] = true
	} else {
		delete(b.live, request)
	}
}

// Booked implements provisioning.Bookings.
func (b *Bookings) Booked(name string) []*corev1.Pod {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.byNode[name]
}

// hold sets request's placeholders (by node or NodeClaim name), replacing
// what it held before.
func (b *Bookings) hold(request types.NamespacedName, class string, placeholders map[string][]*corev1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held[request] = booking{class: class, placeholders: placeholders}
	b.reindex()
}

// release ends request's booking.
func (b *Bookings) release(request types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.held[request]; !ok {
		return
	}
	delete(b.held, request)
	b.reindex()
}

// count is how many bookings of class are held.
func (b *Bookings) count(class string) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	n := 0
	for _, bk := range b.held {
		if bk.class == class {
			n++
		}
	}
	return n
}

// reindex rebuilds byNode from held (few requests: a full rebuild is
// cheaper to get right than incremental upkeep). Callers hold mu.
func (b *Bookings) reindex() {
	b.byNode = map[string][]*corev1.Pod{}
	for _, bk := range b.held {
		for node, pods := range bk.placeholders {
			b.byNode[node] = append(b.byNode[node], pods...)
		}
	}
}
