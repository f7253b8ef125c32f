package disruption

import (
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
)

// balancedK is Karpenter's Balanced policy constant: a consolidation is
// approved when its share of the NodePool's savings is at least 1/k of its
// share of the NodePool's disruption.
const balancedK = 2

// poolTotals are, per NodePool, its nodes' price and disruption cost (1
// per node plus its pods' eviction costs), the denominators of the
// Balanced score.
type poolTotals struct {
	cost, disruption map[string]float64
}

func newPoolTotals(in *Input) poolTotals {
	t := poolTotals{cost: map[string]float64{}, disruption: map[string]float64{}}
	balanced := false
	for _, np := range in.NodePools {
		balanced = balanced || (np != nil && np.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyBalanced)
	}
	if !balanced {
		return t
	}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if n.NodePool == "" || !n.Initialized {
			continue
		}
		t.cost[n.NodePool] += n.Price
		t.disruption[n.NodePool] += nodeDisruption(n, in)
	}
	return t
}

// nodeDisruption is a node's disruption cost as the Balanced score counts
// it: 1 for the node, plus its reschedulable pods' eviction costs, times
// its remaining lifetime share.
func nodeDisruption(n *Node, in *Input) float64 {
	cost := 0.0
	for _, p := range n.Pods {
		if pods.IsReschedulable(p) {
			cost += evictionCost(p)
		}
	}
	return (1 + cost) * lifetimeRemaining(n.NodeClaim, in.Now)
}

// balanced checks a consolidation of cands against the Balanced policy of
// their NodePools; replacement is the new nodes' $/h attributed to each
// candidate. Zero when every Balanced pool approves.
func (s *simulator) balanced(cands []*candidate, replacement map[string]float64) Why {
	type share struct{ savings, disruption float64 }
	byPool := map[string]*share{}
	for _, c := range cands {
		if c.pool.Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyBalanced {
			continue
		}
		sh := byPool[c.node.NodePool]
		if sh == nil {
			sh = &share{}
			byPool[c.node.NodePool] = sh
		}
		sh.savings += c.node.Price - replacement[c.node.Name]
		sh.disruption += lifetimeRemaining(c.node.NodeClaim, s.in.Now) + c.cost
	}
	for pool, sh := range byPool {
		cost, disruption := s.totals.cost[pool], s.totals.disruption[pool]
		if cost <= 0 || disruption <= 0 {
			continue
		}
		savings, disrupted := sh.savings/cost, sh.disruption/disruption
		if disrupted > 0 && savings*balancedK < disrupted {
			return Why{Kind: WhyBalanced, NodePool: pool, Savings: savings, Disruption: disrupted}
		}
	}
	return Why{}
}
