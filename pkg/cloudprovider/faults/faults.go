// Package faults describes how a cloud's control plane misbehaves under
// load, as seeded per-call probabilities, so the chaos suite (test/chaos)
// can make the simulated cloud (--sim-call-faults) and the local EC2's
// fault proxy (localec2.FaultProxy) fail the same way from one schedule
// and prove joiner launches nothing twice and leaks nothing. Each cloud
// decides what a fault looks like on its wire; this package holds the
// rates, their syntax and the seeded draws they share.
package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rates are probabilities between 0 and 1, drawn per call.
type Rates struct {
	// Seed seeds the draws; two processes with one seed draw the same
	// sequence (the order calls arrive in is still the scheduler's).
	Seed uint64
	// Throttle fails a call with RequestLimitExceeded before it reaches
	// the cloud.
	Throttle float64
	// ServerError fails a call with a 500 InternalError before it reaches
	// the cloud.
	ServerError float64
	// Capacity fails a launch with insufficient capacity for the
	// offerings it asked for.
	Capacity float64
	// Slow delays a launch by SlowFor.
	Slow    float64
	SlowFor time.Duration
	// Ghost lets a launch happen and then fails it with a 500, as a cloud
	// whose response is lost does: the caller sees an error while the
	// instance runs (the ghost instance).
	Ghost float64
}

// DefaultSlowFor is SlowFor when Slow is set without it.
const DefaultSlowFor = 2 * time.Second

// Enabled reports whether any fault has a rate.
func (r Rates) Enabled() bool {
	return r.Throttle > 0 || r.ServerError > 0 || r.Capacity > 0 || r.Slow > 0 || r.Ghost > 0
}

// String renders r in Parse's syntax ("seed=7,throttle=0.05,..."), zero
// rates left out; "" when no fault has a rate.
func (r Rates) String() string {
	if !r.Enabled() {
		return ""
	}
	parts := []string{"seed=" + strconv.FormatUint(r.Seed, 10)}
	add := func(k string, v float64) {
		if v > 0 {
			parts = append(parts, k+"="+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	add("throttle", r.Throttle)
	add("5xx", r.ServerError)
	add("capacity", r.Capacity)
	add("slow", r.Slow)
	if r.Slow > 0 {
		parts = append(parts, "slow-for="+r.SlowFor.String())
	}
	add("ghost", r.Ghost)
	return strings.Join(parts, ",")
}

// Parse reads "seed=7,throttle=0.1,5xx=0.05,capacity=0.1,slow=0.2,
// slow-for=2s,ghost=0.1" (any subset; empty means none). Every malformed
// pair is named in the error.
func Parse(s string) (Rates, error) {
	var r Rates
	if strings.TrimSpace(s) == "" {
		return r, nil
	}
	rates := map[string]*float64{"throttle": &r.Throttle, "5xx": &r.ServerError, "capacity": &r.Capacity, "slow": &r.Slow, "ghost": &r.Ghost}
	var errs []error
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not key=value", kv))
			continue
		}
		switch k {
		case "seed":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("seed %q is not an unsigned integer", v))
			}
			r.Seed = n
		case "slow-for":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				errs = append(errs, fmt.Errorf("slow-for %q is not a non-negative duration such as 2s", v))
			}
			r.SlowFor = d
		default:
			p := rates[k]
			if p == nil {
				keys := []string{"seed", "slow-for"}
				for k := range rates {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				errs = append(errs, fmt.Errorf("unknown key %q (want %s)", k, strings.Join(keys, ", ")))
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				errs = append(errs, fmt.Errorf("%s rate %q must be a number between 0 and 1", k, v))
			}
			*p = f
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Rates{}, err
	}
	if r.Slow > 0 && r.SlowFor == 0 {
		r.SlowFor = DefaultSlowFor
	}
	return r, nil
}

// Dice draws faults from a seed; safe for concurrent use. A nil Dice never
// draws a fault.
type Dice struct {
	mu  sync.Mutex
	rng *rand.Rand
}

// NewDice seeds the draws: one seed gives one sequence.
func NewDice(seed uint64) *Dice {
	return &Dice{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Roll reports whether an event of probability p happens.
func (d *Dice) Roll(p float64) bool {
	if d == nil || p <= 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rng.Float64() < p
}
