package lowerbound

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// primal is the restricted master solved as it stands, min Σ cost·x
// subject to Σ n·x − s = N per class and Σ x + t = 1 per existing node
// (its configurations), x, s, t ≥ 0, by a revised primal simplex whose
// basis carries over from one round of the generation to the next: the
// columns a round adds enter as non-basic, so the basis stays feasible and
// a round costs the few pivots its new columns need, where solving the
// dual afresh each round (gonum's simplex refactors its basis every
// pivot) cost most of the generation's time. The first basis is the seed
// column of each class (seed adds one per class, in order, holding that
// class only) and each node's slack. The duals are c_B·B⁻¹: exact at the
// optimum, so a configuration that prices out is new.
type primal struct {
	rows  int
	basis []int // per row: a column, or −1−r for row r's surplus or slack
	binv  *mat.Dense
	x     []float64 // the basic variables' values
	since int       // pivots since binv was last computed afresh
}

// primalVar's column in the rows and its cost.
func (g *generation) primalColumn(v int, rows int) ([]float64, float64) {
	a := make([]float64, rows)
	m := len(g.classes)
	if v < 0 {
		r := -1 - v
		if r < m {
			a[r] = -1 // surplus
		} else {
			a[r] = 1 // slack
		}
		return a, 0
	}
	col := g.cols[v]
	for r, k := range col.n {
		a[r] = float64(k)
	}
	if col.offering < 0 {
		a[m+(-1-col.offering)] = 1
	}
	return a, col.cost
}

// refactor computes B⁻¹ and the basic values afresh.
func (g *generation) refactor(p *primal) error {
	b := mat.NewDense(p.rows, p.rows, nil)
	for i, v := range p.basis {
		a, _ := g.primalColumn(v, p.rows)
		b.SetCol(i, a)
	}
	var inv mat.Dense
	if err := inv.Inverse(b); err != nil {
		return err
	}
	p.binv = &inv
	rhs := make([]float64, p.rows)
	for r := range rhs {
		if r < len(g.classes) {
			rhs[r] = g.demand[r]
		} else {
			rhs[r] = 1
		}
	}
	for i := range p.x {
		v := 0.0
		for r, b := range rhs {
			v += inv.At(i, r) * b
		}
		p.x[i] = max(0, v)
	}
	p.since = 0
	return nil
}

// blandAfter is how many degenerate pivots in a row the simplex makes by
// Dantzig's rule before it turns to Bland's (until a pivot gains): Dantzig's
// takes fewer pivots but can cycle. A variable so that a test can hold
// each rule alone to an instance that cycles.
var blandAfter = 50

// solvePrimal runs the simplex from the basis it holds to an optimum and
// returns the value, π (per class) and μ (per existing node).
func (g *generation) solvePrimal() (float64, []float64, []float64, error) {
	m := len(g.classes)
	rooms := len(g.existingRooms())
	p := g.lp
	if p == nil {
		p = &primal{rows: m + rooms, x: make([]float64, m+rooms)}
		for r := range m {
			p.basis = append(p.basis, r)
		}
		for e := range rooms {
			p.basis = append(p.basis, -1-(m+e))
		}
		if err := g.refactor(p); err != nil {
			return 0, nil, nil, err
		}
		g.lp = p
	}
	basic := map[int]bool{}
	for _, v := range p.basis {
		basic[v] = true
	}
	pi := make([]float64, p.rows)
	degenerate := 0
	for pivots := 0; ; pivots++ {
		if pivots > 100*(p.rows+len(g.cols)) {
			return 0, nil, nil, errors.New("the primal simplex did not settle")
		}
		// π = c_B·B⁻¹.
		for r := range pi {
			pi[r] = 0
		}
		for i, v := range p.basis {
			_, c := g.primalColumn(v, p.rows)
			if c == 0 {
				continue
			}
			for r := range pi {
				pi[r] += c * p.binv.At(i, r)
			}
		}
		// Entering: the most negative reduced cost (Dantzig's rule), or,
		// after a run of degenerate pivots, the improving variable of
		// least id (Bland's rule: −rows … −1 for the rows' surplus or
		// slack, then the columns), the order the ratio test below
		// breaks its ties in: with both choices in one order the
		// simplex cannot cycle.
		bland := degenerate > blandAfter
		enter, best := 0, 0.0
		found := false
		try := func(v int) {
			if basic[v] {
				return
			}
			a, c := g.primalColumn(v, p.rows)
			d := c
			for r, x := range a {
				d -= pi[r] * x
			}
			if d < -1e-9*max(1, c) && (!found || (bland && v < enter) || (!bland && d < best)) {
				enter, best, found = v, d, true
			}
		}
		for r := range p.rows {
			try(-1 - r)
		}
		for j := range g.cols {
			try(j)
		}
		if !found {
			break
		}
		a, _ := g.primalColumn(enter, p.rows)
		u := make([]float64, p.rows)
		for i := range u {
			for r, x := range a {
				if x != 0 {
					u[i] += p.binv.At(i, r) * x
				}
			}
		}
		// Leaving: the least ratio, ties to the basic variable of least
		// id (Bland's rule, in the entering choice's order).
		leave, theta := -1, math.Inf(1)
		for i, ui := range u {
			if ui <= 1e-9 {
				continue
			}
			if t := p.x[i] / ui; t < theta-1e-12 || (t <= theta+1e-12 && leave >= 0 && p.basis[i] < p.basis[leave]) {
				leave, theta = i, t
			}
		}
		if leave < 0 {
			return 0, nil, nil, errors.New("the master is unbounded")
		}
		if theta <= 1e-12 {
			degenerate++
		} else {
			degenerate = 0
		}
		// Pivot: row leave of B⁻¹ and x divided by u[leave], the others
		// cleared of it.
		pv := u[leave]
		for r := range p.rows {
			p.binv.Set(leave, r, p.binv.At(leave, r)/pv)
		}
		p.x[leave] /= pv
		for i, ui := range u {
			if i == leave || ui == 0 {
				continue
			}
			for r := range p.rows {
				p.binv.Set(i, r, p.binv.At(i, r)-ui*p.binv.At(leave, r))
			}
			p.x[i] = max(0, p.x[i]-ui*p.x[leave])
		}
		delete(basic, p.basis[leave])
		p.basis[leave] = enter
		basic[enter] = true
		if p.since++; p.since >= 64 {
			if err := g.refactor(p); err != nil {
				return 0, nil, nil, err
			}
		}
	}
	value := 0.0
	for i, v := range p.basis {
		_, c := g.primalColumn(v, p.rows)
		value += c * p.x[i]
	}
	out := make([]float64, m)
	for r := range m {
		out[r] = max(0, pi[r])
	}
	mu := make([]float64, rooms)
	for e := range rooms {
		mu[e] = max(0, -pi[m+e])
	}
	return value, out, mu, nil
}
