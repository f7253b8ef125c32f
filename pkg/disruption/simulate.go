package disruption

import (
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
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
	// kube is what the replay of kube-scheduler's score reads (realise.go).
	kube *kubeScores
	// base is the cluster the simulations start from (see withLeaving).
	base *scheduling.Snapshot
	// totals feed the Balanced policy's score.
	totals poolTotals
	// full turns reduce off (tests compare both).
	full bool
	// reqs and classes are what the decision's first engine learnt about
	// each pod, shared by the engines it builds on the clusters its
	// command leaves (compose.go); nil in that first engine.
	reqs    map[*corev1.Pod]vec
	classes *classes
	// prepared keeps what the solver reads that no simulation of the
	// decision changes (every bound pod's requests, labels and
	// anti-affinity terms, the instance types' resources), shared with
	// the engines the decision builds on (share); nil when Options.Solve
	// replaces the solver.
	prepared *scheduling.Prepared
}

// share lets s reuse what parent has read about each pod.
func (s *simulator) share(parent *simulator) {
	s.reqs = parent.capacity().podReq
	if parent.red != nil {
		s.classes = parent.red.classes
	}
	if s.prepared != nil && parent.prepared != nil {
		s.prepared = parent.prepared
		s.solve = s.prepared.Solve
	}
}

// capacity is built on first use: emptiness and drift never need it.
func (s *simulator) capacity() *capacity {
	if s.capa == nil {
		s.capa = newCapacity(s.base, s.reqs)
	}
	return s.capa
}

func newSimulator(in *Input) *simulator {
	s := &simulator{in: in, solve: in.Options.Solve, minSavings: in.Options.MinSavingsFraction}
	if s.solve == nil {
		s.prepared = scheduling.NewPrepared()
		s.solve = s.prepared.Solve
	}
	switch {
	case s.minSavings == 0:
		s.minSavings = DefaultMinSavingsFraction
	case s.minSavings < 0:
		s.minSavings = 0
	}
	s.base = withLeaving(in)
	s.totals = newPoolTotals(in)
	s.initialized = make(map[string]bool, len(s.base.Nodes))
	for _, n := range s.base.Nodes {
		s.initialized[n.Name] = n.Initialized
	}
	return s
}

// withLeaving is the cluster as simulations see it: the pods of nodes
// already deleting or being disrupted are pending (they need room too, as
// Karpenter's simulation assumes) and those nodes take no new pods.
func withLeaving(in *Input) *scheduling.Snapshot {
	leaving := map[string]bool{}
	for i := range in.Nodes {
		if n := &in.Nodes[i]; n.Deleting || n.Disrupting {
			leaving[n.Name] = true
		}
	}
	if len(leaving) == 0 {
		return in.Cluster
	}
	snap := *in.Cluster
	snap.Pods = slices.Clip(in.Cluster.Pods)
	snap.Nodes = make([]*scheduling.ExistingNode, 0, len(in.Cluster.Nodes))
	for _, n := range in.Cluster.Nodes {
		if !leaving[n.Name] {
			snap.Nodes = append(snap.Nodes, n)
			continue
		}
		c := *n
		c.MarkedForDeletion, c.Pods = true, nil
		for _, p := range n.Pods {
			if pods.IsReschedulable(p) {
				snap.Pods = append(snap.Pods, p)
			} else {
				c.Pods = append(c.Pods, p)
			}
		}
		snap.Nodes = append(snap.Nodes, &c)
	}
	return &snap
}

// result is one simulation of removing a set of candidates.
type result struct {
	cands []*candidate
	// reason is why the candidates cannot all go, zero when every pod of
	// theirs found a place; failed names the
	// candidates whose pods did not.
	reason Why
	failed map[string]bool
	// replacements are the new nodes that carry candidates' pods, and
	// attributed each candidate's share of their price (by the cpu its
	// pods take on them), so a search can drop the candidates that do not
	// pay for themselves.
	replacements []*scheduling.NewNodeClaim
	attributed   map[string]float64
	moves        []Move
	price        float64 // the candidates' $/h
}

// run simulates removing cands for consolidation: preferences hold as if
// required, so a move that saves money never breaks one.
func (s *simulator) run(cands []*candidate) (*result, error) {
	return s.simulate(cands, true)
}

// runRelaxed simulates removing cands for drift, relaxing preferences one
// at a time as provisioning does (Karpenter's disruption simulation runs its
// provisioning scheduler, relaxation included): a drifted node must go even
// when its pods can only land on a node they merely prefer not to, such as
// one tainted PreferNoSchedule by the NodePool change that drifted it.
func (s *simulator) runRelaxed(cands []*candidate) (*result, error) {
	return s.simulate(cands, false)
}

