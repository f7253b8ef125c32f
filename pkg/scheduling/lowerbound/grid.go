package lowerbound

import (
	"math"
	"slices"
)

// gridTable is the integer knapsack over two dimensions at once: best[i]
// is the most value of classes whose sizes, floored to whole units of each
// dimension, add up to at most (a, b) units, i = a·(cols) + b. Flooring a
// pod's size can only enlarge what fits (Σ n·⌊r/u⌋ ≤ ⌊Σ n·r/u⌋ ≤ ⌊C/u⌋),
// so the table's value at a node's floored capacity bounds every
// configuration of that node from above, whatever the units; other
// dimensions are left out, which only loosens it too. The first
// anti-affinity group is counted exactly (at most one member, a second
// layer of the table) and members of other groups one each. A table of
// one column (a unit above every size in dims[1]) is dimTable's.
type gridTable struct {
	dims [2]int
	unit [2]int64
	rows int // units of dims[0] + 1
	cols int // units of dims[1] + 1
	best []float64
}

// newGridTable builds the table for capacities up to maxCap in dims with
// the given units; bound[c] is the most pods of class c any node it serves
// may take (0: the class is left out).
func newGridTable(val []float64, req [][]int64, bound []int, groups [][]int, dims [2]int, maxCap [2]int64, unit [2]int64) gridTable {
	t := gridTable{dims: dims, unit: unit}
	t.rows = int(maxCap[0]/unit[0]) + 1
	t.cols = int(maxCap[1]/unit[1]) + 1
	n := t.rows * t.cols
	f0 := make([]float64, n)
	first := -1
	for c, gs := range groups {
		if bound[c] > 0 && val[c] > 0 && len(gs) > 0 {
			first = gs[0]
			break
		}
	}
	// The second layer only where there is a first group: gridBound
	// leaves its own first group out, so its tables (up to 4 M cells) have
	// one only where the classes have two groups.
	var f1 []float64
	if first >= 0 {
		f1 = make([]float64, n)
		for i := range f1 {
			f1[i] = math.Inf(-1)
		}
	}
	free := 0.0
	for c, r := range req {
		if bound[c] <= 0 || val[c] <= 0 {
			continue
		}
		s0, s1 := int(r[dims[0]]/unit[0]), int(r[dims[1]]/unit[1])
		b := bound[c]
		member := false
		for _, g := range groups[c] {
			b = 1
			member = member || g == first
		}
		if s0 == 0 && s1 == 0 {
			if member {
				for i := range f1 {
					f1[i] = max(f1[i], f0[i]+val[c])
				}
			} else {
				free += float64(b) * val[c]
			}
			continue
		}
		if member {
			t.add(f1, f0, s0, s1, val[c])
			continue
		}
		// Most that fit the largest node in the floored units: beyond
		// it the bound is no bound, and the item is unbounded.
		most := math.MaxInt
		if s0 > 0 {
			most = min(most, (t.rows-1)/s0)
		}
		if s1 > 0 {
			most = min(most, (t.cols-1)/s1)
		}
		if b >= most {
			t.item(f0, f1, s0, s1, val[c], true)
			continue
		}
		for k := 1; b > 0; k *= 2 {
			take := min(k, b)
			b -= take
			t.item(f0, f1, take*s0, take*s1, float64(take)*val[c], false)
		}
	}
	for i := range f0 {
		if f1 != nil {
			f0[i] = max(f0[i], f1[i])
		}
		f0[i] += free
	}
	t.best = f0
	return t
}

// spans calls fn with each run of consecutive cells an item of size
// (s0, s1) reaches, its first cell and length, the last run first (down)
// or the first run first: each row's cells from column s1 on, or, where
// s1 is 0, every cell from row s0 on at once (a one-dimension table's
// every item: one loop, as fast as a flat table's).
func (t *gridTable) spans(s0, s1 int, down bool, fn func(lo, w int)) {
	if s0 >= t.rows || s1 >= t.cols {
		return
	}
	if s1 == 0 {
		fn(s0*t.cols, (t.rows-s0)*t.cols)
		return
	}
	w := t.cols - s1
	if down {
		for a := t.rows - 1; a >= s0; a-- {
			fn(a*t.cols+s1, w)
		}
		return
	}
	for a := s0; a < t.rows; a++ {
		fn(a*t.cols+s1, w)
	}
}

// add is one 0/1 item of size (s0, s1) and value v: dst[a][b] takes
// src[a−s0][b−s1] + v where larger. dst may be src (the loops run
// downwards so the item is taken once).
func (t *gridTable) add(dst, src []float64, s0, s1 int, v float64) {
	off := s0*t.cols + s1
	t.spans(s0, s1, true, func(lo, w int) {
		d, r := dst[lo:lo+w], src[lo-off:lo-off+w]
		for i := w - 1; i >= 0; i-- {
			d[i] = max(d[i], r[i]+v)
		}
	})
}

