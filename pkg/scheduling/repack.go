package scheduling

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// repack is the last local search, for what single moves and one-for-one
// exchanges cannot mend. A node's price is a step function of its
// requests, so after the greedy pass and the other searches a node sized
// by memory often idles CPU beside a node sized by CPU whose memory
// idles, and no single pod moved or exchanged between them lowers either
// node a step; a different split of the two nodes' pods often lowers
// both. For each planned node, most wasteful first (its price above what
// its requests would cost at the pool's best price per unit of each
// resource), repack picks the few nodes of its zone and capacity type
// whose pods would pair best with its own (the largest fall of that
// lower bound when the two are taken together) and searches the splits of
// the two nodes' pods between them, by branch and bound over the pods'
// classes (pods of one class are interchangeable), for the cheapest pair
// of types. Hostname-keyed spread and anti-affinity are part of the
// search; the best split is then made as placements are, every pod
// checked, and undone unless the two nodes cost less. Pods keep their
// zone and capacity type, pods tied by hostname affinity or owning
// required anti-affinity stay put (as in improve), and a node left empty
// goes. The work is bounded by a number of search steps proportional to
// the pods.
func (sv *solver) repack() {
	nodes := sv.dearestFirst()
	if len(nodes) < 2 {
		return
	}
	budget := repackStepsPerPod * (len(sv.snap.Pods) + 1)
	units := make([][]float64, len(sv.pools))
	for _, n := range nodes {
		if units[n.pool.idx] == nil {
			units[n.pool.idx] = n.pool.unitPrices()
		}
	}
	waste := func(n *nodeState) float64 {
		return n.pool.price(n.natural, n.requests) - unitBound(units[n.pool.idx], n.requests)
	}
	donors := make([]*nodeState, 0, len(nodes))
	for _, n := range nodes {
		if len(n.pods) <= repackMaxPods {
			donors = append(donors, n)
		}
	}
	sort.SliceStable(donors, func(i, j int) bool { return waste(donors[i]) > waste(donors[j]) })
	var rp repacker
	for pass := 0; pass < repackPasses; pass++ {
		gained := false
		for _, d := range donors {
			if budget <= 0 {
				return
			}
			if len(d.pods) == 0 || len(d.pods) > repackMaxPods {
				continue
			}
			partners := sv.repackPartners(d, units[d.pool.idx], &rp)
			// A re-split saves at least the cheapest type's price: nodes
			// whose bound leaves less are not worth a search.
			floor := d.pool.types[0].minPrice
			ok := false
			for i, n := range partners {
				if rp.gains[i] <= floor {
					continue
				}
				steps, done := sv.repackNodes([]*nodeState{d, n}, &rp, min(budget, repackPairSteps))
				budget -= steps + 1
				if ok = done; ok || budget <= 0 {
					break
				}
			}
			// Two nodes' idle chunks often add up to less than a step;
			// three's more often reach one.
			for i := 0; !ok && i < len(partners) && budget > 0; i++ {
				third := sv.repackThird(d, partners[i], units[d.pool.idx], &rp)
				if third == nil {
					continue
				}
				steps, done := sv.repackNodes([]*nodeState{d, partners[i], third}, &rp, min(budget, repackTripleSteps))
				budget -= steps + 1
				ok = done
			}
			gained = gained || ok
		}
		if !gained {
			return
		}
	}
}

// Bounds of repack's work: search steps per pending pod in all, per pair
// and per triple of nodes, passes over the donors, partner nodes looked at and searched
// per donor, and pods on a node (larger nodes are left to rebalance and
// swap). The budget in all is what keeps repack's CPU where it was before
// fill served every node of a few pods: fill leaves the small nodes more
// pods each, so each search costs more (with 400 steps a pod, diverse-10000
// spent 2.8× the steps for 0.3 % of its cost).
const (
	repackStepsPerPod = 70
	repackPairSteps   = 4000
	repackTripleSteps = 1500
	repackPasses      = 1
	repackScan        = 96
	repackPartnersMax = 3
	repackMaxPods     = 24
)

