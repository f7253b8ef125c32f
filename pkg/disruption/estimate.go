package disruption

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
	// repelled caches, per hostname anti-affinity selector (by its
	// protobuf encoding, and by pointer for the pod it came from), the
	// nodes running a pod it selects.
	repelled      map[string]map[string]bool
	repelledBySel map[*metav1.LabelSelector]map[string]bool
	nodes         []nodePods
	// items and used are savings' buffers.
	items []sized
	used  []room
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
	est := &estimator{capa: capa, shapes: e.shapes(), repelled: map[string]map[string]bool{}, repelledBySel: map[*metav1.LabelSelector]map[string]bool{}}
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

// hostnameAnti is the selector of p's required hostname anti-affinity
// terms, "" when it has none.
func hostnameAnti(p *corev1.Pod) []*metav1.LabelSelector {
	if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
		return nil
	}
	var out []*metav1.LabelSelector
	for _, t := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if t.TopologyKey == corev1.LabelHostname && t.LabelSelector != nil {
			out = append(out, t.LabelSelector)
		}
	}
	return out
}

func (est *estimator) repels(ls *metav1.LabelSelector) map[string]bool {
	if m, ok := est.repelledBySel[ls]; ok {
		return m
	}
	enc, err := ls.Marshal()
	if err != nil {
		enc = []byte(metav1.FormatLabelSelector(ls))
	}
	key := string(enc)
	if m, ok := est.repelled[key]; ok {
		est.repelledBySel[ls] = m
		return m
	}
	sel := parse(ls)
	m := map[string]bool{}
	for _, n := range est.nodes {
		for _, q := range n.pods {
			if sel.Matches(labels.Set(q.Labels)) {
				m[n.name] = true
				break
			}
		}
	}
	est.repelled[key], est.repelledBySel[ls] = m, m
	return m
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
		var repelled []map[string]bool
		for _, ls := range hostnameAnti(it.p) {
			repelled = append(repelled, est.repels(ls))
		}
		placed := false
		for i, s := range est.spares {
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
			for _, m := range repelled {
				ok = ok && !m[s.name]
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