// item is an item of size (s0, s1) and value v outside the first group,
// in both layers (f1 nil: the first only) in one pass: taken once (0/1:
// the loops run downwards, so each cell sees the layers without it) or
// any number of times (unbounded: upwards, so each cell sees it already
// taken).
func (t *gridTable) item(f0, f1 []float64, s0, s1 int, v float64, unbounded bool) {
	if f1 == nil && !unbounded {
		t.add(f0, f0, s0, s1, v)
		return
	}
	off := s0*t.cols + s1
	t.spans(s0, s1, !unbounded, func(lo, w int) {
		d0, r0 := f0[lo:lo+w], f0[lo-off:lo-off+w]
		if f1 == nil {
			for i := range d0 {
				d0[i] = max(d0[i], r0[i]+v)
			}
			return
		}
		d1, r1 := f1[lo:lo+w], f1[lo-off:lo-off+w]
		if unbounded {
			for i := range d0 {
				d0[i] = max(d0[i], r0[i]+v)
				d1[i] = max(d1[i], r1[i]+v)
			}
			return
		}
		for i := w - 1; i >= 0; i-- {
			d0[i] = max(d0[i], r0[i]+v)
			d1[i] = max(d1[i], r1[i]+v)
		}
	})
}

// covers reports whether the table reaches a node of capacity cap.
func (t *gridTable) covers(cap []int64) bool {
	return t.reaches([2]int64{cap[t.dims[0]], cap[t.dims[1]]})
}

// reaches reports whether the table reaches capacity c in its two
// dimensions.
func (t *gridTable) reaches(c [2]int64) bool {
	return c[0]/t.unit[0] < int64(t.rows) && c[1]/t.unit[1] < int64(t.cols)
}

// bound is the table's value for a node of capacity cap (covers(cap)).
func (t *gridTable) bound(cap []int64) float64 {
	a, b := cap[t.dims[0]]/t.unit[0], cap[t.dims[1]]/t.unit[1]
	if a < 0 || b < 0 {
		return math.Inf(-1)
	}
	return t.best[int(a)*t.cols+int(b)]
}

// gridLoss is the most the coarser of a gridBounds' two tables may
// shrink a pod's size by flooring it, relative to the size.
const gridLoss = 0.025

// gridBound bounds the best configuration of every offering of one
// signature at one set of duals, up to a capacity: a gridTable over the
// classes of positive value outside the first anti-affinity group, and
// that group decided exactly on top of it (none of its members, or member
// c and the table at the capacity c leaves, subtracted before flooring).
// Keeping the group's members out of the table keeps its units those of
// the other classes' sizes, which on duals that price only some sizes
// (column generation's often do) makes the table exact where a coarser
// unit would let a node hold a pod more.
type gridBound struct {
	t gridTable
	oneMember
}

// newGridBound builds the bound at duals pi for the classes allowed,
// each at most bound[c] a node, over dimensions dims, in units that
// shrink no size by more than loss of it (pickUnit), up to the largest of
// the capacities caps (each [2]int64 in dims) it reaches within cells;
// nil when it reaches none.
func newGridBound(pi []float64, req [][]int64, bound []int, groups [][]int, dims [2]int, caps [][2]int64, cells int64, loss float64) *gridBound {
	b := &gridBound{oneMember: oneMember{val: pi, req: req}}
	first := -1
	for c, gs := range groups {
		if bound[c] > 0 && pi[c] > 0 && len(gs) > 0 {
			first = gs[0]
			break
		}
	}
	rest := slices.Clone(bound)
	var sizes [2][]int64
	for c := range req {
		if bound[c] <= 0 || pi[c] <= 0 {
			continue
		}
		if slices.Contains(groups[c], first) {
			b.members = append(b.members, c)
			rest[c] = 0
			continue
		}
		for i, d := range dims {
			if req[c][d] > 0 {
				sizes[i] = append(sizes[i], req[c][d])
			}
		}
	}
	var unit [2]int64
	for i := range unit {
		unit[i] = pickUnit(sizes[i], loss)
	}
	// The largest capacity the table reaches in those units.
	var maxCap [2]int64
	reach := false
	for _, c := range caps {
		if m := [2]int64{max(maxCap[0], c[0]), max(maxCap[1], c[1])}; (m[0]/unit[0]+1)*(m[1]/unit[1]+1) <= cells {
			maxCap, reach = m, true
		}
	}
	if !reach {
		return nil
	}
	b.t = newGridTable(pi, req, rest, groups, dims, maxCap, unit)
	return b
}

