package lowerbound

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/pods"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// ConfigBound is the configuration-LP lower bound on the hourly cost of a
// Snapshot's new nodes (Gilmore–Gomory): a program over whole nodes, each
// an offering and the integer number of pods of each class it holds, so it
// sees what the resource LP cannot: pods' sizes leave a node's capacity
// partly unusable, a node holds one pod of each required hostname
// anti-affinity group, and pods run only on the offerings they may.
type ConfigBound struct {
	// Value is a lower bound on the cost of the new nodes of any plan that
	// places the placeable pods, $/hour, valid whether or not the column
	// generation converged: the master's value divided by the largest
	// ratio of a configuration's dual value to its price (Farley), less
	// what existing nodes can take at those duals.
	Value float64
	// LP is the restricted master's value when the generation stopped: the
	// configuration LP's value at convergence, above it before.
	LP float64
	// Converged is true when no configuration prices out below its cost
	// (within the pricing tolerance), or Value is within it of LP: either
	// way Value is then the configuration LP's, to the tolerance.
	Converged bool
	// Iterations, Columns, Classes and Offerings size the run.
	Iterations, Columns, Classes, Offerings int
	// Unplaceable counts pending pods that fit no offering; they are left
	// out of the bound (no plan places them).
	Unplaceable int
	// Duals is each placeable pending pod's price at the bound's duals:
	// what its share of the bound is, $/hour. Their sum over the pods is
	// the master's value; a node of a plan costs more than its pods'
	// duals by what it wastes at these prices.
	Duals map[*corev1.Pod]float64
}

// ConfigLimits bound the column generation's work (deterministically: no
// clock), so a large Snapshot still yields a valid, if looser, bound.
type ConfigLimits struct {
	// MaxIterations of the master (default 400).
	MaxIterations int
	// SearchBudget is the branch-and-bound nodes one pricing search may
	// visit (default 4000); a search cut short bounds by its open subtrees.
	SearchBudget int
	// Tolerance is the relative reduced cost below which pricing stops
	// looking (default 1e-4): the bound is then within this of the LP.
	Tolerance float64
}

func (l ConfigLimits) withDefaults() ConfigLimits {
	if l.MaxIterations <= 0 {
		l.MaxIterations = 400
	}
	if l.SearchBudget <= 0 {
		l.SearchBudget = 4000
	}
	if l.Tolerance <= 0 {
		l.Tolerance = 1e-4
	}
	return l
}

// configColumn is one configuration in the master: on offering
// (a new node), or, when offering is negative, on existing node
// -1-offering of existingRooms (free, at most once).
type configColumn struct {
	offering int
	n        []int
	cost     float64
}

// Configurations computes the configuration-LP bound for the Snapshot's
// pending pods (DaemonSet-owned ones left out) under opts' price model.
// Each offering (a NodePool's instance type in one available zone and
// capacity type its requirements allow) holds its allocatable capacity less
// the DaemonSet pods that surely land on it; a pod class may use it when
// the pods tolerate the pool's taints and their node selector and required
// node affinity admit its labels. Pod affinity, topology spread and host
// ports are left out (which only loosens the bound). Existing nodes take
// pods for free, bounded by their free capacity, each one configuration
// of the classes it admits.
func Configurations(s *scheduling.Snapshot, opts scheduling.Options, limits ConfigLimits) (ConfigBound, error) {
	limits = limits.withDefaults()
	var pending []*corev1.Pod
	for _, p := range s.Pods {
		if !pods.IsOwnedByDaemonSet(p) {
			pending = append(pending, p)
		}
	}
	d := newDims(pending)
	classes, classOf := buildClasses(pending, d)
	offers := buildOfferings(s, d, classes, opts.ListPrices)
	out := ConfigBound{Classes: len(classes), Offerings: len(offers), Duals: map[*corev1.Pod]float64{}}
	if len(classes) == 0 {
		out.Converged = true
		return out, nil
	}
	nGroups := 0
	for _, c := range classes {
		for _, g := range c.groups {
			nGroups = max(nGroups, g+1)
		}
	}
	// Per offering, the most pods of each class one node may take.
	bounds := make([][]int, len(offers))
	for o, off := range offers {
		bounds[o] = make([]int, len(classes))
		k := knapsack{req: classReqs(classes), cap: off.cap, bound: make([]int, len(classes))}
		for c, cl := range classes {
			if !off.allowed[c] {
				continue
			}
			k.bound[c] = cl.count
			if len(cl.groups) > 0 {
				k.bound[c] = 1
			}
			bounds[o][c] = k.fits(c, off.cap)
		}
	}
	// Classes no offering holds are left out.
	var keep []int
	for c := range classes {
		if slices.ContainsFunc(bounds, func(b []int) bool { return b[c] > 0 }) {
			keep = append(keep, c)
		} else {
			out.Unplaceable += classes[c].count
		}
	}
	if len(keep) < len(classes) {
		classes, bounds = keepClasses(classes, bounds, keep, classOf)
		out.Classes = len(classes)
		for o := range offers {
			a := make([]bool, len(keep))
			for i, c := range keep {
				a[i] = offers[o].allowed[c]
			}
			offers[o].allowed = a
		}
	}
	for o := range offers {
		offers[o].sig = fmt.Sprint(offers[o].allowed)
	}
	if len(classes) == 0 {
		out.Converged = true
		return out, nil
	}
	reqs := classReqs(classes)
	groups := make([][]int, len(classes))
	demand := make([]float64, len(classes))
	for c, cl := range classes {
		groups[c] = cl.groups
		demand[c] = float64(cl.count)
	}
	g := &generation{s: s, opts: opts, limits: limits, d: d, classes: classes, offers: offers,
		bounds: bounds, reqs: reqs, groups: groups, demand: demand, nGroups: nGroups}
	g.seed()
	best, err := g.run(&out)
	if err != nil {
		return out, err
	}
	out.Value = max(0, best.value)
	out.Columns = len(g.cols)
	for p, c := range classOf {
		if c >= 0 {
			out.Duals[p] = best.pi[c]
		}
	}
	return out, nil
}

