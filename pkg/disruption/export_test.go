package disruption

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// SimulateEach simulates removing each consolidation candidate alone, on
// the reduced snapshot or the whole one, and says per node what the
// simulation found: "delete", "replace N" or "fail".
func SimulateEach(in *Input, full bool) (map[string]string, error) {
	e, err := newEngine(in)
	if err != nil {
		return nil, err
	}
	e.sim.full = full
	out := map[string]string{}
	for _, c := range e.consolidationCandidates() {
		r, err := e.sim.run([]*candidate{c})
		if err != nil {
			return nil, err
		}
		switch {
		case !r.reason.IsZero():
			out[c.node.Name] = "fail"
		case len(r.replacements) == 0:
			out[c.node.Name] = "delete"
		default:
			out[c.node.Name] = fmt.Sprintf("replace %d", len(r.replacements))
		}
	}
	return out, nil
}

// BestCommand simulates every non-empty subset of the consolidation
// candidates (at most 10 of them) and returns the largest saving any
// consolidation command could have, as an oracle for the searches.
func BestCommand(in *Input) (float64, error) {
	e, err := newEngine(in)
	if err != nil {
		return 0, err
	}
	var cands []*candidate
	for _, c := range e.cands {
		if c.consolidatable {
			cands = append(cands, c)
		}
	}
	if len(cands) > 10 {
		return 0, fmt.Errorf("%d candidates: too many to enumerate", len(cands))
	}
	best := 0.0
	for mask := 1; mask < 1<<len(cands); mask++ {
		var set []*candidate
		for i, c := range cands {
			if mask&(1<<i) != 0 {
				set = append(set, c)
			}
		}
		method := MethodMultiNode
		if len(set) == 1 {
			method = MethodSingleNode
		}
		r, err := e.sim.run(set)
		if err != nil {
			return 0, err
		}
		if cmd, _ := e.sim.command(r, method, ReasonUnderutilized); cmd != nil {
			best = max(best, cmd.SavingsPerHour)
		}
	}
	return best, nil
}

// Steps is how many consolidation steps cmd composes (1 for a command of
// one step).
func Steps(cmd *Command) int { return max(len(cmd.steps), 1) }

// DecideComposingAll is Decide with every consolidation command composing
// further steps, each with a pass's full search.
func DecideComposingAll(in *Input) (*Decision, error) {
	return decide(in, func(e *engine) { e.composeAll = true })
}

// DecideComposingAtMost is DecideComposingAll with a composed command of
// more than steps steps failing the whole-command replay, so its last
// steps go; dropped says whether any went, and found is, per step index,
// the zones of each replacement of the step last found there, as found
// (before compose pinned it for a later step).
func DecideComposingAtMost(in *Input, steps int) (d *Decision, dropped bool, found map[int][][]string, err error) {
	found = map[int][][]string{}
	d, err = decide(in, func(e *engine) {
		e.composeAll = true
		e.replayed = func(cmd *Command) bool {
			if len(cmd.steps) > steps {
				dropped = true
				return false
			}
			return e.realised(cmd)
		}
		e.found = func(step int, cmd *Command) {
			zones := make([][]string, len(cmd.Replacements))
			for i, nc := range cmd.Replacements {
				zones[i] = launchZones(nc)
			}
			found[step] = zones
		}
	})
	return d, dropped, found, err
}

// StepZones is, for each step of cmd and each of its replacements, the
// zones the replacement may launch in.
func StepZones(cmd *Command) [][][]string {
	steps := cmd.steps
	if len(steps) == 0 {
		steps = []*Command{cmd}
	}
	out := make([][][]string, len(steps))
	for s, step := range steps {
		out[s] = make([][]string, len(step.Replacements))
		for i, nc := range step.Replacements {
			out[s][i] = launchZones(nc)
		}
	}
	return out
}

// StepSizes is how many candidates each step of cmd takes.
func StepSizes(cmd *Command) []int {
	if len(cmd.steps) == 0 {
		return []int{len(cmd.Candidates)}
	}
	out := make([]int, len(cmd.steps))
	for i, s := range cmd.steps {
		out[i] = len(s.Candidates)
	}
	return out
}

// StepReplacements is how many replacements each step of cmd launches.
func StepReplacements(cmd *Command) []int {
	if len(cmd.steps) == 0 {
		return []int{len(cmd.Replacements)}
	}
	out := make([]int, len(cmd.steps))
	for i, s := range cmd.steps {
		out[i] = len(s.Replacements)
	}
	return out
}

