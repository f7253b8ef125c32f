package disruption

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Composing consolidation steps into one command.
//
// A consolidation command rarely uses the whole budget once the descent
// reaches its tail: a set that saves enough is found after peeling, and
// the next pass finds the next set. Each of those passes is a command of
// its own, with its own validation wait, its own evictions, and pods moved
// again when a later command takes the node an earlier one filled. compose
// plays the next passes on the cluster as the command leaves it (the
// candidates gone, their pods where the simulation put them, the
// replacements up) while the budget has room, and returns one command:
// every step's candidates, every step's replacements, and each evicted pod
// sent straight to where the last step put it. Each step is a command the
// engine would have issued on its own (the minimum share, never the same
// type 1→1, PDBs and do-not-disrupt as for any command), so the whole
// saves at least the minimum share too. Validate re-simulates the steps in
// order.

// maxComposedSteps bounds the passes one command composes.
const maxComposedSteps = 4

// composedPrefix names the replacements a composed step launches while
// later steps are planned; "/" cannot appear in a Node name, so no real
// node is ever taken for one.
const composedPrefix = "composed/"

// compose extends a consolidation command with the commands the next
// passes would find within what is left of the budget.
//
// It spends little: each further step gets one simulation, so a composed
// pass costs at most one simulation that finds nothing more than the pass
// alone (on the 2,000-node cluster, where each simulation costs ~0.1 s,
// letting the steps peel as a pass does took 1.2 s more). A command the
// search found only after peeling is near the end of what budget-sized
// sets give, and a budget-sized step would fail as its first set did: its
// steps take sets no larger than it, which one simulation can confirm.
// Emptiness composes too: the empty nodes and the consolidation the next
// pass would find go in one command.
func (e *engine) compose(first *Command) (*Command, error) {
	if first.Method != MethodMultiNode && first.Method != MethodSingleNode && first.Method != MethodEmptiness {
		return first, nil
	}
	maxN := e.in.Options.MultiNodeMax
	if maxN <= 0 {
		maxN = DefaultMultiNodeMax
	}
	stepMax := maxN
	if e.sim.solves > 1 && !e.composeAll {
		stepMax = len(first.Candidates)
	}
	reason := first.Reason
	if first.Method == MethodEmptiness {
		// Empty nodes are underutilized too: the consolidation steps that
		// follow take their candidates from what the Underutilized budget
		// leaves once the empty nodes are counted, so the command keeps
		// within it as a whole and is counted under it.
		reason = ReasonUnderutilized
	}
	left := newBudgetLeft(e.allowed, reason)
	taken := 0
	take := func(cmd *Command, in *Input) {
		pool := map[string]string{}
		for i := range in.Nodes {
			pool[in.Nodes[i].Name] = in.Nodes[i].NodePool
		}
		for _, name := range cmd.Candidates {
			left[pool[name]]--
			taken++
		}
	}
	take(first, e.in)
	for _, n := range left {
		if n < 0 {
			return first, nil
		}
	}
	origin := map[*corev1.Pod]*corev1.Pod{}
	// next plans the step after steps' last on the cluster that one leaves
	// (in is the cluster it was planned on, prev its engine), within the
	// budget left: the command the next pass would find there. It returns
	// the cluster the step was planned on and its engine.
	next := func(steps []*Command, in *Input, prev *engine) (*Command, *Input, *engine, error) {
		last := len(steps) - 1
		in = afterCommand(in, steps[last], replacementsBefore(steps, last), origin)
		in.Options.MultiNodeMax = min(maxN-taken, stepMax)
		sub, err := newEngine(in)
		if err != nil {
			return nil, nil, nil, err
		}
		sub.sim.share(prev.sim)
		sub.allowed = budgetsOf(left, reason)
		if !e.composeAll {
			sub.simLimit = 1
		}
		cmd, err := sub.multiNode()
		if err != nil {
			return nil, nil, nil, err
		}
		if cmd == nil && sub.simulations(1) > 0 {
			if cmd, err = sub.singleNode(); err != nil {
				return nil, nil, nil, err
			}
		}
		if cmd != nil && e.found != nil {
			e.found(len(steps), cmd)
		}
		return cmd, in, sub, nil
	}
	lead := first
	if first.Method == MethodEmptiness {
		// The empty nodes become a multi-node step of the command: a
		// delete that needs no simulation to save, re-checked as any step.
		c := *first
		c.Method, c.Reason = MethodMultiNode, reason
		lead = &c
	}
	// Step i was planned on ins[i] by engs[i]; step i ≥ 1 with lefts[i]
	// and takens[i] of the budget. opens[i] is step i as found, steps[i]
	// as the command launches it (pinZones, once a step follows it).
	steps, opens := []*Command{lead}, []*Command{lead}
	ins, engs := []*Input{e.in}, []*engine{e}
	lefts, takens := []budgetLeft{nil}, []int{0}
	for len(steps) < maxComposedSteps && taken < maxN && hasRoom(left) {
		last := len(steps) - 1
		steps[last] = pinZones(opens[last])
		cmd, in, sub, err := next(steps, ins[last], engs[last])
		if err != nil {
			return nil, err
		}
		if cmd == nil {
			steps[last] = opens[last]
			break
		}
		lefts, takens = append(lefts, maps.Clone(left)), append(takens, taken)
		take(cmd, in)
		steps, opens = append(steps, cmd), append(opens, cmd)
		ins, engs = append(ins, in), append(engs, sub)
	}
	// Each step passed kube-scheduler's replay on its own, but the command
	// evicts every step's pods at once: the last steps go until the whole
	// passes it too. A last step planned on its predecessor's pinned
	// replacements is first planned again on them unpinned (its pods then
	// keep off them as the replay may want), one simulation more. When the
	// last step goes, the step before it becomes the last and launches its
	// replacements open again: no step counts on their zones any more.
	for len(steps) > 1 {
		if cmd := merge(steps, origin); e.replays(cmd) {
			return cmd, nil
		}
		k := len(steps) - 1
		if steps[k-1] != opens[k-1] {
			left, taken = maps.Clone(lefts[k]), takens[k]
			retry := append(slices.Clone(steps[:k-1]), opens[k-1])
			cmd, _, _, err := next(retry, ins[k-1], engs[k-1])
			if err != nil {
				return nil, err
			}
			if cmd != nil {
				if m := merge(append(retry, cmd), origin); e.replays(m) {
					return m, nil
				}
			}
		}
		steps = steps[:k]
		steps[k-1] = opens[k-1]
	}
	return first, nil
}

