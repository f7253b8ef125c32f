package lowerbound

import (
	"math"
	"slices"
)

// valueBound is the pricing knapsack turned around, for duals whose
// values are (near) multiples of one step δ, as a converged master's
// often are: f[a][v] is the least memory, in bytes, exactly, of the
// classes that fit a units of CPU (sizes floored, as in gridTable) and are
// worth at least v steps, each class's value rounded up to whole steps.
// A node of capacity (C, M) then holds at most the largest v with
// f[C][v] ≤ M steps. Memory is never rounded, so a node a few MiB short
// of one more pod is seen at any size, which a gridTable in coarser memory
// units cannot; values are rounded up (by at most a step a pod), so the
// bound stays valid whatever the step. The first anti-affinity group is
// decided on top (as in gridBound), other dimensions left out.
type valueBound struct {
	dims [2]int // CPU (indexed), memory (minimised)
	pods int    // the pods dimension, for the rounding's slack
	unit int64  // of dims[0]
	step float64
	rows int
	cols int // value steps + 1
	f    []int64
	oneMember
}

// valueSlack is how far below a whole step a value may fall and still be
// rounded down to it (floating point noise in the duals): each pod's
// value is then at most its steps plus this, which the bound adds back.
const valueSlack = 1e-7

// newValueBound builds the bound at duals pi for the classes allowed
// (bound[c] > 0) over dims, up to value top and the largest of caps it
// reaches within cells; nil when it reaches none.
func newValueBound(pi []float64, req [][]int64, bound []int, groups [][]int, dims [2]int, pods int, caps [][2]int64, top float64, cells int64) *valueBound {
	b := &valueBound{dims: dims, pods: pods, oneMember: oneMember{val: pi, req: req}}
	first := -1
	for c, gs := range groups {
		if bound[c] > 0 && pi[c] > 0 && len(gs) > 0 {
			first = gs[0]
			break
		}
	}
	var items []int
	var sizes []int64
	least := math.Inf(1)
	for c := range req {
		if bound[c] <= 0 || pi[c] <= 0 {
			continue
		}
		if slices.Contains(groups[c], first) {
			b.members = append(b.members, c)
			continue
		}
		items = append(items, c)
		if req[c][dims[0]] > 0 {
			sizes = append(sizes, req[c][dims[0]])
		}
		least = min(least, pi[c])
	}
	if len(items) == 0 {
		return nil
	}
	b.unit = pickUnit(sizes, 0)
	// The step: the least value over k ≤ 8 when every value is a whole
	// number of such steps (to float noise), else an eighth of it.
	b.step = least / 8
	for k := 1.0; k <= 8; k++ {
		if !slices.ContainsFunc(items, func(c int) bool {
			x := pi[c] * k / least
			return math.Abs(x-math.Round(x)) > 1e-6*max(1, x)
		}) {
			b.step = least / k
			break
		}
	}
	if top/b.step >= float64(cells) {
		// A row alone exceeds the cells: no capacity is reached, and on
		// duals a hair above zero (raw, before cleanDuals) the columns
		// would not even fit an int.
		return nil
	}
	b.cols = int(math.Ceil(top/b.step)) + 1
	var maxCPU int64
	for _, c := range caps {
		if (max(maxCPU, c[0])/b.unit+1)*int64(b.cols) <= cells {
			maxCPU = max(maxCPU, c[0])
		}
	}
	if maxCPU == 0 {
		return nil
	}
	b.rows = int(maxCPU/b.unit) + 1
	const inf = math.MaxInt64
	f := make([]int64, b.rows*b.cols)
	for i := range f {
		if i%b.cols != 0 {
			f[i] = inf
		}
	}
	for _, c := range items {
		s0 := int(req[c][dims[0]] / b.unit)
		w := int(math.Ceil(pi[c]/b.step - valueSlack))
		m := req[c][dims[1]]
		if w == 0 {
			continue // worth less than the slack the bound adds back
		}
		n := bound[c]
		if len(groups[c]) > 0 {
			n = 1
		}
		most := math.MaxInt
		if s0 > 0 {
			most = (b.rows - 1) / s0
		}
		if m == 0 && s0 == 0 {
			most = n + 1 // free of both: only its count bounds it
		}
		most = min(most, (b.cols-1+w-1)/w)
		if n >= most {
			b.unbounded(f, s0, w, m)
			continue
		}
		for k := 1; n > 0; k *= 2 {
			take := min(k, n)
			n -= take
			b.add(f, take*s0, take*w, int64(take)*m)
		}
	}
	b.f = f
	return b
}

// add is one 0/1 item: f[a][v] takes f[a−s0][max(0, v−w)] + m where
// less (downwards, so the item is taken once).
func (b *valueBound) add(f []int64, s0, w int, m int64) {
	for a := b.rows - 1; a >= s0; a-- {
		for v := b.cols - 1; v >= 0; v-- {
			src := f[(a-s0)*b.cols+max(0, v-w)]
			if src != math.MaxInt64 && src+m < f[a*b.cols+v] {
				f[a*b.cols+v] = src + m
			}
		}
	}
}

// unbounded is an item taken any number of times (upwards).
func (b *valueBound) unbounded(f []int64, s0, w int, m int64) {
	for a := s0; a < b.rows; a++ {
		for v := 0; v < b.cols; v++ {
			src := f[(a-s0)*b.cols+max(0, v-w)]
			if src != math.MaxInt64 && src+m < f[a*b.cols+v] {
				f[a*b.cols+v] = src + m
			}
		}
	}
}

// steps is the most value, in steps, a node of capacity cap holds, and
// false when the table does not reach it (in CPU, or in value).
func (b *valueBound) steps(cap []int64) (int, bool) {
	a := cap[b.dims[0]] / b.unit
	if a >= int64(b.rows) {
		return 0, false
	}
	row := b.f[int(a)*b.cols : int(a+1)*b.cols]
	mem := cap[b.dims[1]]
	if row[b.cols-1] <= mem {
		return 0, false
	}
	// row is non-decreasing: the first step out of reach, less one.
	v, _ := slices.BinarySearchFunc(row, mem, func(x, m int64) int {
		if x <= m {
			return -1
		}
		return 1
	})
	return v - 1, true
}

// bound is the most value a node of capacity cap can hold; +Inf where the
// table does not reach it.
func (b *valueBound) bound(cap []int64) float64 {
	if b == nil {
		return math.Inf(1)
	}
	one := func(c []int64) float64 {
		v, ok := b.steps(c)
		if !ok {
			return math.Inf(1)
		}
		return b.step * (float64(v) + valueSlack*float64(c[b.pods]/1000))
	}
	return b.best(cap, one)
}