// CountSolves returns o with its simulations counted in n, solved as
// without it (the benchmark measures the solver Decide runs).
func CountSolves(o Options, n *int) Options {
	o.solved = n
	return o
}

// EndPlan is one end state planned at once: the removed nodes (ranked),
// what each costs, the new nodes of the plan that each one's pods feed,
// the new nodes' prices, and the cluster's $/h once the plan is reached.
type EndPlan struct {
	Removed   []string
	Price     map[string]float64
	Feeds     map[string][]int
	NewPrices []float64
	Cost      float64

	plan *scheduling.Plan
	from map[*corev1.Pod]string // a removed node's pod → its node
	// launched names the node each of the plan's new nodes became.
	launched map[int]string
}

// PlanEnd plans an end state in one solve: the k consolidation candidates
// whose removal the estimate says saves most go, and all of their pods
// are solved together (preferences as required, with the solver's
// exchanges, which the descent's simulations leave out) onto the other
// nodes' room and new nodes. An experiment for the benchmark, not a
// command: nothing here checks kube-scheduler's replay or room kept for
// later commands.
func PlanEnd(in *Input, k int) (*EndPlan, error) {
	e, err := newEngine(in)
	if err != nil {
		return nil, err
	}
	est := e.estimator()
	var cands []*candidate
	savings := map[*candidate]float64{}
	for _, c := range e.cands {
		if c.consolidatable {
			cands = append(cands, c)
			savings[c] = est.savings(c)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return savings[cands[i]] > savings[cands[j]] })
	out := &EndPlan{Price: map[string]float64{}, Feeds: map[string][]int{}, launched: map[int]string{}}
	gone := map[string]bool{}
	from := map[*corev1.Pod]string{}
	snap := *e.sim.base
	snap.Pods = slices.Clone(snap.Pods)
	for _, c := range cands[:min(k, len(cands))] {
		gone[c.node.Name] = true
		out.Removed = append(out.Removed, c.node.Name)
		out.Price[c.node.Name] = c.node.Price
		for _, p := range c.pods {
			from[p] = c.node.Name
		}
		snap.Pods = append(snap.Pods, c.pods...)
	}
	snap.Nodes = nil
	for _, n := range e.sim.base.Nodes {
		if !gone[n.Name] {
			snap.Nodes = append(snap.Nodes, n)
		}
	}
	for i := range in.Nodes {
		if !gone[in.Nodes[i].Name] {
			out.Cost += in.Nodes[i].Price
		}
	}
	opts := in.Options.Scheduling
	opts.RequirePreferences = true
	plan, err := scheduling.Solve(&snap, opts)
	if err != nil {
		return nil, err
	}
	if len(plan.Unschedulable) > 0 {
		return nil, fmt.Errorf("the plan leaves %d pods unschedulable", len(plan.Unschedulable))
	}
	out.plan, out.from = plan, from
	for j, nc := range plan.NewNodeClaims {
		out.Cost += nc.Price
		out.NewPrices = append(out.NewPrices, nc.Price)
		fed := map[string]bool{}
		for _, p := range nc.Pods {
			if c, ok := from[p]; ok && !fed[c] {
				fed[c] = true
				out.Feeds[c] = append(out.Feeds[c], j)
			}
		}
	}
	return out, nil
}

