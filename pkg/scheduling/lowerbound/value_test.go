package lowerbound

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestValueBoundRoundingSlack holds the value table's per-pod rounding to
// what it claims: a class worth a whole number of steps plus δ ≤
// valueSlack of a step is rounded down to the whole number, and the bound
// adds valueSlack of a step back per pod slot, so it stays above the
// optimum; δ above valueSlack is rounded up. The node holds n pods of the
// class exactly (CPU, memory and slots all bind at n), so the bound is
// sharp: it fails when the slack is not added back, added for fewer pods
// than the node holds, or when the rounding takes more than valueSlack off
// (checked: "- 2*valueSlack" in the rounding fails at δ = 1.5·valueSlack).
// A second class worth one step exactly, too large for the node, fixes
// the step. On the shared scenarios the duals, cleaned, reach the table
// 1e-12 of a step above whole steps (measured: 24 classes, at most
// 1.4e-12), the float noise this slack exists for.
func TestValueBoundRoundingSlack(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 33))
	for i := range 200 {
		step := 0.01 + r.Float64()
		m := float64(2 + r.IntN(5))
		n := 1 + r.IntN(40)
		delta := []float64{0.5, 0.99, 1.5, 2, 5, -0.5, -2}[r.IntN(7)] * valueSlack
		k := knapsack{
			val:    []float64{step * (m + delta), step},
			req:    [][]int64{{10, 7, 1000}, {1000, 1000, 1000}},
			bound:  []int{n, 1},
			groups: [][]int{nil, nil},
			cap:    []int64{10 * int64(n), 7 * int64(n), 1000 * int64(n)},
		}
		want := bruteKnapsack(&k)
		vb := newValueBound(k.val, k.req, k.bound, k.groups, [2]int{0, 1}, 2, [][2]int64{{k.cap[0], k.cap[1]}}, step*(m+1)*float64(n+1), 1<<20)
		if vb == nil || vb.step != step {
			t.Fatalf("case %d: value bound %+v, want one in steps of %v", i, vb, step)
		}
		got := vb.bound(k.cap)
		if got < want*(1-1e-13) {
			t.Fatalf("case %d: %d pods worth %v+%v steps of %v: bound %v below the optimum %v", i, n, m, delta, step, got, want)
		}
		// Tight: the optimum but for the slack added back and what a
		// value below a whole step is rounded up by, or, δ above the
		// slack, each pod rounded up to the next step.
		over := step * 1.01 * (valueSlack + math.Abs(delta)) * float64(n)
		if delta > valueSlack {
			over = step * float64(n)
		}
		if got > want+over {
			t.Fatalf("case %d: %d pods worth %v+%v steps of %v: bound %v, optimum %v", i, n, m, delta, step, got, want)
		}
	}
}

// TestValueBoundFloatNoise: duals a float's noise above whole steps (as
// the cleaned duals of the shared scenarios are, 1e-12 of a step) are
// rounded down to them, not up a whole step a pod; it fails with
// valueSlack 0, where each pod would count a step more.
func TestValueBoundFloatNoise(t *testing.T) {
	for _, noise := range []float64{1e-15, 1e-12, 1e-9} {
		const n = 12
		step := 0.1
		val := []float64{3*step + noise*step, step}
		req := [][]int64{{10, 7, 1000}, {1000, 1000, 1000}}
		k := knapsack{val: val, req: req, bound: []int{n, 1}, groups: [][]int{nil, nil}, cap: []int64{10 * n, 7 * n, 1000 * n}}
		want := bruteKnapsack(&k)
		vb := newValueBound(val, req, k.bound, k.groups, [2]int{0, 1}, 2, [][2]int64{{k.cap[0], k.cap[1]}}, 10, 1<<20)
		if got := vb.bound(k.cap); math.Abs(got-want) > 1e-6*want {
			t.Errorf("noise %v: value bound %v, optimum %v (steps of %v)", noise, got, want, vb.step)
		}
	}
}

// TestValueBoundTinyStep: a class worth a hair of the others (raw duals,
// before cleanDuals) makes the step so small that the value columns would
// not fit an int; the bound is then not built (nil: it reaches no node),
// rather than overflowing its table's size.
func TestValueBoundTinyStep(t *testing.T) {
	val := []float64{1, 1e-300}
	req := [][]int64{{10, 7, 1000}, {10, 7, 1000}}
	if vb := newValueBound(val, req, []int{5, 5}, [][]int{nil, nil}, [2]int{0, 1}, 2, [][2]int64{{50, 35}}, 10, 1<<20); vb != nil {
		t.Fatalf("value bound built in steps of %v, %d columns", vb.step, vb.cols)
	}
}

// TestCleanDualsMovesLittle: whatever the duals, cleaning leaves them
// non-negative (all the Farley bound needs to hold, as it prices every
// configuration at the cleaned duals themselves) and moves none by more
// than a ten thousandth of the largest (what the bound may lose by it).
// No threshold of cleanDuals can make the bound unsound, so this holds
// its tightness: it fails when either threshold is loosened to 1e-3, the
// drop's test is flipped or the snap rounds up; the first two pass every
// other test.
func TestCleanDualsMovesLittle(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 33))
	for i := range 2000 {
		top := 0.1 + 10*r.Float64()
		step := top / float64(1+r.IntN(12))
		pi := []float64{top}
		for range 1 + r.IntN(6) {
			var v float64
			switch r.IntN(4) {
			case 0: // simplex noise, up to a thousandth of the largest
				v = top * math.Pow(10, -3-4*r.Float64())
			case 1: // whole steps, noise up to a thousandth
				v = step*float64(1+r.IntN(12)) + (r.Float64()-0.5)*2e-3*step
			case 2: // whole steps, noise up to 1e-6
				v = step*float64(1+r.IntN(12)) + (r.Float64()-0.5)*2e-6*step
			default:
				v = top * r.Float64()
			}
			pi = append(pi, min(v, top))
		}
		r.Shuffle(len(pi), func(a, b int) { pi[a], pi[b] = pi[b], pi[a] })
		got := cleanDuals(slices.Clone(pi))
		for c := range pi {
			if got[c] < 0 || math.Abs(got[c]-pi[c]) > 1e-4*top*(1+1e-9) {
				t.Fatalf("case %d: cleanDuals(%v) = %v: dual %d moved from %v to %v", i, pi, got, c, pi[c], got[c])
			}
		}
	}
}
