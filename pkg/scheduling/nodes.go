package scheduling

import (
	"math"
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// nodeState is an existing node (ex != nil) or a NodeClaim being planned.
type nodeState struct {
	idx int
	ex  *ExistingNode

	// Existing nodes.
	alloc     resVec
	exTaints  []corev1.Taint
	volumes   map[string]int // attached CSI volumes per driver
	volClaims map[string]bool

	// New nodes.
	pool    *poolT
	reqs    *reqSet
	zones   uint64
	cts     uint32
	types   bitset
	natural int // index into pool.types of the cheapest type that fits
	classes []*podClass

	ports    []hostPort // host ports in use
	requests resVec     // pods' requests (existing nodes: bound pods included)
	pods     []*corev1.Pod
	// podClasses is the relaxation step each of a new node's pods was
	// placed with.
	podClasses []*podClass
	hosts      []hostCount
	listed     bool // appended to its zone list
}

func (n *nodeState) taints() []corev1.Taint {
	if n.ex != nil {
		return n.exTaints
	}
	return n.pool.np.Taints
}

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
		n := &nodeState{idx: len(sv.existing), ex: en, alloc: sv.ri.vec(en.Allocatable), exTaints: existingTaints(en), volumes: map[string]int{}, volClaims: map[string]bool{}}
		n.requests = make(resVec, len(sv.ri.names))
		for _, p := range en.Pods {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			n.requests.add(sv.ri.vec(podRequests(p)))
			n.ports = append(n.ports, podHostPorts(p)...)
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim == nil {
					continue
				}
				key := p.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
				if n.volClaims[key] {
					continue
				}
				n.volClaims[key] = true
				if d := sv.claimDriver(p.Namespace, v.PersistentVolumeClaim.ClaimName); d != "" {
					n.volumes[d]++
				}
			}
		}
		sv.existing = append(sv.existing, n)
	}
}

// attempt is the per-pod context of one placement try: the zones the
// pod's own topology allows and prefers right now.
type attempt struct {
	c         *podClass
	allowed   uint64 // zones allowed by own zone-keyed topology
	preferred uint64 // zones that keep other pods' zone spread balanced
	zoneRank  []int  // candidate zone order for pinning
	ctAllowed uint32 // capacity types allowed by own capacity-type-keyed topology
	ctRank    []int
	// mustJoin is set when the pod cannot have a node of its own (hostname
	// affinity to pods already placed), so growing a node is always worth it.
	mustJoin bool
}

func (sv *solver) newAttempt(c *podClass) *attempt {
	a := &attempt{c: c, allowed: c.zones, preferred: c.zones, ctAllowed: c.cts}
	cb := c.base
	if cb.ctRelevant {
		sv.capacityTypeTopology(a)
	}
	if !cb.zoneRelevant {
		return a
	}
	score := make([]int, len(sv.zones))
	for _, g := range c.own {
		if g.key != corev1.LabelTopologyZone {
			continue
		}
		m := 0
		if g.kind == kindSpread {
			m = sv.spreadMin(g)
		}
		var ok uint64
		for zi, z := range sv.zones {
			if sv.domainAllowed(g, cb, z, m) {
				ok |= 1 << zi
			}
			if g.kind == kindSpread {
				score[zi] += g.counts[z]
			}
		}
		a.allowed &= ok
	}
	a.preferred = a.allowed
	for _, g := range cb.selectedBy {
		if g.key != corev1.LabelTopologyZone {
			continue
		}
		var ok uint64
		switch g.kind {
		case kindAnti:
			for zi, z := range sv.zones {
				if g.owners[z] == 0 {
					ok |= 1 << zi
				}
			}
			a.allowed &= ok
			a.preferred &= ok
		case kindSpread:
			m := sv.spreadMin(g)
			for zi, z := range sv.zones {
				if g.counts[z]+1-m <= int(g.maxSkew) {
					ok |= 1 << zi
				}
				score[zi] += g.counts[z]
			}
			if a.preferred&ok != 0 {
				a.preferred &= ok
			}
		}
	}
	for zi := range sv.zones {
		if a.allowed&(1<<zi) != 0 {
			a.zoneRank = append(a.zoneRank, zi)
		}
	}
	sort.SliceStable(a.zoneRank, func(i, j int) bool {
		zi, zj := a.zoneRank[i], a.zoneRank[j]
		pi, pj := a.preferred&(1<<zi) != 0, a.preferred&(1<<zj) != 0
		if pi != pj {
			return pi
		}
		return score[zi] < score[zj]
	})
	return a
}