func classReqs(classes []podClass) [][]int64 {
	r := make([][]int64, len(classes))
	for c, cl := range classes {
		r[c] = cl.req
	}
	return r
}

// keepClasses drops the classes not in keep, renumbering classOf (-1 for
// pods of dropped classes).
func keepClasses(classes []podClass, bounds [][]int, keep []int, classOf map[*corev1.Pod]int) ([]podClass, [][]int) {
	renum := make([]int, len(classes))
	for i := range renum {
		renum[i] = -1
	}
	out := make([]podClass, len(keep))
	for i, c := range keep {
		renum[c] = i
		out[i] = classes[c]
	}
	for o := range bounds {
		b := make([]int, len(keep))
		for i, c := range keep {
			b[i] = bounds[o][c]
		}
		bounds[o] = b
	}
	for p, c := range classOf {
		classOf[p] = renum[c]
	}
	return out, bounds
}

// buildOfferings lists every NodePool's instance types in each available
// zone and capacity type the pool allows, priced by the price model before
// credits. A burstable type under billed prices is two offerings: its CPU
// cut to the baseline (no credits), and all of it with credits counted on
// what the configuration requests. Offerings with the same capacity and
// classes keep only the cheapest.
func buildOfferings(s *scheduling.Snapshot, d dims, classes []podClass, listPrices bool) []offering {
	best := map[string]int{}
	var out []offering
	cpu, hasCPU := d.index[corev1.ResourceCPU]
	pools := slices.Clone(s.NodePools)
	sort.SliceStable(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	for _, np := range pools {
		for _, it := range s.InstanceTypes[np.Name] {
			if !admitsAll(np.Requirements, it.Requirements) {
				continue
			}
			alloc := d.vector(it.Allocatable())
			if q, ok := it.Allocatable()[corev1.ResourcePods]; ok {
				alloc[d.index[corev1.ResourcePods]] = q.Value() * 1000
			}
			for _, o := range it.Offerings {
				if !o.Available || !scheduling.RequirementsAdmit(np.Requirements, labelZone, o.Zone) || !scheduling.RequirementsAdmit(np.Requirements, v1.LabelCapacityType, o.CapacityType) {
					continue
				}
				labels := offeringLabels(np, it, o.Zone, o.CapacityType)
				daemon := daemonLoad(s, np, labels, d)
				capv := make([]int64, len(alloc))
				for i := range alloc {
					capv[i] = alloc[i] - daemon[i]
				}
				if slices.ContainsFunc(capv, func(v int64) bool { return v < 0 }) {
					continue
				}
				off := offering{name: fmt.Sprintf("%s/%s/%s/%s", np.Name, it.Name, o.Zone, o.CapacityType),
					typ: it, list: o.Price, price: scheduling.NodePrice(it, o.Price, 0, listPrices).Total(),
					cap: capv, allowed: make([]bool, len(classes))}
				if hasCPU {
					off.daemonCPU = daemon[cpu]
				}
				any := false
				for c, cl := range classes {
					off.allowed[c] = admits(cl.pod, np, labels)
					any = any || off.allowed[c]
				}
				if !any {
					continue
				}
				variants := []offering{off}
				if b := it.Burst; !listPrices && b.CreditRate() > 0 && hasCPU {
					variants = nil
					if off.daemonCPU <= b.BaselineMilliCPU {
						// The DaemonSet pods leave some baseline: a node
						// whose pods stay within it pays no credits.
						base := off
						base.cap = slices.Clone(off.cap)
						base.cap[cpu] = min(base.cap[cpu], b.BaselineMilliCPU-off.daemonCPU)
						variants = append(variants, base)
					}
					full := off
					full.name += "+credits"
					full.burst = b
					variants = append(variants, full)
				}
				for _, v := range variants {
					// Alike when they hold the same and their credits
					// have the same linear form.
					sig := fmt.Sprint(v.cap, v.allowed, v.burst.CreditRate(), v.burst.CreditLine(v.daemonCPU))
					if i, ok := best[sig]; ok {
						if v.price < out[i].price {
							out[i] = v
						}
						continue
					}
					best[sig] = len(out)
					out = append(out, v)
				}
			}
		}
	}
	return out
}

// daemonLoad is what the DaemonSet pods that surely run on a node of this
// offering request: those that tolerate the pool's taints and whose node
// selector and required node affinity match the node's labels, counting
// only daemons whose terms name labels the offering decides (so a daemon
// is never charged where it might not run).
func daemonLoad(s *scheduling.Snapshot, np *scheduling.NodePool, offered map[string][]string, d dims) []int64 {
	total := make([]int64, len(d.names))
	if len(s.DaemonSets) == 0 {
		return total
	}
	labels := map[string]string{}
	for k, v := range offered {
		if len(v) == 1 {
			labels[k] = v[0]
		}
	}
	for _, dp := range scheduling.DaemonPodsFor(s.DaemonSets, labels, np.Taints) {
		if !decided(dp, labels) {
			continue
		}
		v := d.vector(pods.Requests(dp))
		v[d.index[corev1.ResourcePods]] = 1000
		for i := range total {
			total[i] += v[i]
		}
	}
	return total
}

// decided reports whether every label key p's node selector and required
// node affinity name is one of labels.
func decided(p *corev1.Pod, labels map[string]string) bool {
	for k := range p.Spec.NodeSelector {
		if _, ok := labels[k]; !ok {
			return false
		}
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if _, ok := labels[e.Key]; !ok {
				return false
			}
		}
		if len(t.MatchFields) > 0 {
			return false
		}
	}
	return true
}

