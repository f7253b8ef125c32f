package scheduling

import (
	corev1 "k8s.io/api/core/v1"
)

// place tries each relaxation step of the pod's class in turn: existing
// nodes first, then NodeClaims already planned (first within their current
// instance type, then growing one), then a new NodeClaim from the first
// NodePool, by weight, that can take it.
func (sv *solver) place(pp pendingPod) bool {
	cb := pp.class
	if cb.err != nil {
		return false
	}
	for i := 0; ; i++ {
		c := sv.variant(cb, i)
		if c == nil {
			return false
		}
		if sv.placeVariant(c, pp.pod) {
			return true
		}
	}
}

func (sv *solver) placeVariant(c *podClass, p *corev1.Pod) bool {
	a := sv.newAttempt(c)
	if a.allowed == 0 && c.base.zoneRelevant {
		return false
	}
	// Pods with hostname affinity to pods already placed can only join
	// those pods' nodes.
	for _, g := range c.own {
		if g.kind == kindAffinity && g.key == corev1.LabelHostname && g.total > 0 {
			a.mustJoin = true
			for _, n := range g.hostNodes {
				if n.ex != nil {
					if sv.fitExisting(a, n) == fits {
						sv.commitExisting(c, n, p)
						return true
					}
					continue
				}
				for _, grow := range []bool{false, true} {
					if tr, v := sv.newNodeFit(a, n, grow); v == fits {
						sv.commitNew(c, n, tr, p)
						return true
					}
				}
			}
			return false
		}
	}
	// Zones that keep other pods' zone spread balanced are tried first,
	// through every stage; the rest of the allowed zones only after.
	allowed := a.allowed
	steps := []uint64{allowed}
	if a.preferred != allowed && a.preferred != 0 {
		steps = []uint64{a.preferred, allowed}
	}
	for _, zs := range steps {
		a.allowed = zs
		if n := sv.scanExisting(a); n != nil {
			sv.commitExisting(c, n, p)
			return true
		}
		for pass, grow := range []bool{false, true} {
			if n, tr := sv.scanNew(a, pass, grow); n != nil {
				sv.commitNew(c, n, tr, p)
				return true
			}
		}
		for _, pool := range sv.pools {
			n, tr, ok := sv.openNode(a, pool)
			if !ok {
				continue
			}
			n.idx = len(sv.newNodes)
			sv.newNodes = append(sv.newNodes, n)
			sv.lists[0] = append(sv.lists[0], n)
			sv.commitNew(c, n, tr, p)
			return true
		}
	}
	return false
}

// scanExisting is first fit over existing nodes. Nodes that can never take
// the class again are skipped for good through the class's cursor.
func (sv *solver) scanExisting(a *attempt) *nodeState {
	c := a.c
	advance := true
	for i := c.exCursor; i < len(sv.existing); i++ {
		n := sv.existing[i]
		switch sv.fitExisting(a, n) {
		case fits:
			return n
		case rejectPerm:
			if advance {
				c.exCursor = i + 1
			}
		default:
			advance = false
		}
	}
	return nil
}

// tooFull reports whether node n can never take a pod of request req in
// this pass (the scan of the open list also skips nodes since pinned).
func (sv *solver) tooFull(n *nodeState, req resVec, list int, grow bool) bool {
	if list == 0 && n.listed {
		return true
	}
	if grow {
		return !fitsAdd(n.requests, req, n.pool.maxEff)
	}
	return !fitsAdd(n.requests, req, n.pool.effAlloc[n.natural])
}

// scanNew is first fit over planned nodes, zone list by zone list.
func (sv *solver) scanNew(a *attempt, pass int, grow bool) (*nodeState, trial) {
	c := a.c
	// Nodes already pinned to an allowed zone first, then open ones.
	for li := 1; li <= len(sv.zones)+1; li++ {
		l := li
		if li == len(sv.zones)+1 {
			l = 0
		} else if a.allowed&(1<<(li-1)) == 0 {
			continue
		}
		nodes := sv.lists[l]
		// Nodes too full for this request shape are skipped for every class
		// of the shape at once.
		sc := &c.base.shape.cursors[pass][l]
		for *sc < len(nodes) && sv.tooFull(nodes[*sc], c.base.req, l, grow) {
			*sc++
		}
		advance := true
		for i := max(c.cursors[pass][l], *sc); i < len(nodes); i++ {
			n := nodes[i]
			if l == 0 && n.listed {
				if advance {
					c.cursors[pass][l] = i + 1
				}
				continue
			}
			tr, v := sv.newNodeFit(a, n, grow)
			switch v {
			case fits:
				return n, tr
			case rejectPerm:
				if advance {
					c.cursors[pass][l] = i + 1
				}
			default:
				advance = false
			}
		}
	}
	return nil, trial{}
}
