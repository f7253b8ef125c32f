package disruption

import "fmt"

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
