package options

import (
	"fmt"

	"k8s.io/component-base/featuregate"
)

// Karpenter's feature gates that joiner implements.
const (
	// FeatureSpotToSpotConsolidation lets consolidation replace a spot
	// node with a cheaper spot node (Karpenter: beta, off by default).
	FeatureSpotToSpotConsolidation featuregate.Feature = "SpotToSpotConsolidation"
	// FeatureNodeRepair replaces nodes whose health conditions stay bad
	// (Karpenter: alpha, off by default).
	FeatureNodeRepair featuregate.Feature = "NodeRepair"
	// FeatureReservedCapacity lets the AWS provider resolve an
	// EC2NodeClass's capacityReservationSelectorTerms and offer their
	// reserved capacity, and the solver plan it (Karpenter: beta, on by
	// default). Off, reservations are neither offered nor planned.
	FeatureReservedCapacity featuregate.Feature = "ReservedCapacity"
	// FeatureStaticCapacity runs static NodePools (spec.replicas)
	// (Karpenter: alpha, off by default).
	FeatureStaticCapacity featuregate.Feature = "StaticCapacity"
	// FeatureNodeOverlay applies karpenter.sh/v1alpha1 NodeOverlays to
	// instance types' prices and capacities (Karpenter: alpha, off by
	// default).
	FeatureNodeOverlay featuregate.Feature = "NodeOverlay"
	// FeatureCapacityBuffer plans autoscaling.x-k8s.io CapacityBuffers'
	// virtual pods (Karpenter: alpha, off by default).
	FeatureCapacityBuffer featuregate.Feature = "CapacityBuffer"
)

// notImplemented are Karpenter's gates joiner does not implement yet.
// Karpenter's chart passes them as false, so false is accepted (a migrated
// chart keeps working); true fails at start, because silently running
// without the feature would be worse than saying so. NodeClassCEL belongs
// to AWS_FEATURE_GATES, and is accepted here too for charts that put it in
// FEATURE_GATES.
var notImplemented = []featuregate.Feature{FeatureNodeClassCEL}

// FeatureGates are the parsed --feature-gates / FEATURE_GATES.
type FeatureGates struct {
	SpotToSpotConsolidation bool
	NodeRepair              bool
	// StaticCapacity, NodeOverlay and CapacityBuffer enable Karpenter's
	// alpha APIs of the same names; off, their objects are left alone with
	// an event naming the gate.
	StaticCapacity bool
	NodeOverlay    bool
	CapacityBuffer bool
	// ReservedCapacity plans and launches into capacity reservations.
	ReservedCapacity bool
}

// parseFeatureGates reads Karpenter's "A=true,B=false" syntax; an unknown
// gate, a value that is not a boolean, or a Karpenter gate joiner does not
// implement set to true is an error naming it.
func parseFeatureGates(s string) (FeatureGates, error) {
	g := featuregate.NewFeatureGate()
	specs := map[featuregate.Feature]featuregate.FeatureSpec{
		FeatureSpotToSpotConsolidation: {Default: false, PreRelease: featuregate.Beta},
		FeatureNodeRepair:              {Default: false, PreRelease: featuregate.Alpha},
		FeatureReservedCapacity:        {Default: true, PreRelease: featuregate.Beta},
		FeatureStaticCapacity:          {Default: false, PreRelease: featuregate.Alpha},
		FeatureNodeOverlay:             {Default: false, PreRelease: featuregate.Alpha},
		FeatureCapacityBuffer:          {Default: false, PreRelease: featuregate.Alpha},
	}
	for _, f := range notImplemented {
		specs[f] = featuregate.FeatureSpec{Default: false, PreRelease: featuregate.Alpha}
	}
	if err := g.Add(specs); err != nil {
		return FeatureGates{}, err
	}
	if s != "" {
		if err := g.Set(s); err != nil {
			return FeatureGates{}, fmt.Errorf("feature-gates %q: %w (joiner implements %s, %s, %s, %s, %s and %s)",
				s, err, FeatureSpotToSpotConsolidation, FeatureNodeRepair, FeatureStaticCapacity, FeatureNodeOverlay, FeatureCapacityBuffer, FeatureReservedCapacity)
		}
	}
	for _, f := range notImplemented {
		if g.Enabled(f) {
			return FeatureGates{}, fmt.Errorf("feature-gates %q: joiner does not implement Karpenter's %s yet; set %s=false or remove it", s, f, f)
		}
	}
	return FeatureGates{
		SpotToSpotConsolidation: g.Enabled(FeatureSpotToSpotConsolidation),
		NodeRepair:              g.Enabled(FeatureNodeRepair),
		StaticCapacity:          g.Enabled(FeatureStaticCapacity),
		NodeOverlay:             g.Enabled(FeatureNodeOverlay),
		ReservedCapacity:        g.Enabled(FeatureReservedCapacity),
		CapacityBuffer:          g.Enabled(FeatureCapacityBuffer),
	}, nil
}

// FeatureNodeClassCEL is the AWS provider's only gate (AWS_FEATURE_GATES):
// CEL expressions in an EC2NodeClass's kubelet settings.
const FeatureNodeClassCEL featuregate.Feature = "NodeClassCEL"

// parseAWSFeatureGates reads --aws-feature-gates. joiner implements none
// of them: Karpenter's chart passes NodeClassCEL=false, which is accepted;
// true or an unknown gate fails naming it.
func parseAWSFeatureGates(s string) error {
	g := featuregate.NewFeatureGate()
	if err := g.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		FeatureNodeClassCEL: {Default: false, PreRelease: featuregate.Alpha},
	}); err != nil {
		return err
	}
	if s == "" {
		return nil
	}
	if err := g.Set(s); err != nil {
		return fmt.Errorf("aws-feature-gates %q: %w", s, err)
	}
	if g.Enabled(FeatureNodeClassCEL) {
		return fmt.Errorf("aws-feature-gates %q: joiner does not implement %s yet; set %s=false or remove it", s, FeatureNodeClassCEL, FeatureNodeClassCEL)
	}
	return nil
}
