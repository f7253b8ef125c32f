package options

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Feature gate names, Karpenter's. Karpenter's Helm chart renders every
// one of them into FEATURE_GATES, so joiner accepts them all.
const (
	FeatureNodeRepair              = "NodeRepair"
	FeatureSpotToSpotConsolidation = "SpotToSpotConsolidation"
	FeatureReservedCapacity        = "ReservedCapacity"
	FeatureNodeOverlay             = "NodeOverlay"
	FeatureStaticCapacity          = "StaticCapacity"
	FeatureCapacityBuffer          = "CapacityBuffer"
)

// unsupportedFeatures are Karpenter gates joiner knows but does not
// implement: "false" is accepted, "true" is an error rather than a
// setting silently ignored.
var unsupportedFeatures = []string{FeatureNodeOverlay, FeatureStaticCapacity, FeatureCapacityBuffer}

// FeatureGates are the FEATURE_GATES / --feature-gates settings. It is a
// pflag.Value: "NodeRepair=true,SpotToSpotConsolidation=false"; gates not
// named keep their defaults.
type FeatureGates struct {
	// NodeRepair replaces nodes whose health conditions stay bad (alpha,
	// default false).
	NodeRepair bool
	// SpotToSpotConsolidation lets consolidation replace a spot node by a
	// cheaper spot node (alpha, default false).
	SpotToSpotConsolidation bool
	// ReservedCapacity enables capacity reservations (beta, default true).
	ReservedCapacity bool
}

// DefaultFeatureGates are the gates' values when FEATURE_GATES is unset.
func DefaultFeatureGates() FeatureGates {
	return FeatureGates{ReservedCapacity: true}
}

func (g *FeatureGates) fields() map[string]*bool {
	return map[string]*bool{
		FeatureNodeRepair:              &g.NodeRepair,
		FeatureSpotToSpotConsolidation: &g.SpotToSpotConsolidation,
		FeatureReservedCapacity:        &g.ReservedCapacity,
	}
}

// String implements pflag.Value.
func (g *FeatureGates) String() string {
	f := g.fields()
	names := make([]string, 0, len(f))
	for name := range f {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, name+"="+strconv.FormatBool(*f[name]))
	}
	return strings.Join(parts, ",")
}

// Type implements pflag.Value.
func (g *FeatureGates) Type() string { return "mapStringBool" }

// Set implements pflag.Value: it parses "A=true,B=false" over the current
// values and rejects unknown gates, naming them.
func (g *FeatureGates) Set(s string) error {
	next := *g
	f := next.fields()
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return fmt.Errorf("feature gate %q needs a value: write %s=true or %s=false", name, name, name)
		}
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("feature gate %s=%q: the value must be true or false", name, value)
		}
		if slices.Contains(unsupportedFeatures, name) {
			if b {
				return fmt.Errorf("feature gate %s is not supported by joiner; set it to false or remove it", name)
			}
			continue
		}
		field, known := f[name]
		if !known {
			return fmt.Errorf("unknown feature gate %q; known gates: %s", name, strings.Join(append(slices.Sorted(mapKeys(f)), unsupportedFeatures...), ", "))
		}
		*field = b
	}
	*g = next
	return nil
}

func mapKeys(m map[string]*bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