// reject says whether a failed check can change later (temporary) or not.
type verdict int8

const (
	fits verdict = iota
	rejectTemp
	rejectPerm
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
		if g.key == corev1.LabelHostname || g.key == corev1.LabelTopologyZone {
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
	if z, ok := n.ex.Labels[corev1.LabelTopologyZone]; ok && c.base.zoneRelevant {
		if zi, ok := sv.zoneIdx[z]; ok && a.allowed&(1<<zi) == 0 {
			return rejectTemp
		}
	}
	if ct, ok := n.ex.Labels[CapacityTypeLabel]; ok && c.base.ctRelevant {
		if ci, ok := sv.ctIdx[ct]; ok && a.ctAllowed&(1<<ci) == 0 {
			return rejectTemp
		}
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
	incompatible := NodeLabels{}
	if !labelsSatisfy(n.ex.Labels, c.reqs) {
		return incompatible
	}
	if z, ok := n.ex.Labels[corev1.LabelTopologyZone]; ok {
		if zi, ok := sv.zoneIdx[z]; ok && c.zones&(1<<zi) == 0 {
			return incompatible
		}
	} else if c.zones != sv.allZones {
		return incompatible
	}
	if ct, ok := n.ex.Labels[CapacityTypeLabel]; ok {
		if ci, ok := sv.ctIdx[ct]; ok && c.cts&(1<<ci) == 0 {
			return incompatible
		}
	} else if c.cts != sv.allCTs {
		return incompatible
	}
	return nil
}

func (sv *solver) commitExisting(c *podClass, n *nodeState, p *corev1.Pod) {
	c.base.placed++
	n.requests.add(c.base.req)
	n.pods = append(n.pods, p)
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		key := p.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
		if !n.volClaims[key] {
			n.volClaims[key] = true
			if d := sv.claimDriver(p.Namespace, v.PersistentVolumeClaim.ClaimName); d != "" {
				n.volumes[d]++
			}
		}
	}
	sv.recordPlacement(c, n)
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
	for _, hp := range c.base.hostPorts {
		if portsConflict([]hostPort{hp}, p.daemonPorts) {
			return HostPort{Port: hp.port, Protocol: hp.protocol}
		}
	}
	merged := sv.merge(p.base, c.reqs)
	types := sv.typesFor(p, merged)
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
		return sv.noInstanceTypeReason(c, p, merged, types, zones, cts)
	}
	if r := sv.minValuesMet(p, trial{reqs: merged, zones: zones, cts: cts, types: types}, c.base.req); r != nil {
		return r
	}
	return nil
}