// generation is one column generation run.
type generation struct {
	s       *scheduling.Snapshot
	opts    scheduling.Options
	limits  ConfigLimits
	d       dims
	classes []podClass
	offers  []offering
	bounds  [][]int // per offering, per class
	reqs    [][]int64
	groups  [][]int
	demand  []float64
	nGroups int
	cols    []configColumn
	seen    map[string]bool
	working []int   // the master's dual working set
	lp      *primal // the master's primal simplex, when it is used
	rooms   *[]room
}

// dualBound is a valid bound and the duals it came from.
type dualBound struct {
	value float64
	pi    []float64
}

// cost is what configuration n on offering o costs per hour, by
// scheduling.NodePrice with the CPU its pods and the DaemonSet pods request.
func (g *generation) cost(o int, n []int) float64 {
	if o < 0 {
		return 0
	}
	off := &g.offers[o]
	cpuMilli := off.daemonCPU
	if i, ok := g.d.index[corev1.ResourceCPU]; ok {
		for c, k := range n {
			cpuMilli += int64(k) * g.reqs[c][i]
		}
	}
	return scheduling.NodePrice(off.typ, off.list, cpuMilli, g.opts.ListPrices).Total()
}

func (g *generation) add(o int, n []int) bool {
	if g.seen == nil {
		g.seen = map[string]bool{}
	}
	key := fmt.Sprint(o, n)
	if g.seen[key] {
		return false
	}
	g.seen[key] = true
	g.cols = append(g.cols, configColumn{offering: o, n: slices.Clone(n), cost: g.cost(o, n)})
	return true
}

// seed gives every class a column of its own: as many of its pods as fit
// the offering where that is cheapest per pod, so the master is feasible.
func (g *generation) seed() {
	for c := range g.classes {
		bestO, bestPer := -1, math.Inf(1)
		var bestN []int
		for o := range g.offers {
			k := g.bounds[o][c]
			if k == 0 {
				continue
			}
			n := make([]int, len(g.classes))
			n[c] = k
			if per := g.cost(o, n) / float64(k); per < bestPer {
				bestO, bestPer, bestN = o, per, n
			}
		}
		g.add(bestO, bestN)
	}
}

// run alternates the master and pricing until no configuration prices out
// or the limits are reached, and returns the best valid bound seen.
func (g *generation) run(out *ConfigBound) (dualBound, error) {
	best := dualBound{value: math.Inf(-1)}
	scale, active := g.surrogateScale()
	const perRound = 8
	for out.Iterations = 1; out.Iterations <= g.limits.MaxIterations; out.Iterations++ {
		value, pi, mu, err := g.master()
		if err != nil {
			return best, fmt.Errorf("solving the configuration master: %w", err)
		}
		out.LP = value
		if len(pi) == 0 {
			break
		}
		pi = cleanDuals(pi)
		// Root bounds of every offering, most promising first.
		type prospect struct {
			o     int
			ratio float64 // upper bound on dual value / price
			s     *surrogate
			adj   knapsack
			rx    *relaxation
		}
		var prospects []prospect
		maxRatio := 0.0
		used := make([]bool, g.nGroups)
		tables, grids := g.tables(pi), g.grids(pi, 1<<18)
		for o := range g.offers {
			k := g.knapsackFor(o, pi)
			k.tables = tables[g.offers[o].sig]
			off := &g.offers[o]
			tb := math.Inf(1)
			var rx *relaxation
			if !off.paysCredits() {
				// The tables alone often settle it, else the relaxation.
				if tb = min(k.tableBound(off.cap), grids[off.sig].bound(off.cap)); tb <= off.price*(1+g.limits.Tolerance) {
					maxRatio = max(maxRatio, tb/off.price)
					continue
				}
				r := relax(&k)
				rx = &r
				if tb = min(tb, r.bound(&k)); tb <= off.price*(1+g.limits.Tolerance) {
					maxRatio = max(maxRatio, tb/off.price)
					continue
				}
			}
			s, ub := k.bestSurrogate(scale, active, used)
			if len(s.order) == 0 {
				continue
			}
			ratio := min(ub, tb) / off.price
			if off.paysCredits() {
				// Credits: search with the credit-adjusted values.
				ratio = g.creditRatio(o, pi, ratio, scale, active, used)
				adj := g.knapsackFor(o, pi)
				for c := range adj.val {
					if i, ok := g.d.index[corev1.ResourceCPU]; ok {
						adj.val[c] -= off.burst.CreditRate() * float64(g.reqs[c][i])
					}
				}
				adj.open = k.open
				as := adj.newSurrogate(s.w)
				prospects = append(prospects, prospect{o: o, ratio: ratio, s: &as, adj: adj})
				maxRatio = max(maxRatio, ratio)
				continue
			}
			if ratio > 1+g.limits.Tolerance {
				prospects = append(prospects, prospect{o: o, ratio: ratio, s: &s, adj: k, rx: rx})
			} else {
				maxRatio = max(maxRatio, ratio)
			}
		}
		sort.SliceStable(prospects, func(i, j int) bool { return prospects[i].ratio > prospects[j].ratio })
		added := 0
		for i, p := range prospects {
			off := &g.offers[p.o]
			target := off.price * (1 + g.limits.Tolerance)
			if off.paysCredits() {
				target = off.creditFloor()
				target += math.Abs(target) * g.limits.Tolerance
			}
			if added >= perRound && i >= perRound {
				maxRatio = max(maxRatio, p.ratio)
				continue
			}
			n, _, ub := p.adj.search(p.s, target, g.limits.SearchBudget, g.nGroups)
			if off.paysCredits() {
				maxRatio = max(maxRatio, p.ratio)
			} else {
				maxRatio = max(maxRatio, min(ub/off.price, p.ratio))
			}
			if g.addPricing(p.o, n, pi) {
				added++
			} else if p.rx != nil && g.addPricing(p.o, p.rx.round(&p.adj, g.nGroups, g.limits.SearchBudget), pi) {
				// The relaxation's rounded optimum, where the search
				// found no column that prices out.
				added++
			}
		}
		added += g.traceBack(pi, grids)
		added += g.priceExisting(pi, mu, scale, active)
		if maxRatio > 0 {
			if lb := g.farley(pi, maxRatio); lb > best.value {
				best = dualBound{value: lb, pi: pi}
			}
		}
		if added == 0 {
			out.Converged = maxRatio <= 1+g.limits.Tolerance
			if !out.Converged {
				// Prove harder where the bound is loose.
				if r := g.prove(pi, 5*g.limits.SearchBudget); r < maxRatio {
					if lb := g.farley(pi, r); lb > best.value {
						best = dualBound{value: lb, pi: pi}
					}
					out.Converged = r <= 1+g.limits.Tolerance
				}
			}
			break
		}
	}
	if out.Iterations > g.limits.MaxIterations {
		out.Iterations = g.limits.MaxIterations
	}
	// Or proven by the bound itself: the duals were cleaned, so a ratio
	// a hair above one can still give the master's value.
	out.Converged = out.Converged || best.value >= out.LP*(1-g.limits.Tolerance)
	if math.IsInf(best.value, -1) {
		best = dualBound{pi: make([]float64, len(g.classes))}
	}
	return best, nil
}

