package scheduling

import (
	"cmp"
	"math/bits"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// fill mends what the greedy pass leaves on the nodes that take the rest
// of a zone's pods (the reservoirs): such a node is sized by one resource
// (memory, say) while whole steps of the other (CPU) idle, because the
// small nodes beside it filled their CPU and left their memory idle in
// pieces too small for any single pod to move. No move or one-for-one
// exchange closes that, but a per-node knapsack does: for each other node
// of its zone, fill takes off it at most one pod heavy in the resource the
// reservoir idles and packs the room it frees, plus the node's own idle
// room, with the combination of the reservoir's pods (by request shape)
// that carries the most of the resource the reservoir is bound by. The
// small node keeps its type, the reservoir never grows, and pods keep
// their zone and capacity type and are checked as placements are, so no
// step makes the plan dearer; the reservoir drops a type each time enough
// has left. A balanced reservoir gains as well: what it is bound by
// alternates as it sheds, and the small nodes' idle room (rounding to
// whole types, most of it) fills with its pods, so any node of a few pods
// serves. The work is bounded by knapsack steps proportional to the pods,
// and a reservoir stops after a run of small nodes that took nothing.
// Solve runs it a second time after repack, whose re-splits leave new
// idle room beside the reservoirs.
func (sv *solver) fill() {
	sv.fillAmong(sv.dearestFirst())
}

// fillAmong is fill with the reservoirs taken from nodes, in their order.
func (sv *solver) fillAmong(nodes []*nodeState) {
	if len(sv.newNodes) < 2 {
		return
	}
	budget := fillStepsPerPod * (len(sv.snap.Pods) + 1)
	// The scratch is the solver's: fill runs up to five times a solve.
	fs := &sv.filler
	fs.epoch++ // the passes since the last changed the nodes
	fs.giverIdx = fs.giverIdx[:0]
	for _, r := range nodes {
		if budget <= 0 {
			return
		}
		p := r.pool
		if p.bursty || len(r.pods) < fillMinPods || bits.OnesCount64(r.zones) != 1 || r.natural < 0 {
			continue
		}
		if fs.units == nil || fs.pool != p {
			fs.pool, fs.units = p, p.unitPrices()
			fs.epoch++ // givers depend on the units
			fs.giverIdx = fs.giverIdx[:0]
		}
		if len(fs.units) <= resMemory || fs.units[resCPU] == 0 || fs.units[resMemory] == 0 {
			continue
		}
		budget -= sv.fillFrom(r, fs, budget)
	}
}

// Bounds of fill's work: knapsack steps per pending pod in all, the fewest
// pods a node needs to serve as the others' reservoir, the most of its
// pods one small node takes in one exchange, and how many small nodes in a
// row may take nothing before a reservoir stops.
const (
	fillStepsPerPod = 60
	fillMinPods     = 6
	fillMaxTake     = 4
	fillMisses      = 64
)

// filler is fill's scratch, reused from node to node.
type filler struct {
	pool   *poolT
	units  []float64
	shapes []*fillShape
	spare  []*fillShape // shapes of earlier reservoirs, for reuse
	take   []int        // per shape, how many the current combination takes
	best   []int
	bestB  int64
	room   resVec
	// fillFrom's and fillPlan's scratch.
	receivers []*nodeState
	rank      []fillRank // order's heap
	// given, giverIdx and epoch are givers' memory, per node by its idx
	// (giverIdx holds the indices, emptied with each new epoch).
	given    []fillGivers
	giverIdx []int32
	epoch    uint32
	// hostOK holds, per class (by its base's idx), whether r's hostname
	// terms admit its pods, valid while its epoch is hostEpoch.
	hostOK    []fillJoin
	hostEpoch uint32
	seen      []resVec
	bestTake  []int
	moves     []podMove
	steps     int
	max       int
	b         int
}

// fillShape is one request shape among a reservoir's movable pods.
type fillShape struct {
	req  resVec
	pods []*corev1.Pod
	cls  []*podClass
}

// bound is the resource n's requests cost the most of at the pool's best
// unit prices (the one its type is sized by), and the other.
func (fs *filler) bound(n *nodeState) (b, a int) {
	if fs.units[resCPU]*float64(n.requests[resCPU]) >= fs.units[resMemory]*float64(n.requests[resMemory]) {
		return resCPU, resMemory
	}
	return resMemory, resCPU
}

// fillFrom runs the exchanges between reservoir r and the other nodes of
// its zone and capacity type, those with the most idle room in what r is
// bound by first, until the budget is spent or fillMisses nodes in a row
// took nothing. It returns the steps used.
func (sv *solver) fillFrom(r *nodeState, fs *filler, budget int) int {
	b, a := fs.bound(r)
	list := sv.lists[1+bits.TrailingZeros64(r.zones)]
	receivers := fs.receivers[:0]
	for _, s := range list {
		if s == r || s.pool != r.pool || s.zones != r.zones || s.cts != r.cts || s.natural < 0 || len(s.pods) == 0 {
			continue
		}
		if sv.merge(s.reqs, r.reqs) == nil {
			continue
		}
		receivers = append(receivers, s)
	}
	fs.receivers = receivers
	fs.hostEpoch++
	fs.order(receivers, b)
	fs.inventory(sv, r, b)
	used, misses := 0, 0
	for used < budget && misses < fillMisses {
		k, ok := fs.next()
		if !ok {
			break
		}
		s := receivers[k]
		misses++
		if nb, na := fs.bound(r); nb != b {
			b, a = nb, na
			fs.inventory(sv, r, b)
		}
		steps, x, xc := sv.fillPlan(r, s, b, a, fs, budget-used)
		used += steps + 1
		if fs.bestB <= 0 {
			continue
		}
		if sv.fillApply(r, s, x, xc, fs) {
			fs.forget(r)
			fs.forget(s)
			fs.hostEpoch++
			misses = 0
			sv.shrink(r)
		}
	}
	return used
}

// order ranks the receivers by their idle room in resource b, the most
// first (ties in list order), for next to hand out. A reservoir usually
// stops after a short prefix of the ranking (fillMisses in a row that
// took nothing), so the ranking is a heap popped as far as it is read
// rather than a sort of the zone's every node.
func (fs *filler) order(receivers []*nodeState, b int) {
	fs.rank = fs.rank[:0]
	for k, s := range receivers {
		fs.rank = append(fs.rank, fillRank{idle: s.pool.effAlloc[s.natural][b] - s.requests[b], k: k})
	}
	for i := len(fs.rank)/2 - 1; i >= 0; i-- {
		fs.down(i)
	}
}

// joins is hostnameOK(c, r) for reservoir r, kept per class while r
// changes only by the exchanges fillFrom makes (it forgets at each).
func (fs *filler) joins(sv *solver, c *podClass, r *nodeState) verdict {
	i := c.base.idx
	if i >= len(fs.hostOK) {
		fs.hostOK = append(fs.hostOK, make([]fillJoin, len(sv.classes)-len(fs.hostOK))...)
	}
	j := &fs.hostOK[i]
	if j.epoch == fs.hostEpoch && j.c == c {
		return j.v
	}
	*j = fillJoin{c: c, v: sv.hostnameOK(c, r), epoch: fs.hostEpoch}
	return j.v
}

// fillJoin is joins' memory of one class.
type fillJoin struct {
	c     *podClass
	v     verdict
	epoch uint32
}

// fillRank is a receiver in order's heap: its index and its idle room.
type fillRank struct {
	idle int64
	k    int
}

// next pops the receiver with the most idle room left in the ranking.
func (fs *filler) next() (int, bool) {
	n := len(fs.rank)
	if n == 0 {
		return 0, false
	}
	k := fs.rank[0].k
	fs.rank[0] = fs.rank[n-1]
	fs.rank = fs.rank[:n-1]
	fs.down(0)
	return k, true
}

// before orders the heap: more idle room first, then list order.
func (fs *filler) before(i, j int) bool {
	a, b := &fs.rank[i], &fs.rank[j]
	if a.idle != b.idle {
		return a.idle > b.idle
	}
	return a.k < b.k
}

func (fs *filler) down(i int) {
	n := len(fs.rank)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && fs.before(r, l) {
			m = r
		}
		if !fs.before(m, i) {
			return
		}
		fs.rank[i], fs.rank[m] = fs.rank[m], fs.rank[i]
		i = m
	}
}