// newNodeFit checks class c against planned node n. With grow false the
// pod must fit the node's current cheapest type; with grow true the node
// may move to a bigger type. On success it returns the state to commit.
func (sv *solver) newNodeFit(a *attempt, n *nodeState, grow bool) (trial, verdict) {
	c := a.c
	p := n.pool
	if !sv.poolCompatible(c, p) {
		return trial{}, rejectPerm
	}
	if !fitsAdd(n.requests, c.base.req, p.maxEff) {
		return trial{}, rejectPerm
	}
	tr := trial{reqs: n.reqs, zones: n.zones & c.zones, cts: n.cts & c.cts, types: n.types}
	if tr.zones == 0 || tr.cts == 0 {
		return trial{}, rejectPerm
	}
	if !n.hasClass(c) {
		tr.reqs = sv.merge(n.reqs, c.reqs)
		if tr.reqs == nil {
			return trial{}, rejectPerm
		}
		if tr.reqs != n.reqs {
			tr.types = sv.typesFor(p, tr.reqs)
		}
	}
	if v := sv.hostnameOK(c, n); v != fits {
		return trial{}, v
	}
	if v := sv.otherKeysOK(c, n); v != fits {
		return trial{}, v
	}
	need := sv.scratch
	for i := range need {
		need[i] = n.requests[i] + c.base.req[i]
	}
	var from resVec
	if n.natural >= 0 {
		from = p.types[n.natural].capacity
	}
	if tr.zones&a.allowed == 0 || tr.cts&a.ctAllowed == 0 {
		return trial{}, rejectTemp
	}
	if out, ok := sv.pickDomains(a, n, tr, need, from, grow); ok {
		// Growing the node must not cost more than a node of its own would.
		if grow && !a.mustJoin && out.natural != n.natural && p.types[out.natural].minPrice-p.types[n.natural].minPrice > sv.soloPrice(c, p)*(1+1e-9) {
			return trial{}, rejectPerm
		}
		return out, fits
	}
	// No allowed domain has room: treated as final for this pass (the node
	// only fills up), which keeps the scan linear.
	return trial{}, rejectPerm
}

// pickDomains decides the node's zone and capacity type when the pod's
// topology needs them decided (best-ranked first), and finds the cheapest
// type that fits.
func (sv *solver) pickDomains(a *attempt, n *nodeState, tr trial, need, from resVec, grow bool) (trial, bool) {
	// Spread or affinity on another label: decide the node's value first,
	// least-loaded allowed value first.
	for _, g := range a.c.own {
		if g.key == corev1.LabelHostname || g.key == corev1.LabelTopologyZone || g.key == CapacityTypeLabel {
			continue
		}
		if _, ok := sv.nodeDomain(n, g.key); ok {
			continue
		}
		m := 0
		if g.kind == kindSpread {
			m = sv.spreadMin(g)
		}
		vals := append([]string(nil), sv.spreadUniverse(g)...)
		sort.SliceStable(vals, func(i, j int) bool { return g.counts[vals[i]] < g.counts[vals[j]] })
		for _, v := range vals {
			if !sv.domainAllowed(g, a.c.base, v, m) {
				continue
			}
			r := sv.merge(tr.reqs, sv.intern(reqBuilder{g.key: constraint{vals: []string{v}}}.build()))
			if r == nil {
				continue
			}
			x := tr
			x.reqs, x.types = r, sv.typesFor(n.pool, r)
			if out, ok := sv.pickZoneAndCT(a, n, x, need, from, grow); ok {
				return out, true
			}
		}
		return trial{}, false
	}
	return sv.pickZoneAndCT(a, n, tr, need, from, grow)
}

func (sv *solver) pickZoneAndCT(a *attempt, n *nodeState, tr trial, need, from resVec, grow bool) (trial, bool) {
	cb := a.c.base
	var zbuf [64]uint64
	var cbuf [32]uint32
	zoneCands := append(zbuf[:0], tr.zones&a.allowed)
	if cb.zoneRelevant && bits.OnesCount64(zoneCands[0]) > 1 {
		zoneCands = zoneCands[:0]
		for _, zi := range a.zoneRank {
			if tr.zones&(1<<zi) != 0 {
				zoneCands = append(zoneCands, 1<<zi)
			}
		}
	}
	ctCands := append(cbuf[:0], tr.cts&a.ctAllowed)
	if cb.ctRelevant && bits.OnesCount32(ctCands[0]) > 1 {
		ctCands = ctCands[:0]
		for _, ci := range a.ctRank {
			if tr.cts&(1<<ci) != 0 {
				ctCands = append(ctCands, 1<<ci)
			}
		}
	}
	for _, zs := range zoneCands {
		for _, cs := range ctCands {
			if zs == 0 || cs == 0 {
				continue
			}
			x := tr
			x.zones, x.cts = zs, cs
			if t := sv.naturalType(n, x, need, from, grow); t >= 0 {
				x.natural = t
				return x, true
			}
		}
	}
	return trial{}, false
}

