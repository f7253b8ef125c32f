package nodepool

import (
	"slices"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/offering"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// StaticNodeClaim is the NodeClaim a static NodePool (spec.replicas)
// launches to make up its count: no pods, the template's requirements, and
// as launch options every instance type those requirements admit with an
// available offering, cheapest offering first (at most
// scheduling.DefaultMaxInstanceTypes, as the solver keeps). The instance
// types are the ones the provisioner plans with, so NodeOverlay prices
// order them too. It returns nil when no instance type qualifies: the
// caller says so on the NodePool.
func StaticNodeClaim(np *v1.NodePool, its []*scheduling.InstanceType) *scheduling.NewNodeClaim {
	reqs := np.Spec.Template.Spec.Requirements
	var types []*scheduling.InstanceType
	price := 0.0
	for _, c := range offering.Candidates(its, reqs, nil) {
		if slices.Contains(types, c.InstanceType) {
			continue
		}
		if len(types) == 0 {
			price = c.Offering.Price
		}
		types = append(types, c.InstanceType)
		if len(types) == scheduling.DefaultMaxInstanceTypes {
			break
		}
	}
	if len(types) == 0 {
		return nil
	}
	out := &scheduling.NewNodeClaim{NodePool: np.Name, InstanceTypes: types, Price: price}
	for _, r := range reqs {
		out.Requirements = append(out.Requirements, scheduling.Requirement{
			Key: r.Key, Operator: r.Operator, Values: slices.Clone(r.Values), MinValues: r.MinValues,
		})
	}
	return out
}
