package lowerbound

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// beale is Beale's example (1955) as a master, its first two rows swapped
// or not, its variables' columns in the order perm (a permutation of 0…5:
// x1, x2, x4, x5, x6, x7):
//
//	min −3/4·x4 + 20·x5 − 1/2·x6 + 6·x7
//	s.t. 1/4·x4 − 8·x5 − x6 + 9·x7 + x1 = 0
//	     1/2·x4 − 12·x5 − 1/2·x6 + 3·x7 + x2 = 0
//	     x6 + x3 = 1,  x ≥ 0,
//
// optimum −5/4 at x4 = x6 = 1. The first two rows are class rows, negated
// and scaled to whole numbers (×−4, ×−2), the slacks x1 and x2 columns of
// their own (cost 0; so the scaling leaves every reduced cost as it is in
// Beale's tableaux, and the rows' own surplus, x1 and x2 over 4 and 2, is
// never Dantzig's choice); the third is an existing node's row, x6 its
// configuration, x3 its slack. The first basis is x1, x2, x3. Dantzig's
// rule, ties in the ratio test to the least id, cycles on it: x4, x5, x6,
// x7, x1, x2 enter in turn, every pivot degenerate.
func beale(t *testing.T, perm []int, swap bool) *generation {
	g := &generation{classes: make([]podClass, 2), demand: []float64{0, 0}}
	rooms := []room{{}}
	g.rooms = &rooms
	x := []configColumn{
		{offering: 0, n: []int{-4, 0}},
		{offering: 0, n: []int{0, -2}},
		{offering: 0, n: []int{-1, -1}, cost: -0.75},
		{offering: 0, n: []int{32, 24}, cost: 20},
		{offering: -1, n: []int{4, 1}, cost: -0.5},
		{offering: 0, n: []int{-36, -6}, cost: 6},
	}
	p := &primal{rows: 3, basis: []int{0, 0, -3}, x: make([]float64, 3)}
	for i, j := range perm {
		c := x[j]
		c.n = slices.Clone(c.n)
		if swap {
			c.n[0], c.n[1] = c.n[1], c.n[0]
		}
		g.cols = append(g.cols, c)
		if j < 2 {
			p.basis[j] = i
		}
	}
	if err := g.refactor(p); err != nil {
		t.Fatal(err)
	}
	g.lp = p
	return g
}

// TestPrimalSimplexDegenerate holds the primal simplex's anti-cycling to
// Beale's example: Dantzig's rule alone cycles (so the test does reach
// the degenerate path); the simplex as it runs (Bland's rule after 50
// degenerate pivots) and Bland's rule from any pivot of the cycle reach
// the optimum, whatever the order of the variables and rows. It fails when
// Bland's rule is never taken, or when its entering and leaving choices
// go by orders that disagree (checked: with the entering choice to the
// greatest id, some orders cycle).
func TestPrimalSimplexDegenerate(t *testing.T) {
	defer func(n int) { blandAfter = n }(blandAfter)
	blandAfter = math.MaxInt
	if _, _, _, err := beale(t, []int{0, 1, 2, 3, 4, 5}, false).solvePrimal(); err == nil || !strings.Contains(err.Error(), "settle") {
		t.Fatalf("Dantzig's rule alone: %v, want a cycle", err)
	}
	var perms [][]int
	var permute func(done []int, left []int)
	permute = func(done, left []int) {
		if len(left) == 0 {
			perms = append(perms, done)
			return
		}
		for i := range left {
			rest := append(slices.Clone(left[:i]), left[i+1:]...)
			permute(append(slices.Clone(done), left[i]), rest)
		}
	}
	permute(nil, []int{0, 1, 2, 3, 4, 5})
	failed := 0
	for _, after := range []int{50, -1, 0, 1, 2, 3, 4, 5} {
		blandAfter = after
		for _, perm := range perms {
			for _, swap := range []bool{false, true} {
				value, _, _, err := beale(t, perm, swap).solvePrimal()
				if err != nil || math.Abs(value+1.25) > 1e-9 {
					failed++
					t.Errorf("Bland's rule after %d degenerate pivots, variables in order %v, rows swapped %v: %v, %v; want −5/4", after, perm, swap, value, err)
				}
				if failed > 5 {
					t.FailNow()
				}
			}
		}
	}
}