func (s *simulator) simulate(cands []*candidate, requirePreferences bool) (*result, error) {
	base := s.base
	gone := make(map[string]bool, len(cands))
	from := map[*corev1.Pod]string{}
	r := &result{cands: cands, failed: map[string]bool{}, attributed: map[string]float64{}}
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
			s.red = newReducer(s.capacity(), base, s.classes)
		}
		snap.Nodes = s.red.reduce(snap.Nodes, snap.Pods)
	}
	s.solves++
	if n := s.in.Options.solved; n != nil {
		*n++
	}
	opts := s.in.Options.Scheduling
	opts.RequirePreferences = requirePreferences && !opts.IgnorePreferences
	opts.NoExchanges = true
	plan, err := s.solve(&snap, opts)
	if err != nil {
		return nil, fmt.Errorf("simulating the removal of %d nodes: %w", len(cands), err)
	}
	fail := func(c string, why Why) {
		r.failed[c] = true
		if r.reason.IsZero() {
			r.reason = why
		}
	}
	for _, pe := range plan.Unschedulable {
		if c, ok := from[pe.Pod]; ok {
			fail(c, wouldNotSchedule(pe))
		}
	}
	for _, e := range plan.Existing {
		for _, p := range e.Pods {
			c, ok := from[p]
			if !ok {
				continue
			}
			if !s.initialized[e.Node] {
				fail(c, Why{Kind: WhyUninitializedNode, Node: e.Node})
			}
			r.moves = append(r.moves, Move{Pod: p, From: c, To: e.Node, Replacement: -1})
		}
	}
	capa := s.capacity()
	for _, nc := range plan.NewNodeClaims {
		share := map[string]float64{}
		total := 0.0
		for _, p := range nc.Pods {
			w := float64(capa.request(p)[0]) + 1 // +1: pods without cpu still weigh
			total += w
			if c, ok := from[p]; ok {
				share[c] += w
				r.moves = append(r.moves, Move{Pod: p, From: c, Replacement: len(r.replacements)})
			}
		}
		if len(share) == 0 {
			continue
		}
		for c, w := range share {
			r.attributed[c] += nc.Price * w / total
		}
		r.replacements = append(r.replacements, nc)
	}
	if requirePreferences {
		// Consolidation only: drift replaces its node whatever the
		// scheduler then does, as Karpenter's does.
		s.follow(r)
	}
	return r, nil
}

// wouldNotSchedule is why a pod of a candidate would not schedule, with
// the solver's reason: why no existing node took it, else the first
// NodePool's by name, so messages are deterministic.
func wouldNotSchedule(pe scheduling.PodError) Why {
	why := Why{Kind: WhyPodsWouldNotSchedule, Pod: podKey(pe.Pod)}
	if pe.Existing != nil {
		why.Solver = pe.Existing
		return why
	}
	keys := make([]string, 0, len(pe.NodePools))
	for k := range pe.NodePools {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		why.NodePool, why.Solver = keys[0], pe.NodePools[keys[0]]
	}
	return why
}

// command turns a simulation into a command of method, or says why it
// is not worth one. Consolidation deletes when no new node is needed and
// otherwise replaces the candidates by at most as many new nodes (one for
// single-node consolidation) that together cost at most (1 − minSavings)
// of the candidates' price and strictly less, never 1→1 with the same
// instance type; drift takes whatever replacements the simulation needs.
func (s *simulator) command(r *result, method Method, reason Reason) (*Command, Why) {
	if !r.reason.IsZero() {
		return nil, r.reason
	}
	cmd := &Command{Method: method, Reason: reason, Moves: r.moves}
	for _, m := range r.moves {
		if !pods.IsVirtual(m.Pod) {
			cmd.PodsMoved++
		}
	}
	for _, c := range r.cands {
		cmd.Candidates = append(cmd.Candidates, c.node.Name)
	}
	if method != MethodDrift {
		if why := s.balanced(r.cands, r.attributed); !why.IsZero() {
			return nil, why
		}
	}
	if method == MethodDrift || len(r.replacements) == 0 {
		cmd.Replacements = r.replacements
		cmd.SavingsPerHour = r.price
		for _, nc := range r.replacements {
			cmd.SavingsPerHour -= nc.Price
		}
		return cmd, Why{}
	}
	if most := len(r.cands); len(r.replacements) > most || (method == MethodSingleNode && len(r.replacements) > 1) {
		return nil, Why{Kind: WhyWouldCreateNodes, Count: int64(len(r.replacements))}
	}
	repl, why := s.cheaperReplacements(r.replacements, r.cands, r.price)
	if repl == nil {
		return nil, why
	}
	cmd.Replacements = repl
	cmd.SavingsPerHour = r.price
	for _, nc := range repl {
		cmd.SavingsPerHour -= nc.Price
	}
	return cmd, Why{}
}

