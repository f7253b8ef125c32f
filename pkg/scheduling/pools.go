package scheduling

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
)

// poolT is a NodePool prepared for packing: its own requirements interned,
// its instance types sorted by price with the DaemonSet overhead already
// taken out of their allocatable.
type poolT struct {
	np   *NodePool
	idx  int
	base *reqSet // requirements and template labels, without zone and capacity type
	// dropped are the instance types that meet the pool's requirements but
	// have no available offering in its zones and capacity types: only a
	// pod's reason reads them, for the causes the cloud gave.
	dropped []*InstanceType
	// zones and cts are the pool's allowed zones and capacity types.
	zones uint64
	cts   uint32

	types []*typeT // cheapest first
	// backoffs are the pool's launches waiting out a back-off that cover
	// at least one of its instance types (left out of types).
	backoffs []LaunchBackoff
	effAlloc []resVec // allocatable minus daemon overhead, per type
	daemon   []resVec // daemon overhead, per type
	maxEff   resVec   // component-wise maximum of effAlloc
	all      bitset

	hasLimits bool
	limits    resVec // -1 where unlimited
	nodeLimit int64  // -1 when unlimited
	used      resVec // capacity in use plus planned
	usedNodes int64

	minValues map[string]int
	// definedKeys are the keys the pool or any of its types gives a value.
	definedKeys map[string]bool

	typeMemo map[int]bitset // reqSet id -> compatible types
	// reserved is set when some offering of the pool is a capacity
	// reservation: launch options then depend on what earlier nodes
	// consumed and cannot be memoised.
	reserved bool
	// candMemo holds the price-ordered launch candidates per requirement
	// set, zones and capacity types; launchMemo the rendered options of a
	// kept set (see finalize).
	candMemo   map[candKey][]option
	launchMemo map[uint64][]*launchSet
	// daemonPorts are, per type (indexed as types), the host ports the
	// DaemonSet pods that would land on a node of that type bind: a
	// daemon confined to one architecture takes its port on that
	// architecture's types only.
	daemonPorts [][]hostPort
	// value is the instance type a growing node aims at: the best price per
	// pod capacity.

	// bursty is set when some type carries surplus credits (billed
	// prices): a node's cheapest type then depends on its CPU requests,
	// not on the type order alone.
	bursty bool
}

// typeT is one instance type of one pool.
type typeT struct {
	it    *InstanceType
	reqs  map[string][]string
	avail []uint64 // per capacity type: zones with an available offering
	// minPrice is the cheapest allowed offering plus the node's volumes
	// (billed prices): what the type costs before surplus credits, and so
	// never more than price.
	minPrice float64
	volumes  float64
	burst    *Burst // nil under list prices
	capacity resVec
	offers   []offerT // available offerings the pool allows
}

// offerT is an offering with its zone and capacity type interned.
type offerT struct {
	zone, ct    int
	price       float64
	reservation string
}

func (sv *solver) buildPools() error {
	nps := append([]*NodePool(nil), sv.snap.NodePools...)
	sort.SliceStable(nps, func(i, j int) bool {
		if nps[i].Weight != nps[j].Weight {
			return nps[i].Weight > nps[j].Weight
		}
		return nps[i].Name < nps[j].Name
	})
	for _, np := range nps {
		p := &poolT{np: np, idx: len(sv.pools), typeMemo: map[int]bitset{}, minValues: map[string]int{}, definedKeys: map[string]bool{}}
		b := reqBuilder{}
		for _, r := range np.Requirements {
			key := normalizedKey(r.Key)
			if err := b.addRequirement(key, r.Operator, r.Values); err != nil {
				return errorf("nodepool %s: %w", np.Name, err)
			}
			if r.MinValues != nil {
				p.minValues[key] = max(p.minValues[key], *r.MinValues)
			}
		}
		for k, v := range np.Labels {
			b.add(normalizedKey(k), constraint{vals: []string{v}})
		}
		b.add(v1.LabelNodePool, constraint{vals: []string{np.Name}})
		p.zones, p.cts = sv.allZones, sv.allCTs
		if c, ok := b[corev1.LabelTopologyZone]; ok {
			p.zones = sv.zoneMask(c)
			delete(b, corev1.LabelTopologyZone)
		}
		if c, ok := b[v1.LabelCapacityType]; ok {
			p.cts = sv.ctMask(c)
			delete(b, v1.LabelCapacityType)
		}
		for k := range b {
			p.definedKeys[k] = true
		}
		p.base = sv.intern(b.build())
		sv.buildPoolTypes(p)
		sv.buildLimits(p)
		for _, t := range np.Taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule {
				sv.hasPreferNoSchedule = true
			}
		}
		sv.pools = append(sv.pools, p)
	}
	return nil
}

