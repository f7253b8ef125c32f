package disruption

import "sort"

// emptiness deletes, in one command, every consolidatable node that runs
// no pod needing another node, as far as each pool's Empty budget goes:
// nothing has to be simulated, so there is no reason to take them one at a
// time. When a budget cannot take them all, the dearest go first.
func (e *engine) emptiness() (*Command, error) {
	var empty []*candidate
	for _, c := range e.cands {
		if c.consolidatable && c.empty() {
			empty = append(empty, c)
		}
	}
	sort.SliceStable(empty, func(i, j int) bool { return empty[i].node.Price > empty[j].node.Price })
	budget := newBudgetLeft(e.allowed, ReasonEmpty)
	cmd := &Command{Method: MethodEmptiness, Reason: ReasonEmpty}
	for _, c := range empty {
		if !budget.take(c.node.NodePool) {
			e.note(c, noBudget(c.node.NodePool, ReasonEmpty))
			continue
		}
		cmd.Candidates = append(cmd.Candidates, c.node.Name)
		cmd.SavingsPerHour += c.node.Price
	}
	if len(cmd.Candidates) == 0 {
		return nil, nil
	}
	return cmd, nil
}
