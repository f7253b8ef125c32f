package lowerbound

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteKnapsack is the best value of every integer configuration, by
// enumeration.
func bruteKnapsack(k *knapsack) float64 {
	best := 0.0
	n := make([]int, len(k.val))
	var rec func(c int, rem []int64, val float64, used map[int]bool)
	rec = func(c int, rem []int64, val float64, used map[int]bool) {
		if c == len(k.val) {
			best = max(best, val)
			return
		}
		for m := 0; m <= k.bound[c]; m++ {
			ok := true
			for d, r := range k.req[c] {
				if int64(m)*r > rem[d] {
					ok = false
				}
			}
			if m > 0 {
				for _, g := range k.groups[c] {
					if used[g] || m > 1 {
						ok = false
					}
				}
			}
			if !ok {
				break
			}
			next := append([]int64(nil), rem...)
			for d, r := range k.req[c] {
				next[d] -= int64(m) * r
			}
			u := used
			if m > 0 && len(k.groups[c]) > 0 {
				u = map[int]bool{}
				for g := range used {
					u[g] = true
				}
				for _, g := range k.groups[c] {
					u[g] = true
				}
			}
			n[c] = m
			rec(c+1, next, val+float64(m)*k.val[c], u)
		}
		n[c] = 0
	}
	rec(0, k.cap, 0, map[int]bool{})
	return best
}

// TestKnapsackBounds holds every bound the pricing uses to the truth on
// random small instances: the one-dimension tables and the relaxation
// never below the best configuration, the search's best feasible and at
// its value when not cut short, its bound never below it.
func TestKnapsackBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		classes := 1 + r.IntN(6)
		dims := 1 + r.IntN(3)
		k := knapsack{cap: make([]int64, dims)}
		for d := range dims {
			k.cap[d] = int64(5 + r.IntN(30))
		}
		nGroups := r.IntN(3)
		for range classes {
			req := make([]int64, dims)
			for d := range dims {
				req[d] = int64(r.IntN(8))
			}
			addRandomClass(r, &k, req, math.Round(r.Float64()*100)/10-1, 5, nGroups)
		}
		allowed := make([]bool, classes)
		for c := range allowed {
			allowed[c] = true
		}
		for d := range dims {
			k.tables = append(k.tables, newDimTable(k.val, k.req, k.bound, k.groups, allowed, d, k.cap[d]+int64(r.IntN(10))))
		}
		want := bruteKnapsack(&k)
		scale := make([]float64, dims)
		var active []int
		for d := range dims {
			scale[d] = 1 / float64(1+d)
			active = append(active, d)
		}
		used := make([]bool, nGroups)
		for ti := range k.tables {
			if tb := k.tables[ti].bound(k.cap); tb < want-1e-9 {
				t.Fatalf("case %d: table %d bound %v below the optimum %v (%+v)", i, ti, tb, want, k)
			}
		}
		s, ub := k.bestSurrogate(scale, active, used)
		if ub < want-1e-9 {
			t.Fatalf("case %d: relaxation %v below the optimum %v (%+v)", i, ub, want, k)
		}
		n, got, bound := k.search(&s, 0, 1<<20, nGroups)
		if math.Abs(got-want) > 1e-9 || bound < want-1e-9 {
			t.Fatalf("case %d: search found %v (bound %v), optimum %v (%+v)", i, got, bound, want, k)
		}
		v := 0.0
		rem := append([]int64(nil), k.cap...)
		for c, m := range n {
			v += float64(m) * k.val[c]
			for d, q := range k.req[c] {
				rem[d] -= int64(m) * q
			}
		}
		for _, x := range rem {
			if x < 0 {
				t.Fatalf("case %d: search's configuration %v overfills", i, n)
			}
		}
		if math.Abs(v-got) > 1e-9 {
			t.Fatalf("case %d: configuration value %v, reported %v", i, v, got)
		}
		_, _, short := k.search(&s, 0, 3, nGroups)
		if short < want-1e-9 {
			t.Fatalf("case %d: search cut short bounds %v, below the optimum %v", i, short, want)
		}
	}
}

// addRandomClass appends to k a class of requests req and value val, at
// most 1+r.IntN(most) of it a node, or, half the time when there are
// groups, one a node as a member of one of nGroups anti-affinity groups:
// the random instances the bounds are held to the enumerated optimum on.
func addRandomClass(r *rand.Rand, k *knapsack, req []int64, val float64, most, nGroups int) {
	k.req = append(k.req, req)
	k.val = append(k.val, val)
	var gs []int
	bound := 1 + r.IntN(most)
	if nGroups > 0 && r.IntN(2) == 0 {
		gs = append(gs, r.IntN(nGroups))
		bound = 1
	}
	k.groups = append(k.groups, gs)
	k.bound = append(k.bound, bound)
}
