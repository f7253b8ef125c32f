package lowerbound

import (
	"math"
	"slices"
	"sort"
)

// knapsack is the pricing problem of the configuration program for one
// node shape: the integer counts n of each pod class that fit the node's
// capacity in every dimension, at most bound[c] of class c and at most
// one member of each anti-affinity group, with the largest Σ val·n.
type knapsack struct {
	val    []float64  // per class
	req    [][]int64  // per class, per dimension
	cap    []int64    // per dimension
	bound  []int      // per class: most pods of it one node may take
	groups [][]int    // per class
	open   []int      // groups with a member the node may take
	tables []dimTable // one-dimension bounds over the node's classes
}

// surrogate folds the dimensions into one (weights w per dimension) and
// orders the classes of positive value by value per folded size, largest
// first. Any w ≥ 0 makes the fractional knapsack over the folded row an
// upper bound on the integer one.
type surrogate struct {
	w     []float64
	size  []float64
	order []int
}

func (k *knapsack) newSurrogate(w []float64) surrogate {
	s := surrogate{w: w, size: make([]float64, len(k.val))}
	eff := make([]float64, len(k.val))
	for c, v := range k.val {
		if v <= 0 || k.bound[c] == 0 {
			continue
		}
		s.size[c] = fold(w, k.req[c])
		if s.size[c] <= 0 {
			eff[c] = math.Inf(1)
		} else {
			eff[c] = v / s.size[c]
		}
		s.order = append(s.order, c)
	}
	sort.SliceStable(s.order, func(i, j int) bool { return eff[s.order[i]] > eff[s.order[j]] })
	return s
}

func fold(w []float64, v []int64) float64 {
	t := 0.0
	for k, x := range v {
		t += w[k] * float64(x)
	}
	return t
}

// fits is how many pods of class c the remaining capacity rem holds, at
// most the class's bound.
func (k *knapsack) fits(c int, rem []int64) int {
	n := k.bound[c]
	for d, r := range k.req[c] {
		if r > 0 {
			n = min(n, int(rem[d]/r))
		}
	}
	return max(n, 0)
}

// upper bounds what any integer completion over the classes order[from:]
// adds in rem, with the groups in used already taken. The first group
// still open is decided exactly (none of its members, or each one that
// fits); the rest is the fractional knapsack over the folded row, each
// class limited by how many of it rem holds in every dimension alone and
// members of other open groups by one each.
func (k *knapsack) upper(s *surrogate, from int, rem []int64, used []bool) float64 {
	return min(k.exact(s, from, rem, used), k.tableBound(rem))
}

// tableBound is the tightest one-dimension table's value in rem.
func (k *knapsack) tableBound(rem []int64) float64 {
	ub := math.Inf(1)
	for i := range k.tables {
		ub = min(ub, k.tables[i].bound(rem))
	}
	return ub
}

func (k *knapsack) exact(s *surrogate, from int, rem []int64, used []bool) float64 {
	g := -1
	for _, og := range k.open {
		if !used[og] {
			g = og
			break
		}
	}
	if g < 0 {
		return k.fractional(s, from, rem, used)
	}
	used[g] = true
	best := k.fractional(s, from, rem, used)
	for _, c := range s.order[from:] {
		if !slices.Contains(k.groups[c], g) {
			continue
		}
		used[g] = false
		blocked := k.blocked(c, used)
		used[g] = true
		if blocked || k.fits(c, rem) == 0 {
			continue
		}
		var marked []int
		for _, og := range k.groups[c] {
			if !used[og] {
				used[og] = true
				marked = append(marked, og)
			}
		}
		for d, r := range k.req[c] {
			rem[d] -= r
		}
		best = max(best, k.val[c]+k.fractional(s, from, rem, used))
		for d, r := range k.req[c] {
			rem[d] += r
		}
		for _, og := range marked {
			used[og] = false
		}
	}
	used[g] = false
	return best
}

// fractional is the fractional knapsack over the folded row.
func (k *knapsack) fractional(s *surrogate, from int, rem []int64, used []bool) float64 {
	room := fold(s.w, rem)
	total := 0.0
	for _, c := range s.order[from:] {
		n := k.fits(c, rem)
		if n == 0 || k.blocked(c, used) {
			continue
		}
		size := s.size[c]
		t := float64(n)
		if size > 0 {
			t = min(t, max(0, room)/size)
			room -= t * size
		}
		total += t * k.val[c]
	}
	return total
}

// blocked reports whether class c belongs to a group that already has its
// member on the node.
func (k *knapsack) blocked(c int, used []bool) bool {
	for _, g := range k.groups[c] {
		if used[g] {
			return true
		}
	}
	return false
}