// typeFacts are what a pool reads of an instance type whatever the pool:
// its requirements by normalized key (its name under the instance-type
// label when it gives none), its capacity and allocatable. A solve of
// its own reads them as its pools need them; a Prepared's solves read
// each type once while they share its dimensions.
func (sv *solver) typeFacts(it *InstanceType) (typeFacts, bool) {
	pr := sv.opts.prepared
	if pr.local {
		return typeFacts{}, false
	}
	if tf, ok := pr.types[it]; ok && pr.typesRI == sv.ri {
		return tf, true
	}
	if pr.typesRI != sv.ri {
		clear(pr.types)
		pr.typesRI = sv.ri
	}
	reqs, capacity := sv.readType(it)
	tf := typeFacts{reqs: reqs, capacity: capacity, alloc: sv.ri.allocatable(it)}
	pr.types[it] = tf
	return tf, true
}

// typeRequirements are it's requirements and capacity (typeFacts).
func (sv *solver) typeRequirements(it *InstanceType) (map[string][]string, resVec) {
	if tf, ok := sv.typeFacts(it); ok {
		return tf.reqs, tf.capacity
	}
	return sv.readType(it)
}

// typeAllocatable is it's allocatable (typeFacts); the caller must not
// change it.
func (sv *solver) typeAllocatable(it *InstanceType) resVec {
	if tf, ok := sv.typeFacts(it); ok {
		return tf.alloc
	}
	return sv.ri.allocatable(it)
}

func (sv *solver) readType(it *InstanceType) (map[string][]string, resVec) {
	reqs := map[string][]string{}
	for k, v := range it.Requirements {
		reqs[normalizedKey(k)] = sortedUnique(v)
	}
	if _, ok := reqs[corev1.LabelInstanceTypeStable]; !ok {
		reqs[corev1.LabelInstanceTypeStable] = []string{it.Name}
	}
	return reqs, sv.ri.vec(it.Capacity)
}

func (sv *solver) buildPoolTypes(p *poolT) {
	its := sv.snap.InstanceTypes[p.np.Name]
	backoffs, backedOff := activeBackoffs(p.np, sv.snap.Now)
	skipped := false
	for _, it := range its {
		if backedOff[it.Name] {
			// Unavailable until the back-off ends, like an offering
			// without capacity.
			skipped = true
			continue
		}
		reqs, capacity := sv.typeRequirements(it)
		t := &typeT{it: it, reqs: reqs, avail: make([]uint64, len(sv.cts)), minPrice: math.Inf(1)}
		// The pool's own requirements rule out some of the type's values
		// (e.g. a pool limited to arm64).
		ok := true
		for k, vals := range t.reqs {
			if k == corev1.LabelTopologyZone || k == v1.LabelCapacityType {
				continue
			}
			if c, has := p.base.get(k); has && !c.allowsAny(vals) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || (o.ReservationID != "" && (o.ReservationCapacity <= 0 || sv.opts.IgnoreReservedCapacity)) {
				continue
			}
			z, zok := sv.zoneIdx[o.Zone]
			c, cok := sv.ctIdx[o.CapacityType]
			if !zok || !cok || p.zones&(1<<z) == 0 || p.cts&(1<<c) == 0 {
				continue
			}
			if zr, has := t.reqs[corev1.LabelTopologyZone]; has && len(zr) > 0 && !contains(zr, o.Zone) {
				continue
			}
			t.avail[c] |= 1 << z
			t.minPrice = math.Min(t.minPrice, o.Price)
			t.offers = append(t.offers, offerT{zone: z, ct: c, price: o.Price, reservation: o.ReservationID})
			p.reserved = p.reserved || o.ReservationID != ""
		}
		if math.IsInf(t.minPrice, 1) {
			p.dropped = append(p.dropped, it) // nothing to buy
			continue
		}
		if !sv.opts.ListPrices {
			t.volumes, t.burst = it.VolumePrice, it.Burst
			t.minPrice += t.volumes
			p.bursty = p.bursty || t.burst != nil
		}
		t.capacity = capacity
		for k := range t.reqs {
			p.definedKeys[k] = true
		}
		p.types = append(p.types, t)
	}
	if skipped {
		p.backoffs = backoffs
	}
	sort.SliceStable(p.types, func(i, j int) bool {
		if p.types[i].minPrice != p.types[j].minPrice {
			return p.types[i].minPrice < p.types[j].minPrice
		}
		return p.types[i].it.Name < p.types[j].it.Name
	})
	p.all = newBitset(len(p.types))
	p.maxEff = make(resVec, len(sv.ri.names))
	for i, t := range p.types {
		alloc := sv.typeAllocatable(t.it)
		if sv.planDevices() {
			alloc = alloc.clone()
			sv.addDevices(alloc, sv.snap.Devices.InstanceTypes[t.it.Name])
		}
		d, ports := sv.daemonOverhead(p, t)
		p.daemonPorts = append(p.daemonPorts, ports)
		eff := alloc.clone()
		usable := true
		for r := range eff {
			eff[r] -= d[r]
			if eff[r] < 0 {
				usable = false
				eff[r] = 0
			}
		}
		p.effAlloc = append(p.effAlloc, eff)
		p.daemon = append(p.daemon, d)
		if !usable {
			continue // daemons alone overflow it
		}
		p.all.set(i)
		for r := range eff {
			p.maxEff[r] = max(p.maxEff[r], eff[r])
		}
	}
}