// replays is realised, or the test's stand-in for it.
func (e *engine) replays(cmd *Command) bool {
	if e.replayed != nil {
		return e.replayed(cmd)
	}
	return e.realised(cmd)
}

// pinZones is cmd with each replacement whose offerings leave its zone
// open pinned to the zone it launches in (Launch: its cheapest option,
// which the pin keeps). A later step counts on the replacement as a node
// of that zone: kube-scheduler's topology-spread filter turns a pod away
// from a node without the constraint's key, so a replacement of unknown
// zone takes no zone-spread pod, and one the step counts in a zone must
// be launched there. The last step found keeps its replacements open (no
// step counts on them); Validate pins the re-simulated steps as the
// command's (pinLike). The pin only narrows the launch options, so each
// step still saves what it did whichever option launches.
func pinZones(cmd *Command) *Command {
	var out *Command
	for i, nc := range cmd.Replacements {
		if zones := launchZones(nc); len(zones) > 1 {
			if _, o, ok := Launch(nc); ok {
				if out == nil {
					c := *cmd
					c.Replacements = slices.Clone(cmd.Replacements)
					out = &c
				}
				out.Replacements[i] = pinZone(nc, o.Zone)
			}
		}
	}
	if out == nil {
		return cmd
	}
	return out
}

// pinLike is now (a re-simulated step) with its replacements pinned to
// the zones of the command step's replacements they stand for (matched as
// stillOffers matches them), so the steps after it are re-simulated on the
// nodes the command launches. It fails when the command launches a
// replacement in one zone that no longer offers all of its instance
// types: the command would launch it with fewer options than it was
// planned with, or not at all, and the steps after it count on a node
// there (left unpinned, they would be re-simulated on a node of no zone,
// and the command would pass on a plan it cannot launch).
func pinLike(now, step *Command) (*Command, error) {
	match, err := matchReplacements(now, step)
	if err != nil {
		return nil, err
	}
	out := *now
	out.Replacements = slices.Clone(now.Replacements)
	for i, want := range step.Replacements {
		zones := launchZones(want)
		if len(zones) != 1 {
			continue
		}
		// The match admits the zone under the re-simulation's own
		// requirements (its pods' zone affinity); the zone must still
		// offer every type.
		have := now.Replacements[match[i]]
		if !offersAllIn(have, want, zones[0]) {
			return nil, fmt.Errorf("replacement %d (%s) launches in zone %s, where the re-simulation no longer offers all of its instance types", i, want.InstanceTypes[0].Name, zones[0])
		}
		if len(launchZones(have)) > 1 {
			out.Replacements[match[i]] = pinZone(have, zones[0])
		}
	}
	return &out, nil
}

