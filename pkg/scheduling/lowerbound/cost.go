package lowerbound

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

const labelZone = corev1.LabelTopologyZone

// PlanCost is what a plan's new nodes cost per hour: for each new node, the
// cheapest available offering among the instance types it may still launch
// as whose zone and capacity type its final requirements allow. It fails
// when a node has no such offering (a plan that cannot be launched).
func PlanCost(p *scheduling.Plan) (float64, error) {
	total := 0.0
	for i, n := range p.NewNodeClaims {
		price, ok := NodeCost(n, p.ListPrices)
		if !ok {
			return 0, fmt.Errorf("new node %d (nodepool %q): no available offering of %d instance types matches its zone and capacity-type requirements", i, n.NodePool, len(n.InstanceTypes))
		}
		total += price
	}
	return total, nil
}

// NodeCost is one new node's price per hour, as PlanCost counts it: the
// cheapest of its instance types' available offerings its requirements
// allow, priced by scheduling.NodePrice with the CPU of its requests (the
// list price alone with listPrices); false when there is no such offering.
func NodeCost(n *scheduling.NewNodeClaim, listPrices bool) (float64, bool) {
	best := math.Inf(1)
	cpu := n.Requests.Cpu().MilliValue()
	for _, it := range n.InstanceTypes {
		if list, ok := cheapestOffering(it, n.Requirements); ok {
			best = min(best, scheduling.NodePrice(it, list, cpu, listPrices).Total())
		}
	}
	return best, !math.IsInf(best, 1)
}

// cheapestOffering is the lowest price among it's available offerings whose
// zone and capacity type reqs allow.
func cheapestOffering(it *scheduling.InstanceType, reqs []scheduling.Requirement) (float64, bool) {
	best, found := 0.0, false
	for _, o := range it.Offerings {
		if !o.Available || !scheduling.RequirementsAdmit(reqs, labelZone, o.Zone) || !scheduling.RequirementsAdmit(reqs, v1.LabelCapacityType, o.CapacityType) {
			continue
		}
		if !found || o.Price < best {
			best, found = o.Price, true
		}
	}
	return best, found
}
