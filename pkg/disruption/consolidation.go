package disruption

import (
	"fmt"
	"math"
	"sort"
)

// DefaultMultiNodeMax bounds one multi-node command when Options does not:
// far above Karpenter's 100, as the budget is the real limit (10% of 2,000
// nodes is 200).
const DefaultMultiNodeMax = 1000

// DefaultMaxSingleNodeSimulations bounds how many candidates single-node
// consolidation simulates in one pass (Karpenter bounds it by a 3 minute
// timeout instead; a count keeps decisions deterministic).
const DefaultMaxSingleNodeSimulations = 8

// consolidationCandidates are the non-empty nodes consolidation may take,
// cheapest to disrupt per dollar first: a node whose few, unimportant pods
// hold up a large price is the best bargain.
func (e *engine) consolidationCandidates() []*candidate {
	var out []*candidate
	for _, c := range e.cands {
		if c.consolidatable && !c.empty() {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].cost/out[i].node.Price, out[j].cost/out[j].node.Price
		if a != b {
			return a < b
		}
		return out[i].node.Price > out[j].node.Price
	})
	return out
}

// multiNode finds the longest prefix of the ranked candidates (within each
// pool's Underutilized budget) that can go at once: deleted when their pods
// fit on the other nodes, or replaced by one strictly cheaper node. Two
// things make it scale where Karpenter's binary search over its first 100
// candidates does not: a capacity bound (the prefix's pods must fit in the
// room the other nodes leave plus one new node) caps the search without a
// simulation, and the bound is tried first, so a cluster with room to
// spare loses a whole budget's worth of nodes in one simulation. Only when
// that fails does it binary-search below the bound.
func (e *engine) multiNode() (*Command, error) {
	maxN := e.in.Options.MultiNodeMax
	if maxN <= 0 {
		maxN = DefaultMultiNodeMax
	}
	budget := newBudgetLeft(e.allowed, ReasonUnderutilized)
	var prefix []*candidate
	for _, c := range e.consolidationCandidates() {
		if len(prefix) == maxN {
			break
		}
		if budget.take(c.node.NodePool) {
			prefix = append(prefix, c)
		} else {
			e.note(c, "no disruption budget left for reason Underutilized in NodePool "+quote(c.node.NodePool))
		}
	}
	if len(prefix) < 2 {
		return nil, nil
	}
	capa := e.capacity()
	bound, need, room := 0, vec{}, capa.total.add(capa.largest)
	for i, c := range prefix {
		need, room = need.add(capa.demand(c)), room.sub(capa.spare[c.node.Name])
		if !need.fits(room) {
			break
		}
		bound = i + 1
	}
	if bound < 2 {
		return nil, nil
	}
	try := func(k int) (*Command, error) {
		r, err := e.sim.run(prefix[:k])
		if err != nil {
			return nil, err
		}
		cmd, _ := e.sim.command(r, MethodMultiNode, ReasonUnderutilized)
		return cmd, nil
	}
	best, err := try(bound)
	if err != nil || best != nil {
		return best, err
	}
	// Largest k in [2, bound) that works, assuming (as Karpenter does)
	// that a prefix that works makes its own prefixes work.
	lo, hi := 1, bound-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		cmd, err := try(mid)
		if err != nil {
			return nil, err
		}
		if cmd != nil {
			best, lo = cmd, mid
		} else {
			hi = mid - 1
		}
	}
	return best, nil
}

// singleNode tries the ranked candidates one at a time: delete, or replace
// by one strictly cheaper node. Candidates that cannot possibly succeed
// (their pods fit neither in the other nodes' room nor in any cheaper
// instance type) are ruled out without a simulation.
func (e *engine) singleNode() (*Command, error) {
	budget := newBudgetLeft(e.allowed, ReasonUnderutilized)
	capa := e.capacity()
	shapes := e.shapes()
	limit := DefaultMaxSingleNodeSimulations
	for _, c := range e.consolidationCandidates() {
		if budget[c.node.NodePool] <= 0 {
			e.note(c, "no disruption budget left for reason Underutilized in NodePool "+quote(c.node.NodePool))
			continue
		}
		need := capa.demand(c)
		deletable := need.fits(capa.total.sub(capa.spare[c.node.Name]))
		if !deletable && !shapes.cheaperFits(c, need, c.node.Price*(1-e.sim.minSavings)) {
			e.note(c, "can't replace with a cheaper node")
			continue
		}
		if limit == 0 {
			break
		}
		limit--
		r, err := e.sim.run([]*candidate{c})
		if err != nil {
			return nil, err
		}
		cmd, why := e.sim.command(r, MethodSingleNode, ReasonUnderutilized)
		if cmd != nil {
			return cmd, nil
		}
		e.note(c, why)
	}
	return nil, nil
}

// shapeIndex lists, per NodePool, its instance types' allocatable with the
// cheapest price its requirements allow, cheapest first: enough to tell
// quickly that no cheaper type could hold a node's pods.
type shapeIndex map[string][]shape

type shape struct {
	name  string
	alloc vec
	price float64
}

func (e *engine) shapes() shapeIndex {
	idx := shapeIndex{}
	for _, np := range e.in.Cluster.NodePools {
		var list []shape
		for _, it := range e.in.Cluster.InstanceTypes[np.Name] {
			if p, ok := offeringPrice(it, np.Requirements); ok {
				list = append(list, shape{it.Name, vecOf(it.Allocatable()), p})
			}
		}
		sort.SliceStable(list, func(i, j int) bool { return list[i].price < list[j].price })
		idx[np.Name] = list
	}
	return idx
}

// cheaperFits reports whether some instance type other than the
// candidate's own, priced at most limit in any pool, has room for need.
func (idx shapeIndex) cheaperFits(c *candidate, need vec, limit float64) bool {
	limit = math.Min(limit, math.Nextafter(c.node.Price, 0))
	for _, list := range idx {
		for _, s := range list {
			if s.price > limit {
				break
			}
			if s.name != c.node.InstanceType && need.fits(s.alloc) {
				return true
			}
		}
	}
	return false
}

// note records why consolidation passed over a candidate, unless an
// earlier method already said more.
func (e *engine) note(c *candidate, why string) {
	if v := &e.verdicts[c.idx]; v.Unconsolidatable == "" {
		v.Unconsolidatable = why
	}
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