// offersAllIn reports whether have offers each of want's instance types in
// zone, within have's requirements. have's requirements must admit zone
// (matchReplacements): the zone requirement is replaced, not narrowed.
func offersAllIn(have, want *scheduling.NewNodeClaim, zone string) bool {
	reqs := setRequirement(have.Requirements, v1.LabelTopologyZone, zone)
	offered := make(map[string]bool, len(have.InstanceTypes))
	for _, it := range have.InstanceTypes {
		if _, ok := scheduling.CheapestOffering(it, reqs); ok {
			offered[it.Name] = true
		}
	}
	for _, it := range want.InstanceTypes {
		if !offered[it.Name] {
			return false
		}
	}
	return true
}

// pinZone is nc launched only in zone: its requirements narrowed to it and
// its instance types to those offered there. nc itself when a minValues
// requirement could no longer hold.
func pinZone(nc *scheduling.NewNodeClaim, zone string) *scheduling.NewNodeClaim {
	for _, r := range nc.Requirements {
		if r.MinValues != nil {
			return nc
		}
	}
	out := *nc
	out.Requirements = setRequirement(nc.Requirements, v1.LabelTopologyZone, zone)
	out.InstanceTypes = nil
	names := []string{}
	for _, it := range nc.InstanceTypes {
		if _, ok := scheduling.CheapestOffering(it, out.Requirements); ok {
			out.InstanceTypes = append(out.InstanceTypes, it)
			names = append(names, it.Name)
		}
	}
	if len(names) == 0 {
		return nc
	}
	if slices.ContainsFunc(nc.Requirements, func(r scheduling.Requirement) bool { return r.Key == v1.LabelInstanceType }) {
		out.Requirements = setRequirement(out.Requirements, v1.LabelInstanceType, names...)
	}
	return &out
}

// launchZones are the zones nc may launch in: those of the available
// offerings of its instance types that its requirements admit, sorted.
func launchZones(nc *scheduling.NewNodeClaim) []string {
	var zones []string
	for _, it := range nc.InstanceTypes {
		for _, o := range it.Offerings {
			if scheduling.OfferingAllowed(o, nc.Requirements) && !slices.Contains(zones, o.Zone) {
				zones = append(zones, o.Zone)
			}
		}
	}
	slices.Sort(zones)
	return zones
}

// realised reports whether kube-scheduler would realise a composed command
// as the one command it is: every step's pods evicted together, replayed
// (follow) on the cluster before it.
func (e *engine) realised(cmd *Command) bool {
	byName := make(map[string]*candidate, len(e.cands))
	for _, c := range e.cands {
		byName[c.node.Name] = c
	}
	r := &result{failed: map[string]bool{}, replacements: cmd.Replacements, moves: cmd.Moves}
	for _, name := range cmd.Candidates {
		c := byName[name]
		if c == nil {
			// A candidate the engine no longer knows has pods the replay
			// cannot evict: fail closed rather than pass a replay that
			// left them out.
			return false
		}
		r.cands = append(r.cands, c)
	}
	e.sim.follow(r)
	return r.reason.IsZero()
}

func hasRoom(left budgetLeft) bool {
	for _, n := range left {
		if n > 0 {
			return true
		}
	}
	return false
}

// budgetsOf is an allowed-disruptions map that grants left for reason.
func budgetsOf(left budgetLeft, reason Reason) map[string]map[Reason]int {
	out := make(map[string]map[Reason]int, len(left))
	for pool, n := range left {
		out[pool] = map[Reason]int{reason: max(n, 0)}
	}
	return out
}

func replacementsBefore(steps []*Command, i int) int {
	n := 0
	for _, s := range steps[:i] {
		n += len(s.Replacements)
	}
	return n
}

func composedName(i int) string { return fmt.Sprintf("%s%d", composedPrefix, i) }