// inventory groups reservoir r's movable pods by request shape, heaviest
// in its binding resource b first.
func (fs *filler) inventory(sv *solver, r *nodeState, b int) {
	fs.b = b
	fs.spare = append(fs.spare, fs.shapes...)
	fs.shapes = fs.shapes[:0]
	for i, p := range r.pods {
		c := r.podClasses[i]
		if sv.fixedIn(c, r.zones, r.cts) {
			continue
		}
		// A reservoir has a few dozen shapes: a scan finds a pod's.
		k := slices.IndexFunc(fs.shapes, func(sh *fillShape) bool { return slices.Equal(sh.req, c.base.req) })
		var sh *fillShape
		if k >= 0 {
			sh = fs.shapes[k]
		} else {
			if n := len(fs.spare); n > 0 {
				sh, fs.spare = fs.spare[n-1], fs.spare[:n-1]
				sh.req, sh.pods, sh.cls = c.base.req, sh.pods[:0], sh.cls[:0]
			} else {
				sh = &fillShape{req: c.base.req}
			}
			fs.shapes = append(fs.shapes, sh)
		}
		sh.pods = append(sh.pods, p)
		sh.cls = append(sh.cls, c)
	}
	// Shapes heaviest in b first, so the search finds large takes early.
	slices.SortStableFunc(fs.shapes, func(x, y *fillShape) int { return cmp.Compare(y.req[b], x.req[b]) })
}

