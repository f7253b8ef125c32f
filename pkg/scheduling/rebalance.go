package scheduling

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// rebalance is a local search after improve. A node's price is that of the
// cheapest type holding its pods, a step function of its requests; after
// the greedy pass a node often pays a step for one resource while another
// sits idle (a node of memory-heavy pods with CPU to spare), or stands just
// above a step. For each planned node, dearest first, it moves pods
// (largest share of the node's binding resource first) into other planned
// nodes' spare room, where they cost nothing, until the node drops to a
// cheaper type; if the node cannot drop, those moves are undone. Pods move
// only as improve moves them (same zone and capacity type when their
// topology counts them, not when tied by hostname affinity), every move is
// checked as a placement is, and the work is bounded by a number of fit
// checks proportional to the pods, so the pass stays linear.
func (sv *solver) rebalance() {
	if len(sv.newNodes) < 2 {
		return
	}
	budget := rebalanceChecksPerPod * (len(sv.snap.Pods) + 1)
	donors := sv.dearestFirst()
	for pass := 0; pass < rebalancePasses; pass++ {
		gained := false
		for _, d := range donors {
			// Drop the node step by step while it gets cheaper.
			for budget > 0 && len(d.pods) > 0 {
				before := d.pool.price(d.natural, d.requests)
				budget -= sv.drainStep(d, donors, budget)
				if len(d.pods) > 0 && d.pool.price(d.natural, d.requests) >= before-1e-9 {
					break
				}
				gained = true
			}
		}
		if !gained || budget <= 0 {
			return
		}
	}
}

// dearestFirst lists the planned nodes that carry pods, dearest first:
// the donors of rebalance and swap.
func (sv *solver) dearestFirst() []*nodeState {
	nodes := make([]*nodeState, 0, len(sv.newNodes))
	for _, n := range sv.newNodes {
		if len(n.pods) > 0 && n.natural >= 0 {
			nodes = append(nodes, n)
		}
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		return nodes[i].pool.price(nodes[i].natural, nodes[i].requests) > nodes[j].pool.price(nodes[j].natural, nodes[j].requests)
	})
	return nodes
}

// binding is the resource planned node n's type is sized by, the one its
// requests use the largest share of (-1 when none), that share and the
// share of the emptiest resource.
func (n *nodeState) binding() (bind int, fullest, emptiest float64) {
	alloc := n.pool.effAlloc[n.natural]
	bind, fullest, emptiest = -1, -1, 2
	for r := range n.requests {
		if alloc[r] > 0 {
			s := float64(n.requests[r]) / float64(alloc[r])
			if s > fullest {
				bind, fullest = r, s
			}
			emptiest = min(emptiest, s)
		}
	}
	return bind, fullest, emptiest
}

// rebalanceChecksPerPod bounds rebalance's fit checks (newNodeFit calls);
// rebalancePasses its passes over the nodes.
// drainMisses ends a node's attempt after that many pods in a row found no
// receiver.
const (
	rebalanceChecksPerPod = 12
	rebalancePasses       = 2
	drainMisses           = 6
)

// move is one pod moved by drainStep, with what undoing it needs.
type move struct {
	pod  *corev1.Pod
	c    *podClass
	to   *nodeState
	prev trial // the receiver's state before the move
	// classes is how many classes the receiver had before the move.
	classes int
}

// drainStep tries to bring donor d down to a cheaper type by moving some of
// its pods into other nodes' spare room; it keeps the moves when d gets
// cheaper and undoes them otherwise. It returns the fit checks it used.
func (sv *solver) drainStep(d *nodeState, nodes []*nodeState, budget int) int {
	p := d.pool
	price := p.price(d.natural, d.requests)
	// The resource the node's type is sized by: the one its requests use
	// the largest share of.
	bind, _, _ := d.binding()
	if bind < 0 {
		return 0
	}
	// The donor's pods as they were, their order and the moves made are
	// the solver's scratch (d's lists are restored by copying them back).
	pods, classes, order := sv.keepPods(d)
	sort.SliceStable(order, func(a, b int) bool {
		return classes[order[a]].base.req[bind] > classes[order[b]].base.req[bind]
	})
	checks := 0
	spent := 0.0 // what the receivers' growth costs
	misses := 0  // pods in a row that found no receiver
	moves := sv.drainMoves[:0]
	defer func() { sv.drainMoves = moves[:0] }()
	for _, i := range order {
		pod, c := pods[i], classes[i]
		if c.base.req[bind] <= 0 || !sv.movable(c) {
			continue
		}
		a := sv.takeOff(d, pod, c, &sv.tries[0])
		to, tr, cost, used := sv.receiver(a, d, nodes, budget-checks)
		checks += used
		if to == nil || a.allowed == 0 || a.ctAllowed == 0 {
			sv.commitNew(c, d, trial{reqs: d.reqs, zones: d.zones, cts: d.cts, types: d.types, natural: d.natural}, pod)
			misses++
			if checks >= budget || misses >= drainMisses {
				break
			}
			continue
		}
		misses = 0
		prev := trial{reqs: to.reqs, zones: to.zones, cts: to.cts, types: to.types, natural: to.natural}
		classesBefore := len(to.classes)
		sv.commitNew(c, to, tr, pod)
		moves = append(moves, move{pod: pod, c: c, to: to, prev: prev, classes: classesBefore})
		spent += cost
		if len(d.pods) == 0 {
			if spent < price-1e-9 {
				sv.shrink(d) // empty: the node goes
				return checks
			}
			break
		}
		if t := sv.bestType(d); t >= 0 && p.price(t, d.requests)+spent < price-1e-9 {
			sv.shrink(d)
			return checks
		}
	}
	// No cheaper type: put the pods back where they were.
	for k := len(moves) - 1; k >= 0; k-- {
		m := moves[k]
		sv.removePod(m.to, m.pod, m.c)
		m.to.reqs, m.to.types, m.to.classes = m.prev.reqs, m.prev.types, m.to.classes[:m.classes]
		if m.to.natural != m.prev.natural {
			pool := m.to.pool
			pool.account(pool.types[m.to.natural].capacity, pool.types[m.prev.natural].capacity)
			m.to.natural = m.prev.natural
		}
		sv.commitNew(m.c, d, trial{reqs: d.reqs, zones: d.zones, cts: d.cts, types: d.types, natural: d.natural}, m.pod)
	}
	// The same pods, in their order before the attempt.
	d.pods = append(d.pods[:0], pods...)
	d.podClasses = append(d.podClasses[:0], classes...)
	return checks
}

