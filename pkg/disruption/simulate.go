package disruption

import (
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// simulator answers "what if these candidates went away": it solves the
// cluster without them, their pods pending beside the cluster's own pending
// pods, with the same solver provisioning uses.
type simulator struct {
	in         *Input
	solve      func(*scheduling.Snapshot, scheduling.Options) (*scheduling.Plan, error)
	minSavings float64
	// initialized is each snapshot node's state, by name: a pod moved onto
	// a node that has not initialised yet may never run there.
	initialized map[string]bool
	// solves counts simulations, for the benchmark and the search budget.
	solves int
	capa   *capacity
	red    *reducer
	// full turns reduce off (tests compare both).
	full bool
}

// capacity is built on first use: emptiness and drift never need it.
func (s *simulator) capacity() *capacity {
	if s.capa == nil {
		s.capa = newCapacity(s.in.Cluster)
	}
	return s.capa
}

func newSimulator(in *Input) *simulator {
	s := &simulator{in: in, solve: in.Options.Solve, minSavings: in.Options.MinSavingsFraction}
	if s.solve == nil {
		s.solve = scheduling.Solve
	}
	switch {
	case s.minSavings == 0:
		s.minSavings = DefaultMinSavingsFraction
	case s.minSavings < 0:
		s.minSavings = 0
	}
	s.initialized = make(map[string]bool, len(in.Cluster.Nodes))
	for _, n := range in.Cluster.Nodes {
		s.initialized[n.Name] = n.Initialized
	}
	return s
}

// result is one simulation of removing a set of candidates.
type result struct {
	cands []*candidate
	// reason is why the candidates cannot go (Karpenter's wording), ""
	// when every pod of theirs found a place.
	reason string
	// replacements are the new nodes that carry candidates' pods.
	replacements []*scheduling.NewNodeClaim
	moves        []Move
	price        float64 // the candidates' $/h
}

// run simulates removing cands.
func (s *simulator) run(cands []*candidate) (*result, error) {
	base := s.in.Cluster
	gone := make(map[string]bool, len(cands))
	from := map[*corev1.Pod]string{}
	r := &result{cands: cands}
	snap := *base
	snap.Pods = slices.Clip(base.Pods)
	for _, c := range cands {
		gone[c.node.Name] = true
		r.price += c.node.Price
		for _, p := range c.pods {
			from[p] = c.node.Name
			snap.Pods = append(snap.Pods, p)
		}
	}
	snap.Nodes = make([]*scheduling.ExistingNode, 0, len(base.Nodes))
	for _, n := range base.Nodes {
		if !gone[n.Name] {
			snap.Nodes = append(snap.Nodes, n)
		}
	}
	if !s.full {
		if s.red == nil {
			s.red = newReducer(s.capacity(), base)
		}
		snap.Nodes = s.red.reduce(snap.Nodes, snap.Pods)
	}
	s.solves++
	plan, err := s.solve(&snap, scheduling.Options{RequirePreferences: true})
	if err != nil {
		return nil, fmt.Errorf("simulating the removal of %d nodes: %w", len(cands), err)
	}
	for _, pe := range plan.Unschedulable {
		if _, ok := from[pe.Pod]; ok {
			r.reason = fmt.Sprintf("not all pods would schedule, pod %q: %s", podKey(pe.Pod), firstReason(pe))
			return r, nil
		}
	}
	for _, e := range plan.Existing {
		for _, p := range e.Pods {
			if _, ok := from[p]; !ok {
				continue
			}
			if !s.initialized[e.Node] {
				r.reason = fmt.Sprintf("would schedule against uninitialized node %q", e.Node)
				return r, nil
			}
			r.moves = append(r.moves, Move{Pod: p, From: from[p], To: e.Node, Replacement: -1})
		}
	}
	for _, nc := range plan.NewNodeClaims {
		carries := false
		for _, p := range nc.Pods {
			if _, ok := from[p]; ok {
				carries = true
				r.moves = append(r.moves, Move{Pod: p, From: from[p], Replacement: len(r.replacements)})
			}
		}
		if carries {
			r.replacements = append(r.replacements, nc)
		}
	}
	return r, nil
}

// firstReason is the solver's first reason for a pod, by key order, so
// messages are deterministic.
func firstReason(pe scheduling.PodError) string {
	keys := make([]string, 0, len(pe.Reasons))
	for k := range pe.Reasons {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		return "no reason given"
	}
	if keys[0] == scheduling.ExistingNodesReason {
		return pe.Reasons[keys[0]]
	}
	return fmt.Sprintf("nodepool %q: %s", keys[0], pe.Reasons[keys[0]])
}

// command turns a simulation into a command of method, or says why it
// is not worth one. Consolidation deletes when no new node is needed and
// otherwise replaces N nodes by one strictly cheaper node (saving at
// least minSavings of their price, never 1→1 with the same instance
// type); drift takes whatever replacements the simulation needs.
func (s *simulator) command(r *result, method Method, reason Reason) (*Command, string) {
	if r.reason != "" {
		return nil, r.reason
	}
	cmd := &Command{Method: method, Reason: reason, Moves: r.moves, PodsMoved: len(r.moves)}
	for _, c := range r.cands {
		cmd.Candidates = append(cmd.Candidates, c.node.Name)
	}
	if method == MethodDrift || len(r.replacements) == 0 {
		cmd.Replacements = r.replacements
		cmd.SavingsPerHour = r.price
		for _, nc := range r.replacements {
			cmd.SavingsPerHour -= nc.Price
		}
		return cmd, ""
	}
	if len(r.replacements) > 1 {
		return nil, fmt.Sprintf("can't remove without creating %d nodes", len(r.replacements))
	}
	nc, why := s.cheaperReplacement(r.replacements[0], r.cands, r.price)
	if nc == nil {
		return nil, why
	}
	cmd.Replacements = []*scheduling.NewNodeClaim{nc}
	cmd.SavingsPerHour = r.price - nc.Price
	return cmd, ""
}

// spotToSpotMinTypes is how many cheaper spot types single-node spot-to-spot
// consolidation needs, so the replacement is not the next spot interruption
// waiting to happen (Karpenter's rule).
const spotToSpotMinTypes = 15

// cheaperReplacement narrows the solver's replacement to launch options
// that each cost at most (1 − minSavings) × price and strictly less than
// price, so whichever option the cloud picks the command saves money;
// nil with Karpenter's reason when none is left.
func (s *simulator) cheaperReplacement(nc *scheduling.NewNodeClaim, cands []*candidate, price float64) (*scheduling.NewNodeClaim, string) {
	reqs := slices.Clone(nc.Requirements)
	allSpot := true
	for _, c := range cands {
		allSpot = allSpot && c.node.CapacityType == v1.CapacityTypeSpot
	}
	spot, od := admits(reqs, v1.LabelCapacityType, v1.CapacityTypeSpot), admits(reqs, v1.LabelCapacityType, v1.CapacityTypeOnDemand)
	spotToSpot := allSpot && spot
	if spotToSpot && !s.in.Options.SpotToSpot {
		return nil, "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
	}
	if spot && od {
		// Options are priced at their spot offering below: pin the
		// replacement to spot so a spot shortage cannot fall back to a
		// dearer on-demand node (Karpenter does the same).
		reqs = setRequirement(reqs, v1.LabelCapacityType, v1.CapacityTypeSpot)
	}
	limit := min(price*(1-s.minSavings), math.Nextafter(price, 0))
	type priced struct {
		it    *scheduling.InstanceType
		price float64
	}
	var keep []priced
	for _, it := range nc.InstanceTypes {
		if len(cands) == 1 && it.Name == cands[0].node.InstanceType {
			continue // never churn a node into another of its own type
		}
		if p, ok := offeringPrice(it, reqs); ok && p <= limit {
			keep = append(keep, priced{it, p})
		}
	}
	sort.SliceStable(keep, func(i, j int) bool { return keep[i].price < keep[j].price })
	if len(keep) == 0 {
		return nil, "can't replace with a cheaper node"
	}
	if spotToSpot && len(cands) == 1 {
		if len(keep) < spotToSpotMinTypes {
			return nil, fmt.Sprintf("SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d", spotToSpotMinTypes, len(keep))
		}
		keep = keep[:spotToSpotMinTypes]
	}
	out := *nc
	out.InstanceTypes = make([]*scheduling.InstanceType, len(keep))
	names := make([]string, len(keep))
	for i, k := range keep {
		out.InstanceTypes[i], names[i] = k.it, k.it.Name
	}
	out.Requirements = setRequirement(reqs, v1.LabelInstanceType, names...)
	for _, r := range out.Requirements {
		if r.Key == v1.LabelInstanceType && r.MinValues != nil && len(names) < *r.MinValues {
			return nil, fmt.Sprintf("minValues requirement is not met for %q (%d cheaper instance types, want %d)", r.Key, len(names), *r.MinValues)
		}
	}
	out.Price = keep[0].price
	return &out, ""
}

// setRequirement replaces every requirement on key by `key In values`,
// keeping minValues.
func setRequirement(reqs []scheduling.Requirement, key string, values ...string) []scheduling.Requirement {
	out := make([]scheduling.Requirement, 0, len(reqs)+1)
	var minValues *int
	for _, r := range reqs {
		if r.Key == key {
			if r.MinValues != nil {
				minValues = r.MinValues
			}
			continue
		}
		out = append(out, r)
	}
	out = append(out, scheduling.Requirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values, MinValues: minValues})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// admits reports whether every requirement on key allows value.
func admits(reqs []scheduling.Requirement, key, value string) bool {
	for _, r := range reqs {
		if r.Key != key {
			continue
		}
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			if !slices.Contains(r.Values, value) {
				return false
			}
		case corev1.NodeSelectorOpNotIn:
			if slices.Contains(r.Values, value) {
				return false
			}
		case corev1.NodeSelectorOpDoesNotExist:
			return false
		}
	}
	return true
}