// fillPlan chooses, for small node s, the pod (if any) it gives reservoir
// r and the shapes of r's pods it takes in return: the most of r's binding
// resource b that fits the room s would have, r staying within its type.
// The chosen take is left in fs.best (fs.bestB its amount of b net of the
// pod given, 0 for none).
func (sv *solver) fillPlan(r, s *nodeState, b, a int, fs *filler, budget int) (int, *corev1.Pod, *podClass) {
	p := s.pool
	fs.bestB = 0
	fs.steps, fs.max = 0, budget
	fs.take = resize(fs.take, len(fs.shapes))
	fs.best = resize(fs.best, len(fs.shapes))
	if len(fs.room) != len(s.requests) {
		fs.room = make(resVec, len(s.requests))
	}
	rAlloc := r.pool.effAlloc[r.natural]
	var bestX *corev1.Pod
	var bestXC *podClass
	bestTake := fs.bestTake[:0]
	bestGain := int64(0)
	try := func(x *corev1.Pod, xc *podClass) {
		var xr resVec
		if xc != nil {
			xr = xc.base.req
		}
		for i := range fs.room {
			fs.room[i] = p.effAlloc[s.natural][i] - s.requests[i]
			if xr != nil {
				fs.room[i] += xr[i]
			}
		}
		fs.bestB = 0
		clear(fs.take)
		fs.search(0, 0, 0)
		if fs.bestB == 0 {
			return
		}
		gain := fs.bestB
		if xr != nil {
			gain -= xr[b]
			// r within its type once the take has left and x arrived.
			for i := range rAlloc {
				t := int64(0)
				for k, sh := range fs.shapes {
					t += int64(fs.best[k]) * sh.req[i]
				}
				if r.requests[i]-t+xr[i] > rAlloc[i] {
					return
				}
			}
			// And still bound by b, not turned into an a-bound node.
			ta, tb := int64(0), int64(0)
			for k, sh := range fs.shapes {
				ta += int64(fs.best[k]) * sh.req[a]
				tb += int64(fs.best[k]) * sh.req[b]
			}
			if fs.units[a]*float64(r.requests[a]-ta+xr[a]) > fs.units[b]*float64(r.requests[b]-tb+xr[b]) {
				return
			}
		}
		if gain > bestGain {
			bestGain, bestX, bestXC = gain, x, xc
			bestTake = append(bestTake[:0], fs.best...)
		}
	}
	try(nil, nil)
	fs.seen = fs.seen[:0]
	for _, i := range fs.givers(sv, s, b, a) {
		x, xc := s.pods[i], s.podClasses[i]
		if slices.ContainsFunc(fs.seen, func(v resVec) bool { return slices.Equal(v, xc.base.req) }) {
			continue
		}
		if fs.joins(sv, xc, r) != fits {
			continue // r's hostname terms turn it away; another pod of its shape may do
		}
		fs.seen = append(fs.seen, xc.base.req)
		try(x, xc)
	}
	if bestGain <= 0 {
		fs.bestB = 0
		return fs.steps, nil, nil
	}
	fs.bestTake = bestTake
	copy(fs.best, bestTake)
	fs.bestB = bestGain
	return fs.steps, bestX, bestXC
}