// capacityTypeTopology narrows the capacity types a pod's own
// capacity-type-keyed topology allows, least loaded first.
func (sv *solver) capacityTypeTopology(a *attempt) {
	c := a.c
	score := make([]int, len(sv.cts))
	for _, g := range c.own {
		if g.key != CapacityTypeLabel {
			continue
		}
		m := 0
		if g.kind == kindSpread {
			m = sv.spreadMin(g)
		}
		var ok uint32
		for ci, ct := range sv.cts {
			if sv.domainAllowed(g, c.base, ct, m) {
				ok |= 1 << ci
			}
			score[ci] += g.counts[ct]
		}
		a.ctAllowed &= ok
	}
	for ci := range sv.cts {
		if a.ctAllowed&(1<<ci) != 0 {
			a.ctRank = append(a.ctRank, ci)
		}
	}
	sort.SliceStable(a.ctRank, func(i, j int) bool { return score[a.ctRank[i]] < score[a.ctRank[j]] })
}

// soloPrice is the cheapest price of a node of pool p carrying one pod of
// class c alone (cached per class and pool).
func (sv *solver) soloPrice(c *podClass, p *poolT) float64 {
	if c.solo == nil {
		c.solo = make([]float64, len(sv.pools))
		for i := range c.solo {
			c.solo[i] = -1
		}
	}
	if c.solo[p.idx] >= 0 {
		return c.solo[p.idx]
	}
	price := math.Inf(1)
	types := c.poolTypes[p.idx]
	for i, t := range p.types {
		if types.has(i) && c.base.req.fits(p.effAlloc[i]) && t.offered(p.zones&c.zones, p.cts&c.cts) {
			price = t.minPrice
			break
		}
	}
	c.solo[p.idx] = price
	return price
}

// trial is a planned node's state if the pod under test joins it.
type trial struct {
	reqs    *reqSet
	zones   uint64
	cts     uint32
	types   bitset
	natural int
}

// naturalType returns the cheapest type (index into pool.types) among
// tr.types offered in tr's zones and capacity types whose allocatable
// covers need, within the pool's limits; -1 if none. Without grow only the
// node's current type is acceptable.
func (sv *solver) naturalType(n *nodeState, tr trial, need, from resVec, grow bool) int {
	p := n.pool
	start := max(n.natural, 0)
	if !grow {
		i := n.natural
		if i >= 0 && tr.types.has(i) && need.fits(p.effAlloc[i]) && p.types[i].offered(tr.zones, tr.cts) && sv.minValuesMet(p, tr, need) == nil {
			return i
		}
		return -1
	}
	for i := start; i < len(p.types); i++ {
		if !tr.types.has(i) || !need.fits(p.effAlloc[i]) || !p.types[i].offered(tr.zones, tr.cts) {
			continue
		}
		if !p.withinLimits(from, p.types[i].capacity) {
			continue
		}
		if sv.minValuesMet(p, tr, need) != nil {
			return -1 // the fitting types only get fewer as the node grows
		}
		return i
	}
	return -1
}

