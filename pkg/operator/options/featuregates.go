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
)

// FeatureGates are the parsed --feature-gates / FEATURE_GATES.
type FeatureGates struct {
	SpotToSpotConsolidation bool
	NodeRepair              bool
}

// parseFeatureGates reads Karpenter's "A=true,B=false" syntax; an unknown
// gate or a value that is not a boolean is an error naming it.
func parseFeatureGates(s string) (FeatureGates, error) {
	g := featuregate.NewFeatureGate()
	if err := g.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		FeatureSpotToSpotConsolidation: {Default: false, PreRelease: featuregate.Beta},
		FeatureNodeRepair:              {Default: false, PreRelease: featuregate.Alpha},
	}); err != nil {
		return FeatureGates{}, err
	}
	if s != "" {
		if err := g.Set(s); err != nil {
			return FeatureGates{}, fmt.Errorf("feature-gates %q: %w (known gates: %s, %s)", s, err, FeatureSpotToSpotConsolidation, FeatureNodeRepair)
		}
	}
	return FeatureGates{
		SpotToSpotConsolidation: g.Enabled(FeatureSpotToSpotConsolidation),
		NodeRepair:              g.Enabled(FeatureNodeRepair),
	}, nil
}
