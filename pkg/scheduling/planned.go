package scheduling

// Planned NodeClaims: fitting a pod on one (as is or grown to a bigger
// type), choosing its zone, capacity type and cheapest type, and opening a
// new one sized for the pods still to come.

import (
	"math"
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// newNodeFit checks class c against planned node n. With grow false the
// pod must fit the node's current cheapest type; with grow true the node
// may move to a bigger type. On success it returns the state to commit.
func (sv *solver) newNodeFit(a *attempt, n *nodeState, grow bool) (trial, verdict) {
	c := a.c
	p := n.pool
	if !sv.poolCompatible(c, p) {
		return trial{}, rejectPerm
	}
	if !fitsAdd(n.requests, c.base.req, p.maxEff) {
		return trial{}, rejectPerm
	}
	tr := trial{reqs: n.reqs, zones: n.zones & c.zones, cts: n.cts & c.cts, types: n.types}
	if tr.zones == 0 || tr.cts == 0 {
		return trial{}, rejectPerm
	}
	if !n.hasClass(c) {
		tr.reqs = sv.merge(n.reqs, c.reqs)
		if tr.reqs == nil {
			return trial{}, rejectPerm
		}
		if tr.reqs != n.reqs {
			// The node's types only narrow as pods join (a pod's host
			// ports may have ruled some out).
			tr.types = sv.typesFor(p, tr.reqs).and(n.types)
		}
		if len(c.base.devices) > 0 {
			// Only the types whose devices meet the joining pod's claims.
			tr.types = tr.types.and(c.poolTypes[p.idx])
		}
	}
	if len(c.base.hostPorts) > 0 {
		free, clash := p.typesFreeOfDaemonPorts(tr.types, c.base.hostPorts)
		if clash != nil {
			return trial{}, rejectPerm
		}
		tr.types = free
	}
	if v := sv.hostnameOK(c, n); v != fits {
		return trial{}, v
	}
	if v := sv.otherKeysOK(c, n); v != fits {
		return trial{}, v
	}
	need := sv.scratch
	for i := range need {
		need[i] = n.requests[i] + c.base.req[i]
	}
	var from resVec
	if n.natural >= 0 {
		from = p.types[n.natural].capacity
	}
	if tr.zones&a.allowed == 0 || tr.cts&a.ctAllowed == 0 {
		return trial{}, rejectTemp
	}
	if out, ok := sv.pickDomains(a, n, tr, need, from, grow); ok {
		// Growing the node (or, on a burstable type, its surplus
		// credits) must not cost more than a node of its own would.
		if (grow || p.bursty) && !a.mustJoin && (out.natural != n.natural || p.types[n.natural].burst != nil) &&
			p.price(out.natural, need)-p.price(n.natural, n.requests) > sv.soloPrice(c, p)*(1+1e-9) {
			return trial{}, rejectPerm
		}
		return out, fits
	}
	// No allowed domain has room: treated as final for this pass (the node
	// only fills up), which keeps the scan linear.
	return trial{}, rejectPerm
}

// pickDomains decides the node's zone and capacity type when the pod's
// topology needs them decided (best-ranked first), and finds the cheapest
// type that fits.
func (sv *solver) pickDomains(a *attempt, n *nodeState, tr trial, need, from resVec, grow bool) (trial, bool) {
	// Spread or affinity on another label: decide the node's value first,
	// least-loaded allowed value first.
	for _, g := range a.c.own {
		if g.key == corev1.LabelHostname || g.key == corev1.LabelTopologyZone || g.key == v1.LabelCapacityType {
			continue
		}
		if _, ok := sv.nodeDomain(n, g.key); ok {
			continue
		}
		m := 0
		if g.kind == kindSpread {
			m = sv.spreadMin(g)
		}
		vals := append([]string(nil), sv.spreadUniverse(g)...)
		sort.SliceStable(vals, func(i, j int) bool { return g.counts[vals[i]] < g.counts[vals[j]] })
		for _, v := range vals {
			if !sv.domainAllowed(g, a.c.base, v, m) {
				continue
			}
			r := sv.merge(tr.reqs, sv.intern(reqBuilder{g.key: constraint{vals: []string{v}}}.build()))
			if r == nil {
				continue
			}
			x := tr
			x.reqs, x.types = r, sv.typesFor(n.pool, r)
			if len(a.c.base.devices) > 0 {
				x.types = x.types.and(a.c.poolTypes[n.pool.idx])
			}
			if out, ok := sv.pickZoneAndCT(a, n, x, need, from, grow); ok {
				return out, true
			}
		}
		return trial{}, false
	}
	return sv.pickZoneAndCT(a, n, tr, need, from, grow)
}

func (sv *solver) pickZoneAndCT(a *attempt, n *nodeState, tr trial, need, from resVec, grow bool) (trial, bool) {
	cb := a.c.base
	var zbuf [64]uint64
	var cbuf [32]uint32
	zoneCands := append(zbuf[:0], tr.zones&a.allowed)
	if cb.zoneRelevant && bits.OnesCount64(zoneCands[0]) > 1 {
		zoneCands = zoneCands[:0]
		for _, zi := range a.zoneRank {
			if tr.zones&(1<<zi) != 0 {
				zoneCands = append(zoneCands, 1<<zi)
			}
		}
	}
	ctCands := append(cbuf[:0], tr.cts&a.ctAllowed)
	if cb.ctRelevant && bits.OnesCount32(ctCands[0]) > 1 {
		ctCands = ctCands[:0]
		for _, ci := range a.ctRank {
			if tr.cts&(1<<ci) != 0 {
				ctCands = append(ctCands, 1<<ci)
			}
		}
	}
	for _, zs := range zoneCands {
		for _, cs := range ctCands {
			if zs == 0 || cs == 0 {
				continue
			}
			x := tr
			x.zones, x.cts = zs, cs
			if t := sv.naturalType(n, x, need, from, grow); t >= 0 {
				x.natural = t
				return x, true
			}
		}
	}
	return trial{}, false
}

// naturalType returns the cheapest type (index into pool.types) among
// tr.types offered in tr's zones and capacity types whose allocatable
// covers need, within the pool's limits; -1 if none. Without grow only the
// node's current type is acceptable.
//
// Types are ordered by price before surplus credits, which only add: the
// scan stops at the first type whose price before credits is no lower than
// the best found. Without burstable types that is the first that fits,
// and a node only grows from its current type; with them a node growing
// past a burstable type's baseline may find a type it passed over cheaper.
func (sv *solver) naturalType(n *nodeState, tr trial, need, from resVec, grow bool) int {
	p := n.pool
	start := max(n.natural, 0)
	if p.bursty {
		start = 0
	}
	if !grow {
		i := n.natural
		if i >= 0 && tr.types.has(i) && need.fits(p.effAlloc[i]) && p.types[i].offered(tr.zones, tr.cts) && sv.minValuesMet(p, tr, need) == nil {
			return i
		}
		return -1
	}
	best, bestPrice := -1, math.Inf(1)
	for i := start; i < len(p.types); i++ {
		if p.types[i].minPrice >= bestPrice {
			break
		}
		if !tr.types.has(i) || !need.fits(p.effAlloc[i]) || !p.types[i].offered(tr.zones, tr.cts) {
			continue
		}
		if !p.withinLimits(from, p.types[i].capacity) {
			continue
		}
		if best < 0 && sv.minValuesMet(p, tr, need) != nil {
			return -1 // the fitting types only get fewer as the node grows
		}
		if price := p.price(i, need); price < bestPrice {
			best, bestPrice = i, price
		}
	}
	return best
}

// soloPrice is the cheapest price of a node of pool p carrying one pod of
// class c alone (cached per class and pool).
func (sv *solver) soloPrice(c *podClass, p *poolT) float64 {
	if c.solo == nil {
		c.solo = make([]float64, len(sv.pools))
		for i := range c.solo {
			c.solo[i] = -1
		}
	}
	if c.solo[p.idx] >= 0 {
		return c.solo[p.idx]
	}
	price := math.Inf(1)
	types := c.poolTypes[p.idx]
	for i, t := range p.types {
		if t.minPrice >= price {
			break
		}
		if types.has(i) && c.base.req.fits(p.effAlloc[i]) && t.offered(p.zones&c.zones, p.cts&c.cts) {
			price = min(price, p.price(i, c.base.req))
		}
	}
	c.solo[p.idx] = price
	return price
}

func (sv *solver) commitNew(c *podClass, n *nodeState, tr trial, p *corev1.Pod) {
	c.base.placed++
	pool := n.pool
	var from resVec
	if n.natural >= 0 {
		from = pool.types[n.natural].capacity
	}
	if tr.natural != n.natural {
		pool.account(from, pool.types[tr.natural].capacity)
		sv.lastGrown = n
	}
	n.reqs, n.zones, n.cts, n.types, n.natural = tr.reqs, tr.zones, tr.cts, tr.types, tr.natural
	if !n.hasClass(c) {
		n.classes = append(n.classes, c)
	}
	n.requests.add(c.base.req)
	n.pods = append(n.pods, p)
	n.podClasses = append(n.podClasses, c)
	if !n.listed && bits.OnesCount64(n.zones) == 1 {
		n.listed = true
		zi := bits.TrailingZeros64(n.zones)
		sv.lists[1+zi] = append(sv.lists[1+zi], n)
	}
	sv.recordPlacement(c, n)
}

// openNode plans a new node of pool p for a pod of class c.
func (sv *solver) openNode(a *attempt, p *poolT) (*nodeState, trial, bool) {
	c := a.c
	if !sv.poolCompatible(c, p) {
		return nil, trial{}, false
	}
	if p.nodeLimit >= 0 && p.usedNodes+1 > p.nodeLimit {
		return nil, trial{}, false
	}
	n := &nodeState{pool: p, natural: -1, requests: make(resVec, len(sv.ri.names))}
	n.reqs = sv.merge(p.base, c.reqs)
	n.types = c.poolTypes[p.idx]
	n.zones, n.cts = p.zones, p.cts
	tr := trial{reqs: n.reqs, zones: n.zones & c.zones, cts: n.cts & c.cts, types: n.types}
	if v := sv.hostnameOK(c, n); v != fits {
		return nil, trial{}, false
	}
	if tr.zones&a.allowed == 0 || tr.cts&a.ctAllowed == 0 {
		return nil, trial{}, false
	}
	// Size the node for the class's pods still to come, so they fill it
	// instead of each opening a node of its own; finalize right-sizes it
	// to the pods it ends up with.
	out, ok := sv.pickDomains(a, n, tr, sv.bulkNeed(c, p), nil, true)
	if !ok {
		if out, ok = sv.pickDomains(a, n, tr, c.base.req, nil, true); !ok {
			return nil, trial{}, false
		}
	}
	return n, out, true
}

// bulkNeed is what a new node of pool p should have room for when it opens
// for a pod of class c: k pods of the class, where k is the count that
// gives the lowest price per pod among the pool's types, capped by the
// class's pods not placed yet.
//
// Growing a node one pod at a time cannot find that size on its own: with
// prices linear in size, a type twice as large costs exactly one more small
// node, so each growth step is a tie that price noise (spot, zones) breaks
// against growing, and a deployment of identical pods ends one pod per node.
// Classes with topology, host ports or attach-limited volumes keep the
// one-pod sizing: how many of their pods may share a node is not a matter
// of resources alone.
func (sv *solver) bulkNeed(c *podClass, p *poolT) resVec {
	cb := c.base
	remaining := len(cb.pods) - cb.placed
	if remaining < 2 || len(c.own) > 0 || len(cb.selectedBy) > 0 || len(cb.hostPorts) > 0 || len(cb.volDrivers) > 0 {
		return cb.req
	}
	types := c.poolTypes[p.idx]
	bestK, best := 1, math.Inf(1)
	load := make(resVec, len(cb.req))
	for i, t := range p.types {
		if !types.has(i) || !t.offered(p.zones&c.zones, p.cts&c.cts) {
			continue
		}
		k := min(fitCount(cb.req, p.effAlloc[i]), remaining)
		if k == 0 {
			continue
		}
		price := t.minPrice
		if t.burst != nil {
			load[resCPU] = cb.req[resCPU] * int64(k)
			price = p.price(i, load)
		}
		if per := price / float64(k); per < best*(1-1e-9) {
			best, bestK = per, k
		}
	}
	need := make(resVec, len(cb.req))
	for i := range need {
		need[i] = cb.req[i] * int64(bestK)
	}
	return need
}

// fitCount is how many pods of request req fit in alloc.
func fitCount(req, alloc resVec) int {
	k := math.MaxInt
	for i := range req {
		if req[i] <= 0 {
			continue
		}
		k = min(k, int(alloc[i]/req[i]))
	}
	if k == math.MaxInt {
		return 0
	}
	return k
}
