package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// TestCheaperReplacementsShareTheAllowance: two on-demand candidates of
// $1/h each may be replaced by nodes costing $1.90/h together, whichever
// options launch. One replacement's only type costs $0.50/h in one zone
// and $0.90/h in the other, the other's $1/h in both: $1.50/h at their
// cheapest, $1.90/h at their dearest, so the command keeps the minimum
// saving whatever the cloud picks. Shared in proportion to the cheapest
// prices, the first replacement's allowance ($0.63/h) is under its
// dearest offering and the set was refused; each is now given what its
// dearest offering needs first. When the dearest offerings add up to
// more than the limit the set is still refused.
func TestCheaperReplacementsShareTheAllowance(t *testing.T) {
	it := func(name string, prices map[string]float64) *scheduling.InstanceType {
		out := &scheduling.InstanceType{Name: name}
		for _, z := range []string{"z1", "z2"} {
			out.Offerings = append(out.Offerings, scheduling.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: prices[z], Available: true})
		}
		return out
	}
	onDemand := []scheduling.Requirement{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}}
	cands := []*candidate{
		{node: &Node{Name: "a", InstanceType: "big", CapacityType: v1.CapacityTypeOnDemand, Price: 1}},
		{node: &Node{Name: "b", InstanceType: "big", CapacityType: v1.CapacityTypeOnDemand, Price: 1}},
	}
	s := &simulator{in: &Input{}, minSavings: 0.05}
	for _, tc := range []struct {
		name  string
		other float64 // the second replacement's price, both zones
		ok    bool
	}{
		{name: "dearest offerings within the limit", other: 1, ok: true},
		{name: "dearest offerings over the limit", other: 1.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ncs := []*scheduling.NewNodeClaim{
				{NodePool: "p", Requirements: onDemand, InstanceTypes: []*scheduling.InstanceType{it("zonal", map[string]float64{"z1": 0.5, "z2": 0.9})}},
				{NodePool: "p", Requirements: onDemand, InstanceTypes: []*scheduling.InstanceType{it("flat", map[string]float64{"z1": tc.other, "z2": tc.other})}},
			}
			out, why := s.cheaperReplacements(ncs, cands, 2)
			if !tc.ok {
				if out != nil {
					t.Fatalf("replacements accepted though their dearest offerings cost $%.2f/h together, over the $1.90/h limit", 0.9+tc.other)
				}
				return
			}
			if out == nil {
				t.Fatalf("refused (%s), though whichever options launch the replacements cost at most $1.90/h", why)
			}
			worst := 0.0
			for _, nc := range out {
				worst += dearestOffering(nc.InstanceTypes[len(nc.InstanceTypes)-1], nc.Requirements, 0, true)
			}
			if worst > 1.9+1e-9 {
				t.Fatalf("whichever options launch may cost $%.2f/h, over the $1.90/h limit", worst)
			}
		})
	}
}
