package scheduling

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// improve is a cheap pass after the greedy one: going through the planned
// nodes from the dearest, it moves pods into other nodes' spare room
// (never making those dearer) and then lets the node shrink to a cheaper
// type, or vanish when it is left empty. Only moves that cannot change
// what other pods' topology sees are made: a pod keeps its zone and
// capacity type when its topology counts them, and pods tied to a node by
// hostname affinity stay put.
func (sv *solver) improve() {
	if len(sv.newNodes) < 2 {
		return
	}
	donors := append([]*nodeState(nil), sv.newNodes...)
	sort.SliceStable(donors, func(i, j int) bool {
		return donors[i].pool.price(donors[i].natural, donors[i].requests) > donors[j].pool.price(donors[j].natural, donors[j].requests)
	})
	for _, d := range donors {
		if len(d.pods) == 0 {
			continue
		}
		pods, classes, order := sv.keepPods(d)
		sort.SliceStable(order, func(a, b int) bool {
			ra, rb := classes[order[a]].base.req, classes[order[b]].base.req
			if ra[resCPU] != rb[resCPU] {
				return ra[resCPU] > rb[resCPU]
			}
			return ra[resMemory] > rb[resMemory]
		})
		moved := false
		for _, i := range order {
			p, c := pods[i], classes[i]
			if !sv.movable(c) {
				continue
			}
			a := sv.takeOff(d, p, c, &sv.tries[0])
			to, tr := sv.scanNew(a, 0, false)
			if to == nil || to == d || a.allowed == 0 || a.ctAllowed == 0 {
				sv.commitNew(c, d, trial{reqs: d.reqs, zones: d.zones, cts: d.cts, types: d.types, natural: d.natural}, p)
				continue
			}
			sv.commitNew(c, to, tr, p)
			moved = true
		}
		if moved {
			sv.shrink(d)
		}
	}
}

// takeOff removes pod p (of class c) from planned node d and returns the
// attempt to place it elsewhere (a, reset): in d's zone and capacity type
// when its topology counts them, so the move changes nothing other pods'
// topology sees (improve's and rebalance's rule).
func (sv *solver) takeOff(d *nodeState, p *corev1.Pod, c *podClass, a *attempt) *attempt {
	sv.removePod(d, p, c)
	return sv.attemptFrom(a, c, d)
}

// attemptFrom resets a as the attempt of a pod of class c leaving node d:
// kept to d's zone and capacity type where c's topology counts them.
func (sv *solver) attemptFrom(a *attempt, c *podClass, d *nodeState) *attempt {
	sv.resetAttempt(a, c)
	if c.base.zoneRelevant {
		a.allowed &= d.zones
		a.preferred &= d.zones
	}
	if c.base.ctRelevant {
		a.ctAllowed &= d.cts
	}
	return a
}

// movable reports whether pods of class c may change node in improve.
func (sv *solver) movable(c *podClass) bool {
	if c.movable == 0 {
		c.movable = -1
		if sv.isMovable(c) {
			c.movable = 1
		}
	}
	return c.movable > 0
}

func (sv *solver) isMovable(c *podClass) bool {
	for _, g := range c.own {
		if g.kind == kindAffinity && g.key == corev1.LabelHostname {
			return false
		}
	}
	for _, g := range c.base.selectedBy {
		if g.kind == kindAffinity && g.key == corev1.LabelHostname {
			return false
		}
		if g.kind == kindSpread && (g.honorTaints || (g.honorAffinity && g.narrowed(sv.allZones))) {
			return false // whether the node counts could change as it narrows
		}
		if g.key != corev1.LabelHostname && g.key != corev1.LabelTopologyZone && g.key != v1.LabelCapacityType {
			return false
		}
	}
	for _, g := range c.own {
		if g.key != corev1.LabelHostname && g.key != corev1.LabelTopologyZone && g.key != v1.LabelCapacityType {
			return false
		}
	}
	return true
}

// removePod takes p (placed with class c) off planned node n, undoing its
// counts, and returns the index p had in n's pods (-1 when it was not
// there).
func (sv *solver) removePod(n *nodeState, p *corev1.Pod, c *podClass) int {
	at := -1
	for i := range n.pods {
		if n.pods[i] == p {
			n.pods = append(n.pods[:i], n.pods[i+1:]...)
			n.podClasses = append(n.podClasses[:i], n.podClasses[i+1:]...)
			at = i
			break
		}
	}
	for r := range n.requests {
		n.requests[r] -= c.base.req[r]
	}
	for _, hp := range c.base.hostPorts {
		for i := range n.ports {
			if n.ports[i] == hp {
				n.ports = append(n.ports[:i], n.ports[i+1:]...)
				break
			}
		}
	}
	for _, g := range c.base.selectedBy {
		if g.kind == kindSpread && !sv.spreadCounts(g, n) {
			continue
		}
		g.total--
		if g.key == corev1.LabelHostname {
			n.hostEntry(g).match--
			continue
		}
		if d, ok := sv.nodeDomain(n, g.key); ok {
			g.counts[d]--
		}
	}
	for _, g := range c.own {
		if (g.kind == kindAnti && !g.preferred) || (g.kind == kindSpread && g.key == corev1.LabelHostname) {
			if g.key == corev1.LabelHostname {
				n.hostEntry(g).owners--
				continue
			}
			if d, ok := sv.nodeDomain(n, g.key); ok {
				g.owners[d]--
			}
		}
	}
	return at
}

// shrink moves a planned node to the cheapest type that still fits what is
// left on it, or drops it when it is empty.
func (sv *solver) shrink(n *nodeState) {
	p := n.pool
	from := p.types[n.natural].capacity
	if len(n.pods) == 0 {
		p.account(from, make(resVec, len(from)))
		p.usedNodes--
		return
	}
	if best := sv.bestType(n); best >= 0 && best != n.natural {
		p.account(from, p.types[best].capacity)
		n.natural = best
	}
}

// bestType is the cheapest type (index into the pool's types) that holds
// planned node n's requests in its zones and capacity types within the
// pool's limits, n.natural when none is cheaper (ties go to the lower
// index), -1 for a node without a type.
func (sv *solver) bestType(n *nodeState) int {
	if n.natural < 0 {
		return -1
	}
	p := n.pool
	from := p.types[n.natural].capacity
	tr := trial{reqs: n.reqs, zones: n.zones, cts: n.cts, types: n.types}
	best, bestPrice := n.natural, p.price(n.natural, n.requests)
	for i, t := range p.types {
		if t.minPrice > bestPrice {
			break
		}
		if i == n.natural || !n.types.has(i) || !n.requests.fits(p.effAlloc[i]) || !t.offered(n.zones, n.cts) || sv.minValuesMet(p, tr, n.requests) != nil {
			continue
		}
		if i > n.natural && !p.withinLimits(from, t.capacity) {
			continue
		}
		if price := p.price(i, n.requests); price < bestPrice || (price == bestPrice && i < best) {
			best, bestPrice = i, price
		}
	}
	return best
}
