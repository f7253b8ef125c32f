package lowerbound

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGridBound holds the two-dimension bound to the enumerated optimum
// on random two-dimension knapsacks: never below it, whatever the units
// (sizes floored; the test fails if they are rounded any other way), and
// equal to it in the units newGridBound picks when the table is small
// enough to need no coarsening (the sizes' greatest common divisors).
func TestGridBound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 33))
	exact := 0
	for i := range 600 {
		classes := 1 + r.IntN(6)
		k := knapsack{cap: []int64{int64(10 + r.IntN(60)), int64(10 + r.IntN(60))}}
		nGroups := r.IntN(3)
		for range classes {
			req := []int64{int64(r.IntN(12)), int64(r.IntN(12))}
			if req[0]+req[1] == 0 {
				req[r.IntN(2)] = 1 + int64(r.IntN(11))
			}
			addRandomClass(r, &k, req, math.Round(r.Float64()*100)/10-1, 6, nGroups)
		}
		want := bruteKnapsack(&k)
		maxCap := [2]int64{k.cap[0] + int64(r.IntN(20)), k.cap[1] + int64(r.IntN(20))}
		dims := [2]int{0, 1}
		gb := newGridBound(k.val, k.req, k.bound, k.groups, dims, [][2]int64{maxCap}, 1<<20, 0)
		got := gb.bound(k.cap)
		if got < want-1e-9 {
			t.Fatalf("case %d: grid bound %v below the optimum %v (%+v)", i, got, want, k)
		}
		// One group at most: the table and the members on it are exact.
		if nGroups <= 1 && math.Abs(got-want) > 1e-9 {
			t.Fatalf("case %d: grid bound %v, optimum %v in exact units %v (%+v)", i, got, want, gb.t.unit, k)
		}
		if nGroups <= 1 {
			exact++
		}
		if lossy := newGridBound(k.val, k.req, k.bound, k.groups, dims, [][2]int64{maxCap}, 1<<20, r.Float64()/2); lossy.bound(k.cap) < want-1e-9 {
			t.Fatalf("case %d: grid bound in units %v %v, below the optimum %v (%+v)", i, lossy.t.unit, lossy.bound(k.cap), want, k)
		}
		for range 3 {
			unit := [2]int64{1 + int64(r.IntN(7)), 1 + int64(r.IntN(7))}
			gt := newGridTable(k.val, k.req, k.bound, k.groups, dims, maxCap, unit)
			if tb := gt.bound(k.cap); tb < want-1e-9 {
				t.Fatalf("case %d: table in units %v bounds %v, below the optimum %v (%+v)", i, unit, tb, want, k)
			}
		}
	}
	if exact < 100 {
		t.Fatalf("only %d cases checked for exactness", exact)
	}
}

// TestGridBoundByHand: a node 10 MiB short of a whole number of 2 GiB pods
// (as every node of the shared scenarios' catalog is, by its kubelet's
// reservation) holds one pod fewer than its memory's gibibytes say; in
// units of the pods' own size the table sees it, and the anti-affinity
// member, decided on top of the table, does not blur it.
func TestGridBoundByHand(t *testing.T) {
	const mi = 1 << 20
	req := [][]int64{
		{500, 2048 * mi},  // worth 1
		{250, 4096 * mi},  // worth 2
		{100, 100 * mi},   // anti-affinity member, worth 1
		{1500, 2048 * mi}, // anti-affinity member, worth 2
	}
	val := []float64{1, 2, 1, 2}
	groups := [][]int{nil, nil, {0}, {0}}
	bound := []int{20, 20, 5, 5}
	for _, tc := range []struct {
		name string
		cap  []int64
		want float64
	}{
		// 18422 MiB: eight 2 GiB pods' worth (8), plus the 100 MiB member.
		{"nine vCPU", []int64{8900, 18422 * mi}, 9},
		// 2038 MiB: no 2 GiB pod, only the small member.
		{"one vCPU", []int64{900, 2038 * mi}, 1},
		// 4086 MiB: one 2 GiB pod and the small member (1 + 1), or the
		// large member alone (2).
		{"two vCPU", []int64{1900, 4086 * mi}, 2},
		// CPU binds: 1400m holds five 250m pods of 4 GiB (10) and the
		// 100m member (1); memory would hold nine.
		{"CPU short", []int64{1400, 40950 * mi}, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := knapsack{val: val, req: req, cap: tc.cap, bound: bound, groups: groups}
			if brute := bruteKnapsack(&k); brute != tc.want {
				t.Fatalf("enumerated optimum %v, worked out %v", brute, tc.want)
			}
			gb := newGridBound(val, req, bound, groups, [2]int{0, 1}, [][2]int64{{40000, 81910 * mi}}, 1<<22, 0)
			if got := gb.bound(tc.cap); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("grid bound %v, want %v (units %v)", got, tc.want, gb.t.unit)
			}
		})
	}
}

