package disruption

import (
	"errors"
	"fmt"
	"slices"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// engine is one Decide or Validate pass over an Input.
type engine struct {
	in       *Input
	verdicts []Verdict
	cands    []*candidate
	allowed  map[string]map[Reason]int
	sim      *simulator
	est      *estimator
	// simLimit, when positive, caps the simulations of this pass's
	// consolidation searches (a composed step's share, compose.go).
	simLimit   int
	composeAll bool
	// replayed, when set, stands in for realised when compose checks a
	// composed command as a whole (tests force its last steps to go).
	replayed func(*Command) bool
	// found, when set, sees each step compose finds, as found (before
	// any zone pin), with its index in the command.
	found func(step int, cmd *Command)
}

func newEngine(in *Input) (*engine, error) {
	if in == nil || in.Cluster == nil {
		return nil, errors.New("disruption input has no cluster snapshot")
	}
	in, err := withBuffers(in)
	if err != nil {
		return nil, err
	}
	e := &engine{in: in, allowed: AllowedDisruptions(in), sim: newSimulator(in)}
	e.verdicts, e.cands = classify(in)
	return e, nil
}

func (e *engine) capacity() *capacity { return e.sim.capacity() }

// Decide runs the methods in Karpenter's order (emptiness, static drift,
// drift, multi-node consolidation, single-node consolidation); the first
// that yields a command wins, and a consolidation command may take the
// next passes' commands as steps of its own (compose.go). Every managed
// node gets a Verdict either way.
func Decide(in *Input) (*Decision, error) { return decide(in, nil) }

// decide is Decide with the engine set up by tune (tests exercise
// compose.go through it: composing every step with a pass's full search,
// where Decide's thrift would rarely compose).
func decide(in *Input, tune func(*engine)) (*Decision, error) {
	e, err := newEngine(in)
	if err != nil {
		return nil, err
	}
	if tune != nil {
		tune(e)
	}
	d := &Decision{Verdicts: e.verdicts, Allowed: e.allowed}
	for _, method := range []func() (*Command, error){e.emptiness, e.staticDrift, e.drift, e.multiNode, e.singleNode} {
		cmd, err := method()
		if err != nil {
			return nil, err
		}
		if cmd != nil {
			d.Command = cmd
			break
		}
	}
	if d.Command != nil {
		if d.Command, err = e.compose(d.Command); err != nil {
			return nil, err
		}
		for i := range d.Verdicts {
			if slices.Contains(d.Command.Candidates, d.Verdicts[i].Node) {
				d.Verdicts[i].Command = d.Command.Method
			}
		}
	}
	return d, nil
}

// Validate re-checks a command against a fresh Input (Karpenter waits 15 s
// first): the candidates are still valid and within budget, and the
// re-simulation still supports the command (a delete still needs no new
// node; a replacement's instance types are among the new simulation's).
// Call it before tainting the candidates: a tainted node is already being
// disrupted and no longer a candidate.
func Validate(cmd *Command, in *Input) error {
	if cmd == nil || len(cmd.Candidates) == 0 {
		return errors.New("command has no candidates")
	}
	e, err := newEngine(in)
	if err != nil {
		return err
	}
	byName := map[string]*candidate{}
	for _, c := range e.cands {
		byName[c.node.Name] = c
	}
	verdict := map[string]*Verdict{}
	for i := range e.verdicts {
		verdict[e.verdicts[i].Node] = &e.verdicts[i]
	}
	budget := newBudgetLeft(e.allowed, cmd.Reason)
	cands := make([]*candidate, 0, len(cmd.Candidates))
	for _, name := range cmd.Candidates {
		c := byName[name]
		ok := c != nil && (c.consolidatable || (cmd.Method == MethodDrift && c.drift) || (cmd.Method == MethodStaticDrift && c.staticDrift))
		if !ok {
			why := "it is no longer a managed node"
			if v := verdict[name]; v != nil {
				why = "it is no longer a candidate"
				if hold := v.Hold(); !hold.IsZero() {
					why = hold.String()
				}
			}
			return fmt.Errorf("candidate %q is no longer valid: %s", name, why)
		}
		if !budget.take(c.node.NodePool) {
			return fmt.Errorf("candidate %q: no disruption budget left for reason %s in NodePool %q", name, cmd.Reason, c.node.NodePool)
		}
		if cmd.Method == MethodEmptiness && !c.empty() {
			return fmt.Errorf("candidate %q is no longer empty: %d pods would need another node", name, len(c.pods))
		}
		cands = append(cands, c)
	}
	if cmd.Method == MethodEmptiness || cmd.Method == MethodStaticDrift || (cmd.Method == MethodDrift && len(cmd.Replacements) == 0 && allEmpty(cands)) {
		return nil
	}
	if len(cmd.steps) > 1 {
		return e.validateSteps(cmd)
	}
	simulate := e.sim.run
	if cmd.Method == MethodDrift {
		simulate = e.sim.runRelaxed
	}
	r, err := simulate(cands)
	if err != nil {
		return err
	}
	now, whyNot := e.sim.command(r, cmd.Method, cmd.Reason)
	if now == nil {
		return fmt.Errorf("re-simulation no longer supports the command: %s", whyNot)
	}
	return stillOffers(now, cmd)
}

// stillOffers reports whether a re-simulation's command now supports
// cmd: as many replacements, each of cmd's matched by a distinct one of
// now's that offers all of its instance types where cmd launches it.
func stillOffers(now, cmd *Command) error {
	_, err := matchReplacements(now, cmd)
	return err
}

// matchReplacements is, for each of cmd's replacements, the distinct one
// of now's that offers all of its launch options (offersAll; the solver
// may list them in another order). Types alone do not make a match: two
// replacements of the same types may be planned in different zones (a
// zone-spread pod's), and the node cmd launches must be one the
// re-simulation's plan would place its pods on. The matching is a
// bipartite one (augmenting paths), so that an open replacement taking the
// one re-simulated node of a zone that a pinned one needs does not refuse
// a command that still holds.
func matchReplacements(now, cmd *Command) ([]int, error) {
	if len(now.Replacements) != len(cmd.Replacements) {
		return nil, fmt.Errorf("re-simulation needs %d replacements, the command has %d", len(now.Replacements), len(cmd.Replacements))
	}
	fits := make([][]int, len(cmd.Replacements)) // want → the haves that offer it
	for i, want := range cmd.Replacements {
		for j, have := range now.Replacements {
			if offersAll(have, want) {
				fits[i] = append(fits[i], j)
			}
		}
	}
	owner := make([]int, len(now.Replacements)) // have → the want it serves, -1 none
	for j := range owner {
		owner[j] = -1
	}
	var seen []bool
	var augment func(i int) bool
	augment = func(i int) bool {
		for _, j := range fits[i] {
			if seen[j] {
				continue
			}
			seen[j] = true
			if owner[j] < 0 || augment(owner[j]) {
				owner[j] = i
				return true
			}
		}
		return false
	}
	for i, want := range cmd.Replacements {
		seen = make([]bool, len(now.Replacements))
		if !augment(i) {
			return nil, fmt.Errorf("replacement %d (%s): the re-simulation no longer offers all of its instance types where the command launches it", i, want.InstanceTypes[0].Name)
		}
	}
	match := make([]int, len(cmd.Replacements))
	for j, i := range owner {
		match[i] = j
	}
	return match, nil
}

// offersAll reports whether have's launch options include all of want's:
// each of want's instance types, and every zone and capacity type want may
// launch it in admitted by have's requirements (have's own catalog may
// have lost an offering since; pinLike checks a pinned zone's).
func offersAll(have, want *scheduling.NewNodeClaim) bool {
	names := make(map[string]bool, len(have.InstanceTypes))
	for _, it := range have.InstanceTypes {
		names[it.Name] = true
	}
	for _, it := range want.InstanceTypes {
		if !names[it.Name] {
			return false
		}
		for _, o := range it.Offerings {
			if scheduling.OfferingAllowed(o, want.Requirements) &&
				(!scheduling.RequirementsAdmit(have.Requirements, v1.LabelTopologyZone, o.Zone) || !scheduling.RequirementsAdmit(have.Requirements, v1.LabelCapacityType, o.CapacityType)) {
				return false
			}
		}
	}
	return true
}

func allEmpty(cands []*candidate) bool {
	for _, c := range cands {
		if !c.empty() {
			return false
		}
	}
	return true
}
