package v1alpha1

import (
	"slices"
)

// ApplyDefaults fills unset fields with the defaults the CRD schema applies,
// for objects built in Go that never went through an API server (fixtures,
// `joiner simulate` inputs).
func (in *SimNodeClass) ApplyDefaults() {
	s := &in.Spec
	if s.Region == "" {
		s.Region = DefaultRegion
	}
	if s.Zones == nil {
		s.Zones = slices.Clone(DefaultZones)
	}
	if s.Catalog.Name == "" {
		s.Catalog.Name = DefaultCatalog
	}
	if s.LaunchDelay.Duration == 0 {
		s.LaunchDelay.Duration = DefaultLaunchDelay
	}
	if s.RegistrationDelay.Duration == 0 {
		s.RegistrationDelay.Duration = DefaultRegistrationDelay
	}
}

// InsufficientCapacity reports whether a launch of instanceType in zone with
// capacityType hits an injected insufficient-capacity fault.
func (in *SimNodeClass) InsufficientCapacity(instanceType, zone, capacityType string) bool {
	if in.Spec.Faults == nil {
		return false
	}
	return slices.ContainsFunc(in.Spec.Faults.InsufficientCapacity, func(f InsufficientCapacityFault) bool {
		return f.Matches(instanceType, zone, capacityType)
	})
}

// SubnetIPExhausted reports whether launches into zone fail for lack of
// free subnet addresses.
func (in *SimNodeClass) SubnetIPExhausted(zone string) bool {
	return in.Spec.Faults != nil && slices.Contains(in.Spec.Faults.SubnetIPExhaustedZones, zone)
}

// FaultsOrEmpty returns the injected faults, or an empty set when none are
// configured, so callers can read switches without a nil check.
func (in *SimNodeClass) FaultsOrEmpty() Faults {
	if in.Spec.Faults == nil {
		return Faults{}
	}
	return *in.Spec.Faults
}