// unitPrices is, per resource, the pool's lowest price per unit of it over
// its types (0 where no type offers the resource): a node's requests cost
// at least the largest of request × unit price whatever types carry them.
func (p *poolT) unitPrices() []float64 {
	u := make([]float64, len(p.maxEff))
	for i, t := range p.types {
		for r, a := range p.effAlloc[i] {
			if a > 0 && (u[r] == 0 || t.minPrice/float64(a) < u[r]) {
				u[r] = t.minPrice / float64(a)
			}
		}
	}
	return u
}

// unitBound is the lower bound of what requests cost at unit prices u.
func unitBound(u []float64, req resVec) float64 {
	b := 0.0
	for r, x := range req {
		b = max(b, u[r]*float64(x))
	}
	return b
}

// repackPartners lists up to repackPartnersMax planned nodes that could
// share their pods with d: same pool, zones and capacity types, compatible
// requirements, ranked by how much lower the unit-price bound of the two
// together is than their two prices (rp.gains), among a window of
// repackScan nodes of d's zone list.
func (sv *solver) repackPartners(d *nodeState, units []float64, rp *repacker) []*nodeState {
	list := sv.lists[0]
	if bits.OnesCount64(d.zones) == 1 {
		list = sv.lists[1+bits.TrailingZeros64(d.zones)]
	}
	count, first := len(list), 0
	if count > repackScan {
		first = rp.start % count
		rp.start += repackScan / 3
		count = repackScan
	}
	rp.window = rp.window[:0]
	for k := 0; k < count; k++ {
		rp.window = append(rp.window, list[(first+k)%len(list)])
	}
	dPrice := d.pool.price(d.natural, d.requests)
	type cand struct {
		n    *nodeState
		gain float64
	}
	var top [repackPartnersMax]cand
	sum := rp.sum(len(d.requests))
	for _, n := range rp.window {
		if n == d || n.pool != d.pool || len(n.pods) == 0 || n.natural < 0 || len(n.pods) > repackMaxPods || n.zones != d.zones || n.cts != d.cts {
			continue
		}
		for r := range sum {
			sum[r] = d.requests[r] + n.requests[r]
		}
		gain := dPrice + n.pool.price(n.natural, n.requests) - unitBound(units, sum)
		for i := range top {
			if top[i].n == nil || gain > top[i].gain {
				copy(top[i+1:], top[i:len(top)-1])
				top[i] = cand{n, gain}
				break
			}
		}
	}
	out, gains := rp.partners[:0], rp.gains[:0]
	for _, c := range top {
		if c.n != nil && sv.merge(d.reqs, c.n.reqs) != nil {
			out, gains = append(out, c.n), append(gains, c.gain)
		}
	}
	rp.partners, rp.gains = out, gains
	return out
}

// repackThird picks, in the window repackPartners looked at, the node
// that with d and n leaves the most above the unit-price bound of the
// three together (at least the cheapest type's price): three nodes' idle
// often adds up to a step where two nodes' does not.
func (sv *solver) repackThird(d, n *nodeState, units []float64, rp *repacker) *nodeState {
	base := d.pool.price(d.natural, d.requests) + n.pool.price(n.natural, n.requests)
	sum := rp.sum(len(d.requests))
	var best *nodeState
	bestGain := d.pool.types[0].minPrice
	for _, m := range rp.window {
		if m == d || m == n || m.pool != d.pool || len(m.pods) == 0 || m.natural < 0 || len(m.pods) > repackMaxPods || m.zones != d.zones || m.cts != d.cts {
			continue
		}
		for r := range sum {
			sum[r] = d.requests[r] + n.requests[r] + m.requests[r]
		}
		if gain := base + m.pool.price(m.natural, m.requests) - unitBound(units, sum); gain > bestGain {
			best, bestGain = m, gain
		}
	}
	return best
}

// repacker is repack's scratch, reused from search to search.
type repacker struct {
	start    int
	window   []*nodeState // the nodes repackPartners looked at last
	partners []*nodeState
	gains    []float64 // each partner's price with d above their bound
	scratch  resVec
	items    []rpItem
	groups   []*topoGroup
	// The search over k nodes (the sides): partial requests of each side,
	// hostname counts per side and group, the assignment being tried and
	// the best found (k counts per item).
	k     int
	need  [repackSides]resVec
	match [repackSides][]int32
	owner [repackSides][]int32
	limit [repackSides][]int32 // anti-affinity: most matching pods a side with owners may hold
	x     []int
	bestX []int
	best  float64
	steps int
	max   int
	hint  [repackSides]int
	// prices is, per search depth, each side's cheapest price there.
	prices [][repackSides]float64
	types  bitset
	pool   *poolT
	zones  uint64
	cts    uint32
}