// givers are the indices of small node s's pods that may go to a
// reservoir bound by b: heavier in a than in b at the pool's unit prices,
// and free to move. They are kept per node and resource until fill
// changes the node (forget) or the pass ends: a reservoir reads dozens of
// nodes, and a node is read by many reservoirs.
func (fs *filler) givers(sv *solver, s *nodeState, b, a int) []int32 {
	k := 0
	if a == resMemory {
		k = 1
	}
	if s.idx >= len(fs.given) {
		given := make([]fillGivers, max(s.idx+1, len(sv.newNodes)))
		copy(given, fs.given)
		fs.given = given
	}
	if fs.giverIdx == nil {
		fs.giverIdx = make([]int32, 0, len(sv.snap.Pods))
	}
	g := &fs.given[s.idx]
	if g.epoch[k] == fs.epoch {
		return fs.giverIdx[g.from[k]:g.to[k]]
	}
	g.from[k] = int32(len(fs.giverIdx))
	for i := range s.pods {
		xc := s.podClasses[i]
		if fs.units[a]*float64(xc.base.req[a]) <= fs.units[b]*float64(xc.base.req[b]) || sv.fixedIn(xc, s.zones, s.cts) {
			continue
		}
		fs.giverIdx = append(fs.giverIdx, int32(i))
	}
	g.to[k] = int32(len(fs.giverIdx))
	g.epoch[k] = fs.epoch
	return fs.giverIdx[g.from[k]:g.to[k]]
}

// forget drops what givers keeps of node n, whose pods changed.
func (fs *filler) forget(n *nodeState) {
	if n.idx < len(fs.given) {
		fs.given[n.idx].epoch = [2]uint32{}
	}
}

// fillGivers is what givers keeps of one node: per resource a reservoir
// idles (cpu, memory), where its givers' indices lie in the filler's
// giverIdx, valid while epoch is the filler's.
type fillGivers struct {
	epoch    [2]uint32
	from, to [2]int32
}

// search is a depth-first search over the shapes (with repetition, at
// most fillMaxTake pods) for the take with the most of resource fs.b that
// fits fs.room.
func (fs *filler) search(from, depth int, got int64) {
	fs.steps++
	if got > fs.bestB {
		fs.bestB = got
		copy(fs.best, fs.take)
	}
	if depth == fillMaxTake || fs.steps >= fs.max {
		return
	}
	for k := from; k < len(fs.shapes); k++ {
		sh := fs.shapes[k]
		if fs.take[k] >= len(sh.pods) || !sh.req.fits(fs.room) {
			continue
		}
		// Shapes come heaviest in b first: no deeper take beats the best
		// when even filling the room's b could not.
		if got+fs.room[fs.b] <= fs.bestB {
			return
		}
		for i := range fs.room {
			fs.room[i] -= sh.req[i]
		}
		fs.take[k]++
		fs.search(k, depth+1, got+sh.req[fs.b])
		fs.take[k]--
		for i := range fs.room {
			fs.room[i] += sh.req[i]
		}
		if fs.steps >= fs.max {
			return
		}
	}
}

// fillApply makes the exchange fillPlan chose: pod x (if any) from s to r
// and the take from r to s, each pod checked as a placement on a node that
// keeps its type; undone when any is refused. It reports whether it was
// made.
func (sv *solver) fillApply(r, s *nodeState, x *corev1.Pod, xc *podClass, fs *filler) bool {
	moves := fs.moves[:0]
	defer func() { fs.moves = moves[:0] }()
	if x != nil {
		moves = append(moves, podMove{pod: x, c: xc, from: s, to: r})
	}
	// Per shape, the pods whose class s's hostname terms admit now (the
	// moves are checked in full below), from the end of its list.
	var picked [fillMaxTake][2]int
	np := 0
	for k, sh := range fs.shapes {
		need := fs.best[k]
		for i := len(sh.pods) - 1; i >= 0 && need > 0; i-- {
			if sv.hostnameOK(sh.cls[i], s) != fits {
				continue
			}
			moves = append(moves, podMove{pod: sh.pods[i], c: sh.cls[i], from: r, to: s})
			picked[np] = [2]int{k, i}
			np++
			need--
		}
		if need > 0 {
			return false
		}
	}
	// Pods go to s before x goes to r: s needs x's room first, r has room
	// for x only once the take has left.
	slices.Reverse(moves)
	if !sv.moveAll([]*nodeState{r, s}, moves, false, nil) {
		return false
	}
	// Picked from the end of each list, so later indices go first.
	for _, ki := range picked[:np] {
		sh := fs.shapes[ki[0]]
		sh.pods = slices.Delete(sh.pods, ki[1], ki[1]+1)
		sh.cls = slices.Delete(sh.cls, ki[1], ki[1]+1)
	}
	return true
}