// price is what a node of the pool's type i costs per hour (NodePrice)
// carrying pods that request need, its DaemonSets' overhead added: the
// cheapest offering, the volumes and any surplus credits.
func (p *poolT) price(i int, need resVec) float64 {
	return p.types[i].minPrice + p.credits(i, need)
}

// credits are the surplus credits per hour of the pool's type i carrying
// pods that request need, its DaemonSets' overhead added (zero unless the
// type is burstable and billed prices are on).
func (p *poolT) credits(i int, need resVec) float64 {
	t := p.types[i]
	if t.burst == nil {
		return 0
	}
	return t.burst.credits(need[resCPU] + p.daemon[i][resCPU])
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (sv *solver) buildLimits(p *poolT) {
	n := len(sv.ri.names)
	p.limits = make(resVec, n)
	for i := range p.limits {
		p.limits[i] = -1
	}
	p.nodeLimit = -1
	for name, q := range p.np.Limits {
		if name == "nodes" {
			p.nodeLimit = q.Value()
			p.hasLimits = true
			continue
		}
		if i, ok := sv.ri.pos[name]; ok {
			p.limits[i] = quantityValue(name, q)
			p.hasLimits = true
		}
	}
	p.used = sv.ri.vec(p.np.InUse)
	if q, ok := p.np.InUse["nodes"]; ok {
		p.usedNodes = q.Value()
	}
}

// withinLimits reports whether swapping a node of capacity from (nil for a
// new node) for one of capacity to keeps the pool within its limits.
func (p *poolT) withinLimits(from, to resVec) bool {
	if !p.hasLimits {
		return true
	}
	if from == nil && p.nodeLimit >= 0 && p.usedNodes+1 > p.nodeLimit {
		return false
	}
	for i, l := range p.limits {
		if l < 0 {
			continue
		}
		u := p.used[i] + to[i]
		if from != nil {
			u -= from[i]
		}
		if u > l {
			return false
		}
	}
	return true
}

func (p *poolT) account(from, to resVec) {
	if from == nil {
		p.usedNodes++
	}
	for i := range p.used {
		p.used[i] += to[i]
		if from != nil {
			p.used[i] -= from[i]
		}
	}
}

// typesFor returns the pool's instance types compatible with r (cached).
func (sv *solver) typesFor(p *poolT, r *reqSet) bitset {
	if m, ok := p.typeMemo[r.id]; ok {
		return m
	}
	m := newBitset(len(p.types))
	for i, t := range p.types {
		if !p.all.has(i) {
			continue
		}
		if typeCompatible(p, t, r) {
			m.set(i)
		}
	}
	p.typeMemo[r.id] = m
	return m
}

// typeCompatible reports whether a node of pool p and type t can meet r.
// Keys the type does not define take their value from the pool's own
// requirements (checked when merging) or are absent.
func typeCompatible(p *poolT, t *typeT, r *reqSet) bool {
	for i, k := range r.keys {
		vals, ok := t.reqs[k]
		if !ok {
			if _, inPool := p.base.get(k); !inPool && !r.cons[i].absent {
				return false
			}
			continue
		}
		if !r.cons[i].allowsAny(vals) {
			return false
		}
	}
	return true
}

// offered reports whether type t has an available offering in zones × cts.
func (t *typeT) offered(zones uint64, cts uint32) bool {
	for c := cts; c != 0; c &= c - 1 {
		if t.avail[bits.TrailingZeros32(c)]&zones != 0 {
			return true
		}
	}
	return false
}

// offeredZones is the set of zones where t is available in cts.
func (t *typeT) offeredZones(cts uint32) uint64 {
	var z uint64
	for c := cts; c != 0; c &= c - 1 {
		z |= t.avail[bits.TrailingZeros32(c)]
	}
	return z
}

// bitset is a fixed-size set of small integers.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)      { b[i>>6] |= 1 << (i & 63) }
func (b bitset) has(i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) clear(i int)    { b[i>>6] &^= 1 << (i & 63) }

// and returns the intersection of b and o, a new set.
func (b bitset) and(o bitset) bitset {
	out := make(bitset, len(b))
	for i := range b {
		out[i] = b[i] & o[i]
	}
	return out
}

// key is the set as a string, for map keys.
func (b bitset) key() string {
	buf := make([]byte, 0, 8*len(b))
	for _, w := range b {
		buf = binary.LittleEndian.AppendUint64(buf, w)
	}
	return string(buf)
}

func (b bitset) empty() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}
