package scheduling

import (
	"cmp"
	"math/bits"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// topUp is the last local search. The exchanges before it (fill, swap,
// repack) change what the nodes of a zone carry, and leave idle room
// within their types that improve and rebalance, which ran before them,
// never saw: a node of a 1.5-CPU pod on three steps with 0.4 CPU and a GiB
// to spare beside a reservoir sized by memory. For each node that carries
// many pods (fill's reservoirs, fillMinPods or more), dearest first, topUp
// moves its pods, largest in the resource it is bound by first, into that
// room on the other nodes of its zone and capacity type, and lets it drop
// to the cheapest type that holds what is left. No receiver changes type
// and every move is checked as a placement is (hostname terms, zone and
// capacity type kept where the pod's topology counts them), so the pass
// never makes a plan dearer. Each pod is offered to the receivers whose
// room its requests fit, a comparison of vectors; only those are checked.
func (sv *solver) topUp() {
	sv.topUpAmong(sv.dearestFirst())
}

// topUpAmong is topUp with the reservoirs taken from nodes, in their
// order.
func (sv *solver) topUpAmong(nodes []*nodeState) {
	tu := &sv.topUpper
	for _, r := range nodes {
		if r.pool.bursty || len(r.pods) < fillMinPods || bits.OnesCount64(r.zones) != 1 || r.natural < 0 {
			continue
		}
		sv.topUpFrom(r, tu)
	}
}

// topUpper is topUp's scratch, reused from reservoir to reservoir.
type topUpper struct {
	receivers []*nodeState
	pods      []*corev1.Pod
	cls       []*podClass
	order     []int
	moves     [1]podMove
	nodes     [2]*nodeState
	// misfits are the request shapes no receiver had room for: the
	// receivers only fill up, so a pod asking at least as much of every
	// resource finds none either and is not offered again.
	misfits []resVec
}

// misfit reports whether a pod of requests req asks at least as much of
// every resource as a shape no receiver had room for.
func (tu *topUpper) misfit(req resVec) bool {
	for _, m := range tu.misfits {
		if m.fits(req) {
			return true
		}
	}
	return false
}

// topUpFrom moves reservoir r's pods into the room of the other nodes of
// its zone and capacity type, then shrinks r.
func (sv *solver) topUpFrom(r *nodeState, tu *topUpper) {
	bind, _, _ := r.binding()
	if bind < 0 {
		return
	}
	tu.receivers = tu.receivers[:0]
	for _, s := range sv.lists[1+bits.TrailingZeros64(r.zones)] {
		if s == r || s.pool != r.pool || s.zones != r.zones || s.cts != r.cts || s.natural < 0 || len(s.pods) == 0 {
			continue
		}
		tu.receivers = append(tu.receivers, s)
	}
	if len(tu.receivers) == 0 {
		return
	}
	tu.pods = append(tu.pods[:0], r.pods...)
	tu.cls = append(tu.cls[:0], r.podClasses...)
	tu.order = tu.order[:0]
	for i := range tu.pods {
		tu.order = append(tu.order, i)
	}
	slices.SortStableFunc(tu.order, func(i, j int) int { return cmp.Compare(tu.cls[j].base.req[bind], tu.cls[i].base.req[bind]) })
	moved := false
	tu.misfits = tu.misfits[:0]
	for _, i := range tu.order {
		p, c := tu.pods[i], tu.cls[i]
		if sv.fixedIn(c, r.zones, r.cts) || tu.misfit(c.base.req) {
			continue
		}
		room := false
		for _, s := range tu.receivers {
			if !fitsAdd(s.requests, c.base.req, s.pool.effAlloc[s.natural]) {
				continue
			}
			room = true
			tu.moves[0] = podMove{pod: p, c: c, from: r, to: s}
			tu.nodes = [2]*nodeState{r, s}
			if sv.moveAll(tu.nodes[:], tu.moves[:], false, nil) {
				moved = true
				break
			}
		}
		if !room {
			tu.misfits = append(tu.misfits, c.base.req)
		}
	}
	if moved {
		sv.shrink(r)
	}
}
