package disruption

import (
	"math"
	"sort"
)

// DefaultMultiNodeMax bounds one multi-node command when Options does not:
// far above Karpenter's 100, as the budget is the real limit (10% of 2,000
// nodes is 200). The disruption controller bounds what a command launches:
// one that would launch more than its MaxReplacements (100) is decided
// again with MultiNodeMax at that.
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

// maxRepackSimulations bounds the simulations of one multi-node search.
const maxRepackSimulations = 4

// simulations is what a search may spend: n, or less when the pass has a
// smaller allowance left (a composed step, see compose.go).
func (e *engine) simulations(n int) int {
	if e.simLimit > 0 {
		return max(min(n, e.simLimit-e.sim.solves), 0)
	}
	return n
}

// multiNode takes as many candidates as the Underutilized budgets allow,
// those an estimate says would save most first (see estimator), and
// simulates removing them all at once: their pods go to the other nodes'
// free room first and the rest to new nodes the solver packs. The set is a command when every pod finds a
// place and the new nodes, no more than the candidates, cost at least
// MinSavingsFraction less. When it is not, the candidates whose pods found
// no place or that do not pay for their share of the new nodes are peeled
// off and the rest simulated again, a few times at most.
//
// Karpenter binary-searches prefixes of its first 100 candidates for a
// delete or a replacement by one node, a simulation per step; this takes
// budget-sized sets (200 nodes at 2,000) in one to four simulations, and
// replacing N nodes by M < N, or N smaller ones, batches what Karpenter
// does one node per command.
func (e *engine) multiNode() (*Command, error) {
	maxN := e.in.Options.MultiNodeMax
	if maxN <= 0 {
		maxN = DefaultMultiNodeMax
	}
	budget := newBudgetLeft(e.allowed, ReasonUnderutilized)
	est := e.estimator()
	type ranked struct {
		c       *candidate
		savings float64
	}
	var list []ranked
	for _, c := range e.consolidationCandidates() {
		if s := est.savings(c); s >= e.sim.minSavings*c.node.Price {
			list = append(list, ranked{c, s})
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].savings > list[j].savings })
	var set []*candidate
	for _, r := range list {
		if len(set) == maxN {
			break
		}
		if budget.take(r.c.node.NodePool) {
			set = append(set, r.c)
		}
	}
	for range e.simulations(maxRepackSimulations) {
		if len(set) < 2 {
			return nil, nil
		}
		r, err := e.sim.run(set)
		if err != nil {
			return nil, err
		}
		if cmd, _ := e.sim.command(r, MethodMultiNode, ReasonUnderutilized); cmd != nil {
			return cmd, nil
		}
		kept := set[:0:0]
		for _, c := range set {
			if !r.failed[c.node.Name] && c.node.Price-r.attributed[c.node.Name] >= e.sim.minSavings*c.node.Price {
				kept = append(kept, c)
			}
		}
		if len(kept) == len(set) {
			// Everyone pays for itself yet the whole does not work (more
			// new nodes than candidates, or options too dear once narrowed):
			// drop the half that saves least.
			sort.SliceStable(kept, func(i, j int) bool {
				return 1-r.attributed[kept[i].node.Name]/kept[i].node.Price > 1-r.attributed[kept[j].node.Name]/kept[j].node.Price
			})
			kept = kept[:len(kept)/2]
		}
		set = kept
	}
	return nil, nil
}

// singleNode tries the ranked candidates one at a time: delete, or replace
// by one strictly cheaper node. Two filters rule candidates out without a
// simulation: the estimator's first-fit (as multi-node uses it), a
// heuristic that may pass over a candidate a simulation would have
// consolidated, in exchange for a cheap pass that finds nothing; and the
// necessary conditions (their pods' total fits neither the other nodes'
// room nor any cheaper instance type), which never do.
func (e *engine) singleNode() (*Command, error) {
	budget := newBudgetLeft(e.allowed, ReasonUnderutilized)
	capa := e.capacity()
	est := e.estimator()
	shapes := est.shapes
	cands := e.consolidationCandidates()
	savings := make(map[*candidate]float64, len(cands))
	for _, c := range cands {
		savings[c] = est.savings(c)
	}
	// Likeliest savings per unit of disruption first; the rest keep
	// Karpenter's order (cheapest to disrupt per dollar).
	sort.SliceStable(cands, func(i, j int) bool {
		return savings[cands[i]]/(cands[i].cost+1) > savings[cands[j]]/(cands[j].cost+1)
	})
	limit := e.simulations(DefaultMaxSingleNodeSimulations)
	for _, c := range cands {
		if budget[c.node.NodePool] <= 0 {
			e.note(c, noBudget(c.node.NodePool, ReasonUnderutilized))
			continue
		}
		// Multi-node consolidation's filter: a candidate whose pods
		// neither first-fit into the other nodes' room nor fit a type
		// cheaper by the minimum share is not simulated. The simulations
		// go to likelier candidates, and a pass that finds nothing (it
		// repeats every few seconds) costs only theirs.
		if savings[c] < e.sim.minSavings*c.node.Price {
			e.note(c, Why{Kind: WhyNotCheaper})
			continue
		}
		// Necessary conditions: the pods fit in the other nodes' room
		// (delete), or what the room cannot hold fits a cheaper type.
		need, room := capa.demand(c), capa.total.sub(capa.spare[c.node.Name])
		rest := need.sub(room)
		for i := range rest {
			rest[i] = max(rest[i], 0)
		}
		deletable := need.fits(room)
		if !deletable && !shapes.cheaperFits(c, rest, c.node.Price*(1-e.sim.minSavings)) {
			e.note(c, Why{Kind: WhyNotCheaper})
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
			// Priced before credits (no requests): a floor on what a
			// node of the type costs.
			if p, ok := offeringPrice(it, np.Requirements, 0, e.in.Options.Scheduling.ListPrices); ok {
				list = append(list, shape{it.Name, vecOf(it.Allocatable()), p})
			}
		}
		sort.SliceStable(list, func(i, j int) bool { return list[i].price < list[j].price })
		idx[np.Name] = list
	}
	return idx
}

// cheapestFit is the price of the cheapest instance type other than the
// candidate's own, in any pool, with room for need.
func (idx shapeIndex) cheapestFit(c *candidate, need vec) (float64, bool) {
	best, found := 0.0, false
	for _, list := range idx {
		for _, s := range list {
			if found && s.price >= best {
				break
			}
			if s.name != c.node.InstanceType && need.fits(s.alloc) {
				best, found = s.price, true
				break
			}
		}
	}
	return best, found
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
func (e *engine) note(c *candidate, why Why) {
	if v := &e.verdicts[c.idx]; v.Unconsolidatable.IsZero() {
		v.Unconsolidatable = why
	}
}