// repackSides is the most nodes one search re-splits.
const repackSides = 3

func (rp *repacker) sum(n int) resVec {
	if len(rp.scratch) != n {
		rp.scratch = make(resVec, n)
	}
	return rp.scratch
}

// rpItem is the pods of one class that may move between the nodes: how
// many, how many of them were on each node, and per hostname group
// whether the class counts for it or owns it.
type rpItem struct {
	c      *podClass
	count  int
	on     [repackSides]int
	weight float64
	sel    []int32 // per group of repacker.groups: 1 when the class counts for it
	own    []int32 // per group: 1 when the class owns a hostname spread of it
	gis    []int32 // the groups the class counts for or owns
}

// fixedIn reports whether pods of class c stay on their node during a
// repack of nodes with the given zones and capacity types.
func (sv *solver) fixedIn(c *podClass, zones uint64, cts uint32) bool {
	cb := c.base
	if (cb.zoneRelevant && bits.OnesCount64(zones) != 1) || (cb.ctRelevant && bits.OnesCount32(cts) != 1) {
		return true
	}
	if c.pinned == 0 {
		c.pinned = -1
		if sv.isPinned(c) {
			c.pinned = 1
		}
	}
	return c.pinned > 0
}

// isPinned reports whether pods of class c stay on their node in any
// repack: not movable, with host ports or devices, or owners of required
// hostname anti-affinity.
func (sv *solver) isPinned(c *podClass) bool {
	cb := c.base
	if !sv.movable(c) || len(cb.hostPorts) > 0 || len(cb.devices) > 0 {
		return true
	}
	for _, g := range c.own {
		if g.kind == kindAnti && !g.preferred && g.key == corev1.LabelHostname {
			return true
		}
	}
	return false
}

