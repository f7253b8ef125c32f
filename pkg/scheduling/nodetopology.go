package scheduling

// Topology checks of a pod against one node: hostname-keyed terms and
// host ports, terms on other keys against the node's decided domain, and
// recording a placement in the topology groups.

import (
	corev1 "k8s.io/api/core/v1"
)

// hostnameOK checks the hostname-keyed terms for placing a pod of class c
// on n (own terms and the inverse terms of pods already there).
func (sv *solver) hostnameOK(c *podClass, n *nodeState) verdict {
	cb := c.base
	if portsConflict(cb.hostPorts, n.ports) {
		return rejectPerm
	}
	for gi, g := range c.own {
		if g.key != corev1.LabelHostname {
			continue
		}
		switch g.kind {
		case kindSpread:
			s := int32(0)
			if c.ownSelf[gi] {
				s = 1
			}
			if n.hostMatch(g)+s > g.maxSkew {
				return rejectPerm
			}
		case kindAnti:
			if n.hostMatch(g) > 0 {
				return rejectPerm
			}
		case kindAffinity:
			if n.hostMatch(g) == 0 && !(g.total == 0 && c.ownSelf[gi]) {
				return rejectTemp
			}
		}
	}
	for _, g := range cb.selectedBy {
		if g.key != corev1.LabelHostname {
			continue
		}
		switch g.kind {
		case kindAnti:
			if n.hostOwners(g) > 0 {
				return rejectPerm
			}
		case kindSpread:
			// Keep every spread owner this plan put on the node within its
			// skew once this pod joins it.
			if n.hostOwners(g) > 0 && n.hostMatch(g)+1 > g.maxSkew {
				return rejectPerm
			}
		}
	}
	return fits
}

// otherKeysOK checks own and inverse terms on keys other than hostname and
// zone against n's decided domain.
func (sv *solver) otherKeysOK(c *podClass, n *nodeState) verdict {
	cb := c.base
	for _, g := range c.own {
		if g.key == corev1.LabelHostname {
			continue
		}
		if g.kind == kindSpread && n.ex != nil {
			// kube-scheduler's PodTopologySpread filter turns a pod away
			// from a node that lacks a constraint's topology key.
			if _, ok := n.ex.Labels[g.key]; !ok {
				return rejectPerm
			}
		}
		if g.key == corev1.LabelTopologyZone {
			continue
		}
		d, ok := sv.nodeDomain(n, g.key)
		if !ok {
			if g.kind == kindAffinity && !(g.total == 0 && g.selects(cb.ns, cb.labels)) {
				return rejectTemp
			}
			continue
		}
		m := 0
		if g.kind == kindSpread {
			m = sv.spreadMin(g)
		}
		if !sv.domainAllowed(g, cb, d, m) {
			return rejectTemp
		}
	}
	for _, g := range cb.selectedBy {
		if g.kind != kindAnti || g.key == corev1.LabelHostname || g.key == corev1.LabelTopologyZone {
			continue
		}
		if d, ok := sv.nodeDomain(n, g.key); ok && g.owners[d] > 0 {
			return rejectTemp
		}
	}
	return fits
}

func (sv *solver) recordPlacement(c *podClass, n *nodeState) {
	n.ports = append(n.ports, c.base.hostPorts...)
	for _, g := range c.base.selectedBy {
		sv.recordMatch(g, n)
	}
	for _, g := range c.own {
		if (g.kind == kindAnti && !g.preferred) || (g.kind == kindSpread && g.key == corev1.LabelHostname) {
			sv.recordOwner(g, n)
		}
	}
}
