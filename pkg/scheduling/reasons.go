package scheduling

import (
	"errors"
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// classError turns the error describing a class into its typed reason:
// volume problems keep their Volume value, anything else makes the pod
// invalid.
func classError(err error) Reason {
	var v Volume
	if errors.As(err, &v) {
		return v
	}
	var d DeviceReason
	if errors.As(err, &d) {
		return d
	}
	return InvalidPod{Message: err.Error()}
}

// requirementConflict is why c's node requirements cannot meet pool p's
// (nil when they can).
func (sv *solver) requirementConflict(c *podClass, p *poolT) Reason {
	if c.zones&p.zones == 0 {
		return IncompatibleRequirements{Key: corev1.LabelTopologyZone,
			Pod:      selectorsOf(ownConstraint(c.zoneCon, sv.zoneNames(c.zones))),
			NodePool: selectorsOf(maskConstraint(sv.zoneNames(p.zones)))}
	}
	if c.cts&p.cts == 0 {
		return IncompatibleRequirements{Key: v1.LabelCapacityType,
			Pod:      selectorsOf(ownConstraint(c.ctCon, sv.ctNames(c.cts))),
			NodePool: selectorsOf(maskConstraint(sv.ctNames(p.cts)))}
	}
	for i, k := range c.reqs.keys {
		pc := c.reqs.cons[i]
		if nc, ok := p.base.get(k); ok {
			if nc.intersect(pc).empty() {
				if k == v1.LabelNodePool && excludesNodePools(pc) {
					return ExcludesNodePools{}
				}
				return IncompatibleRequirements{Key: k, Pod: selectorsOf(pc), NodePool: selectorsOf(nc)}
			}
			continue
		}
		if !p.definedKeys[k] && !pc.absent {
			return UndefinedLabel{Key: k}
		}
	}
	return nil
}

// excludesNodePools reports whether a constraint on karpenter.sh/nodepool
// is DoesNotExist: no managed node can ever meet it.
func excludesNodePools(c constraint) bool { return c.absent && !c.comp && len(c.vals) == 0 }

// selectorsOf is a constraint as node selector requirements.
func selectorsOf(c constraint) []NodeSelector {
	rs := toRequirements("", c, 0)
	out := make([]NodeSelector, 0, len(rs))
	for _, r := range rs {
		out = append(out, NodeSelector{Operator: r.Operator, Values: r.Values})
	}
	return out
}

func maskConstraint(vals []string) constraint { return constraint{vals: vals} }

// ownConstraint is the pod's constraint as written, or the mask's values.
func ownConstraint(c *constraint, vals []string) constraint {
	if c != nil {
		return *c
	}
	return maskConstraint(vals)
}

// noInstanceTypeReason is why none of p's types can carry c alone.
func (sv *solver) noInstanceTypeReason(c *podClass, p *poolT, merged *reqSet, types bitset, zones uint64, cts uint32) Reason {
	var reqOK, offerOK, bigEnough bool
	for i, t := range p.types {
		fitsRes := c.base.req.fits(p.effAlloc[i])
		bigEnough = bigEnough || fitsRes
		if !types.has(i) {
			continue
		}
		reqOK = true
		if t.offered(zones, cts) {
			offerOK = true
		}
	}
	var rs []string
	if merged != nil {
		for i, k := range merged.keys {
			rs = append(rs, merged.cons[i].format(k))
		}
	}
	rs = append(rs, maskConstraint(sv.zoneNames(zones)).format(corev1.LabelTopologyZone))
	rs = append(rs, maskConstraint(sv.ctNames(cts)).format(v1.LabelCapacityType))
	sort.Strings(rs)
	requests := sv.ri.list(c.base.req)
	switch {
	case len(p.types) == 0:
		causes, details := sv.unavailableCauses(p, types, zones, cts)
		return NoInstanceType{Cause: NoTypes, Requests: requests, Requirements: rs, Unavailable: causes, UnavailableDetails: details}
	case sv.notOffered(c.base.req, p) >= 0:
		r := sv.notOffered(c.base.req, p)
		return ResourceNotOffered{Resource: sv.ri.names[r], Requested: sv.ri.quantity(r, c.base.req[r])}
	case !reqOK && bigEnough:
		return NoInstanceType{Cause: NoTypeMatchesRequirements, Requests: requests, Requirements: rs}
	case reqOK && !offerOK:
		causes, details := sv.unavailableCauses(p, types, zones, cts)
		return NoInstanceType{Cause: NoTypeOffered, Requests: requests, Requirements: rs, Unavailable: causes, UnavailableDetails: details}
	case reqOK && !bigEnough:
		// The largest any compatible type offers, resource by resource.
		largest := make(resVec, len(c.base.req))
		for i := range p.types {
			if types.has(i) {
				for r, q := range p.effAlloc[i] {
					largest[r] = max(largest[r], q)
				}
			}
		}
		return InsufficientResource{Shortfalls: sv.shortfalls(c.base.req, largest), Requests: requests, Requirements: rs}
	}
	return NoInstanceType{Cause: NoTypeFits, Requests: requests, Requirements: rs}
}

// unavailableCauses are the distinct causes the cloud gave for the
// unavailable offerings, within zones and cts, of p's types in types and
// of the types p dropped for having no available offering at all, and the
// distinct details it gave with them (which images, which subnets).
func (sv *solver) unavailableCauses(p *poolT, types bitset, zones uint64, cts uint32) ([]UnavailableCause, []string) {
	zs, cs := sv.zoneNames(zones), sv.ctNames(cts)
	seen := map[UnavailableCause]bool{}
	details := map[string]bool{}
	add := func(it *InstanceType) {
		for _, o := range it.Offerings {
			if !o.Available && o.Unavailable != "" && slices.Contains(zs, o.Zone) && slices.Contains(cs, o.CapacityType) {
				seen[o.Unavailable] = true
				if o.UnavailableDetail != "" {
					details[o.UnavailableDetail] = true
				}
			}
		}
	}
	for i, t := range p.types {
		if types.has(i) {
			add(t.it)
		}
	}
	for _, it := range p.dropped {
		add(it)
	}
	if len(seen) == 0 {
		return nil, nil
	}
	return slices.Sorted(maps.Keys(seen)), slices.Sorted(maps.Keys(details))
}

// notOffered is the first resource req asks for that no type of p has at
// all, or -1.
func (sv *solver) notOffered(req resVec, p *poolT) int {
	for r, q := range req {
		if q <= 0 {
			continue
		}
		has := false
		for _, t := range p.types {
			if r < len(t.capacity) && t.capacity[r] > 0 {
				has = true
				break
			}
		}
		if !has {
			return r
		}
	}
	return -1
}

// shortfalls lists the resources where req asks more than room holds.
func (sv *solver) shortfalls(req, room resVec) []Shortfall {
	var out []Shortfall
	for i := range req {
		if req[i] > room[i] {
			out = append(out, Shortfall{Resource: sv.ri.names[i], Requested: sv.ri.quantity(i, req[i]), LargestAllowed: sv.ri.quantity(i, room[i])})
		}
	}
	return out
}

// failureReasons builds the typed reasons for a pod that fit nowhere: one
// per NodePool, plus one for existing nodes when there are any.
func (sv *solver) failureReasons(f podFailure) PodError {
	cb := f.class
	pe := PodError{Pod: f.pod, NodePools: map[string]Reason{}}
	if cb.err != nil {
		for _, p := range sv.pools {
			pe.NodePools[p.np.Name] = cb.err
		}
		if len(sv.pools) == 0 {
			pe.Existing = cb.err
		}
		return pe
	}
	// Report against the most relaxed step tried.
	c := cb.variants[len(cb.variants)-1]
	for _, p := range sv.pools {
		pe.NodePools[p.np.Name] = sv.poolReason(c, p)
	}
	if len(sv.existing) > 0 {
		pe.Existing = sv.existingReason(c)
	}
	if len(sv.pools) == 0 && len(sv.existing) == 0 {
		pe.Existing = NoCapacity{}
	}
	return pe
}

func (sv *solver) poolReason(c *podClass, p *poolT) Reason {
	// A pod that refuses every managed node is told so before any taint of
	// the pool: no toleration would help it.
	if c.base.err == nil {
		if pc, ok := c.reqs.get(v1.LabelNodePool); ok && excludesNodePools(pc) {
			return ExcludesNodePools{}
		}
	}
	if r := sv.poolStatic(c, p); r != nil {
		return r
	}
	if r := sv.topologyReason(c); r != nil {
		return r
	}
	if r := sv.poolZoneReason(c, p); r != nil {
		return r
	}
	// Compatible and topology allows it: limits are what is left.
	if p.hasLimits {
		hasLimits, nodeLimit := p.hasLimits, p.nodeLimit
		p.hasLimits, p.nodeLimit = false, -1
		a := sv.newAttempt(c)
		_, tr, ok := sv.openNode(a, p)
		p.hasLimits, p.nodeLimit = hasLimits, nodeLimit
		if ok {
			return Limit{NodePool: p.np.Name, Resource: sv.limitExceeded(p, tr)}
		}
	}
	return Topology{Cause: TopologyNoRoom}
}

// limitExceeded names the limit a new node of tr's type would break: the
// node count first, then the first resource in name order.
func (sv *solver) limitExceeded(p *poolT, tr trial) corev1.ResourceName {
	if p.nodeLimit >= 0 && p.usedNodes+1 > p.nodeLimit {
		return "nodes"
	}
	capacity := p.types[tr.natural].capacity
	var names []corev1.ResourceName
	for i, l := range p.limits {
		if l >= 0 && p.used[i]+capacity[i] > l {
			names = append(names, sv.ri.names[i])
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	if len(names) == 0 {
		return "nodes"
	}
	return names[0]
}

// topologyReason explains an unsatisfiable topology term of c, if any.
func (sv *solver) topologyReason(c *podClass) Reason {
	cb := c.base
	a := sv.newAttempt(c)
	for _, g := range c.own {
		switch g.key {
		case corev1.LabelHostname:
			if g.kind == kindAffinity && g.total > 0 {
				return Topology{Cause: TopologyNoNodeWithMatch, Constraint: g.kind.String(), Key: g.key}
			}
			if g.kind == kindAffinity && !g.selects(cb.ns, cb.labels) {
				return Topology{Cause: TopologyNoMatchingPods, Constraint: g.kind.String(), Key: g.key}
			}
		case corev1.LabelTopologyZone:
			m := 0
			if g.kind == kindSpread {
				m = sv.spreadMin(g)
			}
			var ok []string
			for _, z := range sv.zones {
				if sv.domainAllowed(g, cb, z, m) {
					ok = append(ok, z)
				}
			}
			zs := sv.zoneNames(c.zones)
			if len(intersectSorted(ok, zs)) == 0 {
				r := Topology{Cause: TopologyNoDomain, Constraint: g.kind.String(), Key: g.key,
					Counts: maps.Clone(g.counts), PodDomains: zs, NodeDomains: sv.spreadUniverse(g)}
				if g.kind == kindSpread {
					r.MaxSkew = g.maxSkew
				}
				return r
			}
		default:
			if g.kind == kindAffinity && g.total == 0 && !g.selects(cb.ns, cb.labels) {
				return Topology{Cause: TopologyNoMatchingPods, Constraint: g.kind.String(), Key: g.key}
			}
		}
	}
	if a.allowed == 0 && cb.zoneRelevant {
		return Topology{Cause: TopologyNoZone, Key: corev1.LabelTopologyZone}
	}
	return nil
}

// poolZoneReason explains a zone spread or zone (anti-)affinity term of c
// that allows some zone, but none of the zones p can launch in: a
// one-zone NodePool under a zone spread whose skew is already spent there.
// Without it the pod would only hear that no instance type could carry it.
func (sv *solver) poolZoneReason(c *podClass, p *poolT) Reason {
	cb := c.base
	zones := p.zones & c.zones
	for _, g := range c.own {
		if g.key != corev1.LabelTopologyZone {
			continue
		}
		m := 0
		if g.kind == kindSpread {
			m = sv.spreadMin(g)
		}
		allowed := false
		for _, z := range sv.zoneNames(zones) {
			if sv.domainAllowed(g, cb, z, m) {
				allowed = true
				break
			}
		}
		if allowed {
			continue
		}
		r := Topology{Cause: TopologyNoDomain, Constraint: g.kind.String(), Key: g.key,
			Counts: maps.Clone(g.counts), PodDomains: sv.zoneNames(zones), NodeDomains: sv.spreadUniverse(g)}
		if g.kind == kindSpread {
			r.MaxSkew = g.maxSkew
		}
		return r
	}
	return nil
}

// existingReason groups why no existing node took the pod, e.g.
// "2 nodes did not tolerate taint a=b:NoSchedule; 1 node had insufficient
// resources". Nodes are grouped by the text of their reason, each group
// keeping the first node's typed reason.
func (sv *solver) existingReason(c *podClass) ExistingNodes {
	type group struct {
		NodeGroup
		key string
	}
	byKey := map[string]*group{}
	var groups []*group
	a := sv.newAttempt(c)
	for _, n := range sv.existing {
		r := sv.existingWhy(a, n)
		key := nodeMessage(r)
		g := byKey[key]
		if g == nil {
			g = &group{NodeGroup: NodeGroup{Reason: r}, key: key}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.Count++
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].Count != groups[j].Count {
			return groups[i].Count > groups[j].Count
		}
		return groups[i].key < groups[j].key
	})
	out := ExistingNodes{Groups: make([]NodeGroup, 0, len(groups))}
	for _, g := range groups {
		out.Groups = append(out.Groups, g.NodeGroup)
	}
	return out
}

// existingWhy is why existing node n does not take a pod of a's class
// (NotChosen when it could).
func (sv *solver) existingWhy(a *attempt, n *nodeState) Reason {
	c := a.c
	switch {
	case n.ex.MarkedForDeletion:
		return MarkedForDeletion{}
	}
	if r := sv.existingStatic(c, n); r != nil {
		return r
	}
	if !fitsAdd(n.requests, c.base.req, n.alloc) {
		free := make(resVec, len(n.alloc))
		for i := range free {
			free[i] = max(n.alloc[i]-n.requests[i], 0)
		}
		return InsufficientResource{Shortfalls: sv.shortfalls(c.base.req, free)}
	}
	for _, d := range slices.Sorted(maps.Keys(c.base.volDrivers)) {
		if lim, ok := n.ex.VolumeLimits[d]; ok && n.volumes[d]+c.base.volDrivers[d] > lim {
			return VolumeLimit{Driver: d, Limit: lim}
		}
	}
	if sv.fitExisting(a, n) != fits {
		return Topology{Cause: TopologyNodeDomain}
	}
	return NotChosen{}
}