// cleanDuals is pi without the simplex's noise: values below a ten
// thousandth of the largest set to zero, and, when the rest are whole
// multiples of one step (the least of them over k ≤ 8) to a ten
// thousandth, snapped to them. The Farley bound holds for any duals ≥ 0
// (it prices every configuration at the duals it is given), so cleaning
// costs the bound only what the values move (a ten thousandth at most),
// and it lets the pricing tables see duals as the master meant them: a
// class worth 10⁻⁶ is one the exact tables would otherwise have to count,
// in its own units.
func cleanDuals(pi []float64) []float64 {
	top := slices.Max(pi)
	if top <= 0 {
		return pi
	}
	out := slices.Clone(pi)
	least := math.Inf(1)
	for c, v := range out {
		if v < 1e-4*top {
			out[c] = 0
		} else {
			least = min(least, v)
		}
	}
	for k := 1.0; k <= 8; k++ {
		step := least / k
		if !slices.ContainsFunc(out, func(v float64) bool {
			x := v / step
			return math.Abs(x-math.Round(x)) > 1e-4*max(1, x)
		}) {
			for c, v := range out {
				out[c] = math.Round(v/step) * step
			}
			break
		}
	}
	return out
}

// addPricing adds configuration n on offering o when it prices out at
// duals pi (worth more than it costs, beyond the tolerance), and says
// whether it did.
func (g *generation) addPricing(o int, n []int, pi []float64) bool {
	return worth(n, pi) > g.cost(o, n)*(1+g.limits.Tolerance) && g.add(o, n)
}

// worth is configuration n's value at per-class values val (duals, or a
// knapsack's values).
func worth(n []int, val []float64) float64 {
	v := 0.0
	for c, q := range n {
		v += float64(q) * val[c]
	}
	return v
}

// traceBack adds, for each offering whose exact two-dimension table
// prices a configuration above its cost, the configuration the table
// traces back when it fits the offering and still prices out at duals
// pi, and says how many it added. It runs every round, beside the
// search: the table's configuration is the best there is where the
// table is exact, which the search, cut short, may not reach.
func (g *generation) traceBack(pi []float64, grids map[string]gridBounds) int {
	added := 0
	for o := range g.offers {
		off := &g.offers[o]
		gb := grids[off.sig].exact
		if off.paysCredits() || gb.bound(off.cap) <= off.price*(1+g.limits.Tolerance) {
			continue
		}
		n := gb.config(off.cap, g.bounds[o])
		rem := slices.Clone(off.cap)
		used := map[int]bool{}
		fits := true
		for c, k := range n {
			if k == 0 {
				continue
			}
			for d, r := range g.reqs[c] {
				rem[d] -= int64(k) * r
			}
			for _, grp := range g.groups[c] {
				fits = fits && !used[grp] && k == 1
				used[grp] = true
			}
		}
		fits = fits && !slices.ContainsFunc(rem, func(v int64) bool { return v < 0 })
		if fits && g.addPricing(o, n, pi) {
			added++
		}
	}
	return added
}

// priceExisting adds, for each existing node, the configuration of most
// dual value it holds at duals pi when that is above the node's own dual
// mu (what the master already lets it take), and says how many it added.
// scale and active are run's surrogateScale, which the duals do not change.
func (g *generation) priceExisting(pi, mu, scale []float64, active []int) int {
	added := 0
	for e, room := range g.existingRooms() {
		k := knapsack{val: pi, req: g.reqs, cap: room.free, bound: room.bound, groups: g.groups}
		s, _ := k.bestSurrogate(scale, active, make([]bool, g.nGroups))
		if len(s.order) == 0 {
			continue
		}
		target := mu[e]*(1+g.limits.Tolerance) + 1e-9
		if n, val, _ := k.search(&s, target, g.limits.SearchBudget, g.nGroups); val > target && g.add(-1-e, n) {
			added++
		}
	}
	return added
}