// bestSurrogate is the folding whose relaxation bounds this knapsack the
// tightest that it finds, and that bound: each dimension alone, and for
// each pair of dimensions a ternary search over their mix (the bound is
// quasi-convex in the mix), every dimension scaled by scale.
func (k *knapsack) bestSurrogate(scale []float64, active []int, used []bool) (surrogate, float64) {
	k.open = k.open[:0]
	seen := map[int]bool{}
	for c, gs := range k.groups {
		if k.bound[c] == 0 || k.val[c] <= 0 {
			continue
		}
		for _, g := range gs {
			if !seen[g] {
				seen[g] = true
				k.open = append(k.open, g)
			}
		}
	}
	var best surrogate
	ub := math.Inf(1)
	try := func(w []float64) float64 {
		s := k.newSurrogate(w)
		u := k.upper(&s, 0, k.cap, used)
		if u < ub {
			best, ub = s, u
		}
		return u
	}
	mix := func(a float64, d1, d2 int) []float64 {
		w := make([]float64, len(scale))
		w[d1] += a * scale[d1]
		w[d2] += (1 - a) * scale[d2]
		return w
	}
	for _, d := range active {
		try(mix(1, d, d))
	}
	for i, d1 := range active {
		for _, d2 := range active[i+1:] {
			lo, hi := 0.0, 1.0
			for range 6 {
				m1, m2 := lo+(hi-lo)/3, hi-(hi-lo)/3
				if try(mix(m1, d1, d2)) <= try(mix(m2, d1, d2)) {
					hi = m2
				} else {
					lo = m1
				}
			}
		}
	}
	if best.w == nil {
		return best, 0
	}
	return best, ub
}

// search is a depth-first branch and bound over the classes in s's order,
// most pods of each first. Subtrees whose bound cannot beat max(incumbent,
// target) are cut; work is limited to budget nodes. It returns the best
// configuration found, its value, and an upper bound on the value of every
// configuration (the incumbent, or the largest bound of a subtree it cut
// for the target or the budget).
func (k *knapsack) search(s *surrogate, target float64, budget int, nGroups int) ([]int, float64, float64) {
	b := &bnb{k: k, s: s, target: target, budget: budget,
		cur: make([]int, len(k.val)), best: make([]int, len(k.val)),
		used: make([]bool, nGroups), rem: append([]int64(nil), k.cap...)}
	b.greedy()
	if len(k.open) == 0 || nGroups == 0 {
		b.dfs(0, 0)
		return b.best, b.bestVal, max(b.bestVal, b.frontier)
	}
	// The first group is decided first: none of its members, or each one
	// that fits, so the bounds below it need not enumerate it.
	g := k.open[0]
	b.used[g] = true
	b.dfs(0, 0)
	for _, c := range s.order {
		if !slices.Contains(k.groups[c], g) || k.fits(c, b.rem) == 0 {
			continue
		}
		b.used[g] = false
		blocked := k.blocked(c, b.used)
		b.used[g] = true
		if blocked {
			continue
		}
		var marked []int
		for _, og := range k.groups[c] {
			if !b.used[og] {
				b.used[og] = true
				marked = append(marked, og)
			}
		}
		for d, r := range k.req[c] {
			b.rem[d] -= r
		}
		b.cur[c] = 1
		b.dfs(0, k.val[c])
		b.cur[c] = 0
		for d, r := range k.req[c] {
			b.rem[d] += r
		}
		for _, og := range marked {
			b.used[og] = false
		}
	}
	return b.best, b.bestVal, max(b.bestVal, b.frontier)
}

type bnb struct {
	k        *knapsack
	s        *surrogate
	target   float64
	budget   int
	cur      []int
	best     []int
	bestVal  float64
	frontier float64
	used     []bool
	rem      []int64
}

// greedy seeds the incumbent: each class in order, as many as fit.
func (b *bnb) greedy() {
	rem := append([]int64(nil), b.k.cap...)
	used := make([]bool, len(b.used))
	n := make([]int, len(b.cur))
	val := 0.0
	for _, c := range b.s.order {
		if b.k.blocked(c, used) {
			continue
		}
		m := b.k.fits(c, rem)
		if m == 0 {
			continue
		}
		n[c] = m
		val += float64(m) * b.k.val[c]
		for d, r := range b.k.req[c] {
			rem[d] -= int64(m) * r
		}
		for _, g := range b.k.groups[c] {
			used[g] = true
		}
	}
	b.best, b.bestVal = n, val
}

func (b *bnb) dfs(from int, val float64) {
	if from == len(b.s.order) {
		if val > b.bestVal {
			b.bestVal = val
			copy(b.best, b.cur)
		}
		return
	}
	ub := val + b.k.upper(b.s, from, b.rem, b.used)
	if ub <= b.bestVal+1e-12 {
		return
	}
	if ub <= b.target || b.budget <= 0 {
		b.frontier = max(b.frontier, ub)
		return
	}
	c := b.s.order[from]
	if b.k.blocked(c, b.used) {
		b.dfs(from+1, val) // decided elsewhere (its group is taken)
		return
	}
	m := b.k.fits(c, b.rem)
	req := b.k.req[c]
	for n := m; n >= 0; n-- {
		if b.budget <= 0 {
			// Out of work: the rest of this subtree is bounded by ub.
			b.frontier = max(b.frontier, ub)
			break
		}
		b.budget--
		b.cur[c] = n
		for d, r := range req {
			b.rem[d] -= int64(n) * r
		}
		if n > 0 {
			for _, g := range b.k.groups[c] {
				b.used[g] = true
			}
		}
		b.dfs(from+1, val+float64(n)*b.k.val[c])
		for d, r := range req {
			b.rem[d] += int64(n) * r
		}
		if n > 0 {
			for _, g := range b.k.groups[c] {
				b.used[g] = false
			}
		}
	}
	b.cur[c] = 0
}
