package drift

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// Drift reasons of the core checks, Karpenter's names. The cloud
// provider's reasons (cloudprovider.DriftReason) come after them.
const (
	// ReasonNodePoolDrifted: the NodePool's template hash changed since the
	// NodeClaim was launched (labels, annotations, taints, startup taints,
	// node class, expireAfter, terminationGracePeriod).
	ReasonNodePoolDrifted cloudprovider.DriftReason = "NodePoolDrifted"
	// ReasonRequirementsDrifted: the NodeClaim's labels no longer satisfy
	// the NodePool's requirements.
	ReasonRequirementsDrifted cloudprovider.DriftReason = "RequirementsDrifted"
	// ReasonInstanceTypeNotFound: the NodePool no longer offers the
	// NodeClaim's instance type, or not in its zone and capacity type.
	ReasonInstanceTypeNotFound cloudprovider.DriftReason = "InstanceTypeNotFound"
)

// staticDrift reports NodePoolDrifted when nc was launched from a template
// whose hash differs from the NodePool's current one. A NodeClaim without a
// hash, or with a hash of another version (re-stamped by the hash
// controller), is not judged: the two hashes are not comparable.
func staticDrift(np *v1.NodePool, nc *v1.NodeClaim) (cloudprovider.DriftReason, string) {
	hash, ok := nc.Annotations[v1.AnnotationNodePoolHash]
	if !ok || nc.Annotations[v1.AnnotationNodePoolHashVersion] != v1.NodePoolHashVersion {
		return "", ""
	}
	if want := np.Hash(); hash != want {
		return ReasonNodePoolDrifted, fmt.Sprintf("NodePool %s's template changed since the NodeClaim was launched (hash %s, now %s): labels, annotations, taints, startup taints, nodeClassRef, expireAfter or terminationGracePeriod",
			np.Name, hash, want)
	}
	return "", ""
}

// requirementsDrift reports RequirementsDrifted when a NodePool
// requirement is not met by the NodeClaim: a label with a value the
// requirement does not allow. Keys the instance does not label (custom
// keys the pool constrains without a template label) are judged by the
// requirement the NodeClaim was launched with: drifted when none of its
// values is allowed any more, or when it had none and the pool now needs
// one.
func requirementsDrift(np *v1.NodePool, nc *v1.NodeClaim) (cloudprovider.DriftReason, string) {
	for _, r := range np.Spec.Template.Spec.Requirements {
		key := v1.NormalizeLabel(r.Key)
		var ok bool
		var got string
		if value, has := nc.Labels[key]; has {
			ok, got = v1.RequirementAdmits(r.Operator, r.Values, value, true), fmt.Sprintf("label %s=%s", key, value)
		} else if i := slices.IndexFunc(nc.Spec.Requirements, func(l v1.NodeSelectorRequirementWithMinValues) bool {
			return v1.NormalizeLabel(l.Key) == key
		}); i >= 0 {
			launched := nc.Spec.Requirements[i]
			ok, got = compatible(r, launched), "requirement "+formatRequirement(launched)
		} else {
			ok, got = v1.RequirementAdmits(r.Operator, r.Values, "", false), "no "+key+" label"
		}
		if !ok {
			return ReasonRequirementsDrifted, fmt.Sprintf("the NodeClaim has %s, which NodePool %s's requirement %s no longer allows",
				got, np.Name, formatRequirement(r))
		}
	}
	return "", ""
}

// compatible reports whether a node launched under requirement launched
// may still satisfy the pool's requirement r, when the node has no label
// that says which value it got.
func compatible(r, launched v1.NodeSelectorRequirementWithMinValues) bool {
	switch launched.Operator {
	case corev1.NodeSelectorOpIn:
		return slices.ContainsFunc(launched.Values, func(v string) bool { return v1.RequirementAdmits(r.Operator, r.Values, v, true) })
	case corev1.NodeSelectorOpExists:
		return r.Operator != corev1.NodeSelectorOpDoesNotExist
	case corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpDoesNotExist:
		return v1.RequirementAdmits(r.Operator, r.Values, "", false)
	}
	// Numeric bounds: the value the node got is unknown; do not guess.
	return true
}

func formatRequirement(r v1.NodeSelectorRequirementWithMinValues) string {
	if len(r.Values) == 0 {
		return fmt.Sprintf("%s %s", r.Key, r.Operator)
	}
	return fmt.Sprintf("%s %s [%s]", r.Key, r.Operator, strings.Join(r.Values, " "))
}

// instanceTypeDrift reports InstanceTypeNotFound when the NodeClaim's
// instance type is not among the NodePool's instance types any more, or
// is offered no longer in its zone and capacity type. Availability is not
// judged: a type out of capacity for now is not drift. A reserved instance
// whose reservation is no longer offered still matches an on-demand
// offering in its zone, as Karpenter treats it: it keeps running as
// on-demand capacity.
func instanceTypeDrift(its []*scheduling.InstanceType, nc *v1.NodeClaim) (cloudprovider.DriftReason, string) {
	name := nc.Labels[v1.LabelInstanceType]
	if name == "" {
		return "", ""
	}
	i := slices.IndexFunc(its, func(it *scheduling.InstanceType) bool { return it.Name == name })
	if i < 0 {
		return ReasonInstanceTypeNotFound, fmt.Sprintf("instance type %s is no longer offered to NodePool %s (its node class or catalog changed)", name, nc.Labels[v1.LabelNodePool])
	}
	zone, capacityType := nc.Labels[v1.LabelTopologyZone], nc.Labels[v1.LabelCapacityType]
	offered := slices.ContainsFunc(its[i].Offerings, func(o scheduling.Offering) bool {
		sameType := capacityType == "" || o.CapacityType == capacityType ||
			(capacityType == v1.CapacityTypeReserved && o.CapacityType == v1.CapacityTypeOnDemand)
		return (zone == "" || o.Zone == zone) && sameType
	})
	if !offered {
		return ReasonInstanceTypeNotFound, fmt.Sprintf("instance type %s is no longer offered as %s in zone %s", name, orAny(capacityType), orAny(zone))
	}
	return "", ""
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}
