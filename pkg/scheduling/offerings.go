package scheduling

import v1 "github.com/joiner-dev/joiner/pkg/apis/v1"

// OfferingAllowed reports whether a node with requirements reqs may launch
// as offering o: it is available, and reqs admit its zone and capacity type
// (RequirementsAdmit). It is the one such test for the adapters around the
// solver (the disruption engine, explain, simulate's report).
func OfferingAllowed(o Offering, reqs []Requirement) bool {
	return o.Available && RequirementsAdmit(reqs, v1.LabelTopologyZone, o.Zone) && RequirementsAdmit(reqs, v1.LabelCapacityType, o.CapacityType)
}

// CheapestOffering is it's cheapest allowed offering under reqs: what a node
// of that type costs where it may launch. false when none is allowed.
func CheapestOffering(it *InstanceType, reqs []Requirement) (Offering, bool) {
	var best Offering
	found := false
	for _, o := range it.Offerings {
		if OfferingAllowed(o, reqs) && (!found || o.Price < best.Price) {
			best, found = o, true
		}
	}
	return best, found
}

// DearestOfferingPrice is the highest price among it's allowed offerings
// under reqs (0 when none is allowed): what the node may cost if the cloud
// picks the worst of them.
func DearestOfferingPrice(it *InstanceType, reqs []Requirement) float64 {
	worst := 0.0
	for _, o := range it.Offerings {
		if OfferingAllowed(o, reqs) {
			worst = max(worst, o.Price)
		}
	}
	return worst
}