// pickUnit is the coarsest unit that shrinks none of sizes by more than
// loss of it when floored (a unit that divides them all shrinks none):
// among each size's whole fractions, the largest that holds. Zero sizes
// need no unit: 1<<62 then.
func pickUnit(sizes []int64, loss float64) int64 {
	if len(sizes) == 0 {
		return 1 << 62
	}
	var g int64
	for _, r := range sizes {
		g = gcd(g, r)
	}
	holds := func(u int64) bool {
		for _, r := range sizes {
			if float64(r%u) > loss*float64(r) {
				return false
			}
		}
		return true
	}
	best := g
	for _, r := range sizes {
		for k := int64(1); r/k > best; k++ {
			if holds(r / k) {
				best = r / k
				break
			}
		}
	}
	return best
}

// bound is the most value a node of capacity cap (within the table's
// maxCap) can hold; +Inf from no table.
func (b *gridBound) bound(cap []int64) float64 {
	if b == nil || !b.t.covers(cap) {
		return math.Inf(1)
	}
	return b.best(cap, b.t.bound)
}

// oneMember is the first anti-affinity group, which the tables leave out:
// a node holds at most one of its members (classes members, each of value
// val[c] and requests req[c]).
type oneMember struct {
	val     []float64
	req     [][]int64
	members []int
}

// best is the most a node of capacity cap holds, rest bounding what it
// holds besides a member: rest(cap) alone, or a member that fits and rest
// of the capacity it leaves.
func (m oneMember) best(cap []int64, rest func([]int64) float64) float64 {
	best := rest(cap)
	left := make([]int64, len(cap))
	for _, c := range m.members {
		fits := true
		for d := range cap {
			left[d] = cap[d] - m.req[c][d]
			fits = fits && left[d] >= 0
		}
		if fits {
			best = max(best, m.val[c]+rest(left))
		}
	}
	return best
}

// gridBounds are the two-dimension bounds of one signature: gridBounds
// in the sizes' own units (exact where it reaches, which degenerate duals
// need: a node a few MiB short of one more pod) and in units up to
// gridLoss coarser (looser, reaching larger nodes), and a valueBound
// (exact in memory). A node takes the least of those that reach it.
type gridBounds struct {
	exact, lossy *gridBound
	value        *valueBound
}

func newGridBounds(pi []float64, req [][]int64, bound []int, groups [][]int, dims [2]int, pods int, caps [][2]int64, top float64, cells int64) gridBounds {
	out := gridBounds{exact: newGridBound(pi, req, bound, groups, dims, caps, cells, 0)}
	if out.exact == nil || !out.exact.t.reaches(caps[len(caps)-1]) {
		out.lossy = newGridBound(pi, req, bound, groups, dims, caps, cells, gridLoss)
		out.value = newValueBound(pi, req, bound, groups, dims, pods, caps, top, cells)
	}
	return out
}

func (bs gridBounds) bound(cap []int64) float64 {
	return min(bs.exact.bound(cap), bs.lossy.bound(cap), bs.value.bound(cap))
}

// config traces back from the table a configuration worth its bound on a
// node of capacity cap: the member of the first group (or none) the bound
// chose, then, cell by cell, a class whose value and the cell its sizes
// leave account for the cell's value, at most most[c] of each. The table
// floors sizes and leaves dimensions out, so the caller checks that what
// it returns fits; it is how a configuration the search ran out of work
// before finding is still found.
func (b *gridBound) config(cap []int64, most []int) []int {
	n := make([]int, len(most))
	if b == nil || !b.t.covers(cap) {
		return n
	}
	t := &b.t
	rem := slices.Clone(cap)
	best, pick := t.bound(cap), -1
	for _, c := range b.members {
		r := make([]int64, len(cap))
		fits := most[c] > 0
		for d := range cap {
			r[d] = cap[d] - b.req[c][d]
			fits = fits && r[d] >= 0
		}
		if fits && b.val[c]+t.bound(r) > best {
			best, pick, rem = b.val[c]+t.bound(r), c, r
		}
	}
	if pick >= 0 {
		n[pick] = 1
	}
	a, m := int(rem[t.dims[0]]/t.unit[0]), int(rem[t.dims[1]]/t.unit[1])
	member := map[int]bool{}
	for _, c := range b.members {
		member[c] = true
	}
	for a >= 0 && m >= 0 {
		v := t.best[a*t.cols+m]
		if v <= 1e-12 {
			break
		}
		if a > 0 && t.best[(a-1)*t.cols+m] >= v-1e-12 {
			a--
			continue
		}
		if m > 0 && t.best[a*t.cols+m-1] >= v-1e-12 {
			m--
			continue
		}
		took := false
		for c, val := range b.val {
			if val <= 0 || member[c] || n[c] >= most[c] {
				continue
			}
			s0, s1 := int(b.req[c][t.dims[0]]/t.unit[0]), int(b.req[c][t.dims[1]]/t.unit[1])
			if s0+s1 == 0 || s0 > a || s1 > m {
				continue
			}
			if val+t.best[(a-s0)*t.cols+m-s1] >= v-1e-9 {
				n[c]++
				a, m = a-s0, m-s1
				took = true
				break
			}
		}
		if !took {
			break
		}
	}
	return n
}
