package disruption

import (
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// defaultBudget is the NodePool budget the API server defaults to; an
// in-memory NodePool without budgets (a dump that lost the default) gets it
// too, so a missing field never means "disrupt everything".
var defaultBudget = []v1.Budget{{Nodes: "10%"}}

// CountsTowardBudget reports whether n is one of the nodes its NodePool's
// budget is a share of: a pool's initialised NodeClaims.
func (n *Node) CountsTowardBudget() bool {
	return n.NodePool != "" && n.NodeClaim != nil && n.Initialized
}

// ConsumesBudget reports whether n, counted toward its pool's budget,
// already uses a part of it: NotReady, deleting, or being disrupted.
func (n *Node) ConsumesBudget() bool {
	return n.NotReady || n.Deleting || n.Disrupting
}

// AllowedDisruptions is Karpenter's budget mapping: per NodePool and reason,
// the budget applied to the pool's initialised nodes, less the nodes that
// already consume it (NotReady, deleting, or being disrupted), floored at 0.
func AllowedDisruptions(in *Input) map[string]map[Reason]int {
	total := map[string]int{}
	busy := map[string]int{}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		if !n.CountsTowardBudget() {
			continue
		}
		total[n.NodePool]++
		if n.ConsumesBudget() {
			busy[n.NodePool]++
		}
	}
	out := make(map[string]map[Reason]int, len(in.NodePools))
	for name, np := range in.NodePools {
		if np == nil {
			continue
		}
		if len(np.Spec.Disruption.Budgets) == 0 {
			np = np.DeepCopy()
			np.Spec.Disruption.Budgets = defaultBudget
		}
		out[name] = make(map[Reason]int, len(v1.DisruptionReasons))
		for _, r := range v1.DisruptionReasons {
			out[name][r] = max(np.AllowedDisruptions(in.Now, total[name], r)-busy[name], 0)
		}
	}
	return out
}

// budgetLeft tracks what a command may still take from each pool's budget
// for one reason while it is being built.
type budgetLeft map[string]int

func newBudgetLeft(allowed map[string]map[Reason]int, r Reason) budgetLeft {
	b := budgetLeft{}
	for pool, byReason := range allowed {
		b[pool] = byReason[r]
	}
	return b
}

// take uses one node of pool's budget; false when none is left.
func (b budgetLeft) take(pool string) bool {
	if b[pool] <= 0 {
		return false
	}
	b[pool]--
	return true
}
