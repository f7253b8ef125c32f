package scheduling

import (
	"math/bits"

	corev1 "k8s.io/api/core/v1"
)

// topUp is the last local search. The exchanges before it (fill, swap,
// repack) change what the nodes of a zone carry, and leave idle room
// within their types that improve and rebalance, which ran before them,
// never saw: a node of a 1.5-CPU pod on three steps with 0.4 CPU and a GiB
// to spare beside a reservoir sized by memory. For each node that carries
// many pods (fill's reservoirs, fillMinPods or more), dearest first, topUp
// moves its pods, largest in the resource it is bound by first, into that
// room on the other nodes of its zone and capacity type (of every zone,
// after the exchanges of twins: topUpAmong), and lets it drop to the
// cheapest type that holds what is left. No receiver changes type and
// every move is checked as a placement is (hostname terms, zone and
// capacity type kept where the pod's topology counts them), so the pass
// never makes a plan dearer. Each pod is offered to the receivers whose
// room its requests fit, a comparison of vectors; only those are checked.
func (sv *solver) topUp() {
	sv.topUpAmong(sv.dearestFirst(), false)
}

// topUpAmong is topUp with the reservoirs taken from nodes, in their
// order. With anyZone the receivers are the nodes of every zone: a pod
// that only zone spreads count may leave its zone where each spread then
// stays within its maxSkew (zoneSpreadsHold), a pod that no zone-keyed
// term counts wherever the placement allows (exchangeAcrossZones asks
// for this; the passes before keep the zones as the greedy pass chose
// them).
func (sv *solver) topUpAmong(nodes []*nodeState, anyZone bool) {
	tu := &sv.topUpper
	tu.cross = anyZone
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
	cross        bool // receivers of every zone
	least        resVec
	misfits      []resVec
	crossMisfits []resVec // the same, over the receivers of every zone
}

// misfit reports whether a pod of requests req asks at least as much of
// every resource as one of the shapes no receiver had room for.
func misfit(misfits []resVec, req resVec) bool {
	for _, m := range misfits {
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
	// The least r's pods ask of each resource: a node without that much
	// room in some resource takes none of them, and is left out.
	tu.least = append(tu.least[:0], r.requests...)
	for _, c := range r.podClasses {
		for i, q := range c.base.req {
			tu.least[i] = min(tu.least[i], q)
		}
	}
	tu.receivers = tu.receivers[:0]
	for _, s := range sv.lists[1+bits.TrailingZeros64(r.zones)] {
		if s == r || s.pool != r.pool || s.zones != r.zones || s.cts != r.cts || s.natural < 0 || len(s.pods) == 0 || !fitsAdd(s.requests, tu.least, s.pool.effAlloc[s.natural]) {
			continue
		}
		tu.receivers = append(tu.receivers, s)
	}
	local := len(tu.receivers)
	for z := range sv.zones {
		if r.zones == 1<<z || !tu.cross {
			continue
		}
		for _, s := range sv.lists[1+z] {
			if s.pool != r.pool || s.zones != 1<<z || s.cts != r.cts || s.natural < 0 || len(s.pods) == 0 || !fitsAdd(s.requests, tu.least, s.pool.effAlloc[s.natural]) {
				continue
			}
			tu.receivers = append(tu.receivers, s)
		}
	}
	if len(tu.receivers) == 0 {
		return
	}
	tu.pods, tu.cls, tu.order = heaviestFirst(r, bind, tu.pods, tu.cls, tu.order)
	moved := false
	tu.misfits, tu.crossMisfits = tu.misfits[:0], tu.crossMisfits[:0]
	var cur *podClass
	spreadsHold := func() bool { return sv.zoneSpreadsHold(cur) }
	for _, i := range tu.order {
		p, c := tu.pods[i], tu.cls[i]
		if sv.fixedIn(c, r.zones, r.cts) {
			continue
		}
		receivers, misfits := tu.receivers[:local], &tu.misfits
		var zones uint64 // the other zones the pod may go to
		if len(tu.receivers) > local && sv.crossesZones(c) {
			receivers, misfits = tu.receivers, &tu.crossMisfits
			for z := range sv.zones {
				if r.zones != 1<<z && sv.zoneSpreadsAllow(c, bits.TrailingZeros64(r.zones), z) {
					zones |= 1 << z
				}
			}
		}
		if misfit(*misfits, c.base.req) {
			continue
		}
		room := false
		for _, s := range receivers {
			if !fitsAdd(s.requests, c.base.req, s.pool.effAlloc[s.natural]) {
				continue
			}
			room = true
			if s.zones != r.zones && s.zones&zones == 0 {
				continue
			}
			tu.moves[0] = podMove{pod: p, c: c, from: r, to: s}
			var accept func() bool
			if s.zones != r.zones {
				tu.moves[0].anyZone = true
				cur, accept = c, spreadsHold
			}
			tu.nodes = [2]*nodeState{r, s}
			if sv.moveAll(tu.nodes[:], tu.moves[:], false, accept) {
				moved = true
				break
			}
		}
		if !room {
			*misfits = append(*misfits, c.base.req)
			if len(receivers) > local {
				tu.misfits = append(tu.misfits, c.base.req)
			}
		}
	}
	if moved {
		sv.shrink(r)
	}
}

// crossesZones reports whether a pod of class c may leave its zone in
// topUp: every zone-keyed term that counts it is a spread, which
// zoneSpreadsHold checks after the move (its own terms are checked as a
// placement is).
func (sv *solver) crossesZones(c *podClass) bool {
	for _, g := range c.base.selectedBy {
		if g.key == corev1.LabelTopologyZone && g.kind != kindSpread {
			return false
		}
	}
	return true
}

// zoneSpreadsAllow reports whether zoneSpreadsHold would hold once a pod
// of class c left zone from for zone to (by their indices).
func (sv *solver) zoneSpreadsAllow(c *podClass, from, to int) bool {
	fz, tz := sv.zones[from], sv.zones[to]
	for _, g := range c.base.selectedBy {
		if g.key != corev1.LabelTopologyZone {
			continue
		}
		_, had := g.counts[tz]
		g.counts[fz]--
		g.counts[tz]++
		m := sv.spreadMin(g)
		ok := true
		for _, d := range sv.spreadUniverse(g) {
			if g.counts[d]-m > int(g.maxSkew) {
				ok = false
				break
			}
		}
		g.counts[fz]++
		g.counts[tz]--
		if !had {
			delete(g.counts, tz) // as it was
		}
		if !ok {
			return false
		}
	}
	return true
}

// zoneSpreadsHold reports whether every zone spread that counts pods of
// class c keeps each domain within its maxSkew of the least loaded.
func (sv *solver) zoneSpreadsHold(c *podClass) bool {
	for _, g := range c.base.selectedBy {
		if g.key != corev1.LabelTopologyZone {
			continue
		}
		m := sv.spreadMin(g)
		for _, d := range sv.spreadUniverse(g) {
			if g.counts[d]-m > int(g.maxSkew) {
				return false
			}
		}
	}
	return true
}
