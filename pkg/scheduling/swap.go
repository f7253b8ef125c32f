package scheduling

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// swap is a local search after rebalance, for what moves alone cannot
// mend: a node sized by one resource while another idles, next to nodes
// with room only in the resource it lacks. A node of memory-heavy pods
// with CPU idle sits beside nodes whose CPU is full and memory is not; no
// pod moves into either, but an exchange of a memory-heavy pod for a
// CPU-heavy one lowers the first node's memory, fills its idle CPU, and
// keeps the other node within its type. For each planned node, dearest
// first, it exchanges its pods (largest in the node's binding resource
// first) with pods of other planned nodes that are lighter in that
// resource, until the node drops to a cheaper type; when it cannot drop,
// the exchanges are undone. An exchange never makes the partner node
// dearer and both pods are checked as placements are; pods keep their
// zone and capacity type when their topology counts them, and pods tied by
// hostname affinity stay put, as in improve. The work is bounded by a
// number of fit checks proportional to the pods.
func (sv *solver) swap() {
	if len(sv.newNodes) < 2 {
		return
	}
	budget := swapChecksPerPod * (len(sv.snap.Pods) + 1)
	nodes := sv.dearestFirst()
	for _, d := range nodes {
		for budget > 0 && len(d.pods) > 0 {
			before := d.pool.price(d.natural, d.requests)
			budget -= sv.swapStep(d, nodes, budget, false)
			if d.pool.price(d.natural, d.requests) < before-1e-9 {
				continue
			}
			budget -= sv.swapStep(d, nodes, budget, true)
			if d.pool.price(d.natural, d.requests) >= before-1e-9 {
				break
			}
		}
		if budget <= 0 {
			return
		}
	}
}

// swapChecksPerPod bounds swap's work: the candidate exchanges it weighs
// (cheap sums) and, a tenth of that, the placements it checks.
// swapScan is how many partner nodes it looks at per pod.
const (
	swapChecksPerPod = 6
	swapScan         = 32
	// swapImbalance is how much fuller (in share of its allocatable) a
	// donor's binding resource must be than its emptiest one.
	swapImbalance = 0.15
)

// nodeMark is a planned node's state before an exchange, to undo it.
type nodeMark struct {
	prev    trial
	classes int
	pods    []*corev1.Pod // swapStep's donor only: its pods in order (copied back)
	podCls  []*podClass
}

func markOf(n *nodeState) nodeMark {
	return nodeMark{prev: trial{reqs: n.reqs, zones: n.zones, cts: n.cts, types: n.types, natural: n.natural}, classes: len(n.classes)}
}

// restore puts back the fields an exchange changed (requests and topology
// counts are kept right by removePod and commitNew).
func (m nodeMark) restore(n *nodeState) {
	n.reqs, n.zones, n.cts, n.types = m.prev.reqs, m.prev.zones, m.prev.cts, m.prev.types
	if n.natural != m.prev.natural {
		n.pool.account(n.pool.types[n.natural].capacity, n.pool.types[m.prev.natural].capacity)
		n.natural = m.prev.natural
	}
	n.classes = n.classes[:m.classes]
	if m.pods != nil {
		n.pods = append(n.pods[:0], m.pods...)
		n.podClasses = append(n.podClasses[:0], m.podCls...)
	}
}

// putBack moves a node's last pod (just put back by commitNew) to index j,
// where it was, so an undone exchange leaves the pods in their order.
func putBack(n *nodeState, j int) {
	last := len(n.pods) - 1
	p, c := n.pods[last], n.podClasses[last]
	copy(n.pods[j+1:], n.pods[j:last])
	copy(n.podClasses[j+1:], n.podClasses[j:last])
	n.pods[j], n.podClasses[j] = p, c
}

// exchange is one swap made by swapStep: out left the donor for n, in
// came from n.
type exchange struct {
	n       *nodeState
	mark    nodeMark
	at      int // where in n's pods the pod that left was
	out, in *corev1.Pod
	oc, ic  *podClass
}

