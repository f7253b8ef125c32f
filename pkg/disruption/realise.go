package disruption

import (
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joiner-dev/joiner/pkg/pods"
)

// follow checks that kube-scheduler would realise a consolidation
// simulation: a command pins no pod, so the pods it evicts land where
// kube-scheduler puts them, not where the solver packed them. With its
// default profile kube-scheduler sends each pod to the feasible node with
// the most room left (NodeResourcesFit's LeastAllocated score), so the
// first evicted pods spread over the emptiest nodes, the new ones first,
// and can take the room the solver kept on a tightly packed replacement
// for a large pod. That pod then goes pending, the provisioner launches a
// node for it, and the next pass re-packs again: upstream's "Wide
// Deployments" saw 54 commands move 13,105 pods this way.
//
// follow replays the candidates' pods, smallest first, each onto the node
// with the most room left, as LeastAllocated scores it, among the nodes the
// simulation sent pods of the same controller to (nodes the solver found
// feasible for them; a controller whose pods must not share a node, by
// hostname anti-affinity or spread, takes no more of a node than the
// simulation gave it). A pod that finds no room fails its candidate, as a
// pod the solver could not place does, so multi-node consolidation peels
// it and single-node consolidation passes over it.
func (s *simulator) follow(r *result) {
	if len(r.moves) == 0 {
		return
	}
	capa := s.capacity()
	from := make(map[*corev1.Pod]bool, len(r.moves))
	for _, m := range r.moves {
		from[m.Pod] = true
	}
	// The destinations: existing nodes by name, replacements by index as
	// the cheapest launch option (what launches) less the DaemonSets.
	room := map[string]vec{}
	alloc := map[string]vec{}
	for _, m := range r.moves {
		if _, seen := room[m.To]; m.Replacement >= 0 || seen {
			continue
		}
		room[m.To], alloc[m.To] = capa.spare[m.To], capa.allocatable[m.To]
	}
	for i, nc := range r.replacements {
		it, _, ok := Launch(nc)
		if !ok {
			continue
		}
		// What the candidates' pods may share: the type's allocatable less
		// the DaemonSets and the other pods the simulation put there
		// (Requests holds them all, but not the pods resource).
		a := vecOf(it.Allocatable())
		left := a.sub(vecOf(nc.Requests))
		left[2] = a[2] - int64(len(nc.Pods))
		for _, p := range nc.Pods {
			if _, moved := from[p]; moved {
				left = left.add(capa.request(p))
			}
		}
		key := replacementKey(i)
		room[key], alloc[key] = left, a
	}
	// Where the simulation sent each controller's pods, and how many.
	type slot struct {
		node  string
		count int
	}
	dest := map[types.UID][]*slot{}
	var order []*corev1.Pod
	byPod := map[*corev1.Pod]string{}
	for _, m := range r.moves {
		if pods.IsVirtual(m.Pod) {
			continue
		}
		node := m.To
		if m.Replacement >= 0 {
			node = replacementKey(m.Replacement)
		}
		byPod[m.Pod] = m.From
		owner := controllerOf(m.Pod)
		var sl *slot
		for _, x := range dest[owner] {
			if x.node == node {
				sl = x
			}
		}
		if sl == nil {
			sl = &slot{node: node}
			dest[owner] = append(dest[owner], sl)
		}
		sl.count++
	}
	// The order kube-scheduler sees them in is the ReplicaSet
	// controllers' (each recreates its evicted pods in a batch), which no
	// one controls: replay the one that hurts most, smallest pods first,
	// so the large ones come last to what room the small ones left.
	for _, c := range r.cands {
		for _, p := range c.pods {
			if _, ok := byPod[p]; ok {
				order = append(order, p)
			}
		}
	}
	size := func(p *corev1.Pod) float64 {
		v := capa.request(p)
		return float64(v[0])/float64(max(capa.largest[0], 1)) + float64(v[1])/float64(max(capa.largest[1], 1))
	}
	sort.SliceStable(order, func(i, j int) bool { return size(order[i]) < size(order[j]) })
	taken := map[types.UID]map[string]int{}
	for _, p := range order {
		owner := controllerOf(p)
		exclusive := ownNode(p)
		req := capa.request(p)
		best, bestScore := "", -1.0
		for _, sl := range dest[owner] {
			if exclusive && taken[owner][sl.node] >= sl.count {
				continue
			}
			left := room[sl.node].sub(req)
			if !(vec{}).fits(left) {
				continue
			}
			if score := leastAllocated(left, alloc[sl.node]); score > bestScore {
				best, bestScore = sl.node, score
			}
		}
		if best == "" {
			from := byPod[p]
			r.failed[from] = true
			if r.reason.IsZero() {
				r.reason = Why{Kind: WhySchedulerWouldSpread, Pod: podKey(p)}
			}
			continue
		}
		room[best] = room[best].sub(req)
		if taken[owner] == nil {
			taken[owner] = map[string]int{}
		}
		taken[owner][best]++
	}
}

// replacementKey names the i-th replacement among the destinations (no
// Node name has this shape).
func replacementKey(i int) string { return "\x00replacement/" + strconv.Itoa(i) }

// leastAllocated is kube-scheduler's NodeResourcesFit LeastAllocated score
// of a node left with room out of alloc: the mean share of cpu and memory
// still free (weights 1 each, its defaults).
func leastAllocated(left, alloc vec) float64 {
	score := 0.0
	for i := range 2 {
		if alloc[i] > 0 {
			score += float64(left[i]) / float64(alloc[i])
		}
	}
	return score / 2
}

// controllerOf is the UID that groups a pod with its identical siblings:
// its controller's, or its own when it has none.
func controllerOf(p *corev1.Pod) types.UID {
	if ref := pods.ControllerOf(p); ref != nil {
		return ref.UID
	}
	if p.UID != "" {
		return p.UID
	}
	return types.UID(p.Namespace + "/" + p.Name)
}

// ownNode reports whether the pod's siblings may not pile onto one node:
// a required hostname anti-affinity or a DoNotSchedule hostname spread.
func ownNode(p *corev1.Pod) bool {
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.TopologyKey == corev1.LabelHostname && c.WhenUnsatisfiable == corev1.DoNotSchedule {
			return true
		}
	}
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.TopologyKey == corev1.LabelHostname {
				return true
			}
		}
	}
	return false
}
