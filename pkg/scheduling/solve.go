package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Options are the solver's knobs. The zero value is valid.
type Options struct {
	// MaxInstanceTypes caps the launch options kept per new NodeClaim
	// (cheapest first), once the types the NodePool's minValues need are
	// kept. Zero means DefaultMaxInstanceTypes, Karpenter's 600: the cloud
	// provider narrows them further for its launch request, and every
	// option dropped here is a fallback lost when capacity runs out.
	MaxInstanceTypes int
	// IgnorePreferences drops every preference up front (Karpenter's
	// PREFERENCE_POLICY=Ignore) instead of relaxing them one at a time.
	IgnorePreferences bool
	// RequirePreferences never relaxes a preference: preferred (anti-)
	// affinity and node affinity, ScheduleAnyway spread and PreferNoSchedule
	// taints hold as if required; only the alternatives of a required node
	// affinity are tried in turn. Consolidation simulates this way, so that
	// moving pods to save money never breaks a preference they were placed
	// with (Karpenter's simulation relaxes; docs/migrating.md). Drift
	// relaxes, as Karpenter does: a drifted node must go.
	RequirePreferences bool
	// IgnoreReservedCapacity treats capacity-reservation offerings as
	// unavailable (Karpenter's ReservedCapacity feature gate off). By
	// default a reserved offering is preferred while its reservation has
	// capacity left: it is usually the cheapest, and each new node that
	// takes it uses one instance of ReservationCapacity, in plan order.
	IgnoreReservedCapacity bool
	// MinValuesBestEffort is Karpenter's MIN_VALUES_POLICY=BestEffort: a
	// NodePool's minValues never keeps a pod from a node; a NodeClaim whose
	// launch options offer fewer values than minValues asks carries the
	// number they do offer instead, and NewNodeClaim.MinValuesRelaxed says
	// so. The default (Strict) leaves such pods unplaced with a MinValues
	// reason.
	MinValuesBestEffort bool
	// ListPrices prices every node at its offering's list price alone, as
	// Karpenter does (PRICE_MODEL=List). By default a node costs what the
	// bill says (NodePrice): the list price, a burstable type's surplus
	// credits for the CPU its pods request above the baseline, and the
	// node's volumes.
	ListPrices bool
	// PlanDynamicResources is IGNORE_DRA_REQUESTS=false. Its zero value is
	// Karpenter's default: a pod with resource claims is not placed and
	// gets a DynamicResources reason naming the setting.
	PlanDynamicResources bool
	// NoExchanges leaves out the last local searches (fill.go, swap.go,
	// repack.go, topup.go and twins.go: exchanges and re-splits of pods
	// between new nodes, within and across zones, and the moves into the
	// room they leave).
	// Consolidation's simulations set it: they replace a few nodes at a
	// time, and the exchanges found a tail of extra commands each saving
	// one small node's price (on the 2,000-node shared cluster, 20
	// commands instead of 14 for the same end cost).
	NoExchanges bool

	// prepared is set by Prepared.Solve: the setup reads what does not
	// change between its solves from it (prepared.go).
	prepared *Prepared
}

// DefaultMaxInstanceTypes is used when Options.MaxInstanceTypes is zero
// (Karpenter's MaxInstanceTypes).
const DefaultMaxInstanceTypes = 600

// Solve places the Snapshot's pending pods on existing capacity and the
// cheapest new NodeClaims it can find, and explains every pod it cannot
// place. It never mutates the Snapshot. The same Snapshot gives the same
// Plan.
func Solve(s *Snapshot, opts Options) (*Plan, error) {
	if opts.MaxInstanceTypes <= 0 {
		opts.MaxInstanceTypes = DefaultMaxInstanceTypes
	}
	best, err := solveWith(s, opts, balancedFill)
	if err != nil {
		return nil, err
	}
	if len(s.Pods) <= portfolioMaxPods {
		// Small inputs are cheap to solve twice: keep whichever of the
		// balanced order and plain first-fit decreasing places more pods,
		// then the cheaper.
		alt, err := solveWith(s, opts, firstFitDecreasing)
		if err != nil {
			return nil, err
		}
		if len(alt.failed) < len(best.failed) || (len(alt.failed) == len(best.failed) && alt.cost() < best.cost()-1e-9) {
			best = alt
		}
	}
	if !opts.NoExchanges {
		best.exchangeAcrossZones()
		best.trade()
	}
	return best.plan(), nil
}

// exchangeAcrossZones runs, on the plan Solve keeps, the exchanges of
// twins (twins.go), which free the pods' zones, the one thing every search
// before kept; fill and topUp then serve the reservoirs those exchanges
// changed, which have room they had not. Their moves in turn leave other
// nodes room for new exchanges of twins, so the round repeats while it
// saves, at most crossRounds times.
func (sv *solver) exchangeAcrossZones() {
	var nodes []*nodeState
	for range crossRounds {
		before := sv.cost()
		changed := sv.exchangeTwins()
		if len(changed) == 0 {
			return
		}
		// The changed nodes as dearestFirst lists them: plan order,
		// then stably the dearest first.
		nodes = nodes[:0]
		for _, n := range sv.newNodes {
			if changed[n] && len(n.pods) > 0 && n.natural >= 0 {
				nodes = append(nodes, n)
			}
		}
		sort.SliceStable(nodes, func(i, j int) bool {
			return nodes[i].pool.price(nodes[i].natural, nodes[i].requests) > nodes[j].pool.price(nodes[j].natural, nodes[j].requests)
		})
		sv.fillAmong(nodes)
		sv.topUpAmong(nodes, true)
		if sv.cost() >= before-1e-9 {
			return
		}
	}
}

