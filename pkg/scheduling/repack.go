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
			for _, n := range sv.repackPartners(d, units[d.pool.idx], &rp) {
				steps, ok := sv.repackPair(d, n, &rp, min(budget, repackPairSteps))
				budget -= steps + 1
				if ok {
					gained = true
					break
				}
				if budget <= 0 {
					return
				}
			}
		}
		if !gained {
			return
		}
	}
}

// Bounds of repack's work: search steps per pending pod in all, per pair
// of nodes, passes over the donors, partner nodes looked at and searched
// per donor, and pods on a node (larger nodes are left to rebalance and
// swap).
const (
	repackStepsPerPod = 400
	repackPairSteps   = 4000
	repackPasses      = 2
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
// together is than their two prices, among a window of repackScan nodes
// of d's zone list.
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
	dPrice := d.pool.price(d.natural, d.requests)
	type cand struct {
		n    *nodeState
		gain float64
	}
	var top [repackPartnersMax]cand
	sum := rp.sum(len(d.requests))
	for k := 0; k < count; k++ {
		n := list[(first+k)%len(list)]
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
	// A split saves at least the cheapest type's price step; pairs whose
	// bound leaves less are not worth a search.
	floor := d.pool.types[0].minPrice
	out := rp.partners[:0]
	for _, c := range top {
		if c.n != nil && c.gain > floor && sv.merge(d.reqs, c.n.reqs) != nil {
			out = append(out, c.n)
		}
	}
	rp.partners = out
	return out
}

// repacker is repack's scratch, reused from pair to pair.
type repacker struct {
	start    int
	partners []*nodeState
	scratch  resVec
	items    []rpItem
	groups   []*topoGroup
	// The search: partial requests of each side, hostname counts per side
	// and group, the assignment being tried and the best found.
	need  [2]resVec
	match [2][]int32
	owner [2][]int32
	limit [2][]int32 // anti-affinity: most matching pods a side with owners may hold
	x     []int
	bestX []int
	best  float64
	steps int
	max   int
	hint  [2]int
	types bitset
	sv    *solver
	pool  *poolT
	zones uint64
	cts   uint32
}

func (rp *repacker) sum(n int) resVec {
	if len(rp.scratch) != n {
		rp.scratch = make(resVec, n)
	}
	return rp.scratch
}

// rpItem is the pods of one class that may move between the two nodes:
// how many, how many of them were on the donor, and per hostname group
// whether each selects or owns it.
type rpItem struct {
	c      *podClass
	count  int
	onD    int
	weight float64
	sel    []int32 // per group of repacker.groups: 1 when the class counts for it
	own    []int32 // per group: 1 when the class owns a hostname spread of it
}

// fixedIn reports whether pods of class c stay on their node during a
// repack of nodes with the given zones and capacity types.
func (sv *solver) fixedIn(c *podClass, zones uint64, cts uint32) bool {
	cb := c.base
	if !sv.movable(c) || len(cb.hostPorts) > 0 || len(cb.devices) > 0 {
		return true
	}
	if (cb.zoneRelevant && bits.OnesCount64(zones) != 1) || (cb.ctRelevant && bits.OnesCount32(cts) != 1) {
		return true
	}
	for _, g := range c.own {
		if g.kind == kindAnti && !g.preferred && g.key == corev1.LabelHostname {
			return true
		}
	}
	return false
}

// repackPair searches the splits of d's and n's movable pods between them
// and makes the cheapest if it saves money. It returns the search steps
// used and whether the two nodes now cost less.
func (sv *solver) repackPair(d, n *nodeState, rp *repacker, maxSteps int) (int, bool) {
	p := d.pool
	before := p.price(d.natural, d.requests) + p.price(n.natural, n.requests)
	rp.sv, rp.pool, rp.zones, rp.cts = sv, p, d.zones, d.cts
	rp.items = rp.items[:0]
	rp.groups = rp.groups[:0]
	dims := len(d.requests)
	for s := range rp.need {
		if len(rp.need[s]) != dims {
			rp.need[s] = make(resVec, dims)
		}
	}
	copy(rp.need[0], d.requests)
	copy(rp.need[1], n.requests)
	// Movable pods leave the sides' requests; the rest stay.
	for s, node := range [2]*nodeState{d, n} {
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
				// Reuse the item's buffers from earlier pairs.
				k = len(rp.items)
				if k < cap(rp.items) {
					rp.items = rp.items[:k+1]
					it := &rp.items[k]
					it.c, it.count, it.onD, it.weight = c, 0, 0, 0
				} else {
					rp.items = append(rp.items, rpItem{c: c})
				}
			}
			rp.items[k].count++
			if s == 0 {
				rp.items[k].onD++
			}
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
		for _, x := range rp.groups {
			if x == g {
				return true
			}
		}
		if g.kind == kindSpread && sv.spreadCounts(g, d) != sv.spreadCounts(g, n) {
			return false
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
		for s, node := range [2]*nodeState{d, n} {
			rp.match[s][gi] = node.hostMatch(g)
			rp.owner[s][gi] = node.hostOwners(g)
		}
	}
	for i := range rp.items {
		it := &rp.items[i]
		it.sel = resize(it.sel, ng)
		it.own = resize(it.own, ng)
		for gi, g := range rp.groups {
			if g.selects(it.c.base.ns, it.c.base.labels) && hasGroup(it.c.base.selectedBy, g) {
				it.sel[gi] = 1
			}
			if g.kind == kindSpread && hasGroup(it.c.own, g) {
				it.own[gi] = 1
			}
		}
		// Take the moving pods out of the sides' counts.
		for gi := range rp.groups {
			rp.match[0][gi] -= int32(it.onD) * it.sel[gi]
			rp.match[1][gi] -= int32(it.count-it.onD) * it.sel[gi]
			rp.owner[0][gi] -= int32(it.onD) * it.own[gi]
			rp.owner[1][gi] -= int32(it.count-it.onD) * it.own[gi]
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
	slices.SortStableFunc(rp.items, func(a, b rpItem) int { return cmp.Compare(b.weight, a.weight) })
	if len(rp.x) < len(rp.items) {
		rp.x = make([]int, len(rp.items))
		rp.bestX = make([]int, len(rp.items))
	}
	both := sv.typesFor(p, sv.merge(d.reqs, n.reqs))
	if len(rp.types) != len(both) {
		rp.types = make(bitset, len(both))
	}
	for i := range both {
		rp.types[i] = both[i] & d.types[i] & n.types[i]
	}
	rp.best = before - 1e-9
	rp.steps, rp.max = 0, maxSteps
	found := false
	for s := range rp.hint {
		rp.hint[s] = 0
		if !p.bursty {
			if t, _ := rp.cheapest(rp.need[s], 0); t >= 0 {
				rp.hint[s] = t
			}
		}
	}
	rp.search(0, &found)
	if !found {
		return rp.steps, false
	}
	return rp.steps, sv.applyRepack(d, n, rp, before)
}

func resize(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
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

// cheapest is the cheapest type (and its price) among the pair's types,
// offered in its zones and capacity types, that holds need; -1 when none.
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

// search is the branch and bound over the items: item i's pods split j to
// the donor and the rest to the partner; the partial sides' price is a
// lower bound of any completion's.
func (rp *repacker) search(i int, found *bool) {
	rp.steps++
	cost := 0.0
	for s := range rp.need {
		t, price := rp.cheapest(rp.need[s], rp.hint[s])
		if t < 0 && price != 0 {
			return
		}
		cost += price
	}
	if cost >= rp.best {
		return
	}
	if i == len(rp.items) {
		rp.best = cost
		copy(rp.bestX, rp.x[:len(rp.items)])
		*found = true
		return
	}
	it := &rp.items[i]
	// The original split first, then outward from it.
	for delta := 0; ; delta++ {
		up, down := it.onD+delta, it.onD-delta
		if up > it.count && down < 0 {
			return
		}
		for k, j := range [2]int{up, down} {
			if j < 0 || j > it.count || (delta == 0 && k == 1) {
				continue
			}
			if rp.steps >= rp.max {
				return
			}
			if rp.add(it, j, 1) {
				rp.x[i] = j
				rp.search(i+1, found)
			}
			rp.add(it, j, -1)
		}
	}
}

// add puts j of the item's pods on the donor side and the rest on the
// partner's (sign -1 takes them off again) and reports whether both sides'
// hostname terms still hold.
func (rp *repacker) add(it *rpItem, j, sign int) bool {
	cnt := [2]int64{int64(j), int64(it.count - j)}
	for s := range rp.need {
		if cnt[s] == 0 {
			continue
		}
		for r, q := range it.c.base.req {
			rp.need[s][r] += int64(sign) * cnt[s] * q
		}
	}
	ok := true
	for gi, g := range rp.groups {
		for s := range rp.need {
			rp.match[s][gi] += int32(sign) * int32(cnt[s]) * it.sel[gi]
			rp.owner[s][gi] += int32(sign) * int32(cnt[s]) * it.own[gi]
			if rp.owner[s][gi] > 0 && (rp.match[s][gi] > rp.limit[s][gi] || (g.kind == kindSpread && rp.match[s][gi] > g.maxSkew)) {
				ok = false
			}
		}
	}
	return ok
}

// applyRepack moves the pods the best split sends across, each checked as
// a placement, and keeps the result only when the two nodes cost less than
// before; otherwise it puts everything back.
func (sv *solver) applyRepack(d, n *nodeState, rp *repacker, before float64) bool {
	md, mn := markOf(d), markOf(n)
	md.pods, md.podCls = append([]*corev1.Pod(nil), d.pods...), append([]*podClass(nil), d.podClasses...)
	mn.pods, mn.podCls = append([]*corev1.Pod(nil), n.pods...), append([]*podClass(nil), n.podClasses...)
	type moved struct {
		pod      *corev1.Pod
		c        *podClass
		from, to *nodeState
	}
	var moves []moved
	for i := range rp.items {
		it := &rp.items[i]
		from, to, k := d, n, it.onD-rp.bestX[i]
		if k < 0 {
			from, to, k = n, d, -k
		}
		for j := len(from.pods) - 1; j >= 0 && k > 0; j-- {
			if from.podClasses[j] == it.c {
				moves = append(moves, moved{pod: from.pods[j], c: it.c, from: from, to: to})
				k--
			}
		}
	}
	if len(moves) == 0 {
		return false
	}
	for _, m := range moves {
		sv.removePod(m.from, m.pod, m.c)
	}
	sort.SliceStable(moves, func(a, b int) bool { return rp.weightOf(moves[a].c) > rp.weightOf(moves[b].c) })
	done := 0
	ok := true
	for _, m := range moves {
		a := sv.newAttempt(m.c)
		if m.c.base.zoneRelevant {
			a.allowed &= m.from.zones
			a.preferred &= m.from.zones
		}
		if m.c.base.ctRelevant {
			a.ctAllowed &= m.from.cts
		}
		t, v := sv.newNodeFit(a, m.to, true)
		if v != fits || a.allowed == 0 || a.ctAllowed == 0 || t.zones != m.to.zones || t.cts != m.to.cts {
			ok = false
			break
		}
		sv.commitNew(m.c, m.to, t, m.pod)
		done++
	}
	if ok {
		price := func(x *nodeState) float64 {
			if len(x.pods) == 0 {
				return 0
			}
			if t := sv.bestType(x); t >= 0 {
				return x.pool.price(t, x.requests)
			}
			return x.pool.price(x.natural, x.requests)
		}
		if price(d)+price(n) < before-1e-9 {
			sv.shrink(d)
			sv.shrink(n)
			return true
		}
	}
	// Not cheaper, or refused: every pod back where it was.
	for k := done - 1; k >= 0; k-- {
		sv.removePod(moves[k].to, moves[k].pod, moves[k].c)
	}
	for _, m := range moves {
		f := m.from
		sv.commitNew(m.c, f, trial{reqs: f.reqs, zones: f.zones, cts: f.cts, types: f.types, natural: f.natural}, m.pod)
	}
	md.restore(d)
	mn.restore(n)
	return false
}

func (rp *repacker) weightOf(c *podClass) float64 {
	for i := range rp.items {
		if rp.items[i].c == c {
			return rp.items[i].weight
		}
	}
	return 0
}