// swapStep tries to bring donor d down to a cheaper type by exchanging its
// pods for lighter ones; it keeps the exchanges when d gets cheaper and
// undoes them otherwise. It returns the checks it used.
func (sv *solver) swapStep(d *nodeState, nodes []*nodeState, budget int, mayGrow bool) int {
	p := d.pool
	price := p.price(d.natural, d.requests)
	bind, share, least := d.binding()
	// A node whose resources are all about as full gains nothing from
	// trading one for another.
	if bind < 0 || share-least < swapImbalance {
		return 0
	}
	start := markOf(d)
	sv.swapPods = append(sv.swapPods[:0], d.pods...)
	sv.swapCls = append(sv.swapCls[:0], d.podClasses...)
	start.pods, start.podCls = sv.swapPods, sv.swapCls
	order := sv.swapOrder[:0]
	for i := range start.pods {
		order = append(order, i)
	}
	sv.swapOrder = order
	sort.SliceStable(order, func(a, b int) bool {
		return start.podCls[order[a]].base.req[bind] > start.podCls[order[b]].base.req[bind]
	})
	checks := 0
	spent := 0.0 // what the partners' growth costs
	done := sv.swapDone[:0]
	defer func() { sv.swapDone = done[:0] }()
	for _, i := range order {
		if checks >= budget {
			break
		}
		q, qc := start.pods[i], start.podCls[i]
		if qc.base.req[bind] <= 0 || !sv.movable(qc) {
			continue
		}
		n, pp, pc, grow, used := sv.partner(d, qc, bind, nodes, mayGrow)
		checks += used
		if n == nil {
			continue
		}
		checks += swapChecksPerPod / 10
		x, cost, ok := sv.exchange(d, q, qc, n, pp, pc, grow)
		if !ok {
			continue
		}
		done = append(done, x)
		spent += cost
		if spent >= price-1e-9 {
			break
		}
		if t := sv.bestType(d); t >= 0 && p.price(t, d.requests)+spent < price-1e-9 {
			sv.shrink(d)
			for _, x := range done {
				sv.shrink(x.n)
			}
			return checks
		}
	}
	// No cheaper type: undo the exchanges, last first.
	for k := len(done) - 1; k >= 0; k-- {
		x := done[k]
		sv.removePod(d, x.in, x.ic)
		sv.removePod(x.n, x.out, x.oc)
		sv.commitNew(x.ic, x.n, trial{reqs: x.n.reqs, zones: x.n.zones, cts: x.n.cts, types: x.n.types, natural: x.n.natural}, x.in)
		sv.commitNew(x.oc, d, trial{reqs: d.reqs, zones: d.zones, cts: d.cts, types: d.types, natural: d.natural}, x.out)
		x.mark.restore(x.n)
		putBack(x.n, x.at)
	}
	start.restore(d)
	return checks
}