// prove is the largest ratio of dual value to price over every offering's
// configurations at duals pi, searched with the given budget per offering.
func (g *generation) prove(pi []float64, budget int) float64 {
	scale, active := g.surrogateScale()
	tables, grids := g.tables(pi), g.grids(pi, 1<<22)
	used := make([]bool, g.nGroups)
	ratio := 0.0
	for o := range g.offers {
		off := &g.offers[o]
		k := g.knapsackFor(o, pi)
		k.tables = tables[off.sig]
		tb := k.tableBound(off.cap)
		if !off.paysCredits() {
			tb = min(tb, grids[off.sig].bound(off.cap))
			if tb > off.price*(1+g.limits.Tolerance) {
				r := relax(&k)
				tb = min(tb, r.bound(&k))
			}
		}
		if tb <= off.price*(1+g.limits.Tolerance) {
			ratio = max(ratio, tb/off.price)
			continue
		}
		s, ub := k.bestSurrogate(scale, active, used)
		if len(s.order) == 0 {
			continue
		}
		if off.paysCredits() {
			ratio = max(ratio, g.creditRatio(o, pi, ub/off.price, scale, active, used))
			continue
		}
		ub = min(ub, tb)
		if ub > off.price*(1+g.limits.Tolerance) {
			_, _, sub := k.search(&s, off.price*(1+g.limits.Tolerance), budget, g.nGroups)
			ub = min(ub, sub)
		}
		ratio = max(ratio, ub/off.price)
	}
	return ratio
}

// creditRatio bounds the ratio of dual value to price over the
// configurations of a burstable offering that pays credits. A
// configuration using cpu millicores costs max(P, F + s·cpu): P the price
// before credits, F + s·cpu the credits' linear form over the baseline
// (F = creditFloor, s = CreditRate). The maximum is at least any mix
// λ·P + (1−λ)·(F + s·cpu), λ in [0, 1], so the ratio is at most θ
// wherever, for some λ, no configuration has Σ n·(π − θ·(1−λ)·s·cpu)
// above θ·(λ·P + (1−λ)·F). λ = 0 prices the configurations under the
// baseline by a line that falls below P (loose where the baseline's
// credits are worth much of the price); λ = 1 ignores the credits (hi, a
// bound at the price before credits); the mixes between often bound
// tighter than either. Bisection from hi for each λ of a grid; the least
// holds.
func (g *generation) creditRatio(o int, pi []float64, hi float64, scale []float64, active []int, used []bool) float64 {
	off := &g.offers[o]
	cpu, ok := g.d.index[corev1.ResourceCPU]
	if !ok {
		return hi
	}
	rate, floor := off.burst.CreditRate(), off.creditFloor()
	best := hi
	for _, lambda := range []float64{0, 0.25, 0.5, 0.75} {
		constant := lambda*off.price + (1-lambda)*floor
		if constant <= 0 {
			continue
		}
		holds := func(theta float64) bool {
			k := g.knapsackFor(o, pi)
			for c := range k.val {
				k.val[c] -= theta * (1 - lambda) * rate * float64(g.reqs[c][cpu])
			}
			_, ub := k.bestSurrogate(scale, active, used)
			return ub <= theta*constant
		}
		lo, up := 0.0, best
		for range 30 {
			mid := (lo + up) / 2
			if holds(mid) {
				up = mid
			} else {
				lo = mid
			}
		}
		best = up
	}
	return best
}

// farley is the bound the duals pi give: pi scaled by 1/maxRatio is
// feasible for the dual of the full program over new nodes, and existing
// nodes' convexity rows take what each of them can hold at those duals.
func (g *generation) farley(pi []float64, maxRatio float64) float64 {
	theta := 1 / maxRatio
	sc, act := g.surrogateScale()
	v := 0.0
	for c, p := range pi {
		v += p * g.demand[c]
	}
	for _, room := range g.existingRooms() {
		k := knapsack{val: pi, req: g.reqs, cap: room.free, bound: room.bound, groups: g.groups}
		s, _ := k.bestSurrogate(sc, act, make([]bool, g.nGroups))
		if len(s.order) == 0 {
			continue
		}
		_, _, ub := k.search(&s, 0, g.limits.SearchBudget, g.nGroups)
		v -= ub
	}
	return theta * v
}

// room is what an existing node can still take: its free capacity and the
// most pods of each class it may hold.
type room struct {
	free  []int64
	bound []int
}

// existingRooms lists the existing nodes that take pods (not marked for
// deletion), each with its allocatable capacity less its pods' requests,
// and the classes whose pods tolerate its taints and whose node selector
// and required node affinity match its labels (Kubernetes' own matching).
// A node still initialising is taken to shed every taint, which only
// loosens the bound.
func (g *generation) existingRooms() []room {
	if g.rooms != nil {
		return *g.rooms
	}
	var out []room
	for _, n := range g.s.Nodes {
		if n.MarkedForDeletion {
			continue
		}
		r := room{free: g.d.vector(n.Allocatable), bound: make([]int, len(g.classes))}
		if q, ok := n.Allocatable[corev1.ResourcePods]; ok {
			r.free[g.d.index[corev1.ResourcePods]] = q.Value() * 1000
		}
		for _, p := range n.Pods {
			v := g.d.podVector(p)
			for i := range r.free {
				r.free[i] -= v[i]
			}
		}
		for i := range r.free {
			r.free[i] = max(0, r.free[i])
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: n.Labels}}
		any := false
		for c, cl := range g.classes {
			if n.Initialized {
				if _, bad := scheduling.Untolerated(n.Taints, cl.pod.Spec.Tolerations, true); bad {
					continue
				}
			}
			if ok, err := nodeaffinity.GetRequiredNodeAffinity(cl.pod).Match(node); err != nil || !ok {
				continue
			}
			r.bound[c] = cl.count
			any = true
		}
		if any {
			out = append(out, r)
		}
	}
	g.rooms = &out
	return out
}