// crossRounds bounds exchangeAcrossZones' rounds: on diverse-10000 the
// first saves 20 steps of the 1-vCPU type, the next six 24 in all, the
// eighth none. Three keep most of it for less CPU: diverse-5000 and 10000
// end at 3,563 and 7,145 steps, against 3,558 and 7,132 with eight
// (pkg/scheduling/README.md, "Rounds of exchanges").
const crossRounds = 3

// portfolioMaxPods bounds the inputs solved with both pod orders.
const portfolioMaxPods = 2000

// topUpRounds bounds the extra rounds of fill and topUp after the first:
// on diverse-5000 the first extra round saves 5 steps of the 1-vCPU type,
// the second 4, a third none.
const topUpRounds = 2

type strategy int

const (
	// balancedFill orders unconstrained pods to even out each growing
	// node's cpu:memory mix.
	balancedFill strategy = iota
	// firstFitDecreasing orders every pod largest first.
	firstFitDecreasing
)

func solveWith(s *Snapshot, opts Options, st strategy) (*solver, error) {
	sv, err := newSolver(s, opts)
	if err != nil {
		return nil, err
	}
	sv.strategy = st
	// Zone-keyed and unconstrained pods are placed in balancing order;
	// hostname-keyed ones (which shape the nodes) largest first.
	sv.balanceFrom = 2
	sv.placeAll()
	sv.improve()
	sv.rebalance()
	if !opts.NoExchanges {
		sv.fill()
		sv.swap()
		sv.repack()
		sv.fill()
		sv.topUp()
		// topUp shrinks the reservoirs and fills the small nodes' room,
		// which gives fill exchanges it did not have: alternate the two
		// while a round saves anything, at most topUpRounds more.
		for range topUpRounds {
			before := sv.cost()
			sv.fill()
			sv.topUp()
			if sv.cost() >= before-1e-9 {
				break
			}
		}
	}
	return sv, nil
}

// cost is the sum of the planned nodes' prices on their cheapest types.
func (sv *solver) cost() float64 {
	total := 0.0
	for _, n := range sv.newNodes {
		if len(n.pods) > 0 {
			total += n.pool.price(n.natural, n.requests)
		}
	}
	return total
}

// solver is the mutable state of one Solve call.
type solver struct {
	snap *Snapshot
	opts Options
	ri   *resourceIndex

	zones    []string // interned zone names, sorted
	zoneIdx  map[string]int
	cts      []string // interned capacity types, sorted
	ctIdx    map[string]int
	allZones uint64
	allCTs   uint32

	pools []*poolT

	reqSets   map[string]*reqSet
	reqByID   []*reqSet
	mergeMemo map[[2]int]int // -1 when the merge is empty

	existing []*nodeState
	newNodes []*nodeState
	// lists partitions new nodes for candidate search: lists[0] holds nodes
	// whose zone is still open, lists[1+z] those pinned to zone z.
	lists [][]*nodeState

	classes []*classBase
	groups  []*topoGroup
	groupBy map[string]*topoGroup

	// nsLabels are the labels of the snapshot's namespaces (nil when the
	// snapshot has none, see Snapshot.Namespaces).
	nsLabels map[string]map[string]string

	// deviceDims are the resource dimensions of DRA devices, one per driver.
	deviceDims map[corev1.ResourceName]bool

	pvcs map[string]*corev1.PersistentVolumeClaim
	pvs  map[string]*corev1.PersistentVolume
	scs  map[string]*StorageClass

	hasPreferNoSchedule bool
	daemonCache         *[]daemonT
	failed              []podFailure
	lastGrown           *nodeState
	scratch             resVec
	optScratch          []option // finalize's launch options, reused node to node
	strategy            strategy
	balanceFrom         int // first tier placed in balancing order
	receiverStart       int // rebalance's window over the nodes
	swapStart           int // swap's window over the nodes
	// swap's scratch: a donor's pods and classes before a step, their
	// order, the exchanges made
	swapPods  []*corev1.Pod
	swapCls   []*podClass
	swapOrder []int
	swapDone  []exchange
	sum       resVec // rebalance's scratch sum
	// improve's and rebalance's scratch: a donor's pods and classes
	// before a step, their order, and rebalance's moves
	keptPods   []*corev1.Pod
	keptCls    []*podClass
	keptOrder  []int
	drainMoves []move
	// moveAll's undo: the nodes' marks and where each moved pod was
	moveMarks []nodeMark
	moveAt    []int
	// tries are the local searches' attempts, reused pod to pod (an
	// exchange tries two pods at once)
	tries [2]attempt
	// fill's and topUp's scratch, reused call to call
	filler   filler
	topUpper topUpper
	twins    twinExchanger
	trader   trader
}

