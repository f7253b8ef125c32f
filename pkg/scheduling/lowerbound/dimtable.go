package lowerbound

import "math"

// dimTable is the integer knapsack over one dimension alone: best[C] is the
// most value of classes whose sizes in that dimension, in units, add up to
// at most C. Any configuration that fits a node fits its capacity in that
// dimension, so best[cap] bounds the node's configurations. Sizes are
// rounded down to whole units (which only loosens the bound), the first
// anti-affinity group is counted exactly (at most one member), members of
// other groups one each: it is a gridTable of one column, built by the
// same code.
type dimTable struct {
	dim  int
	unit int64
	best []float64
}

// maxTableUnits caps a table's length; coarser units above it.
const maxTableUnits = 16384

func newDimTable(val []float64, req [][]int64, counts []int, groups [][]int, allowed []bool, dim int, maxCap int64) dimTable {
	t := dimTable{dim: dim}
	var g int64
	bound := make([]int, len(req))
	for c, r := range req {
		if !allowed[c] {
			continue
		}
		bound[c] = counts[c]
		if val[c] > 0 && r[dim] > 0 {
			g = gcd(g, r[dim])
		}
	}
	if g == 0 {
		g = 1
	}
	t.unit = max(g, (maxCap+maxTableUnits-1)/maxTableUnits)
	// One dimension is a gridTable of one column: a second unit larger
	// than any size leaves every class free of it.
	t.best = newGridTable(val, req, bound, groups, [2]int{dim, dim}, [2]int64{maxCap, 0}, [2]int64{t.unit, 1 << 62}).best
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