// partner finds, among a window of the planned nodes, the pod to exchange
// for donor d's pod of class qc: lighter in the donor's binding resource
// by the most, the donor within its current type and, first choice, the
// partner within its own; failing that, the partner growing least in that
// resource for the most gain (the donor's step must then pay for it). The
// sums only; exchange checks the placements. It returns the node, the pod
// and its class, whether the partner must grow, and the candidates
// weighed (in tenths of a check).
func (sv *solver) partner(d *nodeState, qc *podClass, bind int, nodes []*nodeState, mayGrow bool) (*nodeState, *corev1.Pod, *podClass, bool, int) {
	qr := qc.base.req
	dAlloc := d.pool.effAlloc[d.natural]
	count, first := len(nodes), 0
	if count > swapScan {
		first = sv.swapStart % count
		sv.swapStart += swapScan / 4
		count = swapScan
	}
	type cand struct {
		n     *nodeState
		j     int
		score int64
	}
	var fit, grow cand
	weighed := 0
	for k := 0; k < count; k++ {
		n := nodes[(first+k)%len(nodes)]
		if n == d || len(n.pods) == 0 || n.natural < 0 {
			continue
		}
		sameZone, sameCT := n.zones == d.zones, n.cts == d.cts
		if (qc.base.zoneRelevant && !sameZone) || (qc.base.ctRelevant && !sameCT) {
			continue
		}
		nAlloc := n.pool.effAlloc[n.natural]
		for j, pc := range n.podClasses {
			weighed++
			pr := pc.base.req
			gain := qr[bind] - pr[bind]
			if gain <= 0 || gain <= fit.score || (pc.base.zoneRelevant && !sameZone) || (pc.base.ctRelevant && !sameCT) {
				continue
			}
			if !swapFits(d.requests, qr, pr, dAlloc) || !swapFits(n.requests, pr, qr, n.pool.maxEff) || !sv.movable(pc) {
				continue
			}
			if swapFits(n.requests, pr, qr, nAlloc) {
				fit = cand{n, j, gain}
				continue
			}
			if score := gain - max(0, n.requests[bind]-pr[bind]+qr[bind]-nAlloc[bind]); mayGrow && fit.n == nil && score > grow.score {
				grow = cand{n, j, score}
			}
		}
	}
	if fit.n != nil {
		return fit.n, fit.n.pods[fit.j], fit.n.podClasses[fit.j], false, weighed / 10
	}
	if grow.n != nil {
		return grow.n, grow.n.pods[grow.j], grow.n.podClasses[grow.j], true, weighed / 10
	}
	return nil, nil, nil, false, weighed / 10
}

// swapFits reports whether a node with requests base still fits limit
// when a pod of out leaves and one of in joins.
func swapFits(base, out, in, limit resVec) bool {
	for i := range limit {
		if base[i]-out[i]+in[i] > limit[i] {
			return false
		}
	}
	return true
}

// exchange moves donor d's pod q to n and n's pod pp to d, each checked as
// a placement, d on its current type and n on its own or, with grow, a
// bigger one; it returns what n's price rose by. On any refusal it puts
// both back and reports false.
func (sv *solver) exchange(d *nodeState, q *corev1.Pod, qc *podClass, n *nodeState, pp *corev1.Pod, pc *podClass, grow bool) (exchange, float64, bool) {
	x := exchange{n: n, mark: markOf(n), at: slices.Index(n.pods, pp), out: q, in: pp, oc: qc, ic: pc}
	dMark := markOf(d)
	dAt := slices.Index(d.pods, q)
	nPrice := n.pool.price(n.natural, n.requests)
	aq := sv.takeOff(d, q, qc, &sv.tries[0])
	ap := sv.takeOff(n, pp, pc, &sv.tries[1])
	tq, v := sv.newNodeFit(aq, n, grow)
	if v == fits && aq.allowed != 0 && aq.ctAllowed != 0 && tq.zones == n.zones && (grow || tq.natural == n.natural) {
		sv.commitNew(qc, n, tq, q)
		tp, w := sv.newNodeFit(ap, d, false)
		cost := n.pool.price(n.natural, n.requests) - nPrice
		if w == fits && ap.allowed != 0 && ap.ctAllowed != 0 && tp.zones == d.zones && tp.natural == d.natural && (grow || cost <= 1e-12) {
			sv.commitNew(pc, d, tp, pp)
			return x, max(cost, 0), true
		}
		sv.removePod(n, q, qc)
	}
	// Refused: both pods back where they were.
	sv.commitNew(pc, n, trial{reqs: n.reqs, zones: n.zones, cts: n.cts, types: n.types, natural: n.natural}, pp)
	sv.commitNew(qc, d, trial{reqs: d.reqs, zones: d.zones, cts: d.cts, types: d.types, natural: d.natural}, q)
	x.mark.restore(n)
	putBack(n, x.at)
	dMark.restore(d)
	putBack(d, dAt)
	return x, 0, false
}
