package disruption

import (
	"hash/maphash"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// estimator guesses, without the solver, what removing one candidate
// would save: its pods go, largest first, into the free room of other
// nodes (first fit over the roomiest, a pod with hostname anti-affinity
// only where no pod it repels runs), and whatever is left needs the
// cheapest instance type that holds it. The guess ignores most topology
// and every label, so it only orders the searches: the solver decides.
type estimator struct {
	capa   *capacity
	shapes shapeIndex
	// spares are the schedulable nodes' free room, roomiest cpu first.
	spares []spareNode
	// repelled caches, per hostname anti-affinity selector (by a hash of
	// its fields, and by pointer for the pod it came from; selectors equal
	// to one seen before share its entry), the nodes running a pod it
	// selects.
	repelled      map[uint64][]*repelled
	repelledBySel map[*metav1.LabelSelector]*repelled
	seed          maphash.Seed
	// sels and repelBuf are savings' buffers.
	sels     []*metav1.LabelSelector
	repelBuf []*repelled
	nodes    []nodePods
	// items and used are savings' buffers.
	items []sized
	used  []room
}

// repelled is where a hostname anti-affinity selector keeps a pod off:
// the nodes running a pod it selects, and the spares (by index, roomiest
// first) that run none, which are all a pod of that selector may take.
// Every node of the shared clusters runs one pod of the same such
// workload, so scanning every spare for its pods found none free at a
// cost of thousands of checks per candidate.
type repelled struct {
	sel    *metav1.LabelSelector
	nodes  map[string]bool
	spares []int
}

// sized is a pod with its requests.
type sized struct {
	p   *corev1.Pod
	req vec
}

// room is what an estimate has put on spares[spare].
type room struct {
	spare int
	v     vec
}

type spareNode struct {
	name string
	free vec
}

type nodePods struct {
	name string
	pods []*corev1.Pod
}

func (e *engine) estimator() *estimator {
	if e.est != nil {
		return e.est
	}
	capa := e.capacity()
	est := &estimator{capa: capa, shapes: e.shapes(), repelled: map[uint64][]*repelled{}, repelledBySel: map[*metav1.LabelSelector]*repelled{}, seed: maphash.MakeSeed()}
	for _, n := range e.sim.base.Nodes {
		est.nodes = append(est.nodes, nodePods{n.Name, n.Pods})
		if free, ok := capa.spare[n.Name]; ok && free[2] > 0 {
			est.spares = append(est.spares, spareNode{n.Name, free})
		}
	}
	sort.SliceStable(est.spares, func(i, j int) bool { return est.spares[i].free[0] > est.spares[j].free[0] })
	e.est = est
	return est
}

// hostnameAnti appends to out the selectors of p's required hostname
// anti-affinity terms.
func hostnameAnti(out []*metav1.LabelSelector, p *corev1.Pod) []*metav1.LabelSelector {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return out
	}
	for _, t := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if t.TopologyKey == corev1.LabelHostname && t.LabelSelector != nil {
			out = append(out, t.LabelSelector)
		}
	}
	return out
}

func (est *estimator) repels(ls *metav1.LabelSelector) *repelled {
	if r, ok := est.repelledBySel[ls]; ok {
		return r
	}
	// Pods of one workload carry equal selectors, each its own copy:
	// looked up by a hash of its fields, compared field by field.
	h := maphash.Comparable(est.seed, len(ls.MatchExpressions)) + scheduling.LabelsHash(est.seed, ls.MatchLabels)
	for _, r := range est.repelled[h] {
		if scheduling.SameLabelSelector(r.sel, ls) {
			est.repelledBySel[ls] = r
			return r
		}
	}
	sel := parse(ls)
	r := &repelled{sel: ls, nodes: map[string]bool{}}
	for _, n := range est.nodes {
		for _, q := range n.pods {
			if sel.Matches(labels.Set(q.Labels)) {
				r.nodes[n.name] = true
				break
			}
		}
	}
	for i, s := range est.spares {
		if !r.nodes[s.name] {
			r.spares = append(r.spares, i)
		}
	}
	est.repelled[h], est.repelledBySel[ls] = append(est.repelled[h], r), r
	return r
}

// savings is the estimated $/h removing c alone would save (0 when
// nothing cheaper seems to hold its pods).
func (est *estimator) savings(c *candidate) float64 {
	// Every candidate is estimated each pass: its pods and the room they
	// take live in buffers the estimator reuses, not in fresh maps.
	items := est.items[:0]
	for _, p := range c.pods {
		items = append(items, sized{p, est.capa.request(p)})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].req[0] > items[j].req[0] })
	used := est.used[:0]
	left := vec{}
	for _, it := range items {
		req := it.req
		repels := est.repelBuf[:0]
		est.sels = hostnameAnti(est.sels[:0], it.p)
		for _, ls := range est.sels {
			repels = append(repels, est.repels(ls))
		}
		est.repelBuf = repels
		// The spares the pod may take, roomiest first: all of them, or
		// those its first selector leaves (the others are checked below).
		n := len(est.spares)
		if len(repels) > 0 {
			n = len(repels[0].spares)
		}
		placed := false
		for j := 0; j < n; j++ {
			i := j
			if len(repels) > 0 {
				i = repels[0].spares[j]
			}
			s := est.spares[i]
			if s.free[0] < req[0] {
				break
			}
			if s.name == c.node.Name {
				continue
			}
			u := -1
			for k := range used {
				if used[k].spare == i {
					u = k
					break
				}
			}
			taken := vec{}
			if u >= 0 {
				taken = used[u].v
			}
			if !req.add(taken).fits(s.free) {
				continue
			}
			ok := true
			for _, r := range repels {
				ok = ok && !r.nodes[s.name]
			}
			if ok {
				if u >= 0 {
					used[u].v = taken.add(req)
				} else {
					used = append(used, room{i, req})
				}
				placed = true
				break
			}
		}
		if !placed {
			left = left.add(req)
		}
	}
	est.items, est.used = items, used
	if left == (vec{}) {
		return c.node.Price
	}
	p, ok := est.shapes.cheapestFit(c, left)
	if !ok || p >= c.node.Price {
		return 0
	}
	return c.node.Price - p
}