// Command is the command that removes the plan's nodes named in removed
// from in (the cluster as the plan's earlier commands left it): each of
// their pods goes where the plan puts it, to a kept node, to one of the
// plan's new nodes an earlier command launched (Launched), or to one this
// command launches, as its cheapest type (so its price is what the plan
// counted, whichever zone it launches in). replayed says whether
// kube-scheduler's replay (realise.go) places the evicted pods so. An
// experiment: the engine does not issue such commands.
func (p *EndPlan) Command(in *Input, removed []string) (cmd *Command, launches []int, replayed bool, err error) {
	e, err := newEngine(in)
	if err != nil {
		return nil, nil, false, err
	}
	taking := map[string]bool{}
	cmd = &Command{Method: MethodMultiNode, Reason: ReasonUnderutilized}
	for _, name := range removed {
		taking[name] = true
		cmd.Candidates = append(cmd.Candidates, name)
		cmd.SavingsPerHour += p.Price[name]
	}
	index := map[int]int{}
	for j, nc := range p.plan.NewNodeClaims {
		for _, pod := range nc.Pods {
			from := p.from[pod]
			if !taking[from] {
				continue
			}
			if node, ok := p.launched[j]; ok {
				cmd.Moves = append(cmd.Moves, Move{Pod: pod, From: from, To: node, Replacement: -1})
				continue
			}
			if _, ok := index[j]; !ok {
				it, o, ok := Launch(nc)
				if !ok {
					return nil, nil, false, fmt.Errorf("the plan's new node %d has no offering", j)
				}
				one := *nc
				one.InstanceTypes = []*scheduling.InstanceType{it}
				one.Requirements = setRequirement(nc.Requirements, v1.LabelInstanceType, it.Name)
				one.Price = o.Price
				index[j] = len(cmd.Replacements)
				launches = append(launches, j)
				cmd.Replacements = append(cmd.Replacements, &one)
				cmd.SavingsPerHour -= o.Price
			}
			cmd.Moves = append(cmd.Moves, Move{Pod: pod, From: from, Replacement: index[j]})
		}
	}
	for _, ex := range p.plan.Existing {
		for _, pod := range ex.Pods {
			if from := p.from[pod]; taking[from] {
				cmd.Moves = append(cmd.Moves, Move{Pod: pod, From: from, To: ex.Node, Replacement: -1})
			}
		}
	}
	for _, m := range cmd.Moves {
		if !pods.IsVirtual(m.Pod) {
			cmd.PodsMoved++
		}
	}
	r := &result{failed: map[string]bool{}, replacements: cmd.Replacements, moves: cmd.Moves}
	for _, c := range e.cands {
		if taking[c.node.Name] {
			r.cands = append(r.cands, c)
		}
	}
	e.sim.follow(r)
	return cmd, launches, r.reason.IsZero(), nil
}

// Launched records the node the plan's new node j became.
func (p *EndPlan) Launched(j int, node string) { p.launched[j] = node }

// Needed is how many replacements a re-simulation of cmd's candidates
// alone on in needs (what Validate compares the command's with); err says
// why the re-simulation gives no command.
func Needed(cmd *Command, in *Input) (int, error) {
	e, err := newEngine(in)
	if err != nil {
		return 0, err
	}
	want := map[string]bool{}
	for _, n := range cmd.Candidates {
		want[n] = true
	}
	var cands []*candidate
	for _, c := range e.cands {
		if want[c.node.Name] {
			cands = append(cands, c)
		}
	}
	r, err := e.sim.run(cands)
	if err != nil {
		return 0, err
	}
	now, why := e.sim.command(r, cmd.Method, cmd.Reason)
	if now == nil {
		return 0, errors.New(why.String())
	}
	return len(now.Replacements), nil
}

// Closed is in with the named nodes taking no new pods (marked for
// deletion in the snapshot), their own pods staying where they are: the
// room a plan's later commands free is not there for an earlier one.
func Closed(in *Input, names map[string]bool) *Input {
	out := *in
	snap := *in.Cluster
	snap.Nodes = slices.Clone(snap.Nodes)
	for i, n := range snap.Nodes {
		if names[n.Name] {
			c := *n
			c.MarkedForDeletion = true
			snap.Nodes[i] = &c
		}
	}
	out.Cluster = &snap
	return &out
}

// KeptEnd is the end state that keeps the nodes named in keep, their pods
// staying, and removes every other node, whose pods one simulation puts
// on the kept nodes' room and on new nodes (sim.run with every other node
// a candidate, as the engine's simulations run): the $/h it leaves, the
// new nodes it launches and how many of the removed nodes' pods would not
// schedule. An experiment for the benchmark (issue 33): whether an end
// made of existing nodes exists near the bound.
func KeptEnd(in *Input, keep map[string]bool) (cost float64, launched, unschedulable int, err error) {
	e, err := newEngine(in)
	if err != nil {
		return 0, 0, 0, err
	}
	var cands []*candidate
	for _, c := range e.cands {
		if !keep[c.node.Name] {
			cands = append(cands, c)
		}
	}
	r, err := e.sim.run(cands)
	if err != nil {
		return 0, 0, 0, err
	}
	for i := range in.Nodes {
		if keep[in.Nodes[i].Name] {
			cost += in.Nodes[i].Price
		}
	}
	for _, nc := range r.replacements {
		if _, o, ok := Launch(nc); ok {
			cost += o.Price
		}
	}
	placed := map[*corev1.Pod]bool{}
	for _, m := range r.moves {
		placed[m.Pod] = true
	}
	for _, c := range cands {
		for _, p := range c.pods {
			if !placed[p] {
				unschedulable++
			}
		}
	}
	return cost, len(r.replacements), unschedulable, nil
}
