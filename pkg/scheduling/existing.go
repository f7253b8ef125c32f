package scheduling

// Existing nodes and in-flight NodeClaims: their state built from the
// snapshot, whether a pod fits one, and committing it there.

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

func (sv *solver) buildExisting() {
	nodes := append([]*ExistingNode(nil), sv.snap.Nodes...)
	// Initialized nodes first, then by name, as Karpenter prefers nodes
	// that are already serving.
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].Initialized != nodes[j].Initialized {
			return nodes[i].Initialized
		}
		return nodes[i].Name < nodes[j].Name
	})
	for _, en := range nodes {
		nf := sv.existingFacts(en)
		n := &nodeState{idx: len(sv.existing), ex: en, alloc: nf.alloc, exTaints: nf.taints, requests: nf.requests.clone(), ports: slices.Clone(nf.ports)}
		if z, ok := en.Labels[corev1.LabelTopologyZone]; !ok {
			n.noZone = true
		} else if zi, ok := sv.zoneIdx[z]; ok {
			n.exZone = 1 << zi
		}
		if ct, ok := en.Labels[v1.LabelCapacityType]; !ok {
			n.noCT = true
		} else if ci, ok := sv.ctIdx[ct]; ok {
			n.exCT = 1 << ci
		}
		if nf.claims {
			for _, p := range en.Pods {
				if !sv.opts.prepared.facts(p).terminal {
					sv.attachClaims(n, p)
				}
			}
		}
		sv.existing = append(sv.existing, n)
	}
}

// existingFacts are what a node brings to a solve before any pod moves:
// its allocatable, taints, and its bound pods' requests and host ports.
// Every bound pod's facts are read here, terminal ones too: the topology
// counts number them (topology.go). A Prepared keeps them for its solve's
// second pass over the same nodes (Solve's other pod order).
func (sv *solver) existingFacts(en *ExistingNode) *nodeFacts {
	pr := sv.opts.prepared
	shared := !pr.local && sv.ri == pr.ri
	if nf, ok := pr.nodes[en]; ok && shared {
		return nf
	}
	nf := &nodeFacts{alloc: sv.nodeAlloc(en), taints: existingTaints(en), requests: make(resVec, len(sv.ri.names))}
	for _, p := range en.Pods {
		f := pr.facts(p)
		if f.terminal {
			continue
		}
		nf.ports = append(nf.ports, f.ports...)
		nf.requests.add(sv.cachedPodVec(p, f))
		nf.claims = nf.claims || f.claims
	}
	if shared {
		pr.nodes[en] = nf
	}
	return nf
}

// attachClaims counts p's persistent volume claims against n's attach
// limits, each claim once per node.
func (sv *solver) attachClaims(n *nodeState, p *corev1.Pod) {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		key := p.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
		if n.volClaims[key] {
			continue
		}
		if n.volClaims == nil {
			n.volClaims, n.volumes = map[string]bool{}, map[string]int{}
		}
		n.volClaims[key] = true
		if d := sv.claimDriver(p.Namespace, v.PersistentVolumeClaim.ClaimName); d != "" {
			n.volumes[d]++
		}
	}
}

// fitExisting checks a pod of class c against existing node n.
func (sv *solver) fitExisting(a *attempt, n *nodeState) verdict {
	c := a.c
	if n.ex.MarkedForDeletion {
		return rejectPerm
	}
	switch c.exOK[n.idx] {
	case -1:
		return rejectPerm
	case 0:
		if sv.existingStatic(c, n) != nil {
			c.exOK[n.idx] = -1
			return rejectPerm
		}
		c.exOK[n.idx] = 1
	}
	if !fitsAdd(n.requests, c.base.req, n.alloc) {
		return rejectPerm
	}
	if v := sv.hostnameOK(c, n); v != fits {
		return v
	}
	if c.base.zoneRelevant && n.exZone != 0 && a.allowed&n.exZone == 0 {
		return rejectTemp
	}
	if c.base.ctRelevant && n.exCT != 0 && a.ctAllowed&n.exCT == 0 {
		return rejectTemp
	}
	if v := sv.otherKeysOK(c, n); v != fits {
		return v
	}
	for d, k := range c.base.volDrivers {
		if lim, ok := n.ex.VolumeLimits[d]; ok && n.volumes[d]+k > lim {
			return rejectPerm
		}
	}
	return fits
}

// existingStatic is why c can never land on n (nil when it may).
func (sv *solver) existingStatic(c *podClass, n *nodeState) Reason {
	if t, ok := c.tolerates(n.exTaints); !ok {
		return Taint{Taint: t}
	}
	if r := c.base.deviceNodeReason(n); r != nil {
		return r
	}
	incompatible := NodeLabels{}
	if !labelsSatisfy(n.ex.Labels, c.reqs) {
		return incompatible
	}
	if n.noZone {
		if c.zones != sv.allZones {
			return incompatible
		}
	} else if n.exZone != 0 && c.zones&n.exZone == 0 {
		return incompatible
	}
	if n.noCT {
		if c.cts != sv.allCTs {
			return incompatible
		}
	} else if n.exCT != 0 && c.cts&n.exCT == 0 {
		return incompatible
	}
	return nil
}

func (sv *solver) commitExisting(c *podClass, n *nodeState, p *corev1.Pod) {
	c.base.placed++
	n.requests.add(c.base.req)
	n.pods = append(n.pods, p)
	sv.attachClaims(n, p)
	sv.recordPlacement(c, n)
}
