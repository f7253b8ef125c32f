package disruption

import (
	"sort"
)

// drift replaces drifted nodes, as Karpenter does: every empty drifted node
// within the Drifted budget in one command (nothing to simulate), else the
// node that drifted first whose pods the simulation can place, with as many
// replacements as they need and no price test (drift is about correctness,
// not cost), its pods' preferences relaxed as provisioning relaxes them. Drift is not validated after a wait, so Validate only
// re-checks it when asked.
func (e *engine) drift() (*Command, error) {
	var drifted []*candidate
	for _, c := range e.cands {
		if c.drift {
			drifted = append(drifted, c)
		}
	}
	if len(drifted) == 0 {
		return nil, nil
	}
	sort.SliceStable(drifted, func(i, j int) bool { return drifted[i].driftAt.Before(drifted[j].driftAt) })
	budget := newBudgetLeft(e.allowed, ReasonDrifted)
	empty := &Command{Method: MethodDrift, Reason: ReasonDrifted}
	for _, c := range drifted {
		if c.empty() && budget.take(c.node.NodePool) {
			empty.Candidates = append(empty.Candidates, c.node.Name)
			empty.SavingsPerHour += c.node.Price
		}
	}
	if len(empty.Candidates) > 0 {
		return empty, nil
	}
	for _, c := range drifted {
		if budget[c.node.NodePool] <= 0 {
			e.verdicts[c.idx].Drift = noBudget(c.node.NodePool, ReasonDrifted)
			continue
		}
		r, err := e.sim.runRelaxed([]*candidate{c})
		if err != nil {
			return nil, err
		}
		cmd, why := e.sim.command(r, MethodDrift, ReasonDrifted)
		if cmd != nil {
			return cmd, nil
		}
		e.verdicts[c.idx].Drift = why
	}
	return nil, nil
}