// tables are the one-dimension bounds at duals pi, per set of classes an
// offering may take.
func (g *generation) tables(pi []float64) map[string][]dimTable {
	maxCap := map[string][]int64{}
	allowed := map[string][]bool{}
	for _, off := range g.offers {
		m, ok := maxCap[off.sig]
		if !ok {
			m = make([]int64, len(off.cap))
			maxCap[off.sig], allowed[off.sig] = m, off.allowed
		}
		for d, v := range off.cap {
			m[d] = max(m[d], v)
		}
	}
	counts := make([]int, len(g.classes))
	for c, cl := range g.classes {
		counts[c] = cl.count
	}
	out := map[string][]dimTable{}
	for sig, m := range maxCap {
		for d := range g.d.names {
			out[sig] = append(out[sig], newDimTable(pi, g.reqs, counts, g.groups, allowed[sig], d, m[d]))
		}
	}
	return out
}

// grids are the two-dimension bounds at duals pi (gridBound), one per
// set of classes an offering may take, over CPU and memory (what the
// nodes run out of; the pods' slots where either is not requested), each
// up to its offerings' largest capacity.
func (g *generation) grids(pi []float64, cells int64) map[string]gridBounds {
	var dims []int
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		if i, ok := g.d.index[name]; ok && len(dims) < 2 {
			dims = append(dims, i)
		}
	}
	out := map[string]gridBounds{}
	if len(dims) < 2 {
		return out // the pods request nothing: the tables settle it
	}
	caps := map[string][][2]int64{}
	allowed := map[string][]bool{}
	top := map[string]float64{}
	for _, off := range g.offers {
		caps[off.sig] = append(caps[off.sig], [2]int64{off.cap[dims[0]], off.cap[dims[1]]})
		allowed[off.sig] = off.allowed
		// Values above a quarter over the dearest price prove nothing.
		top[off.sig] = max(top[off.sig], 1.25*off.price)
	}
	for sig, m := range caps {
		// Smallest first: the table reaches as many as it can.
		slices.SortFunc(m, func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
		bound := make([]int, len(g.classes))
		for c, cl := range g.classes {
			if allowed[sig][c] {
				bound[c] = cl.count
			}
		}
		out[sig] = newGridBounds(pi, g.reqs, bound, g.groups, [2]int{dims[0], dims[1]}, g.d.index[corev1.ResourcePods], m, top[sig], cells)
	}
	return out
}

// knapsackFor is offering o's pricing problem at duals pi.
func (g *generation) knapsackFor(o int, pi []float64) knapsack {
	return knapsack{val: slices.Clone(pi), req: g.reqs, cap: g.offers[o].cap, bound: g.bounds[o], groups: g.groups}
}

// surrogateScale is each dimension's weight unit (one over the pods'
// total demand of it) and the dimensions they demand at all.
func (g *generation) surrogateScale() ([]float64, []int) {
	scale := make([]float64, len(g.d.names))
	var active []int
	for k := range g.d.names {
		t := 0.0
		for c := range g.classes {
			t += g.demand[c] * float64(g.reqs[c][k])
		}
		if t > 0 {
			scale[k] = 1 / t
			active = append(active, k)
		}
	}
	return scale, active
}

// maxPrimalRooms is the most existing nodes for which the master is
// solved by the primal simplex (a row each in its dense basis); above it,
// through the dual over a working set. A variable so that a test can
// hold the two to the same value.
var maxPrimalRooms = 64

// master solves the restricted master LP, min Σ cost·x subject to each
// class's pods covered and each existing node holding at most one of its
// configurations, over the columns so far, through its dual: max Σ N·π −
// Σ μ subject to π·n ≤ cost for every new node's column, π·n ≤ μ_e for
// every column of existing node e, π, μ ≥ 0. The dual is solved over a
// working set of columns (every seed, so each class is bounded, and those
// found violated), growing it until every column holds, so the duals are
// exact: a configuration that prices out is new. The variables are y =
// N·π, so every row's scale is one. It returns the value, π and μ.
func (g *generation) master() (float64, []float64, []float64, error) {
	if len(g.existingRooms()) <= maxPrimalRooms {
		return g.solvePrimal()
	}
	m := len(g.classes)
	in := map[int]bool{}
	for _, j := range g.working {
		in[j] = true
	}
	for j := range min(m, len(g.cols)) {
		if !in[j] {
			in[j] = true
			g.working = append(g.working, j)
		}
	}
	for range 100 {
		y, mu, slack, value, err := g.restrictedDual(g.working)
		if err != nil {
			return 0, nil, nil, err
		}
		type violation struct {
			j int
			v float64
		}
		var viol []violation
		for j, col := range g.cols {
			if in[j] {
				continue
			}
			v, scale := -col.cost, col.cost
			if col.offering < 0 {
				v, scale = -mu[-1-col.offering], 1
			}
			for r, k := range col.n {
				v += float64(k) / g.demand[r] * y[r]
			}
			if v > 1e-9*scale {
				viol = append(viol, violation{j, v / scale})
			}
		}
		if len(viol) == 0 {
			pi := make([]float64, m)
			for r := range m {
				pi[r] = max(0, y[r]) / g.demand[r]
			}
			// The next master starts from the columns these duals hold
			// tight (and the seeds, which it adds back): a column left
			// out is checked against the new duals and comes back when it
			// binds, so the working set stays the size of a basis rather
			// than every column ever generated, and each solve is as
			// cheap as the first.
			tight := g.working[:0]
			for i, j := range g.working {
				if j < m || slack[i] <= 1e-9*max(1, g.cols[j].cost) {
					tight = append(tight, j)
				}
			}
			g.working = tight
			return value, pi, mu, nil
		}
		sort.Slice(viol, func(a, b int) bool { return viol[a].v > viol[b].v })
		for _, v := range viol[:min(len(viol), max(8, m/2))] {
			in[v.j] = true
			g.working = append(g.working, v.j)
		}
	}
	return 0, nil, nil, errors.New("the dual's working set did not settle")
}