// keepPods copies planned node d's pods and their classes into the
// solver's scratch and lists their indices in order: what improve and
// rebalance read while d's own lists change under them.
func (sv *solver) keepPods(d *nodeState) ([]*corev1.Pod, []*podClass, []int) {
	sv.keptPods = append(sv.keptPods[:0], d.pods...)
	sv.keptCls = append(sv.keptCls[:0], d.podClasses...)
	sv.keptOrder = sv.keptOrder[:0]
	for i := range d.pods {
		sv.keptOrder = append(sv.keptOrder, i)
	}
	return sv.keptPods, sv.keptCls, sv.keptOrder
}

// receiver finds the planned node (other than d) that takes a pod of the
// attempt's class at the lowest added cost: the first with room on its
// current type (cost 0), else the cheapest to grow among the first
// receiverChoices that can. It returns the node, the state to commit, the
// added cost and the fit checks used (at most budget).
func (sv *solver) receiver(a *attempt, d *nodeState, nodes []*nodeState, budget int) (*nodeState, trial, float64, int) {
	req := a.c.base.req
	checks := 0
	// A window of the nodes, moving on with every pod, keeps the scan
	// bounded on large plans and spreads the pods over the receivers.
	count, start := len(nodes), 0
	if count > receiverScan {
		start = sv.receiverStart % count
		sv.receiverStart += receiverScan / 4
		count = receiverScan
	}
	at := func(k int) *nodeState { return nodes[(start+k)%len(nodes)] }
	for k := 0; k < count; k++ {
		n := at(k)
		if checks >= budget {
			return nil, trial{}, 0, checks
		}
		if n == d || len(n.pods) == 0 || n.natural < 0 || !fitsAdd(n.requests, req, n.pool.effAlloc[n.natural]) {
			continue
		}
		checks++
		if t, v := sv.newNodeFit(a, n, false); v == fits && t.zones == n.zones && t.natural == n.natural {
			if n.pool.credits(t.natural, sv.plus(n.requests, req)) <= n.pool.credits(n.natural, n.requests)+1e-12 {
				return n, t, 0, checks
			}
		}
	}
	var best *nodeState
	var bestTrial trial
	bestCost, found := 0.0, 0
	for k := 0; k < count; k++ {
		n := at(k)
		if checks >= budget || found >= receiverChoices {
			break
		}
		if n == d || len(n.pods) == 0 || n.natural < 0 || !fitsAdd(n.requests, req, n.pool.maxEff) {
			continue
		}
		checks++
		t, v := sv.newNodeFit(a, n, true)
		if v != fits || t.zones != n.zones {
			continue
		}
		found++
		cost := n.pool.price(t.natural, sv.plus(n.requests, req)) - n.pool.price(n.natural, n.requests)
		if best == nil || cost < bestCost {
			best, bestTrial, bestCost = n, t, cost
		}
	}
	return best, bestTrial, bestCost, checks
}

// receiverChoices is how many growable receivers receiver compares;
// receiverScan how many nodes it looks at per pod.
const (
	receiverChoices = 8
	receiverScan    = 256
)

// plus is a + b in the solver's scratch vector for sums (valid until the
// next call).
func (sv *solver) plus(a, b resVec) resVec {
	if len(sv.sum) != len(a) {
		sv.sum = make(resVec, len(a))
	}
	for i := range a {
		sv.sum[i] = a[i] + b[i]
	}
	return sv.sum
}