// offeringPrice is the cheapest available offering of it whose zone and
// capacity type reqs allow.
func offeringPrice(it *scheduling.InstanceType, reqs []scheduling.Requirement) (float64, bool) {
	_, p, ok := cheapestOffering(it, reqs)
	return p, ok
}

func cheapestOffering(it *scheduling.InstanceType, reqs []scheduling.Requirement) (scheduling.Offering, float64, bool) {
	var best scheduling.Offering
	found := false
	for _, o := range it.Offerings {
		if !o.Available || !admits(reqs, v1.LabelTopologyZone, o.Zone) || !admits(reqs, v1.LabelCapacityType, o.CapacityType) {
			continue
		}
		if !found || o.Price < best.Price {
			best, found = o, true
		}
	}
	return best, best.Price, found
}

// Launch is the instance a replacement most likely becomes: its cheapest
// launch option at its cheapest allowed offering (the benchmark and the
// dry run apply commands with it).
func Launch(nc *scheduling.NewNodeClaim) (*scheduling.InstanceType, scheduling.Offering, bool) {
	var bestIT *scheduling.InstanceType
	var best scheduling.Offering
	for _, it := range nc.InstanceTypes {
		if o, p, ok := cheapestOffering(it, nc.Requirements); ok && (bestIT == nil || p < best.Price) {
			bestIT, best = it, o
		}
	}
	return bestIT, best, bestIT != nil
}
