package lowerbound

import "math"

// dimTable is the integer knapsack over one dimension alone: best[C] is the
// most value of classes whose sizes in that dimension, in units, add up to
// at most C. Any configuration that fits a node fits its capacity in that
// dimension, so best[cap] bounds the node's configurations. Sizes are
// rounded down to whole units (which only loosens the bound), the first
// anti-affinity group is counted exactly (at most one member), members of
// other groups one each.
type dimTable struct {
	dim  int
	unit int64
	best []float64
}

// maxTableUnits caps a table's length; coarser units above it.
const maxTableUnits = 16384

func newDimTable(val []float64, req [][]int64, counts []int, groups [][]int, allowed []bool, dim int, maxCap int64) dimTable {
	t := dimTable{dim: dim, unit: 1}
	var g int64
	for c, r := range req {
		if allowed[c] && val[c] > 0 && r[dim] > 0 {
			g = gcd(g, r[dim])
		}
	}
	if g == 0 {
		g = 1
	}
	t.unit = max(g, (maxCap+maxTableUnits-1)/maxTableUnits)
	n := int(maxCap/t.unit) + 1
	free := 0.0 // classes too small to count in this dimension
	f0 := make([]float64, n)
	f1 := make([]float64, n)
	for i := range f1 {
		f1[i] = math.Inf(-1)
	}
	first := -1
	for c, gs := range groups {
		if allowed[c] && val[c] > 0 && len(gs) > 0 {
			first = gs[0]
			break
		}
	}
	for c, r := range req {
		if !allowed[c] || val[c] <= 0 {
			continue
		}
		size := int(r[dim] / t.unit)
		member := false
		bound := counts[c]
		for _, gg := range groups[c] {
			bound = 1
			member = member || gg == first
		}
		if size == 0 {
			if member {
				// Exactly one member is free of this dimension: it can
				// join any configuration of the other layer.
				for C := range f1 {
					f1[C] = max(f1[C], f0[C]+val[c])
				}
			} else {
				free += float64(bound) * val[c]
			}
			continue
		}
		if member {
			for C := n - 1; C >= size; C-- {
				f1[C] = max(f1[C], f0[C-size]+val[c])
			}
			continue
		}
		// Bounded item: binary splitting into 0/1 items.
		for k := 1; bound > 0; k *= 2 {
			take := min(k, bound)
			bound -= take
			s, v := take*size, float64(take)*val[c]
			if s >= n {
				continue
			}
			for C := n - 1; C >= s; C-- {
				f0[C] = max(f0[C], f0[C-s]+v)
				f1[C] = max(f1[C], f1[C-s]+v)
			}
		}
	}
	t.best = make([]float64, n)
	run := math.Inf(-1)
	for C := range n {
		run = max(run, f0[C], f1[C])
		t.best[C] = run + free
	}
	return t
}

// bound is the table's value for a node with capacity rem in its
// dimension.
func (t *dimTable) bound(rem []int64) float64 {
	C := rem[t.dim] / t.unit
	if C < 0 {
		return math.Inf(-1)
	}
	if C >= int64(len(t.best)) {
		C = int64(len(t.best) - 1)
	}
	return t.best[C]
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