// spotToSpotMinTypes is how many cheaper spot types single-node spot-to-spot
// consolidation needs, so the replacement is not the next spot interruption
// waiting to happen (Karpenter's rule).
const spotToSpotMinTypes = 15

// cheaperReplacements narrows the solver's new nodes to launch options
// such that, whichever option the cloud picks for each, together they cost
// at most (1 − minSavings) × price and strictly less than price: each node
// keeps the options whose dearest offering fits its allowance (allowances:
// shares of that limit adding up to it). nil with Karpenter's reason when
// that is impossible.
func (s *simulator) cheaperReplacements(ncs []*scheduling.NewNodeClaim, cands []*candidate, price float64) ([]*scheduling.NewNodeClaim, Why) {
	limit := min(price*(1-s.minSavings), math.Nextafter(price, 0))
	allSpot := true
	for _, c := range cands {
		allSpot = allSpot && c.node.CapacityType == v1.CapacityTypeSpot
	}
	reqs := make([][]scheduling.Requirement, len(ncs))
	options := make([][]option, len(ncs))
	cheapest := make([]float64, len(ncs))
	sum := 0.0
	for i, nc := range ncs {
		reqs[i] = slices.Clone(nc.Requirements)
		spot, od := scheduling.RequirementsAdmit(reqs[i], v1.LabelCapacityType, v1.CapacityTypeSpot), scheduling.RequirementsAdmit(reqs[i], v1.LabelCapacityType, v1.CapacityTypeOnDemand)
		if allSpot && spot && !s.in.Options.SpotToSpot {
			return nil, Why{Kind: WhySpotToSpotDisabled}
		}
		if spot && od {
			// Options are priced at their spot offering below: pin the
			// replacement to spot so a spot shortage cannot fall back to
			// a dearer on-demand node (Karpenter does the same).
			reqs[i] = setRequirement(reqs[i], v1.LabelCapacityType, v1.CapacityTypeSpot)
		}
		options[i] = priceOptions(nc, reqs[i], s.listPrices())
		cheapest[i] = math.Inf(1)
		for _, o := range options[i] {
			cheapest[i] = min(cheapest[i], o.cheapest)
		}
		sum += cheapest[i]
	}
	if sum > limit {
		return nil, Why{Kind: WhyNotCheaper}
	}
	exclude := ""
	if len(cands) == 1 && len(ncs) == 1 {
		exclude = cands[0].node.InstanceType // never churn a node into another of its own type
	}
	allowance := allowances(options, cheapest, sum, limit, exclude)
	out := make([]*scheduling.NewNodeClaim, len(ncs))
	for i, nc := range ncs {
		repl, why := narrow(nc, reqs[i], options[i], allowance[i], exclude, allSpot && len(cands) == 1 && len(ncs) == 1, s.listPrices())
		if repl == nil {
			return nil, why
		}
		out[i] = repl
	}
	return out, Why{}
}

// option is one launch option of a replacement, priced once under the
// replacement's requirements (NodePrice with its requested CPU): at its
// cheapest allowed offering and at its dearest.
type option struct {
	it                *scheduling.InstanceType
	cheapest, dearest float64
}

// priceOptions prices nc's launch options under reqs, in nc's order,
// leaving out those with no allowed offering.
func priceOptions(nc *scheduling.NewNodeClaim, reqs []scheduling.Requirement, listPrices bool) []option {
	out := make([]option, 0, len(nc.InstanceTypes))
	cpu := nc.Requests.Cpu().MilliValue()
	for _, it := range nc.InstanceTypes {
		if p, ok := offeringPrice(it, reqs, cpu, listPrices); ok {
			out = append(out, option{it: it, cheapest: p, dearest: dearestOffering(it, reqs, cpu, listPrices)})
		}
	}
	return out
}