func newSolver(s *Snapshot, opts Options) (*solver, error) {
	sv := &solver{
		snap:      s,
		opts:      opts,
		zoneIdx:   map[string]int{},
		ctIdx:     map[string]int{},
		reqSets:   map[string]*reqSet{},
		mergeMemo: map[[2]int]int{},
		groupBy:   map[string]*topoGroup{},
	}
	sv.ri = sv.indexResources()
	sv.usePrepared()
	sv.scratch = make(resVec, len(sv.ri.names))
	sv.indexVolumes()
	if err := sv.internTopologyValues(); err != nil {
		return nil, err
	}
	sv.indexNamespaces()
	if err := sv.buildPools(); err != nil {
		return nil, err
	}
	sv.buildExisting()
	if err := sv.buildClasses(); err != nil {
		return nil, err
	}
	sv.lists = make([][]*nodeState, 1+len(sv.zones))
	return sv, nil
}

// MaxZones and MaxCapacityTypes bound the distinct zones and capacity types
// one Snapshot may mention: the solver handles them as bit masks (uint64,
// uint32, one bit kept spare). A snapshot over them is refused with an
// error naming the limit and the values, never silently cut.
const (
	MaxZones         = 63
	MaxCapacityTypes = 31
)

// internTopologyValues collects every zone and capacity type the snapshot
// mentions so they can be handled as bit masks.
func (sv *solver) internTopologyValues() error {
	zones := map[string]bool{}
	cts := map[string]bool{}
	for _, its := range sv.snap.InstanceTypes {
		for _, it := range its {
			for _, o := range it.Offerings {
				zones[o.Zone] = true
				cts[o.CapacityType] = true
			}
		}
	}
	for _, n := range sv.snap.Nodes {
		if z, ok := n.Labels[corev1.LabelTopologyZone]; ok {
			zones[z] = true
		}
	}
	for z := range zones {
		sv.zones = append(sv.zones, z)
	}
	sort.Strings(sv.zones)
	if len(sv.zones) > MaxZones {
		return fmt.Errorf("the snapshot names %d zones, over the solver's limit of %d: %s", len(sv.zones), MaxZones, strings.Join(sv.zones, ", "))
	}
	for i, z := range sv.zones {
		sv.zoneIdx[z] = i
		sv.allZones |= 1 << i
	}
	for c := range cts {
		sv.cts = append(sv.cts, c)
	}
	sort.Strings(sv.cts)
	if len(sv.cts) > MaxCapacityTypes {
		return fmt.Errorf("the snapshot names %d capacity types, over the solver's limit of %d: %s", len(sv.cts), MaxCapacityTypes, strings.Join(sv.cts, ", "))
	}
	for i, c := range sv.cts {
		sv.ctIdx[c] = i
		sv.allCTs |= 1 << i
	}
	return nil
}

func (sv *solver) zoneMask(c constraint) uint64 {
	var m uint64
	for i, z := range sv.zones {
		if c.allows(z) {
			m |= 1 << i
		}
	}
	return m
}

func (sv *solver) ctMask(c constraint) uint32 {
	var m uint32
	for i, v := range sv.cts {
		if c.allows(v) {
			m |= 1 << i
		}
	}
	return m
}

func (sv *solver) zoneNames(m uint64) []string {
	var out []string
	for i, z := range sv.zones {
		if m&(1<<i) != 0 {
			out = append(out, z)
		}
	}
	return out
}

func (sv *solver) ctNames(m uint32) []string {
	var out []string
	for i, c := range sv.cts {
		if m&(1<<i) != 0 {
			out = append(out, c)
		}
	}
	return out
}

// intern returns the canonical reqSet for b.
func (sv *solver) intern(r *reqSet) *reqSet {
	sig := r.signature()
	if old, ok := sv.reqSets[sig]; ok {
		return old
	}
	r.id = len(sv.reqByID)
	sv.reqByID = append(sv.reqByID, r)
	sv.reqSets[sig] = r
	return r
}

// merge intersects two interned reqSets; nil when some key has no
// possible value left.
func (sv *solver) merge(a, b *reqSet) *reqSet {
	if a == b || len(b.keys) == 0 {
		return a
	}
	if len(a.keys) == 0 {
		return b
	}
	k := [2]int{a.id, b.id}
	if id, ok := sv.mergeMemo[k]; ok {
		if id < 0 {
			return nil
		}
		return sv.reqByID[id]
	}
	bl := a.builder()
	for i, key := range b.keys {
		bl.add(key, b.cons[i])
	}
	for _, c := range bl {
		if c.empty() {
			sv.mergeMemo[k] = -1
			return nil
		}
	}
	r := sv.intern(bl.build())
	sv.mergeMemo[k] = r.id
	return r
}

type pendingPod struct {
	pod   *corev1.Pod
	class *classBase
}

type podFailure struct {
	pod   *corev1.Pod
	class *classBase
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