// repackNodes searches the splits of the nodes' movable pods between them
// (two or three nodes of one pool, zones and capacity types) and makes the
// cheapest if it saves money. It returns the search steps used and
// whether the nodes now cost less.
func (sv *solver) repackNodes(nodes []*nodeState, rp *repacker, maxSteps int) (int, bool) {
	d := nodes[0]
	p := d.pool
	before := 0.0
	reqs := d.reqs
	for _, n := range nodes {
		before += p.price(n.natural, n.requests)
		if reqs = sv.merge(reqs, n.reqs); reqs == nil {
			return 0, false
		}
	}
	rp.k, rp.pool, rp.zones, rp.cts = len(nodes), p, d.zones, d.cts
	rp.items = rp.items[:0]
	rp.groups = rp.groups[:0]
	dims := len(d.requests)
	for s := range rp.need {
		if len(rp.need[s]) != dims {
			rp.need[s] = make(resVec, dims)
		}
		clear(rp.need[s])
	}
	// Movable pods leave the sides' requests; the rest stay.
	for s, node := range nodes {
		copy(rp.need[s], node.requests)
		for _, c := range node.podClasses {
			if sv.fixedIn(c, d.zones, d.cts) {
				continue
			}
			k := -1
			for i := range rp.items {
				if rp.items[i].c == c {
					k = i
					break
				}
			}
			if k < 0 {
				// Reuse the item's buffers from earlier searches.
				k = len(rp.items)
				if k < cap(rp.items) {
					rp.items = rp.items[:k+1]
					it := &rp.items[k]
					it.c, it.count, it.on, it.weight = c, 0, [repackSides]int{}, 0
				} else {
					rp.items = append(rp.items, rpItem{c: c})
				}
			}
			rp.items[k].count++
			rp.items[k].on[s]++
			for r := range rp.need[s] {
				rp.need[s][r] -= c.base.req[r]
			}
		}
	}
	if len(rp.items) == 0 {
		return 0, false
	}
	// The hostname-keyed groups the moving pods count for or own.
	addGroup := func(g *topoGroup) bool {
		if hasGroup(rp.groups, g) {
			return true
		}
		if g.kind == kindSpread {
			for _, n := range nodes[1:] {
				if sv.spreadCounts(g, d) != sv.spreadCounts(g, n) {
					return false
				}
			}
		}
		rp.groups = append(rp.groups, g)
		return true
	}
	for i := range rp.items {
		c := rp.items[i].c
		for _, g := range c.base.selectedBy {
			if g.key == corev1.LabelHostname && (g.kind == kindSpread || g.kind == kindAnti) && !addGroup(g) {
				return 0, false
			}
		}
		for _, g := range c.own {
			if g.key == corev1.LabelHostname && g.kind == kindSpread && !addGroup(g) {
				return 0, false
			}
		}
	}
	ng := len(rp.groups)
	for s := range rp.match {
		rp.match[s] = resize(rp.match[s], ng)
		rp.owner[s] = resize(rp.owner[s], ng)
		rp.limit[s] = resize(rp.limit[s], ng)
	}
	for gi, g := range rp.groups {
		for s, node := range nodes {
			rp.match[s][gi] = node.hostMatch(g)
			rp.owner[s][gi] = node.hostOwners(g)
		}
	}
	for i := range rp.items {
		it := &rp.items[i]
		it.sel = resize(it.sel, ng)
		it.own = resize(it.own, ng)
		for gi, g := range rp.groups {
			if hasGroup(it.c.base.selectedBy, g) {
				it.sel[gi] = 1
			}
			if g.kind == kindSpread && hasGroup(it.c.own, g) {
				it.own[gi] = 1
			}
			// Take the moving pods out of the sides' counts.
			for s := range nodes {
				rp.match[s][gi] -= int32(it.on[s]) * it.sel[gi]
				rp.owner[s][gi] -= int32(it.on[s]) * it.own[gi]
			}
		}
		it.gis = it.gis[:0]
		for gi := range rp.groups {
			if it.sel[gi] != 0 || it.own[gi] != 0 {
				it.gis = append(it.gis, int32(gi))
			}
		}
		for r, q := range it.c.base.req {
			if p.maxEff[r] > 0 {
				it.weight += float64(q) / float64(p.maxEff[r])
			}
		}
	}
	for gi, g := range rp.groups {
		for s := range rp.limit {
			rp.limit[s][gi] = math.MaxInt32
			if g.kind == kindAnti {
				// Owners stay put: a side with owners holds no more
				// matching pods than it keeps.
				rp.limit[s][gi] = rp.match[s][gi]
			}
		}
	}
	// add checks only the groups an item touches, which is exact when
	// the sides start within every term; a search from sides that do not
	// would find nothing (one step, as add refuses every split).
	for gi, g := range rp.groups {
		for s := 0; s < rp.k; s++ {
			if rp.owner[s][gi] > 0 && (rp.match[s][gi] > rp.limit[s][gi] || (g.kind == kindSpread && rp.match[s][gi] > g.maxSkew)) {
				return 1, false
			}
		}
	}
	slices.SortStableFunc(rp.items, func(a, b rpItem) int { return cmp.Compare(b.weight, a.weight) })
	if n := len(rp.items) * repackSides; len(rp.x) < n {
		rp.x = make([]int, n)
		rp.bestX = make([]int, n)
	}
	both := sv.typesFor(p, reqs)
	if len(rp.types) != len(both) {
		rp.types = make(bitset, len(both))
	}
	copy(rp.types, both)
	for _, n := range nodes {
		for i := range rp.types {
			rp.types[i] &= n.types[i]
		}
	}
	rp.best = before - 1e-9
	rp.steps, rp.max = 0, maxSteps
	found := false
	for s := range rp.hint {
		rp.hint[s] = 0
		if !p.bursty && s < rp.k {
			if t, _ := rp.cheapest(rp.need[s], 0); t >= 0 {
				rp.hint[s] = t
			}
		}
	}
	if len(rp.prices) < len(rp.items)+1 {
		rp.prices = make([][repackSides]float64, len(rp.items)+1)
	}
	rp.search(0, [repackSides]bool{}, &found)
	if !found {
		return rp.steps, false
	}
	return rp.steps, sv.applyRepack(nodes, rp, before)
}

