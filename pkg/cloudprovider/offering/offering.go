// Package offering matches NodeClaim requirements and requests against a
// provider's instance types and offerings: which (type, zone, capacity
// type) a launch may use, cheapest first, and the labels the resulting
// instance carries. Every cloud provider launches through it, so the sim
// and AWS providers read a NodeClaim the same way. It never calls a cloud.
package offering

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Candidate is one way to satisfy a NodeClaim: an instance type bought
// through one of its offerings.
type Candidate struct {
	InstanceType *scheduling.InstanceType
	Offering     scheduling.Offering
}

func (c Candidate) String() string {
	return c.InstanceType.Name + "/" + c.Offering.Zone + "/" + c.Offering.CapacityType
}

// Candidates returns every available (type, offering) pair that satisfies
// the requirements and fits the requests, cheapest first (ties broken by
// type name, zone and capacity type so launches are deterministic).
func Candidates(its []*scheduling.InstanceType, reqs []v1.NodeSelectorRequirementWithMinValues, requests corev1.ResourceList) []Candidate {
	var out []Candidate
	for _, it := range its {
		if !typeSatisfies(it, reqs) || !Fits(it.Allocatable(), requests) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || !offeringSatisfies(o, reqs) {
				continue
			}
			out = append(out, Candidate{InstanceType: it, Offering: o})
		}
	}
	slices.SortFunc(out, func(a, b Candidate) int {
		return cmp.Or(
			cmp.Compare(a.Offering.Price, b.Offering.Price),
			cmp.Compare(a.InstanceType.Name, b.InstanceType.Name),
			cmp.Compare(a.Offering.Zone, b.Offering.Zone),
			cmp.Compare(a.Offering.CapacityType, b.Offering.CapacityType),
		)
	})
	return out
}

// Prioritized orders cands for nodeClaim's launch. A NodeClaim whose
// prices a NodeOverlay changed (karpenter.sh/price-overlay-applied) lists
// its instance types in the overlaid price order, which the cloud's own
// prices do not know: its candidates follow that list (cheapest offering
// first within a type), as Karpenter's prioritized allocation strategy
// does. Other NodeClaims keep the cheapest-first order.
func Prioritized(cands []Candidate, nodeClaim *v1.NodeClaim) []Candidate {
	if nodeClaim.Annotations[v1alpha1.AnnotationPriceOverlayApplied] != "true" {
		return cands
	}
	rank := map[string]int{}
	for _, r := range nodeClaim.Spec.Requirements {
		if v1.NormalizeLabel(r.Key) == v1.LabelInstanceType && r.Operator == corev1.NodeSelectorOpIn {
			for i, name := range r.Values {
				if _, ok := rank[name]; !ok {
					rank[name] = i
				}
			}
		}
	}
	out := slices.Clone(cands)
	slices.SortStableFunc(out, func(a, b Candidate) int {
		ra, oka := rank[a.InstanceType.Name]
		rb, okb := rank[b.InstanceType.Name]
		if !oka {
			ra = len(rank)
		}
		if !okb {
			rb = len(rank)
		}
		return cmp.Compare(ra, rb)
	})
	return out
}

func Fits(allocatable, requests corev1.ResourceList) bool {
	for name, want := range requests {
		have, ok := allocatable[name]
		if !ok {
			if want.IsZero() {
				continue
			}
			return false
		}
		if have.Cmp(want) < 0 {
			return false
		}
	}
	return true
}

// typeSatisfies checks the requirements on keys the instance type defines;
// keys it does not define (a NodePool's own labels, zone and capacity type,
// which depend on the offering) are not its to decide.
func typeSatisfies(it *scheduling.InstanceType, reqs []v1.NodeSelectorRequirementWithMinValues) bool {
	for _, r := range reqs {
		key := v1.NormalizeLabel(r.Key)
		if key == v1.LabelTopologyZone || key == v1.LabelCapacityType {
			continue
		}
		values, defined := it.Requirements[key]
		if key == v1.LabelInstanceType {
			values, defined = []string{it.Name}, true
		}
		if !defined {
			continue
		}
		if !v1.RequirementAdmitsAny(r.Operator, r.Values, values) {
			return false
		}
	}
	return true
}

func offeringSatisfies(o scheduling.Offering, reqs []v1.NodeSelectorRequirementWithMinValues) bool {
	for _, r := range reqs {
		switch v1.NormalizeLabel(r.Key) {
		case v1.LabelTopologyZone:
			if !v1.RequirementAdmitsAny(r.Operator, r.Values, []string{o.Zone}) {
				return false
			}
		case v1.LabelCapacityType:
			if !v1.RequirementAdmitsAny(r.Operator, r.Values, []string{o.CapacityType}) {
				return false
			}
		}
	}
	return true
}

// InstanceLabels are the labels an instance of it bought through o
// carries: every label of the type (for a label with several possible
// values, such as the os of a type that runs linux or windows, the first
// value the requirements allow) plus zone, region and capacity type.
func InstanceLabels(it *scheduling.InstanceType, o scheduling.Offering, region string, reqs []v1.NodeSelectorRequirementWithMinValues) map[string]string {
	labels := map[string]string{}
	for k, values := range it.Requirements {
		for _, v := range values {
			if requirementsAllow(reqs, k, v) {
				labels[k] = v
				break
			}
		}
	}
	labels[v1.LabelInstanceType] = it.Name
	labels[v1.LabelTopologyZone] = o.Zone
	labels[v1.LabelTopologyRegion] = region
	labels[v1.LabelCapacityType] = o.CapacityType
	if labels[v1.LabelOS] == "" {
		labels[v1.LabelOS] = "linux"
	}
	if labels[v1.LabelArch] == "" {
		labels[v1.LabelArch] = "amd64"
	}
	return labels
}

func requirementsAllow(reqs []v1.NodeSelectorRequirementWithMinValues, key, value string) bool {
	for _, r := range reqs {
		if v1.NormalizeLabel(r.Key) == key && !v1.RequirementAdmits(r.Operator, r.Values, value, true) {
			return false
		}
	}
	return true
}

func Describe(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}
