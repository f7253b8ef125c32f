package scheduling

import (
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// plan turns the solver state into a Plan.
func (sv *solver) plan() *Plan {
	out := &Plan{}
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
	i     int
	price float64
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

// finalize chooses a planned node's launch options and requirements.
func (sv *solver) finalize(n *nodeState, reservations map[string]int) *NewNodeClaim {
	p := n.pool
	from := p.types[n.natural].capacity
	var opts []option
	enough := math.Inf(1) // once MaxInstanceTypes options cost at most this, dearer types cannot make the cut
	for i, t := range p.types {
		if t.minPrice > enough && len(p.minValues) == 0 {
			break
		}
		if !n.types.has(i) || !n.requests.fits(p.effAlloc[i]) || !t.offered(n.zones, n.cts) {
			continue
		}
		if i != n.natural && !p.withinLimits(from, t.capacity) {
			continue
		}
		o := sv.optionPrice(t, n.zones, n.cts, reservations)
		if math.IsInf(o.price, 1) {
			continue
		}
		o.i = i
		opts = append(opts, o)
		if len(opts) >= sv.opts.MaxInstanceTypes && math.IsInf(enough, 1) {
			enough = 0
			for _, x := range opts {
				enough = math.Max(enough, x.price)
			}
		}
	}
	sort.SliceStable(opts, func(a, b int) bool {
		if opts[a].price != opts[b].price {
			return opts[a].price < opts[b].price
		}
		return p.types[opts[a].i].it.Name < p.types[opts[b].i].it.Name
	})
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
	var names []string
	var offeredZ uint64
	var offeredC uint32
	for _, o := range opts {
		t := p.types[o.i]
		nc.InstanceTypes = append(nc.InstanceTypes, t.it)
		names = append(names, t.it.Name)
		for _, of := range t.offers {
			if zones&(1<<of.zone) == 0 || cts&(1<<of.ct) == 0 {
				continue
			}
			if of.reservation != "" && reservations[of.reservation] <= 0 && of.reservation != opts[0].reservation {
				continue
			}
			offeredZ |= 1 << of.zone
			offeredC |= 1 << of.ct
		}
	}
	if len(opts) > 0 {
		nc.Price = opts[0].price
	}
	req := n.requests.clone()
	req.add(p.daemon[n.natural])
	nc.Requests = sv.ri.list(req)
	for i, k := range n.reqs.keys {
		if k == corev1.LabelInstanceTypeStable {
			continue
		}
		nc.Requirements = append(nc.Requirements, toRequirements(k, n.reqs.cons[i], p.minValues[k])...)
	}
	nc.Requirements = append(nc.Requirements,
		withMin(Requirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: sortedUnique(names)}, p.minValues[corev1.LabelInstanceTypeStable]),
		withMin(Requirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: sv.zoneNames(offeredZ)}, p.minValues[corev1.LabelTopologyZone]),
		withMin(Requirement{Key: CapacityTypeLabel, Operator: corev1.NodeSelectorOpIn, Values: sv.ctNames(offeredC)}, p.minValues[CapacityTypeLabel]),
	)
	sort.SliceStable(nc.Requirements, func(a, b int) bool { return nc.Requirements[a].Key < nc.Requirements[b].Key })
	return nc
}

func withMin(r Requirement, m int) Requirement {
	if m > 0 {
		r.MinValues = &m
	}
	return r
}

// truncate keeps the cheapest MaxInstanceTypes options, plus whatever more
// the pool's minValues need.
func (sv *solver) truncate(p *poolT, opts []option) []option {
	max := sv.opts.MaxInstanceTypes
	if len(opts) <= max {
		return opts
	}
	kept := append([]option(nil), opts[:max]...)
	for key, m := range p.minValues {
		seen := map[string]bool{}
		for _, o := range kept {
			for _, v := range p.types[o.i].reqs[key] {
				seen[v] = true
			}
		}
		for _, o := range opts[max:] {
			if len(seen) >= m {
				break
			}
			fresh := false
			for _, v := range p.types[o.i].reqs[key] {
				if !seen[v] {
					fresh = true
					seen[v] = true
				}
			}
			if fresh {
				kept = append(kept, o)
			}
		}
	}
	sort.SliceStable(kept, func(a, b int) bool {
		if kept[a].price != kept[b].price {
			return kept[a].price < kept[b].price
		}
		return p.types[kept[a].i].it.Name < p.types[kept[b].i].it.Name
	})
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
