package scheduling

import (
	"math"
	"math/bits"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// plan turns the solver state into a Plan.
func (sv *solver) plan() *Plan {
	out := &Plan{ListPrices: sv.opts.ListPrices}
	order := map[*ExistingNode]int{}
	for i, n := range sv.snap.Nodes {
		order[n] = i
	}
	ex := append([]*nodeState(nil), sv.existing...)
	sort.SliceStable(ex, func(i, j int) bool { return order[ex[i].ex] < order[ex[j].ex] })
	for _, n := range ex {
		if len(n.pods) > 0 {
			out.Existing = append(out.Existing, ExistingPlacement{Node: n.ex.Name, Pods: n.pods})
		}
	}
	reservations := map[string]int{}
	for _, p := range sv.pools {
		for _, t := range p.types {
			for _, o := range t.it.Offerings {
				if o.ReservationID != "" {
					reservations[o.ReservationID] = o.ReservationCapacity
				}
			}
		}
	}
	for _, n := range sv.newNodes {
		if len(n.pods) == 0 {
			continue
		}
		out.NewNodeClaims = append(out.NewNodeClaims, sv.finalize(n, reservations))
	}
	for _, f := range sv.failed {
		out.Unschedulable = append(out.Unschedulable, sv.failureReasons(f))
	}
	sort.SliceStable(out.Unschedulable, func(i, j int) bool {
		a, b := out.Unschedulable[i].Pod, out.Unschedulable[j].Pod
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

type option struct {
	i int
	// price is what the node costs on the option (poolT.price); list is
	// its offering's price alone, what the cloud compares when it picks
	// among a NodeClaim's options.
	price, list float64
	// reservation is set when the cheapest offering is a capacity
	// reservation.
	reservation string
	zone        string
}

// optionPrice is type t's cheapest available offering within zones × cts,
// honouring what is left of each capacity reservation.
func (sv *solver) optionPrice(t *typeT, zones uint64, cts uint32, reservations map[string]int) option {
	o := option{price: math.Inf(1)}
	for _, of := range t.offers {
		if zones&(1<<of.zone) == 0 || cts&(1<<of.ct) == 0 {
			continue
		}
		if of.reservation != "" && reservations[of.reservation] <= 0 {
			continue
		}
		better := of.price < o.price ||
			(of.price == o.price && of.reservation != "" && o.reservation == "")
		if better {
			o.price, o.reservation, o.zone = of.price, of.reservation, sv.zones[of.zone]
		}
	}
	return o
}

// candKey identifies a planned node's launch candidates: its pool, its
// requirement set (which decides its compatible types) and its zones and
// capacity types.
type candKey struct {
	reqs  int
	zones uint64
	cts   uint32
	// types is the node's type set when device claims narrowed it below
	// what its requirements allow ("" otherwise): two nodes with the same
	// requirements then differ in the GPUs their pods need.
	types string
}

// launchSet is a kept set of options rendered once for every node that
// keeps exactly those options: the instance types in price order, their
// names sorted, and the zones and capacity types they are offered in. The
// slices go into the Plan as they are, shared by those nodes (a Plan is
// read-only, as the Snapshot is).
type launchSet struct {
	zones    uint64
	cts      uint32
	idx      []int
	types    []*InstanceType
	names    []string
	offeredZ uint64
	offeredC uint32
}

// candidates are the types a node of pool p with n's requirements, zones
// and capacity types may launch as, with their cheapest offering, cheapest
// first (ties by name); memoised, as many planned nodes share them. Only
// for pools without capacity reservations.
func (sv *solver) candidates(p *poolT, n *nodeState) []option {
	k := candKey{reqs: n.reqs.id, zones: n.zones, cts: n.cts}
	if sv.planDevices() {
		k.types = n.types.key()
	}
	if c, ok := p.candMemo[k]; ok {
		return c
	}
	var out []option
	for i, t := range p.types {
		if !n.types.has(i) || !t.offered(n.zones, n.cts) {
			continue
		}
		o := sv.optionPrice(t, n.zones, n.cts, nil)
		if math.IsInf(o.price, 1) {
			continue
		}
		o.i, o.list = i, o.price
		o.price += t.volumes
		out = append(out, o)
	}
	sortOptions(p, out)
	if p.candMemo == nil {
		p.candMemo = map[candKey][]option{}
	}
	p.candMemo[k] = out
	return out
}

func sortOptions(p *poolT, opts []option) {
	sort.SliceStable(opts, func(a, b int) bool {
		if opts[a].price != opts[b].price {
			return opts[a].price < opts[b].price
		}
		return p.types[opts[a].i].it.Name < p.types[opts[b].i].it.Name
	})
}

// launchOptions are the options node n keeps, cheapest first: every
// candidate its pods fit, within the pool's limits, then truncated. Without
// reservations the candidates come memoised and, unless minValues must see
// them all, the walk stops at the cap.
func (sv *solver) launchOptions(n *nodeState, from resVec, reservations map[string]int) []option {
	p := n.pool
	keep := func(i int) bool {
		return n.requests.fits(p.effAlloc[i]) && (i == n.natural || p.withinLimits(from, p.types[i].capacity))
	}
	opts := sv.optScratch[:0]
	defer func() { sv.optScratch = opts[:0] }()
	if !p.reserved {
		for _, o := range sv.candidates(p, n) {
			if !keep(o.i) {
				continue
			}
			opts = append(opts, o)
			if len(p.minValues) == 0 && !p.bursty && len(opts) >= sv.opts.MaxInstanceTypes {
				break
			}
		}
		return sv.withCredits(n, opts)
	}
	for i, t := range p.types {
		if !n.types.has(i) || !t.offered(n.zones, n.cts) || !keep(i) {
			continue
		}
		o := sv.optionPrice(t, n.zones, n.cts, reservations)
		if math.IsInf(o.price, 1) {
			continue
		}
		o.i, o.list = i, o.price
		o.price += t.volumes
		opts = append(opts, o)
	}
	sortOptions(p, opts)
	return sv.withCredits(n, opts)
}

// withCredits prices burstable options with the surplus credits node n's
// requests cost on them and puts the options back in price order. The
// cloud launches the option with the lowest list price, so an option whose
// list price is below the cheapest option's but whose credits make it
// dearer is dropped: whichever option launches, the node costs what the
// plan says.
func (sv *solver) withCredits(n *nodeState, opts []option) []option {
	p := n.pool
	if !p.bursty || len(opts) == 0 {
		return opts
	}
	for k := range opts {
		opts[k].price = opts[k].list + p.types[opts[k].i].volumes + p.credits(opts[k].i, n.requests)
	}
	sortOptions(p, opts)
	if len(p.minValues) > 0 {
		// minValues counted these options when the pods were packed;
		// dropping some could leave the NodeClaim short of them.
		return opts
	}
	first := opts[0]
	kept := opts[:1]
	for _, o := range opts[1:] {
		if o.list < first.list && o.price > first.price {
			continue
		}
		kept = append(kept, o)
	}
	return kept
}

// finalize chooses a planned node's launch options and requirements.
func (sv *solver) finalize(n *nodeState, reservations map[string]int) *NewNodeClaim {
	p := n.pool
	from := p.types[n.natural].capacity
	opts := sv.launchOptions(n, from, reservations)
	zones, cts := n.zones, n.cts
	if len(opts) > 0 && opts[0].reservation != "" {
		// Launch into the reservation: pin the claim to reserved capacity in
		// its zone and keep only types that reservation-backed offerings
		// cover.
		res := opts[0]
		reservations[res.reservation]--
		if ci, ok := sv.ctIdx["reserved"]; ok {
			cts = 1 << ci
		}
		zones = 1 << sv.zoneIdx[res.zone]
		kept := opts[:0]
		for _, o := range opts {
			if o.reservation != "" && o.zone == res.zone {
				kept = append(kept, o)
			}
		}
		opts = kept
	}
	opts = sv.truncate(p, opts)
	if p.hasLimits {
		// Whatever option the cloud launches must fit the limits: reserve
		// the largest kept option's capacity before the next node is
		// finalised.
		largest := make(resVec, len(from))
		for _, o := range opts {
			for r, q := range p.types[o.i].capacity {
				largest[r] = max(largest[r], q)
			}
		}
		p.account(from, largest)
	}
	nc := &NewNodeClaim{NodePool: p.np.Name, Pods: n.pods}
	ls := sv.launchSet(p, opts, zones, cts, reservations)
	nc.InstanceTypes = ls.types
	names, offeredZ, offeredC := ls.names, ls.offeredZ, ls.offeredC
	if len(opts) > 0 {
		t := p.types[opts[0].i]
		nc.Price = opts[0].price
		nc.PriceParts = Price{List: opts[0].list, Volumes: t.volumes, Credits: p.credits(opts[0].i, n.requests)}
	}
	req := n.requests.clone()
	req.add(p.daemon[n.natural])
	nc.Requests = sv.withoutDevices(sv.ri.list(req))
	for i, k := range n.reqs.keys {
		if k == corev1.LabelInstanceTypeStable {
			continue
		}
		nc.Requirements = append(nc.Requirements, toRequirements(k, n.reqs.cons[i], p.minValues[k])...)
	}
	nc.Requirements = append(nc.Requirements,
		withMin(Requirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: names}, p.minValues[corev1.LabelInstanceTypeStable]),
		withMin(Requirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: sv.zoneNames(offeredZ)}, p.minValues[corev1.LabelTopologyZone]),
		withMin(Requirement{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: sv.ctNames(offeredC)}, p.minValues[v1.LabelCapacityType]),
	)
	sort.SliceStable(nc.Requirements, func(a, b int) bool { return nc.Requirements[a].Key < nc.Requirements[b].Key })
	if sv.opts.MinValuesBestEffort {
		nc.MinValuesRelaxed = sv.relaxMinValues(p, n, ls, nc.Requirements)
	}
	return nc
}

// relaxMinValues lowers each minValues in reqs to the number of values the
// launch set offers for its key, when that is fewer, and reports whether it
// lowered any (MIN_VALUES_POLICY=BestEffort).
func (sv *solver) relaxMinValues(p *poolT, n *nodeState, ls *launchSet, reqs []Requirement) bool {
	relaxed := false
	for i := range reqs {
		r := &reqs[i]
		if r.MinValues == nil {
			continue
		}
		var available int
		switch r.Key {
		case corev1.LabelInstanceTypeStable:
			available = len(ls.names)
		case corev1.LabelTopologyZone:
			available = bits.OnesCount64(ls.offeredZ)
		case v1.LabelCapacityType:
			available = bits.OnesCount32(ls.offeredC)
		default:
			seen := map[string]bool{}
			c, constrained := n.reqs.get(r.Key)
			for _, ti := range ls.idx {
				for _, v := range p.types[ti].reqs[r.Key] {
					if !constrained || c.allows(v) {
						seen[v] = true
					}
				}
			}
			available = len(seen)
		}
		if available < *r.MinValues {
			r.MinValues = &available
			if available == 0 {
				r.MinValues = nil // the API's minValues starts at 1
			}
			relaxed = true
		}
	}
	return relaxed
}

// launchSet renders the kept options: instance types in price order, their
// names sorted, and where they are offered within zones × cts. Without
// reservations a set is rendered once and shared by every node that keeps
// the same options.
func (sv *solver) launchSet(p *poolT, opts []option, zones uint64, cts uint32, reservations map[string]int) *launchSet {
	var h uint64 = 14695981039346656037
	if !p.reserved {
		h = (h ^ zones) * 1099511628211
		h = (h ^ uint64(cts)) * 1099511628211
		for _, o := range opts {
			h = (h ^ uint64(o.i)) * 1099511628211
		}
		for _, ls := range p.launchMemo[h] {
			if ls.zones == zones && ls.cts == cts && ls.matches(opts) {
				return ls
			}
		}
	}
	ls := &launchSet{zones: zones, cts: cts, idx: make([]int, 0, len(opts)), types: make([]*InstanceType, 0, len(opts))}
	names := make([]string, 0, len(opts))
	for _, o := range opts {
		t := p.types[o.i]
		ls.idx = append(ls.idx, o.i)
		ls.types = append(ls.types, t.it)
		names = append(names, t.it.Name)
		for _, of := range t.offers {
			if zones&(1<<of.zone) == 0 || cts&(1<<of.ct) == 0 {
				continue
			}
			if of.reservation != "" && reservations[of.reservation] <= 0 && of.reservation != opts[0].reservation {
				continue
			}
			ls.offeredZ |= 1 << of.zone
			ls.offeredC |= 1 << of.ct
		}
	}
	ls.names = sortedUnique(names)
	if !p.reserved {
		if p.launchMemo == nil {
			p.launchMemo = map[uint64][]*launchSet{}
		}
		p.launchMemo[h] = append(p.launchMemo[h], ls)
	}
	return ls
}

func (ls *launchSet) matches(opts []option) bool {
	if len(ls.idx) != len(opts) {
		return false
	}
	for i, o := range opts {
		if ls.idx[i] != o.i {
			return false
		}
	}
	return true
}

func withMin(r Requirement, m int) Requirement {
	if m > 0 {
		r.MinValues = &m
	}
	return r
}

// truncate caps the price-ordered options at MaxInstanceTypes after
// minValues is satisfied: first, for each minValues key in name order, the
// cheapest options that bring a value of the key not yet covered, until
// the key has its count; then the cheapest of the rest up to the cap. The
// cap never drops a type minValues needs (those may take the NodeClaim past
// the cap only when minValues asks for more values than the cap holds).
func (sv *solver) truncate(p *poolT, opts []option) []option {
	limit := sv.opts.MaxInstanceTypes
	if len(opts) <= limit {
		return opts
	}
	keep := make([]bool, len(opts))
	n := 0
	keys := make([]string, 0, len(p.minValues))
	for k := range p.minValues {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		seen := map[string]bool{}
		for i, o := range opts {
			if keep[i] {
				for _, v := range p.types[o.i].reqs[key] {
					seen[v] = true
				}
			}
		}
		for i, o := range opts {
			if len(seen) >= p.minValues[key] {
				break
			}
			if keep[i] {
				continue
			}
			for _, v := range p.types[o.i].reqs[key] {
				if !seen[v] {
					seen[v] = true
					keep[i] = true
				}
			}
			if keep[i] {
				n++
			}
		}
	}
	for i := range opts {
		if n >= limit {
			break
		}
		if !keep[i] {
			keep[i] = true
			n++
		}
	}
	kept := make([]option, 0, n)
	for i, o := range opts {
		if keep[i] {
			kept = append(kept, o)
		}
	}
	return kept
}

// toRequirements renders a constraint as node selector requirements.
func toRequirements(key string, c constraint, minValues int) []Requirement {
	var out []Requirement
	switch {
	case !c.comp && len(c.vals) > 0:
		out = append(out, Requirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: c.vals})
	case !c.comp:
		out = append(out, Requirement{Key: key, Operator: corev1.NodeSelectorOpDoesNotExist})
	case len(c.vals) > 0:
		out = append(out, Requirement{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: c.vals})
	case !c.hasGt && !c.hasLt:
		out = append(out, Requirement{Key: key, Operator: corev1.NodeSelectorOpExists})
	}
	if c.comp && c.hasGt {
		out = append(out, Requirement{Key: key, Operator: corev1.NodeSelectorOpGt, Values: []string{strconv.FormatInt(c.gt, 10)}})
	}
	if c.comp && c.hasLt {
		out = append(out, Requirement{Key: key, Operator: corev1.NodeSelectorOpLt, Values: []string{strconv.FormatInt(c.lt, 10)}})
	}
	if minValues > 0 && len(out) > 0 {
		out[0].MinValues = &minValues
	}
	return out
}
