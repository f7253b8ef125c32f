package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/joiner-dev/joiner/pkg/cloudprovider"
)

// CallFaults makes the simulated cloud's API misbehave the way a real
// cloud's does under load, at seeded rates, so the chaos suite (test/chaos)
// can prove joiner launches nothing twice and leaks nothing when its cloud
// calls fail. Rates are probabilities between 0 and 1, drawn per call.
//
// Unlike the SimNodeClass fault switches, which describe a machine's
// behaviour and are part of the API, CallFaults are an operator setting
// (--sim-call-faults / SIM_CALL_FAULTS): they model the cloud's control
// plane, not a node class.
type CallFaults struct {
	// Seed seeds the draws; two processes with one seed draw the same
	// sequence (the order calls arrive in is still the scheduler's).
	Seed uint64
	// Throttle fails a call (Create, Delete, Get, List) with a
	// RequestLimitExceeded error before it reaches the store.
	Throttle float64
	// ServerError fails a call with a 500 InternalError before it reaches
	// the store.
	ServerError float64
	// Capacity fails a Create with an insufficient capacity error for the
	// offering it would have launched.
	Capacity float64
	// Slow delays a Create by SlowFor before it launches.
	Slow    float64
	SlowFor time.Duration
	// Ghost launches the instance and then fails the Create with a 500, as
	// a cloud whose response is lost does: the caller sees an error while
	// the instance runs (the ghost instance).
	Ghost float64
}

// Enabled reports whether any fault has a rate.
func (f CallFaults) Enabled() bool {
	return f.Throttle > 0 || f.ServerError > 0 || f.Capacity > 0 || f.Slow > 0 || f.Ghost > 0
}

// String renders f in ParseCallFaults's syntax.
func (f CallFaults) String() string {
	if !f.Enabled() {
		return ""
	}
	parts := []string{"seed=" + strconv.FormatUint(f.Seed, 10)}
	add := func(k string, v float64) {
		if v > 0 {
			parts = append(parts, k+"="+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	add("throttle", f.Throttle)
	add("5xx", f.ServerError)
	add("capacity", f.Capacity)
	add("slow", f.Slow)
	if f.Slow > 0 {
		parts = append(parts, "slow-for="+f.SlowFor.String())
	}
	add("ghost", f.Ghost)
	return strings.Join(parts, ",")
}

// ParseCallFaults reads "seed=7,throttle=0.1,5xx=0.05,capacity=0.1,
// slow=0.2,slow-for=2s,ghost=0.1" (any subset; empty means none).
func ParseCallFaults(s string) (CallFaults, error) {
	var f CallFaults
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	rates := map[string]*float64{"throttle": &f.Throttle, "5xx": &f.ServerError, "capacity": &f.Capacity, "slow": &f.Slow, "ghost": &f.Ghost}
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
			f.Seed = n
		case "slow-for":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				errs = append(errs, fmt.Errorf("slow-for %q is not a non-negative duration such as 2s", v))
			}
			f.SlowFor = d
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
			r, err := strconv.ParseFloat(v, 64)
			if err != nil || r < 0 || r > 1 {
				errs = append(errs, fmt.Errorf("%s rate %q must be a number between 0 and 1", k, v))
			}
			*p = r
		}
	}
	if err := errors.Join(errs...); err != nil {
		return CallFaults{}, fmt.Errorf("parsing simulated cloud call faults %q: %w", s, err)
	}
	if f.Slow > 0 && f.SlowFor == 0 {
		f.SlowFor = 2 * time.Second
	}
	return f, nil
}

// faultDice draws CallFaults' outcomes; safe for concurrent use.
type faultDice struct {
	f  CallFaults
	mu sync.Mutex
	r  *rand.Rand
}

func newFaultDice(f CallFaults) *faultDice {
	return &faultDice{f: f, r: rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))}
}

func (d *faultDice) roll(p float64) bool {
	if d == nil || p <= 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.r.Float64() < p
}

// callError is the error a faulted call returns before it reaches the
// store, or nil.
func (d *faultDice) callError() error {
	if d == nil {
		return nil
	}
	switch {
	case d.roll(d.f.Throttle):
		return errors.New("RequestLimitExceeded: request rate exceeded (simulated fault)")
	case d.roll(d.f.ServerError):
		return errors.New("InternalError: status code 500, an internal error occurred (simulated fault)")
	}
	return nil
}

// capacityError fails a Create with insufficient capacity, or returns nil.
func (d *faultDice) capacityError(offerings ...string) error {
	if d == nil || !d.roll(d.f.Capacity) {
		return nil
	}
	return cloudprovider.NewInsufficientCapacityError(errors.New("InsufficientInstanceCapacity: no capacity for the offering (simulated fault)"), offerings...)
}

// ghost reports whether a successful Create is to be reported as failed.
func (d *faultDice) ghost() bool { return d != nil && d.roll(d.f.Ghost) }

// slow returns how long a Create waits before launching.
func (d *faultDice) slow() time.Duration {
	if d == nil || !d.roll(d.f.Slow) {
		return 0
	}
	return d.f.SlowFor
}