// merge is the one command the steps make: their candidates and
// replacements in order, and each pod's move from the node it leaves
// to where the last step that moved it put it.
func merge(steps []*Command, origin map[*corev1.Pod]*corev1.Pod) *Command {
	out := &Command{Method: MethodMultiNode, Reason: steps[0].Reason, steps: steps}
	index := map[*corev1.Pod]int{} // real pod → its move in out.Moves
	offset := 0
	for _, s := range steps {
		out.Candidates = append(out.Candidates, s.Candidates...)
		out.Replacements = append(out.Replacements, s.Replacements...)
		out.SavingsPerHour += s.SavingsPerHour
		for _, m := range s.Moves {
			real, again := origin[m.Pod]
			if !again {
				real = m.Pod
			}
			to := Move{Pod: real, From: m.From, To: m.To, Replacement: m.Replacement}
			if to.To == "" {
				to.Replacement += offset
			} else if n, ok := composedIndex(to.To); ok {
				to.To, to.Replacement = "", n
			}
			if i, ok := index[real]; ok {
				to.From = out.Moves[i].From
				out.Moves[i] = to
				continue
			}
			index[real] = len(out.Moves)
			out.Moves = append(out.Moves, to)
		}
		offset += len(s.Replacements)
	}
	for _, m := range out.Moves {
		if !pods.IsVirtual(m.Pod) {
			out.PodsMoved++
		}
	}
	return out
}

func composedIndex(name string) (int, bool) {
	var i int
	if _, err := fmt.Sscanf(name, composedPrefix+"%d", &i); err != nil {
		return 0, false
	}
	return i, true
}

// afterCommand is in as it would be once cmd has run as simulated: its
// candidates gone, their pods on the nodes the simulation chose, and its
// replacements up and initialised as nodes named composedName(first+i).
// The replacements are not managed nodes of the result (no later step
// disrupts a node the command has not launched yet); they take pods.
// origin maps each bound copy made here to the real pod it stands for.
func afterCommand(in *Input, cmd *Command, first int, origin map[*corev1.Pod]*corev1.Pod) *Input {
	gone := make(map[string]bool, len(cmd.Candidates))
	for _, name := range cmd.Candidates {
		gone[name] = true
	}
	landed := map[string][]*corev1.Pod{}
	for _, m := range cmd.Moves {
		to := m.To
		if to == "" {
			to = composedName(first + m.Replacement)
		}
		b := *m.Pod
		b.Spec.NodeName = to
		b.Status.Phase = corev1.PodRunning
		real, ok := origin[m.Pod]
		if !ok {
			real = m.Pod
		}
		origin[&b] = real
		landed[to] = append(landed[to], &b)
	}
	out := *in
	snap := *in.Cluster
	snap.Nodes = make([]*scheduling.ExistingNode, 0, len(in.Cluster.Nodes)+len(cmd.Replacements))
	for _, n := range in.Cluster.Nodes {
		if gone[n.Name] {
			continue
		}
		if ps := landed[n.Name]; len(ps) > 0 {
			c := *n
			c.Pods = slices.Concat(n.Pods, ps)
			n = &c
		}
		snap.Nodes = append(snap.Nodes, n)
	}
	pools := map[string]*scheduling.NodePool{}
	snap.NodePools = make([]*scheduling.NodePool, len(in.Cluster.NodePools))
	for i, p := range in.Cluster.NodePools {
		c := *p
		c.InUse = p.InUse.DeepCopy()
		snap.NodePools[i], pools[p.Name] = &c, &c
	}
	for i, nc := range cmd.Replacements {
		it, _, ok := Launch(nc)
		if !ok {
			continue
		}
		name := composedName(first + i)
		n := &scheduling.ExistingNode{Name: name, NodeClaim: name, NodePool: nc.NodePool, Labels: launchedLabels(nc, name, pools[nc.NodePool]),
			Initialized: true, Allocatable: leastAllocatable(nc), Pods: landed[name]}
		if p := pools[nc.NodePool]; p != nil {
			n.Taints = p.Taints
			// Replacements run beside the candidates until these drain:
			// the pool's limits see both (at the cheapest option's size).
			if p.InUse == nil {
				p.InUse = corev1.ResourceList{}
			}
			for res, q := range it.Capacity {
				sum := p.InUse[res]
				sum.Add(q)
				p.InUse[res] = sum
			}
		}
		snap.Nodes = append(snap.Nodes, n)
	}
	out.Cluster = &snap
	out.Nodes = make([]Node, 0, len(in.Nodes))
	for _, n := range in.Nodes {
		if gone[n.Name] {
			continue
		}
		if ps := landed[n.Name]; len(ps) > 0 {
			n.Pods = slices.Concat(n.Pods, ps)
		}
		out.Nodes = append(out.Nodes, n)
	}
	return &out
}