// minValuesMet checks the pool's minValues against the types that could
// still launch the node (nil when met, else why not).
func (sv *solver) minValuesMet(p *poolT, tr trial, need resVec) Reason {
	if len(p.minValues) == 0 {
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
			case CapacityTypeLabel:
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

func (n *nodeState) hasClass(c *podClass) bool {
	for _, x := range n.classes {
		if x == c {
			return true
		}
	}
	return false
}

func (sv *solver) commitNew(c *podClass, n *nodeState, tr trial, p *corev1.Pod) {
	c.base.placed++
	pool := n.pool
	var from resVec
	if n.natural >= 0 {
		from = pool.types[n.natural].capacity
	}
	if tr.natural != n.natural {
		pool.account(from, pool.types[tr.natural].capacity)
		sv.lastGrown = n
	}
	n.reqs, n.zones, n.cts, n.types, n.natural = tr.reqs, tr.zones, tr.cts, tr.types, tr.natural
	if !n.hasClass(c) {
		n.classes = append(n.classes, c)
	}
	n.requests.add(c.base.req)
	n.pods = append(n.pods, p)
	n.podClasses = append(n.podClasses, c)
	if !n.listed && bits.OnesCount64(n.zones) == 1 {
		n.listed = true
		zi := bits.TrailingZeros64(n.zones)
		sv.lists[1+zi] = append(sv.lists[1+zi], n)
	}
	sv.recordPlacement(c, n)
}

// openNode plans a new node of pool p for a pod of class c.
func (sv *solver) openNode(a *attempt, p *poolT) (*nodeState, trial, bool) {
	c := a.c
	if !sv.poolCompatible(c, p) {
		return nil, trial{}, false
	}
	if p.nodeLimit >= 0 && p.usedNodes+1 > p.nodeLimit {
		return nil, trial{}, false
	}
	n := &nodeState{pool: p, natural: -1, requests: make(resVec, len(sv.ri.names)), ports: append([]hostPort(nil), p.daemonPorts...)}
	n.reqs = sv.merge(p.base, c.reqs)
	n.types = c.poolTypes[p.idx]
	n.zones, n.cts = p.zones, p.cts
	tr := trial{reqs: n.reqs, zones: n.zones & c.zones, cts: n.cts & c.cts, types: n.types}
	if v := sv.hostnameOK(c, n); v != fits {
		return nil, trial{}, false
	}
	if tr.zones&a.allowed == 0 || tr.cts&a.ctAllowed == 0 {
		return nil, trial{}, false
	}
	// Size the node for the class's pods still to come, so they fill it
	// instead of each opening a node of its own; finalize right-sizes it
	// to the pods it ends up with.
	out, ok := sv.pickDomains(a, n, tr, sv.bulkNeed(c, p), nil, true)
	if !ok {
		if out, ok = sv.pickDomains(a, n, tr, c.base.req, nil, true); !ok {
			return nil, trial{}, false
		}
	}
	return n, out, true
}

// bulkNeed is what a new node of pool p should have room for when it opens
// for a pod of class c: k pods of the class, where k is the count that
// gives the lowest price per pod among the pool's types, capped by the
// class's pods not placed yet.
//
// Growing a node one pod at a time cannot find that size on its own: with
// prices linear in size, a type twice as large costs exactly one more small
// node, so each growth step is a tie that price noise (spot, zones) breaks
// against growing, and a deployment of identical pods ends one pod per node.
// Classes with topology, host ports or attach-limited volumes keep the
// one-pod sizing: how many of their pods may share a node is not a matter
// of resources alone.
func (sv *solver) bulkNeed(c *podClass, p *poolT) resVec {
	cb := c.base
	remaining := len(cb.pods) - cb.placed
	if remaining < 2 || len(c.own) > 0 || len(cb.selectedBy) > 0 || len(cb.hostPorts) > 0 || len(cb.volDrivers) > 0 {
		return cb.req
	}
	types := c.poolTypes[p.idx]
	bestK, best := 1, math.Inf(1)
	for i, t := range p.types {
		if !types.has(i) || !t.offered(p.zones&c.zones, p.cts&c.cts) {
			continue
		}
		k := min(fitCount(cb.req, p.effAlloc[i]), remaining)
		if k == 0 {
			continue
		}
		if per := t.minPrice / float64(k); per < best*(1-1e-9) {
			best, bestK = per, k
		}
	}
	need := make(resVec, len(cb.req))
	for i := range need {
		need[i] = cb.req[i] * int64(bestK)
	}
	return need
}

// fitCount is how many pods of request req fit in alloc.
func fitCount(req, alloc resVec) int {
	k := math.MaxInt
	for i := range req {
		if req[i] <= 0 {
			continue
		}
		k = min(k, int(alloc[i]/req[i]))
	}
	if k == math.MaxInt {
		return 0
	}
	return k
}