// restrictedDual solves max Σ y − Σ μ subject to Σ_r (n_r/N_r)·y_r ≤
// cost for the working columns of new nodes and Σ_r (n_r/N_r)·y_r − μ_e ≤
// 0 for those of existing node e, y, μ ≥ 0, in gonum's standard form with
// a slack per column (the slacks are a feasible first basis: every cost
// is ≥ 0). It returns y, μ, each working column's slack and the value.
func (g *generation) restrictedDual(working []int) ([]float64, []float64, []float64, float64, error) {
	// A μ for each existing node with a working column (a variable in no
	// row would be unbounded, and gonum refuses it).
	muOf := map[int]int{}
	for _, j := range working {
		if e := -1 - g.cols[j].offering; e >= 0 {
			if _, ok := muOf[e]; !ok {
				muOf[e] = len(muOf)
			}
		}
	}
	m, nE, w := len(g.classes), len(muOf), len(working)
	a := mat.NewDense(w, m+nE+w, nil)
	c := make([]float64, m+nE+w)
	b := make([]float64, w)
	for r := range m {
		c[r] = -1
	}
	for e := range nE {
		c[m+e] = 1
	}
	basis := make([]int, w)
	for i, j := range working {
		col := g.cols[j]
		for r, k := range col.n {
			if k > 0 {
				a.Set(i, r, float64(k)/g.demand[r])
			}
		}
		if col.offering < 0 {
			a.Set(i, m+muOf[-1-col.offering], -1)
		}
		a.Set(i, m+nE+i, 1)
		// Costs raised by up to a millionth, unevenly, so no two
		// vertices tie; y is scaled back below.
		_, frac := math.Modf(float64(j+1) * 0.6180339887)
		b[i] = col.cost * (1 + 1e-6*frac)
		basis[i] = m + nE + i
	}
	opt, x, err := lp.Simplex(c, a, b, 1e-10, basis)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	y := x[:m]
	for r := range y {
		y[r] /= 1 + 1e-6
	}
	mu := make([]float64, len(g.existingRooms()))
	for e, v := range muOf {
		mu[e] = x[m+v] / (1 + 1e-6)
	}
	return y, mu, x[m+nE:], -opt / (1 + 1e-6), nil
}

// relaxation is the pricing knapsack's linear relaxation on one node:
// max Σ val·x subject to Σ req·x ≤ cap in every dimension the classes
// use and 0 ≤ x ≤ bound, solved by a bounded-variable primal simplex
// over those few rows (the slacks the first basis, Bland's rule so it
// cannot cycle). On a large node, where a configuration holds hundreds
// of pods, its optimum floored is within a few pods of the best
// configuration, which the branch and bound, following one surrogate's
// order under a work budget, can miss by far (generic-5000: its
// 400-vCPU node filled with 100m/4 GiB pods first, under a tenth of its
// price, while the relaxation's optimum was worth 2 % more). Its row
// prices w also bound every configuration (relaxation.bound).
type relaxation struct {
	x []float64 // per class, the optimum
	w []float64 // per dimension, the price of a unit of capacity (≥ 0)
}