// launchedLabels are the labels a replacement is sure to carry whichever
// of its launch options the cloud picks: its pool's, each label of its
// instance types that they all share, zone and capacity type when its
// offerings leave one value, and the well-known ones. A label left out
// makes the node ineligible for the pods that ask for it (a topology key
// a node lacks keeps spread pods off it), so later steps never count on
// what the launch may not give.
func launchedLabels(nc *scheduling.NewNodeClaim, name string, pool *scheduling.NodePool) map[string]string {
	l := map[string]string{}
	if pool != nil {
		for k, v := range pool.Labels {
			l[k] = v
		}
	}
	shared := map[string]string{}
	zones, types := map[string]bool{}, map[string]bool{}
	for i, it := range nc.InstanceTypes {
		mine := map[string]string{}
		for k, values := range it.Requirements {
			for _, v := range values {
				if scheduling.RequirementsAdmit(nc.Requirements, k, v) {
					mine[k] = v
					break
				}
			}
		}
		for k, v := range mine {
			if i == 0 {
				shared[k] = v
			}
		}
		for k, v := range shared {
			if mine[k] != v {
				delete(shared, k)
			}
		}
		for _, o := range it.Offerings {
			if scheduling.OfferingAllowed(o, nc.Requirements) {
				zones[o.Zone], types[o.CapacityType] = true, true
			}
		}
	}
	delete(shared, v1.LabelTopologyZone)
	delete(shared, v1.LabelCapacityType)
	for k, v := range shared {
		l[k] = v
	}
	if len(zones) == 1 {
		for z := range zones {
			l[v1.LabelTopologyZone] = z
		}
	}
	if len(types) == 1 {
		for t := range types {
			l[v1.LabelCapacityType] = t
		}
	}
	l[v1.LabelHostname] = name
	l[v1.LabelNodePool] = nc.NodePool
	return l
}

// leastAllocatable is, per resource, the least any of the replacement's
// launch options offers: what later steps may count on.
func leastAllocatable(nc *scheduling.NewNodeClaim) corev1.ResourceList {
	var out corev1.ResourceList
	for _, it := range nc.InstanceTypes {
		a := it.Allocatable()
		if out == nil {
			out = a.DeepCopy()
			continue
		}
		for res, q := range out {
			if o, ok := a[res]; !ok {
				delete(out, res)
			} else if o.Cmp(q) < 0 {
				out[res] = o.DeepCopy()
			}
		}
	}
	return out
}

// validateSteps re-simulates a composed command's steps in order on in,
// each on the cluster as the steps before it leave it.
func (e *engine) validateSteps(cmd *Command) error {
	cur := e
	origin := map[*corev1.Pod]*corev1.Pod{}
	first := 0
	var steps []*Command
	for i, step := range cmd.steps {
		byName := map[string]*candidate{}
		for _, c := range cur.cands {
			byName[c.node.Name] = c
		}
		cands := make([]*candidate, 0, len(step.Candidates))
		for _, name := range step.Candidates {
			c := byName[name]
			if c == nil || !c.consolidatable {
				return fmt.Errorf("step %d: candidate %q is no longer valid", i+1, name)
			}
			cands = append(cands, c)
		}
		r, err := cur.sim.run(cands)
		if err != nil {
			return err
		}
		now, whyNot := cur.sim.command(r, step.Method, step.Reason)
		if now == nil {
			return fmt.Errorf("step %d: re-simulation no longer supports the command: %s", i+1, whyNot)
		}
		// Every step is replayed as the command launches it, the last
		// one too (its replacements open unless the plan itself kept one
		// in a single zone).
		if now, err = pinLike(now, step); err != nil {
			return fmt.Errorf("step %d: %w", i+1, err)
		}
		steps = append(steps, now)
		if i == len(cmd.steps)-1 {
			break
		}
		next := afterCommand(cur.in, now, first, origin)
		first += len(now.Replacements)
		parent := cur
		if cur, err = newEngine(next); err != nil {
			return err
		}
		cur.sim.share(parent.sim)
	}
	if !e.realised(merge(steps, origin)) {
		return fmt.Errorf("kube-scheduler would not realise the %d steps evicted together", len(steps))
	}
	return nil
}