// allowances shares limit among the replacements, each the most its
// launch options may cost at their dearest offering: in proportion to
// each one's cheapest option, or, when that leaves some replacement no
// option (its cheapest type's dearest offering, in another zone, costs
// more than its share), first what each needs to keep one option and the
// rest in proportion. Either way they add up to limit, so whichever
// options launch, the replacements cost at most limit together; the
// second only rescues a set the first would refuse (a set of many
// replacements, each barely cheaper than its candidate, where one zone's
// dearer price used to sink the whole).
func allowances(options [][]option, cheapest []float64, sum, limit float64, exclude string) []float64 {
	out := make([]float64, len(options))
	need := make([]float64, len(options))
	proportional, total := true, 0.0
	for i, opts := range options {
		out[i] = cheapest[i] * limit / sum
		need[i] = math.Inf(1)
		for _, o := range opts {
			if o.it.Name != exclude {
				need[i] = min(need[i], o.dearest)
			}
		}
		proportional = proportional && need[i] <= out[i]
		total += need[i]
	}
	if proportional || total > limit {
		return out
	}
	for i := range out {
		out[i] = need[i] + (limit-total)*cheapest[i]/sum
	}
	return out
}

// narrow keeps nc's launch options (options, priced under reqs) whose
// dearest offering costs at most allowance (other than exclude), cheapest
// first; spotToSpot applies Karpenter's single-node spot-to-spot rule (at
// least 15 cheaper types, launch with the 15 cheapest). Options are priced
// by scheduling.NodePrice with nc's requested CPU (listPrices: at their
// list prices alone).
func narrow(nc *scheduling.NewNodeClaim, reqs []scheduling.Requirement, options []option, allowance float64, exclude string, spotToSpot, listPrices bool) (*scheduling.NewNodeClaim, Why) {
	var keep []option
	for _, o := range options {
		// Filter on the dearest offering the requirements allow (the cloud
		// may pick any of them), price on the cheapest.
		if o.it.Name != exclude && o.dearest <= allowance {
			keep = append(keep, o)
		}
	}
	sort.SliceStable(keep, func(i, j int) bool { return keep[i].cheapest < keep[j].cheapest })
	if len(keep) == 0 {
		return nil, Why{Kind: WhyNotCheaper}
	}
	if spotToSpot {
		if len(keep) < spotToSpotMinTypes {
			return nil, Why{Kind: WhySpotToSpotTypes, Count: int64(len(keep)), Want: spotToSpotMinTypes}
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
			return nil, Why{Kind: WhyMinValues, Key: r.Key, Count: int64(len(names)), Want: int64(*r.MinValues)}
		}
	}
	out.Price = keep[0].cheapest
	if o, ok := scheduling.CheapestOffering(keep[0].it, out.Requirements); ok {
		out.PriceParts = scheduling.NodePrice(keep[0].it, o.Price, nc.Requests.Cpu().MilliValue(), listPrices)
	}
	return &out, Why{}
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

// offeringPrice is what a node of type it carrying cpu millicores of
// requests costs (scheduling.NodePrice) at its cheapest offering reqs
// allow (scheduling.CheapestOffering).
func offeringPrice(it *scheduling.InstanceType, reqs []scheduling.Requirement, cpu int64, listPrices bool) (float64, bool) {
	o, ok := scheduling.CheapestOffering(it, reqs)
	return scheduling.NodePrice(it, o.Price, cpu, listPrices).Total(), ok
}

// listPrices is Options.Scheduling.ListPrices: nodes priced at their
// offerings' list prices alone.
func (s *simulator) listPrices() bool { return s.in.Options.Scheduling.ListPrices }

// dearestOffering is what the node costs at the dearest offering reqs
// allow (scheduling.DearestOfferingPrice), priced as offeringPrice prices.
func dearestOffering(it *scheduling.InstanceType, reqs []scheduling.Requirement, cpu int64, listPrices bool) float64 {
	return scheduling.NodePrice(it, scheduling.DearestOfferingPrice(it, reqs), cpu, listPrices).Total()
}

// Launch is the instance a replacement most likely becomes: its cheapest
// launch option at its cheapest allowed offering (the benchmark and the
// dry run apply commands with it).
func Launch(nc *scheduling.NewNodeClaim) (*scheduling.InstanceType, scheduling.Offering, bool) {
	var bestIT *scheduling.InstanceType
	var best scheduling.Offering
	for _, it := range nc.InstanceTypes {
		if o, ok := scheduling.CheapestOffering(it, nc.Requirements); ok && (bestIT == nil || o.Price < best.Price) {
			bestIT, best = it, o
		}
	}
	return bestIT, best, bestIT != nil
}
