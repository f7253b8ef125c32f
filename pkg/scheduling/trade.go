package scheduling

import (
	"math/bits"

	corev1 "k8s.io/api/core/v1"
)

// trade is a local search on the plan Solve keeps, for a node that stands
// just above a cheaper type while its pods are each larger than the room
// any other node idles: a node of 2 and 4 GiB pods 10 MiB over a type,
// beside nodes that each idle less than 2 GiB. No move or exchange of one
// pod for one lowers it, but one of its pods can go to another node of
// its zone and capacity type in return for several smaller pods of that
// node that free at least the room the pod needs there and carry less
// than the pod did: the node drops a type, the other keeps its own. For
// each planned node, dearest first, and each of its pods whose leaving
// would let it drop, the other nodes' pods are searched by request shape
// (depth first, up to tradeMaxPods of them, never more than the cheaper
// types hold) for such a set; the pods move as placements are checked
// (both nodes are in one zone, so no zone's count changes), no node grows,
// and the trade is kept only when the node then drops, so the pass never
// makes a plan dearer. The work is bounded by tradeChecksPerPod search
// steps per pending pod.
func (sv *solver) trade() {
	if len(sv.newNodes) < 2 {
		return
	}
	tr := &sv.trader
	budget := tradeChecksPerPod * (len(sv.snap.Pods) + 1)
	for _, n := range sv.dearestFirst() {
		if budget <= 0 {
			return
		}
		if n.pool.bursty || bits.OnesCount64(n.zones) != 1 {
			continue
		}
		for budget > 0 && len(n.pods) > 0 && n.natural >= 0 {
			ok, used := sv.tradeFrom(n, tr, budget)
			budget -= used
			if !ok {
				break
			}
		}
	}
}

// Bounds of trade's work: search steps per pending pod in all (a pod
// weighed against a node, or a set of pods extended by one), the pods a
// node takes for the one it gives, and a placement checked counts
// tradePlacementCost steps.
const (
	tradeChecksPerPod  = 30
	tradeMaxPods       = 6
	tradePlacementCost = 20
)

// trader is trade's scratch, reused from node to node.
type trader struct {
	cands  []*podClass
	rest   resVec // the node's requests without the pod it gives
	upper  resVec // the most the pods it takes may add up to
	lower  resVec // the least they must free on the other node
	cur    resVec
	shapes []tradeShape
	pick   []int // per shape, how many are taken
	steps  int
	moves  []podMove
	pair   [2]*nodeState
}

// tradeShape is the pods of one request vector on the other node that may
// move (their indices in its pods).
type tradeShape struct {
	req resVec
	at  []int
}

// tradeFrom makes one trade that lets node n drop to a cheaper type, if it
// finds one within the budget. It reports whether it did and the steps it
// used.
func (sv *solver) tradeFrom(n *nodeState, tr *trader, budget int) (bool, int) {
	p := n.pool
	price := p.price(n.natural, n.requests)
	tr.cands = tr.cands[:0]
	used := 0
	dims := len(n.requests)
	tr.rest, tr.upper, tr.lower, tr.cur = growVec(tr.rest, dims), growVec(tr.upper, dims), growVec(tr.lower, dims), growVec(tr.cur, dims)
	for _, c := range n.podClasses {
		if sameShape(tr.cands, c) || sv.fixedIn(c, n.zones, n.cts) {
			continue
		}
		used++
		for r := range tr.rest {
			tr.rest[r] = n.requests[r] - c.base.req[r]
		}
		if sv.cheaperFits(n, tr.rest, price) {
			tr.cands = append(tr.cands, c)
		}
	}
	if len(tr.cands) == 0 {
		return false, used
	}
	accept := func() bool {
		t := sv.bestType(n)
		return t >= 0 && p.price(t, n.requests) < price-1e-9
	}
	zone := bits.TrailingZeros64(n.zones)
	for _, c := range tr.cands {
		x := lastOf(n, c)
		// The most the taken pods may add: the component-wise largest
		// room of the cheaper types, less what stays.
		for r := range tr.rest {
			tr.rest[r] = n.requests[r] - c.base.req[r]
			tr.upper[r] = -1
		}
		for i, t := range p.types {
			if t.minPrice >= price-1e-9 {
				break
			}
			if !n.types.has(i) || !t.offered(n.zones, n.cts) {
				continue
			}
			for r := range tr.upper {
				tr.upper[r] = max(tr.upper[r], p.effAlloc[i][r]-tr.rest[r])
			}
		}
		for _, s := range sv.lists[1+zone] {
			if used >= budget {
				return false, used
			}
			if s == n || s.pool != p || s.zones != n.zones || s.cts != n.cts || s.natural < 0 || len(s.pods) < 2 {
				continue
			}
			used++
			alloc := s.pool.effAlloc[s.natural]
			possible := true
			for r := range tr.lower {
				tr.lower[r] = s.requests[r] + c.base.req[r] - alloc[r]
				if tr.lower[r] > tr.upper[r] {
					possible = false
				}
			}
			if !possible || !coversExcess(s.requests, tr.lower) {
				continue
			}
			sv.tradeShapes(s, tr)
			used += len(s.pods)
			clear(tr.cur)
			tr.pick = resize(tr.pick, len(tr.shapes))
			clear(tr.pick)
			tr.steps = min(tradeSearchSteps, budget-used)
			found := sv.tradeSearch(n, tr, 0, 0, price)
			used += min(tradeSearchSteps, budget-used) - tr.steps
			if !found {
				continue
			}
			tr.moves = tr.moves[:0]
			for k, sh := range tr.shapes {
				for _, j := range sh.at[:tr.pick[k]] {
					tr.moves = append(tr.moves, podMove{pod: s.pods[j], c: s.podClasses[j], from: s, to: n})
				}
			}
			tr.moves = append(tr.moves, podMove{pod: x, c: c, from: n, to: s})
			used += tradePlacementCost
			tr.pair = [2]*nodeState{n, s}
			if sv.moveAll(tr.pair[:], tr.moves, false, accept) {
				sv.shrink(n)
				sv.shrink(s)
				return true, used
			}
		}
	}
	return false, used
}

