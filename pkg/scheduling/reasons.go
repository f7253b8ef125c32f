package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// requirementConflict explains why c's node requirements cannot meet pool
// p's, in Karpenter's words ("" when they can).
func (sv *solver) requirementConflict(c *podClass, p *poolT) string {
	if c.zones&p.zones == 0 {
		return fmt.Sprintf("incompatible requirements, key %s, %s not in %s", corev1.LabelTopologyZone,
			ownConstraint(c.zoneCon, sv.zoneNames(c.zones)).format(corev1.LabelTopologyZone),
			maskConstraint(sv.zoneNames(p.zones)).format(corev1.LabelTopologyZone))
	}
	if c.cts&p.cts == 0 {
		return fmt.Sprintf("incompatible requirements, key %s, %s not in %s", CapacityTypeLabel,
			ownConstraint(c.ctCon, sv.ctNames(c.cts)).format(CapacityTypeLabel),
			maskConstraint(sv.ctNames(p.cts)).format(CapacityTypeLabel))
	}
	for i, k := range c.reqs.keys {
		pc := c.reqs.cons[i]
		if nc, ok := p.base.get(k); ok {
			if nc.intersect(pc).empty() {
				return fmt.Sprintf("incompatible requirements, key %s, %s not in %s", k, pc.format(k), nc.format(k))
			}
			continue
		}
		if !p.definedKeys[k] && !pc.absent {
			return fmt.Sprintf("label %q does not have known values", k)
		}
	}
	return ""
}

func maskConstraint(vals []string) constraint { return constraint{vals: vals} }

// ownConstraint is the pod's constraint as written, or the mask's values.
func ownConstraint(c *constraint, vals []string) constraint {
	if c != nil {
		return *c
	}
	return maskConstraint(vals)
}

// noInstanceTypeReason explains why none of p's types can carry c alone.
func (sv *solver) noInstanceTypeReason(c *podClass, p *poolT, merged *reqSet, types bitset, zones uint64, cts uint32) string {
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
	why := "no instance type met the scheduling requirements or had enough resources"
	switch {
	case len(p.types) == 0:
		why = "the nodepool has no instance types with an available offering"
	case !reqOK && bigEnough:
		why = "no instance type met the scheduling requirements"
	case reqOK && !offerOK:
		why = "no instance type has an available offering for the required zones and capacity types"
	case reqOK && !bigEnough:
		why = "no instance type has enough resources"
	}
	var rs []string
	if merged != nil {
		for i, k := range merged.keys {
			rs = append(rs, merged.cons[i].format(k))
		}
	}
	rs = append(rs, maskConstraint(sv.zoneNames(zones)).format(corev1.LabelTopologyZone))
	rs = append(rs, maskConstraint(sv.ctNames(cts)).format(CapacityTypeLabel))
	sort.Strings(rs)
	return fmt.Sprintf("no instance type satisfied resources %s and requirements %s (%s)", sv.resourcesJSON(c.base.req), strings.Join(rs, ", "), why)
}

func (sv *solver) resourcesJSON(v resVec) string {
	l := sv.ri.list(v)
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		q := l[corev1.ResourceName(k)]
		fmt.Fprintf(&b, "%q:%q", k, q.String())
	}
	b.WriteByte('}')
	return b.String()
}

// failureReasons builds the grouped reasons for a pod that fit nowhere:
// one per NodePool, plus one for existing nodes when there are any.
func (sv *solver) failureReasons(f podFailure) map[string]string {
	cb := f.class
	out := map[string]string{}
	if cb.err != "" {
		for _, p := range sv.pools {
			out[p.np.Name] = cb.err
		}
		if len(sv.pools) == 0 {
			out[ExistingNodesReason] = cb.err
		}
		return out
	}
	// Report against the most relaxed step tried.
	c := cb.variants[len(cb.variants)-1]
	for _, p := range sv.pools {
		out[p.np.Name] = sv.poolReason(c, p)
	}
	if len(sv.existing) > 0 {
		out[ExistingNodesReason] = sv.existingReason(c)
	}
	if len(sv.pools) == 0 && len(sv.existing) == 0 {
		out[ExistingNodesReason] = "no nodepools or nodes to schedule on"
	}
	return out
}

func (sv *solver) poolReason(c *podClass, p *poolT) string {
	if r := sv.poolStatic(c, p); r != "" {
		return r
	}
	if r := sv.topologyReason(c); r != "" {
		return r
	}
	// Compatible and topology allows it: limits are what is left.
	if p.hasLimits {
		saved := p.hasLimits
		p.hasLimits = false
		a := sv.newAttempt(c)
		_, _, ok := sv.openNode(a, p)
		p.hasLimits = saved
		if ok {
			return "exceeds nodepool limits"
		}
	}
	return "no instance type could carry the pod alongside its topology constraints"
}

// topologyReason explains an unsatisfiable topology term of c, if any.
func (sv *solver) topologyReason(c *podClass) string {
	cb := c.base
	a := sv.newAttempt(c)
	for _, g := range c.own {
		switch {
		case g.key == corev1.LabelHostname:
			if g.kind == kindAffinity && g.total > 0 {
				return fmt.Sprintf("unsatisfiable topology constraint for %s, key=%s (no node with a matching pod can take it)", g.kind, g.key)
			}
			if g.kind == kindAffinity && !g.selects(cb.ns, cb.labels) {
				return fmt.Sprintf("unsatisfiable topology constraint for %s, key=%s (no matching pods)", g.kind, g.key)
			}
		case g.key == corev1.LabelTopologyZone:
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
				return fmt.Sprintf("unsatisfiable topology constraint for %s, key=%s (counts = %s, podDomains = %s, nodeDomains = %s)",
					g.kind, g.key, countsString(g.counts), maskConstraint(zs).format(g.key), maskConstraint(sv.spreadUniverse(g)).format(g.key))
			}
		default:
			if g.kind == kindAffinity && g.total == 0 && !g.selects(cb.ns, cb.labels) {
				return fmt.Sprintf("unsatisfiable topology constraint for %s, key=%s (no matching pods)", g.kind, g.key)
			}
		}
	}
	if a.allowed == 0 && cb.zoneRelevant {
		return fmt.Sprintf("unsatisfiable topology constraint, key=%s (no zone is allowed)", corev1.LabelTopologyZone)
	}
	return ""
}

func countsString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("map[")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", k, m[k])
	}
	b.WriteByte(']')
	return b.String()
}

// existingReason groups why no existing node took the pod, e.g.
// "2 nodes did not tolerate taint a=b:NoSchedule; 1 node had insufficient resources".
func (sv *solver) existingReason(c *podClass) string {
	counts := map[string]int{}
	a := sv.newAttempt(c)
	for _, n := range sv.existing {
		var r string
		switch {
		case n.ex.MarkedForDeletion:
			r = "was marked for deletion"
		case sv.existingStatic(c, n) != "":
			r = sv.existingStatic(c, n)
		case !fitsAdd(n.requests, c.base.req, n.alloc):
			r = "had insufficient resources"
		case sv.fitExisting(a, n) != fits:
			r = "violated topology or volume limits"
		default:
			r = "could take it but was not chosen"
		}
		counts[r]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		noun := "nodes"
		if counts[k] == 1 {
			noun = "node"
		}
		parts = append(parts, fmt.Sprintf("%d %s %s", counts[k], noun, k))
	}
	return strings.Join(parts, "; ")
}
