package scheduling

// Whether a pod class may use a NodePool at all (cached per class), and
// the NodePool's minValues check.

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// poolCompatible reports whether class c may use pool p at all, caching
// the instance types it may use there.
func (sv *solver) poolCompatible(c *podClass, p *poolT) bool {
	switch c.poolOK[p.idx] {
	case 1:
		return true
	case -1:
		return false
	}
	ok := sv.poolStatic(c, p) == nil
	if ok {
		c.poolOK[p.idx] = 1
	} else {
		c.poolOK[p.idx] = -1
	}
	return ok
}

// poolStatic is why c can never use pool p (nil when it may). It is also
// the first half of the reason reported for pods that fit nowhere.
func (sv *solver) poolStatic(c *podClass, p *poolT) Reason {
	if c.base.err != nil {
		return c.base.err
	}
	if t, ok := c.tolerates(p.np.Taints); !ok {
		return Taint{Taint: t}
	}
	if r := sv.requirementConflict(c, p); r != nil {
		return r
	}
	merged := sv.merge(p.base, c.reqs)
	types := sv.typesFor(p, merged)
	types, clash := p.typesFreeOfDaemonPorts(types, c.base.hostPorts)
	if clash != nil {
		return HostPort{Port: clash.port, Protocol: clash.protocol}
	}
	types, devWhy := sv.deviceTypes(c, p, types)
	if devWhy != nil {
		return devWhy
	}
	c.poolTypes[p.idx] = types
	zones, cts := p.zones&c.zones, p.cts&c.cts
	var any bool
	for i, t := range p.types {
		if types.has(i) && t.offered(zones, cts) && c.base.req.fits(p.effAlloc[i]) {
			any = true
			break
		}
	}
	if !any {
		if len(p.backoffs) > 0 {
			return BackingOff{NodePool: p.np.Name, Backoffs: p.backoffs}
		}
		return sv.noInstanceTypeReason(c, p, merged, types, zones, cts)
	}
	if r := sv.minValuesMet(p, trial{reqs: merged, zones: zones, cts: cts, types: types}, c.base.req); r != nil {
		return r
	}
	return nil
}

// minValuesMet checks the pool's minValues against the types that could
// still launch the node (nil when met, else why not).
func (sv *solver) minValuesMet(p *poolT, tr trial, need resVec) Reason {
	if len(p.minValues) == 0 || sv.opts.MinValuesBestEffort {
		return nil
	}
	keys := make([]string, 0, len(p.minValues))
	for k := range p.minValues {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := p.minValues[k]
		seen := map[string]bool{}
		for i, t := range p.types {
			if len(seen) >= want {
				break
			}
			if !tr.types.has(i) || !need.fits(p.effAlloc[i]) || !t.offered(tr.zones, tr.cts) {
				continue
			}
			switch k {
			case corev1.LabelTopologyZone:
				for _, z := range sv.zoneNames(t.offeredZones(tr.cts) & tr.zones) {
					seen[z] = true
				}
			case v1.LabelCapacityType:
				for ci, ct := range sv.cts {
					if tr.cts&(1<<ci) != 0 && t.avail[ci]&tr.zones != 0 {
						seen[ct] = true
					}
				}
			default:
				for _, v := range t.reqs[k] {
					if c, ok := tr.reqs.get(k); !ok || c.allows(v) {
						seen[v] = true
					}
				}
			}
		}
		if len(seen) < want {
			return MinValues{Key: k, Required: want, Available: len(seen)}
		}
	}
	return nil
}