// TestValueBound holds the value-indexed bound to the enumerated optimum
// on random knapsacks over CPU, memory and pod slots: never below it,
// whether the values are whole steps or not, and equal to it when they
// are and at most one anti-affinity group is in play. It also holds the
// exact table's traced configuration to the optimum: it fits the node
// and is worth the optimum in most cases (the trace is a heuristic where
// the classes' counts bind, and the caller checks what it returns).
func TestValueBound(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 33))
	exact, traced, tracedOK := 0, 0, 0
	for i := range 600 {
		classes := 1 + r.IntN(6)
		k := knapsack{cap: []int64{int64(10 + r.IntN(60)), int64(10 + r.IntN(60)), 1000 * int64(10+r.IntN(40))}}
		nGroups := r.IntN(3)
		nice := r.IntN(2) == 0
		for range classes {
			req := []int64{int64(1 + r.IntN(11)), int64(r.IntN(12)), 1000}
			v := math.Round(r.Float64()*100)/10 - 1
			if nice {
				v = 0.3 * float64(r.IntN(7)-1)
			}
			addRandomClass(r, &k, req, v, 6, nGroups)
		}
		want := bruteKnapsack(&k)
		caps := [][2]int64{{k.cap[0], k.cap[1]}, {k.cap[0] + int64(r.IntN(20)), k.cap[1] + int64(r.IntN(20))}}
		vb := newValueBound(k.val, k.req, k.bound, k.groups, [2]int{0, 1}, 2, caps, 40, 1<<20)
		got := vb.bound(k.cap)
		if got < want-1e-9 {
			t.Fatalf("case %d: value bound %v below the optimum %v (%+v)", i, got, want, k)
		}
		// The pod slots are left out: exact only where they do not bind.
		slots := slices.Max(k.bound) * classes
		if nice && nGroups <= 1 && int64(slots)*1000 <= k.cap[2] && !math.IsInf(got, 1) {
			exact++
			if math.Abs(got-want) > 1e-5*max(1, want) { // the rounding's slack
				t.Fatalf("case %d: value bound %v, optimum %v in steps of %v (%+v)", i, got, want, vb.step, k)
			}
		}
		gb := newGridBound(k.val, k.req, k.bound, k.groups, [2]int{0, 1}, caps, 1<<20, 0)
		if nGroups > 1 || int64(slots)*1000 > k.cap[2] {
			continue
		}
		traced++
		n := gb.config(k.cap, k.bound)
		v, rem := 0.0, slices.Clone(k.cap)
		for c, m := range n {
			v += float64(m) * k.val[c]
			for d, q := range k.req[c] {
				rem[d] -= int64(m) * q
			}
		}
		fits := !slices.ContainsFunc(rem, func(x int64) bool { return x < 0 })
		if fits && v > want+1e-9 {
			t.Fatalf("case %d: traced configuration %v worth %v, above the optimum %v", i, n, v, want)
		}
		if fits && math.Abs(v-want) <= 1e-9 {
			tracedOK++
		}
	}
	if exact < 50 {
		t.Fatalf("only %d cases checked for exactness", exact)
	}
	if tracedOK < traced*9/10 {
		t.Fatalf("the trace found the optimum in %d of %d cases", tracedOK, traced)
	}
}

