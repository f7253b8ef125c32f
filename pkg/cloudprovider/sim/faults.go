package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/faults"
)

// CallFaults make the simulated cloud's API misbehave the way a real
// cloud's does under load, at seeded rates (see package faults): Throttle
// and ServerError fail Create, Delete, Get and List before they reach the
// store; Capacity, Slow and Ghost apply to Create.
//
// Unlike the SimNodeClass fault switches, which describe a machine's
// behaviour and are part of the API, CallFaults are an operator setting
// (--sim-call-faults / SIM_CALL_FAULTS): they model the cloud's control
// plane, not a node class.
type CallFaults = faults.Rates

// ParseCallFaults reads --sim-call-faults (faults.Parse's syntax).
func ParseCallFaults(s string) (CallFaults, error) {
	f, err := faults.Parse(s)
	if err != nil {
		return CallFaults{}, fmt.Errorf("parsing simulated cloud call faults %q: %w", s, err)
	}
	return f, nil
}

// faultDice draws CallFaults' outcomes; a nil faultDice draws none.
type faultDice struct {
	f    CallFaults
	dice *faults.Dice
}

func newFaultDice(f CallFaults) *faultDice {
	return &faultDice{f: f, dice: faults.NewDice(f.Seed)}
}

func (d *faultDice) roll(p float64) bool {
	return d != nil && d.dice.Roll(p)
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
