package capacitybuffer

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Store holds the buffers in force: the capacitybuffer controller sets each
// buffer's count and virtual pods, the live model reads the pods into
// every snapshot, and each provisioning pass records where its plan put
// them (Record), which the controller view, the status page and the
// controller's own watches read back (Rooms). It is safe for concurrent
// use; the pods it returns are shared and must only be read.
type Store struct {
	mu      sync.RWMutex
	buffers map[types.NamespacedName]*entry
}

// entry is one buffer in force.
type entry struct {
	count Count
	pods  []*corev1.Pod
	// outcome is where the last pass that planned exactly these chunks
	// put them; nil until one did.
	outcome *Outcome
}

// Set puts buffer's count and virtual pods in force (no pods: the buffer
// plans nothing). Where the last pass put the buffer's chunks is kept
// while their number is unchanged.
func (s *Store) Set(buffer types.NamespacedName, count Count, pods []*corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buffers == nil {
		s.buffers = map[types.NamespacedName]*entry{}
	}
	if len(pods) == 0 {
		delete(s.buffers, buffer)
		return
	}
	e := &entry{count: count, pods: pods}
	if old := s.buffers[buffer]; old != nil && len(old.pods) == len(pods) {
		e.outcome = old.outcome
	}
	s.buffers[buffer] = e
}

// Delete forgets buffer.
func (s *Store) Delete(buffer types.NamespacedName) { s.Set(buffer, Count{}, nil) }

// keys are the buffers in force in name order.
func (s *Store) keys() []types.NamespacedName {
	return slices.SortedFunc(maps.Keys(s.buffers), func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// Pods are every buffer's virtual pods, buffers in name order.
func (s *Store) Pods() []*corev1.Pod {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*corev1.Pod
	for _, k := range s.keys() {
		out = append(out, s.buffers[k].pods...)
	}
	return out
}

// Record keeps where a provisioning pass put each buffer's chunks. An
// outcome that does not count the chunks in force (a pass that read the
// buffer before its count changed) is dropped: the next pass reports it.
func (s *Store) Record(outcomes map[types.NamespacedName]*Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, o := range outcomes {
		if e := s.buffers[k]; e != nil && o.Existing+o.New+o.Failed == len(e.pods) {
			e.outcome = o
		}
	}
}

// Rooms are where every buffer in force holds its room, in name order.
func (s *Store) Rooms() []Room {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Room, 0, len(s.buffers))
	for _, k := range s.keys() {
		e := s.buffers[k]
		out = append(out, Room{Buffer: k.String(), Chunks: e.count.Chunks, Quota: e.count.Quota, Limits: e.count.Limits, Plan: e.outcome})
	}
	return out
}

// HoldsRoomOn names the buffers whose last planned room is on one of
// nodes: Node or NodeClaim names (a pod bound to a Node may take room
// planned on its NodeClaim before the Node registered). Room on a
// NodeClaim the last pass launched counts too: on a fast cloud its Node
// registers and takes binds before the next pass, which is exactly when
// that room is lost.
func (s *Store) HoldsRoomOn(nodes ...string) []types.NamespacedName {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []types.NamespacedName
	for _, k := range s.keys() {
		if o := s.buffers[k].outcome; o != nil && slices.ContainsFunc(o.Places, func(p Place) bool {
			return (p.Node != "" && slices.Contains(nodes, p.Node)) || (p.NodeClaim != "" && slices.Contains(nodes, p.NodeClaim))
		}) {
			out = append(out, k)
		}
	}
	return out
}

// Planned reports whether any buffer has room recorded by a pass.
func (s *Store) Planned() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.buffers {
		if e.outcome != nil {
			return true
		}
	}
	return false
}