// tradeSearchSteps bounds one search over a node's shapes.
const tradeSearchSteps = 400

// tradeShapes groups node s's movable pods by request vector.
func (sv *solver) tradeShapes(s *nodeState, tr *trader) {
	for i := range tr.shapes {
		tr.shapes[i].at = tr.shapes[i].at[:0]
	}
	k := 0
	for j, c := range s.podClasses {
		if sv.fixedIn(c, s.zones, s.cts) {
			continue
		}
		found := false
		for i := range k {
			if sameVec(tr.shapes[i].req, c.base.req) {
				tr.shapes[i].at = append(tr.shapes[i].at, j)
				found = true
				break
			}
		}
		if found {
			continue
		}
		if k == len(tr.shapes) {
			tr.shapes = append(tr.shapes, tradeShape{})
		}
		tr.shapes[k].req = c.base.req
		tr.shapes[k].at = append(tr.shapes[k].at[:0], j)
		k++
	}
	tr.shapes = tr.shapes[:k]
}

func sameVec(a, b resVec) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// tradeSearch extends the taken set (tr.cur, tr.pick) with shapes from
// index i on, depth pods taken so far, until it frees tr.lower on the
// other node and node n, without the pod it gives, fits a type cheaper
// than price.
func (sv *solver) tradeSearch(n *nodeState, tr *trader, i, depth int, price float64) bool {
	if tr.steps <= 0 {
		return false
	}
	tr.steps--
	if coversExcess(tr.cur, tr.lower) {
		for r := range tr.cur {
			tr.cur[r] += tr.rest[r]
		}
		ok := sv.cheaperFits(n, tr.cur, price)
		for r := range tr.cur {
			tr.cur[r] -= tr.rest[r]
		}
		if ok {
			return true
		}
	}
	if depth == tradeMaxPods {
		return false
	}
	for k := i; k < len(tr.shapes); k++ {
		sh := &tr.shapes[k]
		if tr.pick[k] == len(sh.at) || !fitsAdd(tr.cur, sh.req, tr.upper) {
			continue
		}
		tr.cur.add(sh.req)
		tr.pick[k]++
		if sv.tradeSearch(n, tr, k, depth+1, price) {
			return true
		}
		tr.pick[k]--
		for r := range tr.cur {
			tr.cur[r] -= sh.req[r]
		}
		if tr.steps <= 0 {
			return false
		}
	}
	return false
}

// cheaperFits reports whether planned node n's pool has a type cheaper
// than price that n may take and that holds need (resources and
// offerings: moveAll's accept checks the rest).
func (sv *solver) cheaperFits(n *nodeState, need resVec, price float64) bool {
	p := n.pool
	for i, t := range p.types {
		if t.minPrice >= price-1e-9 {
			break
		}
		if n.types.has(i) && need.fits(p.effAlloc[i]) && t.offered(n.zones, n.cts) && p.price(i, need) < price-1e-9 {
			return true
		}
	}
	return false
}

// sameShape reports whether a class in cs requests what c does: giving
// either pod is the same search.
func sameShape(cs []*podClass, c *podClass) bool {
	for _, x := range cs {
		if sameVec(x.base.req, c.base.req) {
			return true
		}
	}
	return false
}

// coversExcess reports whether a pod requesting req, leaving a node, makes
// up for what the node lacks (excess, positive where it lacks).
func coversExcess(req, excess resVec) bool {
	for r, e := range excess {
		if e > 0 && req[r] < e {
			return false
		}
	}
	return true
}

// lastOf is the last of node n's pods placed with class c.
func lastOf(n *nodeState, c *podClass) *corev1.Pod {
	for i := len(n.pods) - 1; i >= 0; i-- {
		if n.podClasses[i] == c {
			return n.pods[i]
		}
	}
	return nil
}

// growVec is v (scratch) with length n, reallocated only when too short.
func growVec(v resVec, n int) resVec {
	if cap(v) < n {
		return make(resVec, n)
	}
	return v[:n]
}
