package scheduling

import (
	"cmp"
	"math/bits"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// exchangeTwins is the last local search, for what every search before it
// leaves alone: a pod's zone. A pod that any zone-keyed topology term
// counts keeps its zone in every other move, since moving it alone would
// change a zone's count; on the shared diverse scenarios that is almost
// every pod, so a zone whose nodes are bound by memory keeps a reservoir
// with whole CPUs idle while the other zones keep memory idle on their
// small nodes. Two pods of the same namespace and labels (twins) are
// selected by the same groups, so exchanging them keeps every count, per
// zone and per node alike, wherever they are: for each reservoir sized by
// one resource while another idles (fillMinPods pods or more, dearest
// first), its pods, heaviest in what it is bound by first, are each
// exchanged for the twin lighter in it by the most on another node of the
// same pool and capacity type, in any zone, that holds the pod in place
// of its twin within its type, while the reservoir holds the twin within
// its own. No node changes type on the way and both pods are checked as
// placements are, so the pass never makes a plan dearer; the reservoir
// drops to the cheapest type that holds what is left. It returns the
// nodes its exchanges changed (fill and topUp then find room there that
// they did not have).
//
// The other node is sought among the twinScan nodes with the most idle
// room in the reservoir's binding resource (the gain cannot exceed it),
// a class that found no twin is not tried again until an exchange is
// made, and a reservoir stops after twinMisses pods in a row found none.
func (sv *solver) exchangeTwins() map[*nodeState]bool {
	// The scratch is the solver's: the pass runs while it saves.
	ex := &sv.twins
	ex.nodes, ex.bind = ex.nodes[:0], ex.bind[:0]
	ex.twins = resize(ex.twins, len(sv.newNodes))
	for _, n := range sv.newNodes {
		if n.natural >= 0 && len(n.pods) > 0 && !n.pool.bursty {
			ex.nodes = append(ex.nodes, n)
			ex.twins[n.idx] = 0
			for _, c := range n.podClasses {
				ex.twins[n.idx] |= twinBit(c)
			}
		}
	}
	budget := twinChecksPerPod * (len(sv.snap.Pods) + 1)
	if ex.changed == nil {
		ex.changed = map[*nodeState]bool{}
	}
	changed := ex.changed
	clear(changed)
	for _, r := range sv.dearestFirst() {
		if budget <= 0 {
			break
		}
		if r.pool.bursty || len(r.pods) < fillMinPods || bits.OnesCount64(r.zones) != 1 {
			continue
		}
		bind, fullest, emptiest := r.binding()
		if bind < 0 || fullest-emptiest < twinImbalance {
			continue
		}
		n, used := sv.exchangeTwinsOf(r, bind, ex, budget, changed)
		budget -= used
		if n > 0 {
			sv.shrink(r)
		}
	}
	return changed
}

// Bounds of exchangeTwins' work: twin comparisons per pending pod in all,
// nodes scanned per reservoir pod, pods in a row without an exchange
// before a reservoir stops, and how much fuller (in share of its type) a
// reservoir's binding resource must be than its emptiest to be served.
const (
	twinChecksPerPod = 400
	twinScan         = 128
	twinMisses       = 64
	twinImbalance    = 0.02
)

// twinExchanger is exchangeTwins' scratch, reused from reservoir to
// reservoir.
type twinExchanger struct {
	nodes []*nodeState // the planned nodes
	// cands ranks the nodes by their idle room in resource bind[i], the
	// most first, once per resource a reservoir is bound by in the pass
	// (cands keeps the rankings of earlier passes for their arrays).
	cands [][]twinCand
	bind  []int
	// changed holds the nodes the pass's exchanges changed.
	changed map[*nodeState]bool
	// twins has, per planned node (by idx), the twinBit of each of its
	// pods: an exchange swaps two pods of one twin, so the bits hold
	// through the pass, and a node without x's bit is not searched.
	twins  []uint64
	pods   []*corev1.Pod
	cls    []*podClass
	order  []int
	failed []*classBase
	moves  [2]podMove
	pair   [2]*nodeState
}

// twinBit is the bit of pods of class c in twinExchanger.twins (twin
// numbers past 63 share bits: the bits only skip nodes).
func twinBit(c *podClass) uint64 { return 1 << (c.base.twin % 64) }

// twinCand is a node and its idle room in what the reservoir is bound by.
type twinCand struct {
	idle int64
	n    *nodeState
}

// ranked is the nodes ranked by their idle room in resource bind (ties in
// plan order), computed once per resource in a pass: exchanges only fill
// the nodes they reach, so a node's rank overstates its room, never less
// (a reservoir that shed is not offered the room it gained).
func (ex *twinExchanger) ranked(bind int, idle func(*nodeState) int64) []twinCand {
	if i := slices.Index(ex.bind, bind); i >= 0 {
		return ex.cands[i]
	}
	k := len(ex.bind)
	if k == len(ex.cands) {
		ex.cands = append(ex.cands, nil)
	}
	cands := ex.cands[k][:0]
	if cap(cands) < len(ex.nodes) {
		cands = make([]twinCand, 0, len(ex.nodes))
	}
	for _, n := range ex.nodes {
		cands = append(cands, twinCand{idle: idle(n), n: n})
	}
	slices.SortFunc(cands, func(a, b twinCand) int {
		if c := cmp.Compare(b.idle, a.idle); c != 0 {
			return c
		}
		return cmp.Compare(a.n.idx, b.n.idx)
	})
	ex.bind = append(ex.bind, bind)
	ex.cands[k] = cands
	return cands
}

// exchangeTwinsOf runs reservoir r's exchanges, r bound by resource bind;
// it returns how many it made and the comparisons it spent.
func (sv *solver) exchangeTwinsOf(r *nodeState, bind int, ex *twinExchanger, budget int, changed map[*nodeState]bool) (int, int) {
	idle := func(n *nodeState) int64 { return n.pool.effAlloc[n.natural][bind] - n.requests[bind] }
	cands := ex.ranked(bind, idle)
	ex.pods, ex.cls, ex.order = heaviestFirst(r, bind, ex.pods, ex.cls, ex.order)
	ex.failed = ex.failed[:0]
	made, used, misses := 0, 0, 0
	for _, i := range ex.order {
		if used >= budget || misses >= twinMisses {
			break
		}
		x, xc := ex.pods[i], ex.cls[i]
		if sv.fixedIn(xc, r.zones, r.cts) || slices.Contains(ex.failed, xc.base) {
			continue
		}
		misses++
		rAlloc := r.pool.effAlloc[r.natural]
		var to *nodeState
		var y *corev1.Pod
		var yc *podClass
		best := int64(0)
		for k, cand := range cands {
			// The gain is bounded by s's idle room in bind: at most what
			// the ranking saw for a node an exchange has filled since.
			if k >= twinScan || cand.idle <= best {
				break
			}
			s := cand.n
			if s == r || s.pool != r.pool || s.cts != r.cts || ex.twins[s.idx]&twinBit(xc) == 0 || idle(s) <= best {
				continue
			}
			sAlloc := s.pool.effAlloc[s.natural]
			for j, p := range s.pods {
				pc := s.podClasses[j]
				if pc.base.twin != xc.base.twin {
					continue
				}
				used++
				gain := xc.base.req[bind] - pc.base.req[bind]
				if gain <= best || !swapFits(r.requests, xc.base.req, pc.base.req, rAlloc) || !swapFits(s.requests, pc.base.req, xc.base.req, sAlloc) || sv.fixedIn(pc, s.zones, s.cts) {
					continue
				}
				to, y, yc, best = s, p, pc, gain
			}
		}
		if to == nil || !sv.exchangeTwinPods(r, x, xc, to, y, yc, ex) {
			ex.failed = append(ex.failed, xc.base)
			continue
		}
		made++
		changed[to], changed[r] = true, true
		misses = 0
		ex.failed = ex.failed[:0]
		sv.shrink(to)
	}
	return made, used
}

// exchangeTwinPods moves x from r to s and its twin y from s to r, both
// checked as placements on nodes that keep their types. The twin goes
// first, into its new zone's count as x leaves it; when that order is
// refused (a spread whose minimum moved while both were off), the other
// is tried.
func (sv *solver) exchangeTwinPods(r *nodeState, x *corev1.Pod, xc *podClass, s *nodeState, y *corev1.Pod, yc *podClass, ex *twinExchanger) bool {
	ex.pair = [2]*nodeState{r, s}
	ex.moves = [2]podMove{
		{pod: y, c: yc, from: s, to: r, anyZone: true},
		{pod: x, c: xc, from: r, to: s, anyZone: true},
	}
	if sv.moveAll(ex.pair[:], ex.moves[:], false, nil) {
		return true
	}
	ex.moves[0], ex.moves[1] = ex.moves[1], ex.moves[0]
	return sv.moveAll(ex.pair[:], ex.moves[:], false, nil)
}

// attemptAnyZone is attemptFrom for a pod exchanged with its twin: its
// zone is free (the exchange keeps every count), its capacity type kept.
func (sv *solver) attemptAnyZone(a *attempt, c *podClass, d *nodeState) *attempt {
	sv.resetAttempt(a, c)
	if c.base.ctRelevant {
		a.ctAllowed &= d.cts
	}
	return a
}

// heaviestFirst copies r's pods and their classes into pods and cls (reused
// scratch) and lists their indices in order, heaviest in resource bind
// first: the order in which the exchanges and topUp try a reservoir's pods.
func heaviestFirst(r *nodeState, bind int, pods []*corev1.Pod, cls []*podClass, order []int) ([]*corev1.Pod, []*podClass, []int) {
	pods = append(pods[:0], r.pods...)
	cls = append(cls[:0], r.podClasses...)
	order = order[:0]
	for i := range pods {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(cls[j].base.req[bind], cls[i].base.req[bind]) })
	return pods, cls, order
}