// TestCleanDuals: noise below a ten thousandth goes, near-multiples of a
// step are snapped to it, and duals that are not multiples stay.
func TestCleanDuals(t *testing.T) {
	for _, tc := range []struct {
		in, want []float64
	}{
		{[]float64{0.314748, 0.629496, 0.000001, 0.944243}, []float64{0.314748, 0.629496, 0, 0.944244}},
		{[]float64{0.026226, 0.078677, 0.131130}, []float64{0.026226, 0.078678, 0.13113}},
		{[]float64{0.3, 0.47, 0.5}, []float64{0.3, 0.47, 0.5}},
	} {
		got := cleanDuals(tc.in)
		for c := range got {
			if math.Abs(got[c]-tc.want[c]) > 1e-6 {
				t.Errorf("cleanDuals(%v) = %v, want %v", tc.in, got, tc.want)
				break
			}
		}
	}
}

// TestGridBoundsNeverBelowOptimum holds gridBounds, as the pricing builds
// and asks it (cleaned duals, millicores and bytes, nodes a few MiB short,
// table sizes small enough that the coarse and the value tables must decide
// some nodes), to the enumerated optimum: the least of the tables that
// reach a node is never below it. TestGridBound and TestValueBound hold
// each table on its own; this one fails when the coarse or the value table
// is wrong only as gridBounds wires it (e.g. either bound halved), and it
// checks that both tables did decide nodes.
func TestGridBoundsNeverBelowOptimum(t *testing.T) {
	const mi = 1 << 20
	cpus := []int64{100, 250, 300, 500, 750, 1000, 1500, 2000}
	mems := []int64{128 * mi, 256 * mi, 500 * mi, 512 * mi, 1024 * mi, 1500 * mi, 2048 * mi, 4096 * mi}
	r := rand.New(rand.NewPCG(7, 77))
	lossy, value := 0, 0
	for i := range 3000 {
		var k knapsack
		nGroups := r.IntN(3)
		// Half the cases have duals near whole steps with simplex-sized
		// noise, which the value table's rounding must absorb.
		stepped, step := r.IntN(2) == 0, 0.01+r.Float64()*0.2
		for range 1 + r.IntN(4) {
			req := []int64{cpus[r.IntN(len(cpus))], mems[r.IntN(len(mems))] + int64(r.IntN(3))*mi, 1000}
			v := math.Round(r.Float64()*100) / 40
			if stepped {
				v = step*float64(1+r.IntN(6)) + (r.Float64()-0.5)*2e-7*step
			}
			addRandomClass(r, &k, req, v, 16, nGroups)
		}
		vcpu := int64(1 + r.IntN(8))
		var caps [][2]int64
		for n := int64(1); n <= vcpu; n++ {
			caps = append(caps, [2]int64{n*1000 - 100 - int64(r.IntN(3))*50, n*4*1024*mi - 10*mi - int64(r.IntN(400))*mi})
		}
		slices.SortFunc(caps, func(a, b [2]int64) int {
			if a[0] != b[0] {
				return int(a[0] - b[0])
			}
			return int(a[1] - b[1])
		})
		k.val = cleanDuals(k.val)
		gb := newGridBounds(k.val, k.req, k.bound, k.groups, [2]int{0, 1}, 2, caps, 2.5*float64(vcpu), int64(1)<<(6+r.IntN(10)))
		for _, c := range caps {
			node := []int64{c[0], c[1], 1000 * int64(10+r.IntN(100))}
			k.cap = node
			want := bruteKnapsack(&k)
			if got := gb.bound(node); got < want-1e-9 {
				t.Fatalf("case %d, node %v: bound %v below the optimum %v (exact %v, coarse %v, value %v); requests %v, duals %v, bounds %v, groups %v",
					i, node, got, want, gb.exact.bound(node), gb.lossy.bound(node), gb.value.bound(node), k.req, k.val, k.bound, k.groups)
			}
			if gb.lossy != nil && !math.IsInf(gb.lossy.bound(node), 1) {
				lossy++
			}
			if gb.value != nil && !math.IsInf(gb.value.bound(node), 1) {
				value++
			}
		}
	}
	if lossy == 0 || value == 0 {
		t.Fatalf("the coarse table reached %d nodes, the value table %d: the test no longer exercises both", lossy, value)
	}
}