// resize returns s at length n, zeroed, reusing its array when it is large
// enough: repack and fill size their scratch slices per node this way.
func resize[T int | int32 | uint64](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func hasGroup(gs []*topoGroup, g *topoGroup) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// cheapest is the cheapest type (and its price) among the searched nodes'
// types, offered in their zones and capacity types, that holds need; -1
// and a price of 0 for nothing, -1 and +Inf when no type holds it.
func (rp *repacker) cheapest(need resVec, from int) (int, float64) {
	p := rp.pool
	best, bestPrice := -1, math.Inf(1)
	empty := true
	for _, x := range need {
		if x > 0 {
			empty = false
			break
		}
	}
	if empty {
		return -1, 0
	}
	for i := from; i < len(p.types); i++ {
		t := p.types[i]
		if t.minPrice >= bestPrice {
			break
		}
		if !rp.types.has(i) || !need.fits(p.effAlloc[i]) || !t.offered(rp.zones, rp.cts) {
			continue
		}
		if price := p.price(i, need); price < bestPrice {
			best, bestPrice = i, price
		}
	}
	return best, bestPrice
}

// search is the branch and bound over the items: item i's pods split
// between the sides; the partial sides' price is a lower bound of any
// completion's. Each item tries the split it had first.
func (rp *repacker) search(i int, changed [repackSides]bool, found *bool) {
	rp.steps++
	cost := 0.0
	for s := 0; s < rp.k; s++ {
		// A side the last split left alone costs what it did one level
		// up.
		price := 0.0
		if i == 0 || changed[s] {
			t, p := rp.cheapest(rp.need[s], rp.hint[s])
			if t < 0 && p != 0 {
				return
			}
			price = p
			rp.prices[i][s] = p
		} else {
			price = rp.prices[i-1][s]
			rp.prices[i][s] = price
		}
		cost += price
	}
	if cost >= rp.best {
		return
	}
	if i == len(rp.items) {
		rp.best = cost
		copy(rp.bestX, rp.x[:len(rp.items)*repackSides])
		*found = true
		return
	}
	it := &rp.items[i]
	try := func(js [repackSides]int) bool {
		if rp.steps >= rp.max {
			return false
		}
		if rp.add(it, js, 1) {
			copy(rp.x[i*repackSides:], js[:])
			var changed [repackSides]bool
			for s := range js {
				changed[s] = js[s] != 0
			}
			rp.search(i+1, changed, found)
		}
		rp.add(it, js, -1)
		return true
	}
	if !try(it.on) {
		return
	}
	if rp.k == 2 {
		// Outward from the original split.
		for delta := 1; delta <= it.count; delta++ {
			for _, j := range [2]int{it.on[0] + delta, it.on[0] - delta} {
				if j < 0 || j > it.count {
					continue
				}
				if !try([repackSides]int{j, it.count - j}) {
					return
				}
			}
		}
		return
	}
	for j0 := it.count; j0 >= 0; j0-- {
		for j1 := it.count - j0; j1 >= 0; j1-- {
			js := [repackSides]int{j0, j1, it.count - j0 - j1}
			if js == it.on {
				continue
			}
			if !try(js) {
				return
			}
		}
	}
}

// add puts js[s] of the item's pods on side s (sign -1 takes them off
// again) and reports whether every side's hostname terms still hold.
func (rp *repacker) add(it *rpItem, js [repackSides]int, sign int) bool {
	for s := 0; s < rp.k; s++ {
		if js[s] == 0 {
			continue
		}
		m := int64(sign * js[s])
		for r, q := range it.c.base.req {
			rp.need[s][r] += m * q
		}
	}
	// Only the groups the item counts for or owns change; the search
	// starts from sides within every term (the pods already sat there)
	// and goes deeper only from such sides, so only those can break.
	ok := true
	for _, gi := range it.gis {
		g := rp.groups[gi]
		for s := 0; s < rp.k; s++ {
			rp.match[s][gi] += int32(sign*js[s]) * it.sel[gi]
			rp.owner[s][gi] += int32(sign*js[s]) * it.own[gi]
			if rp.owner[s][gi] > 0 && (rp.match[s][gi] > rp.limit[s][gi] || (g.kind == kindSpread && rp.match[s][gi] > g.maxSkew)) {
				ok = false
			}
		}
	}
	return ok
}

// applyRepack moves the pods the best split sends across, each checked as
// a placement, and keeps the result only when the nodes cost less than
// before; otherwise it puts everything back.
func (sv *solver) applyRepack(nodes []*nodeState, rp *repacker, before float64) bool {
	var moves []podMove
	for i := range rp.items {
		it := &rp.items[i]
		want := rp.bestX[i*repackSides : i*repackSides+repackSides]
		// Pods leave the sides that keep fewer than they had for the
		// sides that get more.
		var leaving []podMove
		for s, from := range nodes {
			k := it.on[s] - want[s]
			for j := len(from.pods) - 1; j >= 0 && k > 0; j-- {
				if from.podClasses[j] == it.c {
					leaving = append(leaving, podMove{pod: from.pods[j], c: it.c, from: from})
					k--
				}
			}
		}
		for s, to := range nodes {
			for k := want[s] - it.on[s]; k > 0 && len(leaving) > 0; k-- {
				m := leaving[0]
				leaving = leaving[1:]
				m.to = to
				moves = append(moves, m)
			}
		}
	}
	if len(moves) == 0 {
		return false
	}
	cheaper := func() bool {
		after := 0.0
		for _, x := range nodes {
			if len(x.pods) == 0 {
				continue
			}
			if t := sv.bestType(x); t >= 0 {
				after += x.pool.price(t, x.requests)
			} else {
				after += x.pool.price(x.natural, x.requests)
			}
		}
		return after < before-1e-9
	}
	if !sv.moveAll(nodes, moves, true, cheaper) {
		return false
	}
	for _, x := range nodes {
		sv.shrink(x)
	}
	return true
}

// podMove is one pod a local search sends from one planned node to
// another.
type podMove struct {
	pod      *corev1.Pod
	c        *podClass
	from, to *nodeState
	// anyZone lets the pod land in another zone than the one it leaves:
	// only for exchanges of twins (twins.go), which keep every count.
	anyZone bool
}

// moveAll takes every moving pod off its node, then places each on its
// destination as a placement is checked (growing the node's type only with
// grow), in the moves' order, keeping its zone (unless the move is anyZone) and capacity type. When a
// placement is refused or accept (if given) says no, everything goes back
// as it was. It reports whether the moves were made.
func (sv *solver) moveAll(nodes []*nodeState, moves []podMove, grow bool, accept func() bool) bool {
	// The undo keeps what each node's pods were only as where each moving
	// pod was: copying every node's pod list would cost a reservoir's few
	// hundred pods per exchange tried.
	marks := sv.moveMarks[:0]
	for _, n := range nodes {
		marks = append(marks, markOf(n))
	}
	at := sv.moveAt[:0]
	for _, m := range moves {
		at = append(at, sv.removePod(m.from, m.pod, m.c))
	}
	sv.moveMarks, sv.moveAt = marks, at
	done := 0
	ok := true
	for _, m := range moves {
		a := sv.attemptFrom(&sv.tries[0], m.c, m.from)
		if m.anyZone {
			a = sv.attemptAnyZone(&sv.tries[0], m.c, m.from)
		}
		t, v := sv.newNodeFit(a, m.to, grow)
		if v != fits || a.allowed == 0 || a.ctAllowed == 0 || t.zones != m.to.zones || t.cts != m.to.cts {
			ok = false
			break
		}
		sv.commitNew(m.c, m.to, t, m.pod)
		done++
	}
	if ok && (accept == nil || accept()) {
		return true
	}
	// Refused, or not accepted: every pod back where it was. The placed
	// pods are the last of their nodes' lists, taken off last first; the
	// moved pods go back in the reverse of the order they left, each to
	// the index it left from.
	for k := done - 1; k >= 0; k-- {
		sv.removePod(moves[k].to, moves[k].pod, moves[k].c)
	}
	for k := len(moves) - 1; k >= 0; k-- {
		m := moves[k]
		f := m.from
		sv.commitNew(m.c, f, trial{reqs: f.reqs, zones: f.zones, cts: f.cts, types: f.types, natural: f.natural}, m.pod)
		putBack(f, at[k])
	}
	for s, n := range nodes {
		marks[s].restore(n)
	}
	return false
}