// relax solves the relaxation of knapsack k (its val, req, cap, bound;
// groups are left out, which only loosens it).
func relax(k *knapsack) relaxation {
	out := relaxation{x: make([]float64, len(k.val)), w: make([]float64, len(k.cap))}
	var cls, dims []int
	for c, v := range k.val {
		if v > 0 && k.bound[c] > 0 && k.fits(c, k.cap) > 0 {
			cls = append(cls, c)
		}
	}
	for d, cp := range k.cap {
		if cp > 0 && slices.ContainsFunc(cls, func(c int) bool { return k.req[c][d] > 0 }) {
			dims = append(dims, d)
		}
	}
	n, m := len(cls), len(dims)
	if n == 0 {
		return out
	}
	// Variables: the classes, then a slack per row. Rows are scaled to a
	// capacity of one. t is B⁻¹·[A I], beta the basic values.
	nv := n + m
	t := make([][]float64, m)
	beta := make([]float64, m)
	basis := make([]int, m)
	isBasic := make([]bool, nv)
	atUpper := make([]bool, nv)
	upper := func(j int) float64 {
		if j < n {
			return float64(k.bound[cls[j]])
		}
		return math.Inf(1)
	}
	cost := func(j int) float64 {
		if j < n {
			return k.val[cls[j]]
		}
		return 0
	}
	for i, d := range dims {
		t[i] = make([]float64, nv)
		for j, c := range cls {
			t[i][j] = float64(k.req[c][d]) / float64(k.cap[d])
		}
		t[i][n+i] = 1
		beta[i] = 1
		basis[i] = n + i
		isBasic[n+i] = true
	}
	const eps = 1e-12
	for range 50 * nv {
		// Entering: the first variable whose move improves (Bland).
		enter, dir := -1, 0.0
		for j := range nv {
			if isBasic[j] {
				continue
			}
			r := cost(j)
			for i := range m {
				r -= cost(basis[i]) * t[i][j]
			}
			if !atUpper[j] && r > 1e-12 {
				enter, dir = j, 1
				break
			}
			if atUpper[j] && r < -1e-12 {
				enter, dir = j, -1
				break
			}
		}
		if enter < 0 {
			break
		}
		// Ratio test: the entering variable's own range, then each basic
		// variable reaching zero or its bound (ties to the least index).
		step, leave, leaveUp := upper(enter), -1, false
		for i := range m {
			a := dir * t[i][enter]
			var lim float64
			var up bool
			switch {
			case a > eps:
				lim = beta[i] / a
			case a < -eps && !math.IsInf(upper(basis[i]), 1):
				lim, up = (upper(basis[i])-beta[i])/-a, true
			default:
				continue
			}
			if lim < step || (lim == step && leave >= 0 && basis[i] < basis[leave]) {
				step, leave, leaveUp = max(0, lim), i, up
			}
		}
		if math.IsInf(step, 1) {
			break // cannot happen: every class is bounded
		}
		for i := range m {
			beta[i] -= dir * step * t[i][enter]
		}
		if leave < 0 {
			atUpper[enter] = !atUpper[enter] // to its other bound
			continue
		}
		entered := step
		if atUpper[enter] {
			entered = upper(enter) - step
		}
		out := basis[leave]
		isBasic[out], atUpper[out] = false, leaveUp
		isBasic[enter], atUpper[enter] = true, false
		basis[leave] = enter
		beta[leave] = entered
		p := t[leave][enter]
		for j := range t[leave] {
			t[leave][j] /= p
		}
		for i := range m {
			if i == leave || t[i][enter] == 0 {
				continue
			}
			f := t[i][enter]
			for j := range t[i] {
				t[i][j] -= f * t[leave][j]
			}
		}
	}
	for j := range n {
		if atUpper[j] {
			out.x[cls[j]] = upper(j)
		}
	}
	for i, j := range basis {
		if j < n {
			out.x[cls[j]] = min(max(0, beta[i]), upper(j))
		}
	}
	// w = c_B·B⁻¹, in the rows' unscaled units.
	for i, d := range dims {
		v := 0.0
		for r := range m {
			v += cost(basis[r]) * t[r][n+i]
		}
		out.w[d] = max(0, v) / float64(k.cap[d])
	}
	return out
}

// bound is w·cap + Σ bound·(val − w·req)⁺, at least the value of every
// configuration of k, for any w ≥ 0 (Lagrange: a configuration n is worth
// Σ n·(val − w·req) + w·Σ n·req, at most that). At the relaxation's
// optimum it is the relaxation's value; computed afresh from w, it holds
// however inexact the simplex was.
func (r relaxation) bound(k *knapsack) float64 {
	v := 0.0
	for d, w := range r.w {
		v += w * float64(k.cap[d])
	}
	for c, val := range k.val {
		if k.fits(c, k.cap) == 0 {
			continue
		}
		red := val
		for d, w := range r.w {
			red -= w * float64(k.req[c][d])
		}
		v += float64(k.bound[c]) * max(0, red)
	}
	return v
}

// round is a configuration near the relaxation's optimum: each class
// floored (largest first, one member of each anti-affinity group), less
// none to three pods of each class it takes a fraction of, and the room
// left filled by the branch and bound in the order of the relaxation's
// prices (a few pods: exact, or nearly, within budget); the best of
// those four.
func (r relaxation) round(k *knapsack, nGroups int, budget int) []int {
	var order, frac []int
	for c, v := range k.val {
		if v > 0 && k.bound[c] > 0 {
			order = append(order, c)
		}
		if f := r.x[c] - math.Floor(r.x[c]); f > 1e-9 && f < 1-1e-9 {
			frac = append(frac, c)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(r.x[b], r.x[a]) })
	var best []int
	bestVal := math.Inf(-1)
	for drop := range 4 {
		n := make([]int, len(k.val))
		rem := slices.Clone(k.cap)
		used := make([]bool, nGroups)
		take := func(c, q int) {
			n[c] += q
			for d, s := range k.req[c] {
				rem[d] -= int64(q) * s
			}
			for _, g := range k.groups[c] {
				used[g] = true
			}
		}
		for _, c := range order {
			q := int(r.x[c] + 1e-9)
			if slices.Contains(frac, c) {
				q -= drop
			}
			if q = min(q, k.fits(c, rem)); q > 0 && !k.blocked(c, used) {
				take(c, q)
			}
		}
		fill := knapsack{val: k.val, req: k.req, cap: rem, bound: make([]int, len(k.val)), groups: k.groups}
		for c := range k.val {
			if !k.blocked(c, used) {
				fill.bound[c] = k.bound[c] - n[c]
			}
		}
		fs := fill.newSurrogate(r.w)
		if len(fs.order) > 0 {
			more, _, _ := fill.search(&fs, 0, budget, nGroups)
			for c, q := range more {
				n[c] += q
			}
		}
		if val := worth(n, k.val); val > bestVal {
			best, bestVal = n, val
		}
		if len(frac) == 0 {
			break
		}
	}
	return best
}
